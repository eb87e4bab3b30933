// canopy/app/mesh_view.hpp — the raster view of an animated_scene: its vertices copied every frame
// into a GL buffer (device to device through interop on CUDA), its indices re-uploaded when the
// topology changes, drawn with mesh_renderer.
#pragma once

#include <canopy/app/interop.hpp>
#include <canopy/app/renderers.hpp>
#include <canopy/app/scene.hpp>

#include <cstdint>

namespace canopy::app {

class mesh_view {
 public:
  //! `depth_copy`: draw with mesh_renderer(true), for render targets with a depth copy.
  explicit mesh_view(context& ctx, bool depth_copy = false) : ctx_(&ctx), vertices_(ctx), renderer_(depth_copy) {}
  //! Copies the scene's current vertices into GL (stream-ordered) and, after a load(), its indices
  //! (synchronises once then): prepare() then write().
  void update(const animated_scene& scene);
  //! The indices after a load(), and room for the vertices: before an interop_mapping that holds
  //! the vertex buffer maps it (growing it is refused while held).
  void prepare(const animated_scene& scene);
  //! Copies the scene's current vertices into the vertex buffer (mapped by itself, or through an
  //! interop_mapping that holds it). Stream-ordered.
  void write(const animated_scene& scene);
  //! Adds the vertex buffer to `maps`, so that write() maps nothing of its own.
  void hold_in(interop_mapping& maps) { maps.add(vertices_); }
  void draw(const glm::mat4& view, const glm::mat4& projection);

 private:
  context* ctx_;
  shared_buffer<vec3> vertices_;
  gl_buffer indices_;
  std::size_t triangles_ = 0;
  std::uint64_t topology_ = ~std::uint64_t(0);
  mesh_renderer renderer_;
};

}  // namespace canopy::app
