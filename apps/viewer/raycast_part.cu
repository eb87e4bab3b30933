#include "raycast_part.hpp"

#include <canopy/app/palette.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/structures/bvh_queries.hpp>

#include <limits>

namespace viewer {

namespace {

// One primary ray per pixel; the ray direction has unit length along the view axis, so a hit's t
// is its view-space depth, the quantity the raster depth buffer is compared with.
struct trace_pixels {
  canopy::bvh_view bvh;
  canopy::span<const canopy::vec3> vertices;
  canopy::span<const std::uint32_t> indices;
  canopy::app::camera_rays cam;
  canopy::span<std::uint32_t> pixels;
  canopy::span<float> depth;
  float albedo[3];          // palette.hpp: mesh_colour (copied: device code reads no host constants)
  float ambient, diffuse;   // renderers.hpp: headlight
  std::uint32_t background; // packed RGBA8 of background_colour

  CANOPY_HD static std::uint32_t to_unorm8(float c) {
    c = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
    return std::uint32_t(c * 255.0f + 0.5f);
  }

  CANOPY_HD void operator()(std::size_t i) const {
    const int x = int(i % std::size_t(cam.width)), y = int(i / std::size_t(cam.width));
    const float sx = (2.0f * (float(x) + 0.5f) / float(cam.width) - 1.0f) * cam.tan_half_fov * cam.aspect;
    const float sy = (1.0f - 2.0f * (float(y) + 0.5f) / float(cam.height)) * cam.tan_half_fov;
    canopy::ray r;
    r.origin = canopy::vec3{cam.origin[0], cam.origin[1], cam.origin[2]};
    r.direction = canopy::vec3{cam.forward[0] + sx * cam.right[0] + sy * cam.up[0],
                               cam.forward[1] + sx * cam.right[1] + sy * cam.up[1],
                               cam.forward[2] + sx * cam.right[2] + sy * cam.up[2]};
    // The raster view's clip planes, so that both images see the same depth range.
    r.tmin = cam.near_depth;
    r.tmax = cam.far_depth;
    const canopy::hit h = canopy::bvh_trace_closest(bvh, vertices, indices, r);
    if (h.primitive == canopy::no_hit) {
      pixels[i] = background;
      depth[i] = std::numeric_limits<float>::infinity();
      return;
    }
    const canopy::vec3 a = vertices[indices[3 * h.primitive]], b = vertices[indices[3 * h.primitive + 1]],
                       c = vertices[indices[3 * h.primitive + 2]];
    const canopy::vec3 n = canopy::cross(b - a, c - a);
    const float cos_nd = canopy::dot(n, r.direction) /
                         sqrtf(canopy::length_squared(n) * canopy::length_squared(r.direction) + 1e-30f);
    // renderers.hpp: headlight shading, two-sided.
    const float shade = ambient + diffuse * fabsf(cos_nd);
    pixels[i] = to_unorm8(albedo[0] * shade) | (to_unorm8(albedo[1] * shade) << 8) |
                (to_unorm8(albedo[2] * shade) << 16) | 0xff000000u;
    depth[i] = h.t;
  }
};

}  // namespace

raycast_part::raycast_part(canopy::context& ctx) : ctx_(&ctx), pixels_(ctx, 0), depth_(ctx, 0), image_(ctx) {}

void raycast_part::trace(const canopy::bvh_view& bvh, const canopy::app::animated_scene& scene,
                         const canopy::app::camera_rays& rays) {
  canopy::require(rays.width > 0 && rays.height > 0, "viewer::raycast_part::trace", "rays", "empty image");
  width_ = rays.width;
  height_ = rays.height;
  const std::size_t n = std::size_t(width_) * height_;
  pixels_.resize_discard(n);
  depth_.resize_discard(n);
  namespace app = canopy::app;
  const trace_pixels f{bvh,
                       scene.vertices(),
                       scene.indices(),
                       rays,
                       pixels_.view(),
                       depth_.view(),
                       {app::mesh_colour[0], app::mesh_colour[1], app::mesh_colour[2]},
                       app::headlight::ambient,
                       app::headlight::diffuse,
                       std::uint32_t(app::background_colour[0]) | (std::uint32_t(app::background_colour[1]) << 8) |
                           (std::uint32_t(app::background_colour[2]) << 16) | 0xff000000u};
  canopy::for_each(*ctx_, n, f);
}

void raycast_part::upload() {
  if (width_ == 0) return;
  image_.resize(width_, height_);
  image_.upload(pixels_.view());
}

void raycast_part::draw(int x, int y, int w, int h) {
  if (width_ == 0) return;
  renderer_.draw(image_.gl_name(), x, y, w, h, true);
}

}  // namespace viewer
