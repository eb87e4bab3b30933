// canopy-viewer, structure part: the BVH over the scene, rebuilt or refitted every frame, and its
// node boxes written by a kernel straight into GL buffers for drawing.
#pragma once

#include <canopy/app/interop.hpp>
#include <canopy/app/renderers.hpp>
#include <canopy/app/scene.hpp>
#include <canopy/structures/bvh.hpp>

#include <glm/glm.hpp>

#include <cstdint>
#include <memory>

namespace viewer {

class structure_part {
 public:
  explicit structure_part(canopy::context& ctx);

  //! Builds (or refits, when `refit` and the topology is unchanged since the last build) the tree
  //! over the scene's current vertices. Builder stages go to `timer`. Stream-ordered.
  void update(const canopy::app::animated_scene& scene, bool refit, bool treelet, canopy::stage_timer* timer);
  //! Writes the boxes of nodes with depth in [min_depth, max_depth] into the GL buffers and the
  //! instance count into the indirect draw command, on the device; no count reaches the host.
  void emit_boxes(int min_depth, int max_depth);
  //! Adds the box, depth and draw-command buffers to `maps` (after update(), which sizes them), so
  //! that emit_boxes() maps nothing of its own.
  void hold_in(canopy::app::interop_mapping& maps) { maps.add(boxes_).add(depths_).add(indirect_); }
  void draw(const glm::mat4& view_projection, float alpha);

  const canopy::bvh_builder& builder() const { return *builder_; }
  //! Rebuilds last frame (false: refitted).
  bool last_was_build() const noexcept { return last_was_build_; }

 private:
  canopy::context* ctx_;
  std::unique_ptr<canopy::bvh_builder> builder_;
  bool treelet_ = false;
  std::uint64_t built_topology_ = ~std::uint64_t(0);
  bool last_was_build_ = true;
  canopy::app::shared_buffer<canopy::aabb> boxes_;
  canopy::app::shared_buffer<std::uint32_t> depths_;
  canopy::app::shared_buffer<std::uint32_t> indirect_;
  canopy::app::box_renderer renderer_;
};

}  // namespace viewer
