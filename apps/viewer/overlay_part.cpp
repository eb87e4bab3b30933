#include "overlay_part.hpp"

#include <imgui.h>

#include <cmath>
#include <cstdio>

namespace viewer {

namespace {
std::string count_text(double n) {
  char buf[32];
  if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}
}  // namespace

overlay_requests overlay_part::draw(settings& s, std::size_t triangles, const shown_statistics& stats,
                                    const canopy::app::timing_history& history, bool last_was_build) {
  overlay_requests req;
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
  // Small windows start with the panel folded, so the view stays visible.
  ImGui::SetNextWindowCollapsed(ImGui::GetIO().DisplaySize.x < 1000.0f, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSizeConstraints(ImVec2(330, 0), ImVec2(330, 10000));
  ImGui::Begin("canopy-viewer", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
  ImGui::TextWrapped("%s", backend_.c_str());
  ImGui::TextWrapped("GL: %s", renderer_.c_str());
  ImGui::Separator();

  int scene = s.scene == canopy::app::scene_kind::wave_sphere ? 0 : 1;
  if (ImGui::Combo("scene", &scene, "wave sphere\0bunnies\0")) {
    s.scene = scene == 0 ? canopy::app::scene_kind::wave_sphere : canopy::app::scene_kind::bunnies;
    req.reload_scene = true;
  }
  if (triangles_log2_ < 0) triangles_log2_ = int(std::lround(std::log2(double(std::max<std::size_t>(s.triangles, 1)))));
  const std::string label = count_text(std::ldexp(1.0, triangles_log2_));
  ImGui::SliderInt("triangles", &triangles_log2_, 10, 23, label.c_str());
  if (ImGui::IsItemDeactivatedAfterEdit()) {
    s.triangles = std::size_t(1) << triangles_log2_;
    req.reload_scene = true;
  }
  ImGui::Text("%s triangles in the scene", count_text(double(triangles)).c_str());

  ImGui::Separator();
  int mode = s.refit ? 1 : 0;
  ImGui::RadioButton("rebuild", &mode, 0);
  ImGui::SameLine();
  ImGui::RadioButton("refit", &mode, 1);
  s.refit = mode == 1;
  if (s.refit) {
    ImGui::SetNextItemWidth(120);
    ImGui::SliderInt("rebuild every", &s.rebuild_every, 0, 240, s.rebuild_every ? "%d frames" : "never");
    ImGui::Text("this frame: %s", last_was_build ? "built" : "refitted");
  }
  ImGui::Checkbox("treelet restructuring", &s.treelet);

  ImGui::Separator();
  ImGui::Checkbox("boxes", &s.show_boxes);
  if (s.show_boxes) {
    const int deepest = stats.valid ? int(stats.stats.max_depth) : 64;
    ImGui::DragIntRange2("depths", &s.min_depth, &s.max_depth, 0.1f, 0, deepest);
    ImGui::SliderFloat("box opacity", &s.box_alpha, 0.1f, 1.0f);
  }
  int view = int(s.view);
  ImGui::Combo("layout", &view, "raster | ray-cast\0raster\0ray-cast\0");
  s.view = layout(view);
  if (s.view != layout::raster) {
    int divisor_index = s.raycast_divisor == 4 ? 2 : s.raycast_divisor == 2 ? 1 : 0;
    if (ImGui::Combo("ray-cast resolution", &divisor_index, "full\0half\0quarter\0"))
      s.raycast_divisor = 1 << divisor_index;
  }
  ImGui::Checkbox("pause", &s.paused);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(100);
  ImGui::SliderFloat("speed", &s.speed, 0.0f, 4.0f);
  ImGui::SetNextItemWidth(100);
  ImGui::SliderFloat("orbit", &s.spin, -1.0f, 1.0f);
  ImGui::SameLine();
  if (ImGui::Checkbox("vsync", &s.vsync)) req.vsync_changed = true;

  ImGui::Separator();
  if (stats.valid) {
    ImGui::Text("nodes %zu  leaves %zu  depth %zu", stats.stats.node_count, stats.stats.leaf_count,
                stats.stats.max_depth);
    ImGui::Text("SAH cost %.2f  mean leaf depth %.1f", stats.stats.sah_cost, stats.stats.average_leaf_depth);
    if (stats.stats.invalid_primitives) ImGui::Text("excluded primitives %zu", stats.stats.invalid_primitives);
    ImGui::TextDisabled("(of frame %llu; reading them synchronises)", static_cast<unsigned long long>(stats.frame));
  }
  if (ImGui::Button("refresh statistics")) req.refresh_statistics = true;
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("drag: orbit, right-drag: pan, wheel: zoom, F: fly mode (right-drag: look, WASDQE: move)");
  ImGui::PopTextWrapPos();
  ImGui::End();

  canopy::app::draw_timing_panel(history, {});
  return req;
}

}  // namespace viewer
