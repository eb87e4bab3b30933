// canopy/structures/scene.hpp — triangle meshes to build over: procedural, animated, or from OBJ.
//
// [SECTION] mesh           host-side vertex + index arrays
// [SECTION] wave sphere    a finely tessellated sphere displaced by travelling waves, any size
//                          (1M and 10M triangles in the benchmark); generated and animated on the
//                          context's backend with for_each, so the 10M mesh never exists on the host
// [SECTION] cameras        pinhole primary rays and diffuse bounce rays for benchmarks and tests
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/structures/geometry.hpp>

#include <cstdint>
#include <math.h>
#include <string>
#include <vector>

namespace canopy {

// ---------------------------------------------------------------------------------------------
// [SECTION] mesh

//! A triangle mesh on the host: 3 indices per triangle into vertices.
struct mesh {
  std::vector<vec3> vertices;
  std::vector<std::uint32_t> indices;
  std::size_t triangle_count() const { return indices.size() / 3; }
};

//! A triangle mesh in a context's memory space.
struct device_mesh {
  buffer<vec3> vertices;
  buffer<std::uint32_t> indices;
  std::size_t triangle_count() const { return indices.size() / 3; }
};

//! Copies a host mesh into ctx's space.
device_mesh upload(context& ctx, const mesh& m);
//! Bounding box of a host mesh's vertices (empty box for no vertices).
aabb bounds(const mesh& m);

// ---------------------------------------------------------------------------------------------
// [SECTION] wave sphere

//! Tessellation of the wave sphere: a latitude-longitude grid of `rings` x `segments` quads, each
//! two triangles, 2 * rings * segments triangles in all (poles are rings of thin triangles, some
//! of zero area on purpose: builders must cope). Vertices: (rings + 1) * segments.
struct wave_sphere {
  std::uint32_t rings = 0;
  std::uint32_t segments = 0;
  float radius = 1.0f;       //!< rest radius, scene units
  float amplitude = 0.08f;   //!< wave height as a fraction of the radius
  float frequency = 9.0f;    //!< waves per radian around each axis

  std::size_t vertex_count() const { return std::size_t(rings + 1) * segments; }
  std::size_t triangle_count() const { return 2 * std::size_t(rings) * segments; }
};

//! A wave sphere with at least `min_triangles` triangles and segments = 2 * rings (close to square
//! quads on the equator).
wave_sphere make_wave_sphere(std::size_t min_triangles, float radius = 1.0f);

//! Position of vertex (ring, segment) at time `seconds`: the unit sphere point scaled by
//! radius * (1 + amplitude * w(p, t)) with w a sum of travelling sines, |w| <= 1. Pure function,
//! so refits and rebuilds of the same time agree exactly.
CANOPY_HD inline vec3 wave_sphere_vertex(const wave_sphere& s, std::uint32_t ring, std::uint32_t segment,
                                         float seconds) {
  const float pi = 3.14159265358979f;
  const float theta = pi * float(ring) / float(s.rings);
  const float phi = 2.0f * pi * float(segment) / float(s.segments);
  const float st = sinf(theta);
  const vec3 dir{st * cosf(phi), cosf(theta), st * sinf(phi)};
  const float w = 0.5f * sinf(s.frequency * dir.x + 2.1f * seconds) * sinf(s.frequency * dir.y - 1.3f * seconds) +
                  0.5f * sinf(s.frequency * 1.7f * dir.z + 0.7f * seconds);
  return dir * (s.radius * (1.0f + s.amplitude * w));
}

//! Fills vertices (vertex_count()) and indices (3 * triangle_count()) in ctx's space for time 0.
void generate_wave_sphere(context& ctx, const wave_sphere& s, span<vec3> vertices, span<std::uint32_t> indices);
//! Rewrites vertices (vertex_count()) for time `seconds`; topology unchanged. Stream-ordered.
void animate_wave_sphere(context& ctx, const wave_sphere& s, float seconds, span<vec3> vertices);
//! Convenience: a device_mesh holding the wave sphere at time 0.
device_mesh make_wave_sphere_mesh(context& ctx, const wave_sphere& s);

// ---------------------------------------------------------------------------------------------
// [SECTION] cameras

//! A pinhole camera looking from `eye` at `target` with vertical field of view `fov_y_degrees`.
struct pinhole_camera {
  vec3 eye;
  vec3 target;
  vec3 up{0.0f, 1.0f, 0.0f};
  float fov_y_degrees = 45.0f;
};

//! width * height primary rays (row-major, pixel centres, row 0 at the top), tmin 0, tmax +inf.
void make_primary_rays(context& ctx, const pinhole_camera& camera, std::uint32_t width, std::uint32_t height,
                       span<ray> rays);
//! For each hit, a cosine-weighted diffuse bounce ray from the hit point about the triangle's
//! geometric normal (facing the incoming ray), offset by 1e-4 of the scene size; for a miss a
//! ray with tmax = -1 that hits nothing. Random numbers: a hash of (i, seed).
void make_diffuse_rays(context& ctx, span<const ray> incoming, span<const hit> hits, span<const vec3> vertices,
                       span<const std::uint32_t> indices, float scene_size, std::uint32_t seed, span<ray> out);

}  // namespace canopy
