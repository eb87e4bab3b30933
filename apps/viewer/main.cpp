// canopy-viewer — every frame: deform the scene, rebuild (or refit) its BVH, draw the nodes of a
// depth range, ray-cast the scene through the BVH, show per-stage timings.
//
// Parts (apps/README.md): scene (canopy::app::animated_scene), structure (structure_part: the
// BVH and its boxes), view (mesh_view raster + raycast_part image, into a render_target) and
// overlay (overlay_part). On CUDA all per-frame data stays on the device: boxes and pixels reach
// GL through CUDA-GL interop; on the host backend the same calls upload with plain GL.
//
//   canopy-viewer [--backend host|cuda] [--scene wave-sphere|bunnies] [--triangles N] ...
//   canopy-viewer --headless --frames 60 --screenshot out.png --timings out.json
#include "overlay_part.hpp"
#include "raycast_part.hpp"
#include "settings.hpp"
#include "structure_part.hpp"

#include <canopy/app/camera.hpp>
#include <canopy/app/image_io.hpp>
#include <canopy/app/mesh_view.hpp>
#include <canopy/app/palette.hpp>
#include <canopy/app/platform.hpp>
#include <canopy/app/timings.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/timer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace app = canopy::app;

namespace {

//! Where the raster view and the ray-cast image go in a W x H framebuffer (GL: y up).
struct viewports {
  int raster_x, raster_w;    // raster_w == 0: no raster view
  int raycast_x, raycast_w;  // raycast_w == 0: no ray casting
  int height;
};

viewports place(viewer::layout l, int width, int height) {
  switch (l) {
    case viewer::layout::raster: return {0, width, 0, 0, height};
    case viewer::layout::raycast: return {0, 0, 0, width, height};
    case viewer::layout::split:
    default: {
      // Both halves the same size, so the two images sample the same rays.
      const int half = std::max(width / 2, 1);
      return {0, half, width - half, half, height};
    }
  }
}

void write_depth_dump(const std::string& prefix, const app::render_target& target, const viewports& vp,
                      const app::camera& cam, const viewer::raycast_part& raycast) {
  canopy::require(vp.raster_w > 0 && vp.raycast_w == vp.raster_w && raycast.width() == vp.raster_w,
                  "canopy-viewer", "--depth-dump",
                  "needs --layout split and --raycast-divisor 1 (both images at the same size)");
  const std::vector<float> window_depth = target.read_depth();
  std::vector<float> raster(std::size_t(vp.raster_w) * vp.height);
  for (int y = 0; y < vp.height; ++y)
    for (int x = 0; x < vp.raster_w; ++x)
      raster[std::size_t(y) * vp.raster_w + x] =
          cam.linear_depth(window_depth[std::size_t(y) * target.width() + vp.raster_x + x]);
  app::write_pfm(prefix + "-raster.pfm", vp.raster_w, vp.height, raster);
  app::write_pfm(prefix + "-raycast.pfm", raycast.width(), raycast.height(), raycast.depth_to_host());
}

}  // namespace

