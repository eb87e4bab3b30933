// canopy/structures/geometry.hpp — vectors, boxes, rays and hits shared by the builders, the
// queries and the apps.
//
// [SECTION] vec3      12 bytes, plain floats, CANOPY_HD arithmetic
// [SECTION] aabb      24 bytes; the empty box has lo = +inf, hi = -inf
// [SECTION] ray, hit  32 and 16 bytes
// [SECTION] ray-box and ray-triangle tests (Möller–Trumbore)
//
// Every function here is CANOPY_HD so that builders, query kernels and app kernels use the same
// arithmetic as the host-side oracles in the tests.
#pragma once

#include <canopy/core/config.hpp>

#include <cfloat>
#include <cstdint>
#include <limits>
#include <math.h>  // fminf & co. in the global namespace, as CUDA device code has them

namespace canopy {

// ---------------------------------------------------------------------------------------------
// [SECTION] vec3

//! Three floats, 12 bytes, no padding (vertex buffers of OBJ files and GL buffers map onto it).
struct vec3 {
  float x, y, z;
};
static_assert(sizeof(vec3) == 12, "vec3 must be 12 bytes: vertex buffers are arrays of it");

CANOPY_HD inline vec3 make_vec3(float x, float y, float z) { return vec3{x, y, z}; }
CANOPY_HD inline vec3 operator+(vec3 a, vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
CANOPY_HD inline vec3 operator-(vec3 a, vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
CANOPY_HD inline vec3 operator*(vec3 a, float s) { return {a.x * s, a.y * s, a.z * s}; }
CANOPY_HD inline vec3 operator*(float s, vec3 a) { return {a.x * s, a.y * s, a.z * s}; }
CANOPY_HD inline vec3 operator*(vec3 a, vec3 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
// Products and sums that nvcc may not fuse into FMAs, so that dot, cross, areas, distances and the
// ray-triangle test round exactly as on the host (the host build does not contract: ISO C++ mode,
// no -march): both backends then return bit-identical hits, distances and SAH decisions.
CANOPY_HD inline float mul_rn(float a, float b) {
#if CANOPY_DEVICE_PASS
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CANOPY_HD inline float add_rn(float a, float b) {
#if CANOPY_DEVICE_PASS
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CANOPY_HD inline float sub_rn(float a, float b) {
#if CANOPY_DEVICE_PASS
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
CANOPY_HD inline float dot(vec3 a, vec3 b) { return add_rn(add_rn(mul_rn(a.x, b.x), mul_rn(a.y, b.y)), mul_rn(a.z, b.z)); }
CANOPY_HD inline vec3 cross(vec3 a, vec3 b) {
  return {sub_rn(mul_rn(a.y, b.z), mul_rn(a.z, b.y)), sub_rn(mul_rn(a.z, b.x), mul_rn(a.x, b.z)),
          sub_rn(mul_rn(a.x, b.y), mul_rn(a.y, b.x))};
}
CANOPY_HD inline float length_squared(vec3 a) { return dot(a, a); }
CANOPY_HD inline float fmin3(float a, float b, float c) { return fminf(a, fminf(b, c)); }
CANOPY_HD inline float fmax3(float a, float b, float c) { return fmaxf(a, fmaxf(b, c)); }
CANOPY_HD inline vec3 vmin(vec3 a, vec3 b) { return {fminf(a.x, b.x), fminf(a.y, b.y), fminf(a.z, b.z)}; }
CANOPY_HD inline vec3 vmax(vec3 a, vec3 b) { return {fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z)}; }
CANOPY_HD inline float component(vec3 a, int axis) { return axis == 0 ? a.x : (axis == 1 ? a.y : a.z); }
//! True when all three coordinates are finite (no NaN, no ±inf).
CANOPY_HD inline bool is_finite(vec3 a) {
  // x - x is 0 for finite x and NaN for NaN and ±inf; NaN != NaN.
  const float s = (a.x - a.x) + (a.y - a.y) + (a.z - a.z);
  return s == s;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] aabb

//! Axis-aligned box, 24 bytes. lo <= hi componentwise unless empty; empty() is lo = +inf, hi = -inf
//! so that grow() needs no special case.
struct aabb {
  vec3 lo, hi;
};
static_assert(sizeof(aabb) == 24, "aabb must be 24 bytes");

CANOPY_HD inline aabb empty_aabb() {
  const float inf = std::numeric_limits<float>::infinity();
  return aabb{{inf, inf, inf}, {-inf, -inf, -inf}};
}
CANOPY_HD inline aabb point_aabb(vec3 p) { return aabb{p, p}; }
CANOPY_HD inline aabb merge(aabb a, aabb b) { return aabb{vmin(a.lo, b.lo), vmax(a.hi, b.hi)}; }
CANOPY_HD inline aabb grow(aabb a, vec3 p) { return aabb{vmin(a.lo, p), vmax(a.hi, p)}; }
CANOPY_HD inline bool is_empty(aabb a) { return !(a.lo.x <= a.hi.x && a.lo.y <= a.hi.y && a.lo.z <= a.hi.z); }
CANOPY_HD inline vec3 centroid(aabb a) { return (a.lo + a.hi) * 0.5f; }
CANOPY_HD inline vec3 extent(aabb a) { return a.hi - a.lo; }
//! Surface area; 0 for an empty box.
CANOPY_HD inline float surface_area(aabb a) {
  if (is_empty(a)) return 0.0f;
  const vec3 e = extent(a);
  return 2.0f * add_rn(add_rn(mul_rn(e.x, e.y), mul_rn(e.y, e.z)), mul_rn(e.z, e.x));
}
//! True when a and b share at least one point (touching faces count).
CANOPY_HD inline bool overlaps(aabb a, aabb b) {
  return a.lo.x <= b.hi.x && b.lo.x <= a.hi.x && a.lo.y <= b.hi.y && b.lo.y <= a.hi.y && a.lo.z <= b.hi.z &&
         b.lo.z <= a.hi.z;
}
//! True when `outer` contains `inner` (an empty inner is contained in anything).
CANOPY_HD inline bool contains(aabb outer, aabb inner) {
  if (is_empty(inner)) return true;
  return outer.lo.x <= inner.lo.x && outer.lo.y <= inner.lo.y && outer.lo.z <= inner.lo.z &&
         inner.hi.x <= outer.hi.x && inner.hi.y <= outer.hi.y && inner.hi.z <= outer.hi.z;
}
//! Squared distance from p to the box (0 inside). Never larger than the squared distance from p to
//! any point of the box, also in floating point (the kNN pruning relies on it).
CANOPY_HD inline float distance_squared(aabb a, vec3 p) {
  const float dx = fmaxf(fmaxf(a.lo.x - p.x, 0.0f), p.x - a.hi.x);
  const float dy = fmaxf(fmaxf(a.lo.y - p.y, 0.0f), p.y - a.hi.y);
  const float dz = fmaxf(fmaxf(a.lo.z - p.z, 0.0f), p.z - a.hi.z);
  return add_rn(add_rn(mul_rn(dx, dx), mul_rn(dy, dy)), mul_rn(dz, dz));
}
//! Squared distance between two points, summed x, y, z in that order (queries and tests share it).
CANOPY_HD inline float distance_squared(vec3 a, vec3 b) {
  const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return add_rn(add_rn(mul_rn(dx, dx), mul_rn(dy, dy)), mul_rn(dz, dz));
}
CANOPY_HD inline aabb triangle_aabb(vec3 a, vec3 b, vec3 c) { return aabb{vmin(vmin(a, b), c), vmax(vmax(a, b), c)}; }

// ---------------------------------------------------------------------------------------------
// [SECTION] ray, hit

//! A ray, 32 bytes: points origin + t * direction for t in [tmin, tmax]. direction need not be
//! normalised (t is then in units of its length); a zero direction hits nothing.
struct ray {
  vec3 origin;
  float tmin;
  vec3 direction;
  float tmax;
};
static_assert(sizeof(ray) == 32, "ray must be 32 bytes");

//! Sentinel primitive index of a miss.
constexpr std::uint32_t no_hit = 0xffffffffu;

//! Result of a closest-hit query, 16 bytes. On a miss t = +inf and primitive = no_hit. u, v are
//! the barycentric coordinates of the hit point with respect to vertices 1 and 2 of the triangle.
struct hit {
  float t;
  std::uint32_t primitive;
  float u, v;
};
static_assert(sizeof(hit) == 16, "hit must be 16 bytes");

CANOPY_HD inline hit miss_hit() { return hit{std::numeric_limits<float>::infinity(), no_hit, 0.0f, 0.0f}; }

// ---------------------------------------------------------------------------------------------
// [SECTION] intersection tests

//! Ray direction reciprocals, precomputed once per ray for the slab test. A zero component gives
//! ±inf, which the slab test handles.
struct ray_inverse {
  vec3 inv_direction;
};
CANOPY_HD inline ray_inverse make_ray_inverse(const ray& r) {
  return ray_inverse{{1.0f / r.direction.x, 1.0f / r.direction.y, 1.0f / r.direction.z}};
}

//! Slab test. True when the ray's segment [tmin, tmax] meets the box; tnear then receives the
//! entry distance (>= tmin). The interval is widened by a relative 2^-16 (about 256 ulp) so that
//! rounding in the slab test and in intersect_triangle() cannot make traversal skip a box whose
//! triangle brute force would report; only hits whose t carries a larger relative error (rays
//! grazing a triangle at a box's face, t near 0 on a box boundary) could differ.
CANOPY_HD inline bool intersect_aabb(const aabb& b, const ray& r, const ray_inverse& inv, float tmax, float& tnear) {
  const float tx0 = (b.lo.x - r.origin.x) * inv.inv_direction.x, tx1 = (b.hi.x - r.origin.x) * inv.inv_direction.x;
  const float ty0 = (b.lo.y - r.origin.y) * inv.inv_direction.y, ty1 = (b.hi.y - r.origin.y) * inv.inv_direction.y;
  const float tz0 = (b.lo.z - r.origin.z) * inv.inv_direction.z, tz1 = (b.hi.z - r.origin.z) * inv.inv_direction.z;
  // fminf/fmaxf drop a NaN operand (0 * inf when the origin lies on a slab plane of a parallel
  // axis), which treats that axis as unbounded: conservative.
  float t0 = fmaxf(fmaxf(fminf(tx0, tx1), fminf(ty0, ty1)), fminf(tz0, tz1));
  float t1 = fminf(fminf(fmaxf(tx0, tx1), fmaxf(ty0, ty1)), fmaxf(tz0, tz1));
  constexpr float widen = 1.0f / 65536.0f;
  t0 = fmaxf(t0 - fabsf(t0) * widen, r.tmin);
  t1 = fminf(t1 + fabsf(t1) * widen, tmax);
  tnear = t0;
  return t0 <= t1;
}

//! Möller–Trumbore ray-triangle test (one-sided culling off). Returns true and writes t, u, v when
//! the ray hits triangle (a, b, c) with t in [tmin, tmax]. Rays exactly parallel to the
//! triangle's plane (det == 0), zero-area triangles and triangles with NaN/inf vertices never hit.
//! Not watertight: a ray through a shared edge may hit both, either or (rarely) neither neighbour.
CANOPY_HD inline bool intersect_triangle(const ray& r, vec3 a, vec3 b, vec3 c, float tmax, float& t, float& u,
                                         float& v) {
  const vec3 e1 = b - a, e2 = c - a;
  const vec3 p = cross(r.direction, e2);
  const float det = dot(e1, p);
  // Also refuses NaN and ±inf det (non-finite vertices), which could otherwise give inv_det = 0.
  if (!(fabsf(det) > 0.0f && fabsf(det) <= FLT_MAX)) return false;
  const float inv_det = 1.0f / det;
  const vec3 s = r.origin - a;
  const float uu = dot(s, p) * inv_det;
  if (!(uu >= 0.0f && uu <= 1.0f)) return false;
  const vec3 q = cross(s, e1);
  const float vv = dot(r.direction, q) * inv_det;
  if (!(vv >= 0.0f && uu + vv <= 1.0f)) return false;
  const float tt = dot(e2, q) * inv_det;
  if (!(tt >= r.tmin && tt <= tmax)) return false;
  t = tt;
  u = uu;
  v = vv;
  return true;
}

}  // namespace canopy
