// Procedural scenes, their animation and camera rays, written once over canopy::for_each.
#include <canopy/core/for_each.hpp>
#include <canopy/structures/scene.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace canopy {

namespace {

struct wave_vertices {
  wave_sphere s;
  float seconds;
  span<vec3> vertices;
  CANOPY_HD void operator()(std::size_t i) const {
    const std::uint32_t ring = std::uint32_t(i / s.segments), segment = std::uint32_t(i % s.segments);
    vertices[i] = wave_sphere_vertex(s, ring, segment, seconds);
  }
};

// Quad (ring, segment) -> triangles 2q and 2q + 1; the seam wraps to segment 0.
struct wave_indices {
  wave_sphere s;
  span<std::uint32_t> indices;
  CANOPY_HD void operator()(std::size_t q) const {
    const std::uint32_t ring = std::uint32_t(q / s.segments), seg = std::uint32_t(q % s.segments);
    const std::uint32_t next = seg + 1 == s.segments ? 0 : seg + 1;
    const std::uint32_t a = ring * s.segments + seg, b = ring * s.segments + next;
    const std::uint32_t c = (ring + 1) * s.segments + seg, d = (ring + 1) * s.segments + next;
    std::uint32_t* t = &indices[6 * q];
    t[0] = a, t[1] = c, t[2] = b;
    t[3] = b, t[4] = c, t[5] = d;
  }
};

CANOPY_HD inline vec3 normalize(vec3 v) {
  const float l = sqrtf(length_squared(v));
  return l > 0.0f ? v * (1.0f / l) : v;
}

struct primary_rays {
  vec3 eye, forward, right, up;
  float tan_half, aspect;
  std::uint32_t width, height;
  span<ray> rays;
  CANOPY_HD void operator()(std::size_t i) const {
    const std::uint32_t x = std::uint32_t(i % width), y = std::uint32_t(i / width);
    const float sx = (2.0f * (float(x) + 0.5f) / float(width) - 1.0f) * tan_half * aspect;
    const float sy = (1.0f - 2.0f * (float(y) + 0.5f) / float(height)) * tan_half;
    rays[i] = ray{eye, 0.0f, normalize(forward + right * sx + up * sy), std::numeric_limits<float>::infinity()};
  }
};

CANOPY_HD inline std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

struct diffuse_rays {
  span<const ray> incoming;
  span<const hit> hits;
  span<const vec3> vertices;
  span<const std::uint32_t> indices;
  float offset;
  std::uint32_t seed;
  span<ray> out;
  CANOPY_HD void operator()(std::size_t i) const {
    const hit h = hits[i];
    const ray r = incoming[i];
    if (h.primitive == no_hit || 3 * std::size_t(h.primitive) + 2 >= indices.size()) {
      out[i] = ray{r.origin, 0.0f, r.direction, -1.0f};
      return;
    }
    const vec3 a = vertices[indices[3 * h.primitive]], b = vertices[indices[3 * h.primitive + 1]],
               c = vertices[indices[3 * h.primitive + 2]];
    vec3 n = normalize(cross(b - a, c - a));
    if (dot(n, r.direction) > 0.0f) n = n * -1.0f;
    const vec3 p = r.origin + r.direction * h.t + n * offset;
    // Orthonormal basis about n (Duff et al. 2017).
    const float sign = n.z >= 0.0f ? 1.0f : -1.0f;
    const float k = -1.0f / (sign + n.z);
    const float m = n.x * n.y * k;
    const vec3 t1{1.0f + sign * n.x * n.x * k, sign * m, -sign * n.x};
    const vec3 t2{m, sign + n.y * n.y * k, -n.y};
    const std::uint32_t h1 = hash32(std::uint32_t(i) * 2u + seed * 0x9e3779b9u);
    const std::uint32_t h2 = hash32(h1 ^ 0x68bc21ebu);
    const float u1 = float(h1 >> 8) * (1.0f / 16777216.0f), u2 = float(h2 >> 8) * (1.0f / 16777216.0f);
    const float radius = sqrtf(u1), phi = 6.28318530718f * u2;
    const vec3 d = t1 * (radius * cosf(phi)) + t2 * (radius * sinf(phi)) + n * sqrtf(fmaxf(0.0f, 1.0f - u1));
    out[i] = ray{p, 0.0f, d, std::numeric_limits<float>::infinity()};
  }
};

}  // namespace

device_mesh upload(context& ctx, const mesh& m) {
  device_mesh d;
  d.vertices = buffer<vec3>(ctx, 0);
  d.indices = buffer<std::uint32_t>(ctx, 0);
  d.vertices.assign(m.vertices);
  d.indices.assign(m.indices);
  return d;
}

aabb bounds(const mesh& m) {
  aabb b = empty_aabb();
  for (const vec3& v : m.vertices) b = grow(b, v);
  return b;
}

