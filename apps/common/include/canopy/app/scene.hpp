// canopy/app/scene.hpp — the animated triangle scenes the apps rebuild structures over.
//
// Geometry comes from canopy/structures/scene.hpp (the wave sphere, generated and animated with
// for_each on the context's backend) and obj_loader.hpp (the bunny). This module adds the bunny
// herd: copies of the OBJ on a grid, each wobbling with its own phase, so a familiar shape also
// reaches 1M+ triangles. Vertices live in the context's memory space and are rewritten every
// frame by animate(); indices change only in load().
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/structures/geometry.hpp>
#include <canopy/structures/scene.hpp>

#include <cstdint>
#include <string>

namespace canopy::app {

enum class scene_kind : std::uint8_t {
  wave_sphere,  //!< a sphere displaced by travelling waves; any triangle count
  bunnies,      //!< copies of assets/bunny.obj on a grid, each wobbling; a multiple of the bunny
};

//! "wave-sphere" / "bunnies".
const char* to_string(scene_kind k) noexcept;
//! Parses "wave-sphere" or "bunnies"; throws invalid_argument naming `argument` otherwise.
scene_kind parse_scene_kind(const std::string& text, const char* argument = "--scene");

class animated_scene {
 public:
  explicit animated_scene(context& ctx) : ctx_(&ctx) {}

  //! Makes a scene of the given kind with at least `min_triangles` triangles (at least 1). Reads
  //! the OBJ for bunnies (throws canopy::error if it is missing). Synchronises; not per frame.
  void load(scene_kind kind, std::size_t min_triangles);
  //! Moves the vertices to time `seconds`. Stream-ordered, allocates nothing.
  void animate(float seconds);

  span<const vec3> vertices() const { return vertices_.view(); }
  span<const std::uint32_t> indices() const { return indices_.view(); }
  std::size_t triangle_count() const { return indices_.size() / 3; }
  std::size_t vertex_count() const { return vertices_.size(); }
  //! A box containing the scene at every time (rest bounds grown by the animation's reach).
  aabb bounds() const { return bounds_; }
  scene_kind kind() const noexcept { return kind_; }
  //! Changes whenever load() changed the indices (renderers re-upload them then).
  std::uint64_t topology_version() const noexcept { return topology_version_; }

 private:
  context* ctx_;
  scene_kind kind_ = scene_kind::wave_sphere;
  wave_sphere sphere_{};
  buffer<vec3> rest_;        // bunnies: rest positions of every copy
  buffer<vec3> vertices_;
  buffer<std::uint32_t> indices_;
  aabb bounds_ = empty_aabb();
  float wobble_scale_ = 0;   // bunnies: one copy's size
  std::uint32_t copy_vertices_ = 0;
  std::uint64_t topology_version_ = 0;
};

}  // namespace canopy::app