int main(int argc, char** argv) try {
  viewer::settings s;
  const app::app_options options = app::parse_options(
      argc, argv, viewer::settings::usage(),
      [&](const std::string& flag, const app::next_arg& next) { return s.parse(flag, next); });

  // GL first: CUDA-GL interop registers GL objects of the current context.
  app::platform window(options, "canopy-viewer");
  canopy::context ctx(canopy::context_options{options.backend});
  if (s.triangles == 0) s.triangles = ctx.is_cuda() ? std::size_t(1) << 20 : std::size_t(1) << 16;
  if (s.raycast_divisor == 0) s.raycast_divisor = ctx.is_cuda() ? 1 : 2;

  app::animated_scene scene(ctx);
  viewer::structure_part structure(ctx);
  app::mesh_view raster(ctx);
  viewer::raycast_part raycast(ctx);
  app::render_target target;
  app::camera camera;
  viewer::overlay_part overlay(ctx.description(), window.renderer());
  canopy::stage_timer timer(ctx);
  app::gpu_timer raster_timer;
  app::timing_history history;
  app::timing_log log;
  viewer::shown_statistics stats;
  app::frame_recorder recorder;

  auto load_scene = [&] {
    scene.load(s.scene, s.triangles);
    const canopy::aabb b = scene.bounds();
    const canopy::vec3 c = canopy::centroid(b), e = canopy::extent(b);
    camera.frame(glm::vec3(c.x, c.y, c.z), 0.5f * std::sqrt(canopy::length_squared(e)));
    stats.valid = false;
    history.clear();
  };
  load_scene();
  std::printf("canopy-viewer: %s, %s, %zu triangles\ncanopy-viewer: GL %s\n", ctx.description().c_str(),
              app::to_string(s.scene), scene.triangle_count(), window.renderer().c_str());
  window.set_vsync(s.vsync);

  float seconds = 0.0f;
  viewports vp{};
  while (window.next_frame()) {
    recorder.begin_frame();
    const std::uint64_t frame = std::uint64_t(window.frame() - 1);
    const float dt = float(window.delta_seconds());
    camera.update_from_input(dt);
    camera.orbit(s.spin * dt, 0.0f);
    if (!s.paused) seconds += s.speed * dt;
    vp = place(s.view, window.width(), window.height());
    const bool rebuild_due = !s.refit || (s.rebuild_every > 0 && frame % std::uint64_t(s.rebuild_every) == 0);

    // Compute, all on ctx's stream: scene -> structure -> boxes -> ray cast -> GL.
    timer.begin_frame();
    {
      auto stage = timer.scope("animate");
      scene.animate(seconds);
    }
    {
      auto stage = timer.scope("bvh");
      structure.update(scene, !rebuild_due, s.treelet, &timer);
    }
    // Everything kernels write for GL this frame is mapped by one interop_mapping, in one call
    // (at the first stage that writes) and unmapped in one: each map or unmap waits on GL and
    // costs frame time (apps/README.md). What it holds must be sized before it maps.
    const bool boxes = s.show_boxes && vp.raster_w > 0;
    const int d = s.raycast_divisor;
    const int trace_w = std::max(vp.raycast_w / d, 1), trace_h = std::max(vp.height / d, 1);
    raster.prepare(scene);
    if (vp.raycast_w > 0) raycast.prepare(trace_w, trace_h);
    app::interop_mapping maps;
    raster.hold_in(maps);
    if (boxes) structure.hold_in(maps);
    if (vp.raycast_w > 0) raycast.hold_in(maps);
    if (boxes) {
      auto stage = timer.scope("boxes");
      maps.map();
      structure.emit_boxes(s.min_depth, s.max_depth);
    }
    if (vp.raycast_w > 0) {
      auto stage = timer.scope("raycast");
      raycast.trace(structure.builder().view(), scene, camera.rays(trace_w, trace_h));
    }
    {
      auto stage = timer.scope("to GL");
      if (!maps.mapped()) maps.map();
      raster.write(scene);
      if (vp.raycast_w > 0) raycast.upload();
      maps.unmap();
    }
    timer.end_frame();

    // Draw into the offscreen target: raster view (+ boxes) and the ray-cast image.
    target.resize(window.width(), window.height());
    target.bind();
    target.clear(app::background_colour[0] / 255.0f, app::background_colour[1] / 255.0f,
                 app::background_colour[2] / 255.0f, 1.0f);
    raster_timer.begin();
    if (vp.raster_w > 0) {
      glViewport(vp.raster_x, 0, vp.raster_w, vp.height);
      const glm::mat4 view = camera.view(), projection = camera.projection(float(vp.raster_w) / float(vp.height));
      raster.draw(view, projection);
      if (s.show_boxes) structure.draw(projection * view, s.box_alpha);
    }
    if (vp.raycast_w > 0) raycast.draw(vp.raycast_x, 0, vp.raycast_w, vp.height);
    raster_timer.end();

    const viewer::overlay_requests req =
        overlay.draw(s, scene.triangle_count(), stats, history, structure.last_was_build());
    if (int(frame) + 1 == options.frames && !options.screenshot.empty())
      window.request_screenshot(options.screenshot);
    window.present(target);

    // Windowed runs with --timings log the frames whose timings completed.
    recorder.end_frame(frame, window.headless(), timer, raster_timer, history, options.timings.empty() ? nullptr : &log);
    if (!stats.valid || (!window.headless() && frame - stats.frame >= 120)) {
      stats.stats = structure.builder().statistics();  // synchronises
      stats.frame = frame;
      stats.valid = true;
    }

    if (req.vsync_changed) window.set_vsync(s.vsync);
    if (req.refresh_statistics) stats.valid = false;
    if (req.reload_scene) load_scene();
  }

  if (window.headless() || !options.timings.empty() || !options.screenshot.empty()) {
    stats.stats = structure.builder().statistics();
    if (!s.depth_dump.empty()) write_depth_dump(s.depth_dump, target, vp, camera, raycast);
    std::printf("canopy-viewer: %d frames, %zu nodes, depth %zu, SAH cost %.3f\n", options.frames,
                stats.stats.node_count, stats.stats.max_depth, stats.stats.sah_cost);
    double wall = 0;
    for (const app::frame_record& r : log.records()) wall += r.wall_ms;
    const double mean = log.records().empty() ? history.mean("wall") : wall / double(log.records().size());
    std::printf("canopy-viewer: mean frame %.3f ms (%.1f fps%s)\n", mean, mean > 0 ? 1000.0 / mean : 0.0,
                window.headless() ? ", headless, waiting for each frame" : "");
    for (const std::string& name : history.stage_names())
      std::printf("  %-14s %9.3f ms\n", name.c_str(), history.mean(name));
    if (!options.timings.empty()) {
      log.set_info("scene", app::to_string(s.scene));
      log.set_info("triangles", std::to_string(scene.triangle_count()));
      log.set_info("mode", s.refit ? "refit" : "rebuild");
      log.set_info("treelet", s.treelet ? "on" : "off");
      log.set_info("size", std::to_string(window.width()) + "x" + std::to_string(window.height()));
      log.set_info("nodes", std::to_string(stats.stats.node_count));
      log.set_info("max_depth", std::to_string(stats.stats.max_depth));
      log.set_info("sah_cost", std::to_string(stats.stats.sah_cost));
      log.write_json(options.timings, "canopy-viewer", canopy::to_string(ctx.backend_kind()), ctx.description(),
                     window.renderer());
      std::printf("canopy-viewer: timings -> %s\n", options.timings.c_str());
    }
    if (!options.screenshot.empty()) std::printf("canopy-viewer: screenshot -> %s\n", options.screenshot.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "canopy-viewer: %s\n", e.what());
  return 1;
}
