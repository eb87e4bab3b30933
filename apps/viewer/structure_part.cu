#include "structure_part.hpp"

#include <canopy/core/for_each.hpp>

#include <algorithm>

namespace viewer {

namespace {

// Completes GL's DrawArraysIndirectCommand after bvh_node_boxes() wrote the node count into
// word 1: 24 line vertices per box, the count clamped to the boxes the buffers hold.
struct finish_indirect {
  canopy::span<std::uint32_t> command;
  std::uint32_t capacity;
  CANOPY_HD void operator()(std::size_t) const {
    command[0] = 24;
    command[1] = command[1] < capacity ? command[1] : capacity;
    command[2] = 0;
    command[3] = 0;
  }
};

canopy::bvh_build_options options_for(bool treelet) {
  canopy::bvh_build_options o;
  o.quality = treelet ? canopy::bvh_quality::treelet : canopy::bvh_quality::none;
  return o;
}

}  // namespace

structure_part::structure_part(canopy::context& ctx)
    : ctx_(&ctx),
      builder_(std::make_unique<canopy::bvh_builder>(ctx, options_for(false))),
      boxes_(ctx),
      depths_(ctx),
      indirect_(ctx) {
  indirect_.reserve(4);
}

void structure_part::update(const canopy::app::animated_scene& scene, bool refit, bool treelet,
                            canopy::stage_timer* timer) {
  if (treelet != treelet_) {
    // A new quality setting needs a builder with other options; the old one's memory goes back.
    builder_ = std::make_unique<canopy::bvh_builder>(*ctx_, options_for(treelet));
    treelet_ = treelet;
    built_topology_ = ~std::uint64_t(0);
  }
  if (refit && built_topology_ == scene.topology_version()) {
    builder_->refit_triangles(scene.vertices(), scene.indices(), timer);
    last_was_build_ = false;
  } else {
    builder_->build_triangles(scene.vertices(), scene.indices(), timer);
    built_topology_ = scene.topology_version();
    last_was_build_ = true;
  }
  boxes_.reserve(std::max<std::size_t>(builder_->node_count(), 1));
  depths_.reserve(std::max<std::size_t>(builder_->node_count(), 1));
}

void structure_part::emit_boxes(int min_depth, int max_depth) {
  canopy::span<canopy::aabb> boxes = boxes_.map();
  canopy::span<std::uint32_t> depths = depths_.map();
  canopy::span<std::uint32_t> command = indirect_.map();
  const std::uint32_t capacity = std::uint32_t(std::min(boxes.size(), depths.size()));
  canopy::bvh_node_boxes(*ctx_, builder_->view(), std::uint32_t(std::max(min_depth, 0)),
                         std::uint32_t(std::max(max_depth, 0)), boxes.first(capacity), depths.first(capacity),
                         command.subspan(1, 1));
  canopy::for_each(*ctx_, 1, finish_indirect{command, capacity});
  // On the host the count is readable now (host for_each has finished); on CUDA unmap ignores it.
  const std::size_t written = ctx_->is_cuda() ? 0 : command[1];
  boxes_.unmap(written);
  depths_.unmap(written);
  indirect_.unmap(4);
}

void structure_part::draw(const glm::mat4& view_projection, float alpha) {
  renderer_.draw(boxes_.gl_name(), depths_.gl_name(), indirect_.gl_name(), view_projection, alpha);
}

}  // namespace viewer
