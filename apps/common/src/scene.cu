#include <canopy/app/scene.hpp>

#include <canopy/core/for_each.hpp>
#include <canopy/structures/obj_loader.hpp>

#include <algorithm>
#include <cmath>

namespace canopy::app {

namespace {

// Each copy of the bunny bends about its own vertical axis and bobs, phase-shifted by its index so
// the herd does not move in lock step. Displacement is at most 0.12 * size on x/z and 0.05 * size on y.
struct wobble_copies {
  span<const vec3> rest;
  span<vec3> out;
  std::uint32_t copy_vertices;
  float size;
  float seconds;
  CANOPY_HD void operator()(std::size_t i) const {
    const vec3 p = rest[i];
    const float phase = 0.9f * float(i / copy_vertices);
    const float h = p.y / size;  // roughly 0 at the feet (copies rest on y = 0), 1 at the top
    const float bend = 0.12f * size * h * h * sinf(2.3f * seconds + phase);
    const float sway = 0.05f * size * sinf(3.1f * seconds + 2.0f * phase + 4.0f * h);
    out[i] = vec3{p.x + bend, p.y + sway * 0.4f, p.z + 0.5f * bend * cosf(1.7f * seconds + phase)};
  }
};

}  // namespace

const char* to_string(scene_kind k) noexcept { return k == scene_kind::wave_sphere ? "wave-sphere" : "bunnies"; }

scene_kind parse_scene_kind(const std::string& text, const char* argument) {
  if (text == "wave-sphere") return scene_kind::wave_sphere;
  if (text == "bunnies" || text == "bunny") return scene_kind::bunnies;
  require(false, "canopy::app::parse_scene_kind", argument, "'" + text + "' is not wave-sphere or bunnies");
  return scene_kind::wave_sphere;
}

void animated_scene::load(scene_kind kind, std::size_t min_triangles) {
  require(min_triangles >= 1, "canopy::app::animated_scene::load", "min_triangles", "must be at least 1");
  require(min_triangles <= (std::size_t(1) << 28), "canopy::app::animated_scene::load", "min_triangles",
          "at most 2^28 (u32 indices)");
  kind_ = kind;
  if (kind == scene_kind::wave_sphere) {
    sphere_ = make_wave_sphere(min_triangles, 1.0f);
    vertices_ = buffer<vec3>(*ctx_, sphere_.vertex_count());
    indices_ = buffer<std::uint32_t>(*ctx_, 3 * sphere_.triangle_count());
    generate_wave_sphere(*ctx_, sphere_, vertices_.view(), indices_.view());
    rest_.release();
    const float reach = sphere_.radius * (1.0f + sphere_.amplitude);
    bounds_ = aabb{{-reach, -reach, -reach}, {reach, reach, reach}};
  } else {
    const mesh bunny = load_obj(asset_path("bunny.obj"));
    const aabb b = canopy::bounds(bunny);
    const vec3 e = extent(b);
    const float size = std::max(e.x, std::max(e.y, e.z));
    const std::size_t per = bunny.triangle_count();
    const std::size_t copies = (min_triangles + per - 1) / per;
    const std::size_t side = std::size_t(std::ceil(std::sqrt(double(copies))));
    const float spacing = 1.3f * size;
    mesh herd;
    herd.vertices.reserve(copies * bunny.vertices.size());
    herd.indices.reserve(copies * bunny.indices.size());
    for (std::size_t c = 0; c < copies; ++c) {
      // Grid centred on the origin; each copy rests on y = 0.
      const float ox = (float(c % side) - 0.5f * float(side - 1)) * spacing;
      const float oz = (float(c / side) - 0.5f * float(side - 1)) * spacing;
      const std::uint32_t base = std::uint32_t(herd.vertices.size());
      for (const vec3& v : bunny.vertices)
        herd.vertices.push_back(vec3{v.x - centroid(b).x + ox, v.y - b.lo.y, v.z - centroid(b).z + oz});
      for (std::uint32_t i : bunny.indices) herd.indices.push_back(base + i);
    }
    copy_vertices_ = std::uint32_t(bunny.vertices.size());
    wobble_scale_ = size;
    rest_ = buffer<vec3>(*ctx_, herd.vertices.size());
    rest_.assign(herd.vertices);
    vertices_ = buffer<vec3>(*ctx_, herd.vertices.size());
    indices_ = buffer<std::uint32_t>(*ctx_, herd.indices.size());
    indices_.assign(herd.indices);
    const aabb rest_bounds = canopy::bounds(herd);
    const float pad = 0.15f * size;
    bounds_ = aabb{rest_bounds.lo - vec3{pad, pad, pad}, rest_bounds.hi + vec3{pad, pad, pad}};
  }
  ++topology_version_;
  animate(0.0f);
  ctx_->synchronize();
}

void animated_scene::animate(float seconds) {
  if (kind_ == scene_kind::wave_sphere) {
    animate_wave_sphere(*ctx_, sphere_, seconds, vertices_.view());
  } else {
    for_each(*ctx_, vertices_.size(),
             wobble_copies{rest_.view(), vertices_.view(), copy_vertices_, wobble_scale_, seconds});
  }
}

}  // namespace canopy::app