wave_sphere make_wave_sphere(std::size_t min_triangles, float radius) {
  require(min_triangles >= 4 && min_triangles <= (std::size_t(1) << 31), "canopy::make_wave_sphere",
          "min_triangles", "must be in [4, 2^31], got " + std::to_string(min_triangles));
  require(radius > 0.0f && std::isfinite(radius), "canopy::make_wave_sphere", "radius", "must be finite and > 0");
  wave_sphere s;
  s.radius = radius;
  // 2 * rings * segments triangles; rings = floor(sqrt(n / 4)), then segments (>= 2 rings) grow one at a time.
  s.rings = std::uint32_t(std::floor(std::sqrt(double(min_triangles) / 4.0)));
  if (s.rings < 1) s.rings = 1;
  s.segments = std::max<std::uint32_t>(3, 2 * s.rings);
  while (s.triangle_count() < min_triangles) ++s.segments;
  return s;
}

void generate_wave_sphere(context& ctx, const wave_sphere& s, span<vec3> vertices, span<std::uint32_t> indices) {
  const char* fn = "canopy::generate_wave_sphere";
  require(s.rings >= 1 && s.segments >= 3, fn, "s", "needs rings >= 1 and segments >= 3");
  check_span(vertices, ctx.space(), fn, "vertices");
  check_span(indices, ctx.space(), fn, "indices");
  require(vertices.size() == s.vertex_count(), fn, "vertices",
          "length " + std::to_string(vertices.size()) + ", needs " + std::to_string(s.vertex_count()));
  require(indices.size() == 3 * s.triangle_count(), fn, "indices",
          "length " + std::to_string(indices.size()) + ", needs " + std::to_string(3 * s.triangle_count()));
  require(s.vertex_count() < 0xffffffffu, fn, "s", "more vertices than 32-bit indices can address");
  for_each(ctx, s.vertex_count(), wave_vertices{s, 0.0f, vertices});
  for_each(ctx, std::size_t(s.rings) * s.segments, wave_indices{s, indices});
}

void animate_wave_sphere(context& ctx, const wave_sphere& s, float seconds, span<vec3> vertices) {
  const char* fn = "canopy::animate_wave_sphere";
  check_span(vertices, ctx.space(), fn, "vertices");
  require(vertices.size() == s.vertex_count(), fn, "vertices",
          "length " + std::to_string(vertices.size()) + ", needs " + std::to_string(s.vertex_count()));
  for_each(ctx, s.vertex_count(), wave_vertices{s, seconds, vertices});
}

device_mesh make_wave_sphere_mesh(context& ctx, const wave_sphere& s) {
  device_mesh d;
  d.vertices = buffer<vec3>(ctx, s.vertex_count());
  d.indices = buffer<std::uint32_t>(ctx, 3 * s.triangle_count());
  generate_wave_sphere(ctx, s, d.vertices.view(), d.indices.view());
  return d;
}

void make_primary_rays(context& ctx, const pinhole_camera& camera, std::uint32_t width, std::uint32_t height,
                       span<ray> rays) {
  const char* fn = "canopy::make_primary_rays";
  check_span(rays, ctx.space(), fn, "rays");
  require(rays.size() == std::size_t(width) * height, fn, "rays", "must hold width * height rays");
  require(camera.fov_y_degrees > 0.0f && camera.fov_y_degrees < 180.0f, fn, "camera.fov_y_degrees",
          "must be in (0, 180)");
  const vec3 forward = normalize(camera.target - camera.eye);
  require(length_squared(forward) > 0.0f, fn, "camera", "eye and target coincide");
  vec3 right = normalize(cross(forward, camera.up));
  require(length_squared(right) > 0.0f, fn, "camera.up", "is parallel to the view direction");
  const vec3 up = cross(right, forward);
  const float tan_half = std::tan(camera.fov_y_degrees * 3.14159265f / 360.0f);
  if (rays.empty()) return;
  for_each(ctx, rays.size(),
           primary_rays{camera.eye, forward, right, up, tan_half, float(width) / float(height), width, height, rays});
}

void make_diffuse_rays(context& ctx, span<const ray> incoming, span<const hit> hits, span<const vec3> vertices,
                       span<const std::uint32_t> indices, float scene_size, std::uint32_t seed, span<ray> out) {
  const char* fn = "canopy::make_diffuse_rays";
  check_span(incoming, ctx.space(), fn, "incoming");
  check_span(hits, ctx.space(), fn, "hits");
  check_span(vertices, ctx.space(), fn, "vertices");
  check_span(indices, ctx.space(), fn, "indices");
  check_span(out, ctx.space(), fn, "out");
  require(hits.size() == incoming.size() && out.size() == incoming.size(), fn, "hits/out",
          "must have the length of incoming");
  for_each(ctx, incoming.size(), diffuse_rays{incoming, hits, vertices, indices, scene_size * 1e-4f, seed, out});
}

}  // namespace canopy
