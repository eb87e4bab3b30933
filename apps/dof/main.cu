// canopy-dof — every frame: render an animated scene with depth variety into colour + depth,
// build summed-area tables of it and blur it with SAT depth of field, show the result.
//
// Parts: scene (canopy::app::animated_scene drawn as several copies at different distances),
// capture (colour + linear depth from the GL render target into canopy buffers: app::texture_reader
// copies the colour texture and the target's depth copy, under one app::interop_mapping a frame
// with the shown image; on CUDA never through the host), depth of field
// (canopy::depth_of_field), view (final / raw / CoC map, uploaded with shared_image) and overlay.
//
//   canopy-dof [--backend host|cuda] [--focus M] [--f-number N] [--focal-length MM] [--kernel box|polygon]
//   canopy-dof --headless --frames 60 --screenshot out.png --timings out.json
// Click (without dragging) on the image to focus there; drag to orbit.
#include <canopy/app/camera.hpp>
#include <canopy/app/gl.hpp>
#include <canopy/app/image_io.hpp>
#include <canopy/app/interop.hpp>
#include <canopy/app/mesh_view.hpp>
#include <canopy/app/options.hpp>
#include <canopy/app/platform.hpp>
#include <canopy/app/renderers.hpp>
#include <canopy/app/scene.hpp>
#include <canopy/app/timings.hpp>
#include <canopy/core/buffer.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/timer.hpp>
#include <canopy/structures/dof.hpp>

#include <glm/gtc/matrix_transform.hpp>
#include <imgui.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace app = canopy::app;

namespace {

enum class view_kind : int { final_image = 0, raw = 1, coc_map = 2 };

struct settings {
  canopy::dof_options dof;
  view_kind view = view_kind::final_image;
  float spin = 0.15f;  // radians per second
  bool paused = false;
  static const char* usage() {
    return "canopy-dof [--focus M] [--f-number N] [--focal-length MM] [--kernel box|polygon] [--max-radius R]\n"
           "           [--view final|raw|coc] [--classic]";
  }
  bool parse(const std::string& flag, const app::next_arg& next) {
    if (flag == "--focus") dof.lens.focus_distance_m = app::parse_float(next(), "--focus");
    else if (flag == "--f-number") dof.lens.f_number = app::parse_float(next(), "--f-number");
    else if (flag == "--focal-length") dof.lens.focal_length_mm = app::parse_float(next(), "--focal-length");
    else if (flag == "--max-radius") dof.max_radius = int(app::parse_positive(next(), "--max-radius"));
    else if (flag == "--classic") dof.near_field = dof.far_weighting = false;
    else if (flag == "--kernel") {
      const std::string k = next();
      canopy::require(k == "box" || k == "polygon", "canopy-dof", "--kernel", "must be box or polygon, got '" + k + "'");
      dof.kernel = k == "box" ? canopy::dof_kernel::box : canopy::dof_kernel::polygon;
    } else if (flag == "--view") {
      const std::string v = next();
      canopy::require(v == "final" || v == "raw" || v == "coc", "canopy-dof", "--view", "must be final, raw or coc, got '" + v + "'");
      view = v == "final" ? view_kind::final_image : v == "raw" ? view_kind::raw : view_kind::coc_map;
    } else {
      return false;
    }
    return true;
  }
};

// Copies of the scene along the view axis: (x offset, z offset, scale), in scene radii.
constexpr std::array<std::array<float, 3>, 6> placements = {{
    {-1.2f, 3.0f, 0.9f}, {1.5f, 0.0f, 1.2f}, {-2.6f, -3.5f, 1.4f}, {3.2f, -6.5f, 1.7f}, {-4.0f, -10.0f, 2.0f}, {4.5f, -13.0f, 2.4f}}};

//! GL rows are bottom first; canopy images top first. Also turns window depth into view depth
//! (+inf for the background: depth_of_field takes it as infinitely far).
struct capture_pixels {
  const std::uint32_t* gl_colour;
  const float* gl_depth;
  std::uint32_t* colour;
  float* depth;
  int width, height;
  float near_plane, far_plane;
  float metres;  // per scene unit
  CANOPY_HD void operator()(std::size_t i) const {
    const int x = int(i % std::size_t(width)), y = int(i / std::size_t(width));
    const std::size_t src = std::size_t(height - 1 - y) * std::size_t(width) + std::size_t(x);
    colour[i] = gl_colour[src] | 0xff000000u;
    depth[i] = app::linear_depth(gl_depth[src], near_plane, far_plane) * metres;
  }
};

//! CoC map: blue in front of the focus plane, orange behind, brightness by |CoC| / (2 max radius).
struct coc_colours {
  const float* coc;
  std::uint32_t* out;
  float scale;
  CANOPY_HD void operator()(std::size_t i) const {
    const float c = coc[i];
    float t = (c < 0 ? -c : c) * scale;
    t = t > 1.0f ? 1.0f : t;
    const unsigned v = unsigned(255.0f * t);
    const unsigned focus = (c < 1.0f && c > -1.0f) ? 255u : 0u;  // in focus: white
    if (focus) {
      out[i] = 0xffffffffu;
      return;
    }
    // R in the low byte: near = blue, far = orange.
    out[i] = c < 0 ? (0xff000000u | (v << 16) | ((v / 2) << 8)) : (0xff000000u | ((v / 4) << 16) | ((v * 3 / 5) << 8) | v);
  }
};

//! Reads the render target's colour and depth into canopy buffers in the context's space: two
//! app::texture_readers copy the colour texture and the target's depth copy (GL rows) under the
//! frame's app::interop_mapping, one for_each flips and linearises them. On CUDA they never pass
//! through the host, nor through GL's glReadPixels, which took 2.25 ms of GL time on an H200 at 4K
//! (apps/README.md).
//! The target must have a depth copy (render_target::resize(w, h, true)).
class capture_part {
 public:
  capture_part(canopy::context& ctx, float metres_per_unit)
      : ctx_(&ctx), colour_(ctx, 0), depth_(ctx, 0), gl_colour_(ctx, 0), gl_depth_(ctx, 0), colour_reader_(ctx),
        depth_reader_(ctx), metres_(metres_per_unit) {}

  //! Attaches the readers to `target` (again whenever it was reallocated) and sizes the buffers.
  //! Before the frame's interop_mapping maps: attach() is refused while a reader is held.
  void prepare(const app::render_target& target) {
    w_ = target.width();
    h_ = target.height();
    const std::size_t n = std::size_t(w_) * std::size_t(h_);
    if (target.generation() != generation_) {
      colour_reader_.attach(target.color_texture(), GL_RGBA8, w_, h_);
      depth_reader_.attach(target.depth_copy_texture(), GL_R32F, w_, h_);
      generation_ = target.generation();
    }
    colour_.resize_discard(n);
    depth_.resize_discard(n);
    gl_colour_.resize_discard(n);
    gl_depth_.resize_discard(n);
  }
  //! The readers, for the frame's interop_mapping.
  app::texture_reader& colour_reader() { return colour_reader_; }
  app::texture_reader& depth_reader() { return depth_reader_; }
  //! Copies colour and depth out of the prepared target's textures and turns them into canopy's
  //! layout (top row first, view depth).
  void capture(const app::camera& cam) {
    colour_reader_.read(gl_colour_.view());
    depth_reader_.read(gl_depth_.view());
    canopy::for_each(*ctx_, std::size_t(w_) * std::size_t(h_),
                     capture_pixels{gl_colour_.data(), gl_depth_.data(), colour_.data(), depth_.data(), w_, h_,
                                    cam.near_plane(), cam.far_plane(), metres_});
  }
  canopy::span<const std::uint32_t> colour() const { return colour_.view(); }
  canopy::span<const float> depth() const { return depth_.view(); }
  //! The window depth as read from the target's depth copy, GL rows (bottom first).
  canopy::span<const float> window_depth() const { return gl_depth_.view(); }
  //! Linear depth of one pixel (x right, y down; +inf on the background); synchronises. For
  //! click-to-focus only.
  float depth_at(int x, int y, int width) const {
    float d = 0;
    canopy::copy(*ctx_, depth_.view().subspan(std::size_t(y) * std::size_t(width) + std::size_t(x), 1),
                 canopy::host_span(&d, 1));
    ctx_->synchronize();
    return d;
  }

 private:
  canopy::context* ctx_;
  canopy::buffer<std::uint32_t> colour_;
  canopy::buffer<float> depth_;
  canopy::buffer<std::uint32_t> gl_colour_;  // GL's rows, bottom first
  canopy::buffer<float> gl_depth_;
  app::texture_reader colour_reader_, depth_reader_;
  std::uint64_t generation_ = 0;  // of the target the readers are attached to (render_target counts from 1)
  int w_ = 0, h_ = 0;
  float metres_;
};

void draw_controls(settings& s, const std::string& device) {
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
  ImGui::Begin("depth of field");
  ImGui::TextUnformatted(device.c_str());
  ImGui::SliderFloat("focus (m)", &s.dof.lens.focus_distance_m, 0.3f, 40.0f, "%.2f", ImGuiSliderFlags_Logarithmic);
  ImGui::SliderFloat("f-number", &s.dof.lens.f_number, 0.7f, 22.0f, "f/%.1f", ImGuiSliderFlags_Logarithmic);
  ImGui::SliderFloat("focal length (mm)", &s.dof.lens.focal_length_mm, 18.0f, 200.0f, "%.0f");
  ImGui::SliderInt("max radius (px)", &s.dof.max_radius, 0, 64);
  int kernel = int(s.dof.kernel);
  ImGui::RadioButton("box", &kernel, 0);
  ImGui::SameLine();
  ImGui::RadioButton("polygon (round bokeh)", &kernel, 1);
  s.dof.kernel = canopy::dof_kernel(kernel);
  ImGui::Checkbox("near layer (soft foreground)", &s.dof.near_field);
  ImGui::Checkbox("CoC weights (no in-focus leak)", &s.dof.far_weighting);
  int view = int(s.view);
  ImGui::RadioButton("final", &view, 0);
  ImGui::SameLine();
  ImGui::RadioButton("raw", &view, 1);
  ImGui::SameLine();
  ImGui::RadioButton("CoC map", &view, 2);
  s.view = view_kind(view);
  ImGui::SliderFloat("spin", &s.spin, 0.0f, 1.0f);
  ImGui::Checkbox("pause", &s.paused);
  ImGui::TextUnformatted("click the image to focus there");
  ImGui::End();
}


}  // namespace

int main(int argc, char** argv) try {
  settings s;
  s.dof.lens.focal_length_mm = 135.0f;
  s.dof.lens.focus_distance_m = -1.0f;  // auto: the camera's target
  s.dof.lens.f_number = 1.4f;
  const app::app_options options = app::parse_options(
      argc, argv, settings::usage(), [&](const std::string& flag, const app::next_arg& next) { return s.parse(flag, next); });

  app::platform window(options, "canopy-dof");  // GL first: interop registers objects of its context
  canopy::context ctx(canopy::context_options{options.backend});
  app::animated_scene scene(ctx);
  scene.load(app::scene_kind::wave_sphere, ctx.is_cuda() ? 200000 : 20000);
  app::mesh_view raster(ctx, true);  // writes the depth copy that the capture reads
  app::render_target target, display;
  app::camera cam;
  const canopy::aabb b = scene.bounds();
  const canopy::vec3 e = canopy::extent(b);
  const float radius = 0.5f * std::sqrt(canopy::length_squared(e));
  const canopy::vec3 c = canopy::centroid(b);
  // Frame the row of copies (centre 4 radii behind the first sphere), focus on the frame's centre
  // unless --focus was given. One scene radius counts as one metre for the lens.
  const glm::vec3 centre(c.x, c.y, c.z - 4.0f * radius);
  cam.frame(centre, 4.0f * radius);
  if (s.dof.lens.focus_distance_m <= 0.0f) s.dof.lens.focus_distance_m = glm::length(cam.position() - centre) / radius;
  capture_part capture(ctx, 1.0f / radius);
  canopy::depth_of_field dof(ctx);
  canopy::buffer<std::uint32_t> blurred(ctx, 0), coc_view(ctx, 0);
  app::shared_image shown(ctx);
  // One map and one unmap a frame for every texture CUDA touches after the raster (colour and depth
  // read, the shown image written): each map or unmap waits on GL and costs frame time (three
  // map/unmap pairs made a 4K frame 0.65 ms longer on an H200, apps/README.md).
  app::interop_mapping maps;
  maps.add(capture.colour_reader()).add(capture.depth_reader()).add(shown);
  app::image_renderer image;
  canopy::stage_timer timer(ctx);
  app::gpu_timer raster_timer;
  app::timing_history history;
  app::timing_log log;
  app::frame_recorder recorder;
  std::printf("canopy-dof: %s\ncanopy-dof: GL %s\n", ctx.description().c_str(), window.renderer().c_str());

  float seconds = 0.0f;
  ImVec2 press{0, 0};
  while (window.next_frame()) {
    recorder.begin_frame();
    const std::uint64_t frame = std::uint64_t(window.frame() - 1);
    const float dt = float(window.delta_seconds());
    cam.update_from_input(dt);
    if (!s.paused) {
      cam.orbit(s.spin * dt * 0.3f, 0.0f);
      seconds += dt;
    }
    const int w = window.width(), h = window.height();
    const std::size_t n = std::size_t(w) * std::size_t(h);

    timer.begin_frame();
    {
      auto stage = timer.scope("animate");
      scene.animate(seconds);
      raster.update(scene);
    }
    target.resize(w, h, true);
    target.bind();
    target.clear(0.55f, 0.62f, 0.72f, 1.0f);
    raster_timer.begin();
    const glm::mat4 view = cam.view(), projection = cam.projection(float(w) / float(h));
    for (const auto& p : placements) {
      const glm::mat4 model = glm::scale(glm::translate(glm::mat4(1.0f), glm::vec3(p[0] * radius, 0.0f, p[1] * radius)),
                                         glm::vec3(p[2]));
      raster.draw(view * model, projection);
    }
    raster_timer.end();
    capture.prepare(target);
    shown.resize(w, h);
    {
      auto stage = timer.scope("capture");
      maps.map();
      capture.capture(cam);
    }
    blurred.resize_discard(n);
    dof.apply(capture.colour(), capture.depth(), w, h, blurred.view(), s.dof, &timer);
    canopy::span<const std::uint32_t> shown_pixels = blurred.view();
    if (s.view == view_kind::raw) {
      shown_pixels = capture.colour();
    } else if (s.view == view_kind::coc_map) {
      coc_view.resize_discard(n);
      canopy::for_each(ctx, n, coc_colours{dof.coc().data(), coc_view.data(), 0.5f / float(std::max(1, s.dof.max_radius))});
      shown_pixels = coc_view.view();
    }
    {
      auto stage = timer.scope("to GL");
      shown.upload(shown_pixels);
      maps.unmap();  // GL draws `shown` next
    }
    timer.end_frame();

    display.resize(w, h);
    display.bind();
    glViewport(0, 0, w, h);
    image.draw(shown.gl_name(), 0, 0, w, h, true);

    // Click without dragging: focus at that pixel.
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantCaptureMouse && ImGui::IsMouseClicked(0)) press = io.MousePos;
    if (!io.WantCaptureMouse && ImGui::IsMouseReleased(0)) {
      const float dx = io.MousePos.x - press.x, dy = io.MousePos.y - press.y;
      const int px = int(io.MousePos.x * float(w) / std::max(1.0f, io.DisplaySize.x));
      const int py = int(io.MousePos.y * float(h) / std::max(1.0f, io.DisplaySize.y));
      if (dx * dx + dy * dy < 9.0f && px >= 0 && py >= 0 && px < w && py < h) {
        const float d = capture.depth_at(px, py, w);
        if (d > 0.0f && std::isfinite(d)) s.dof.lens.focus_distance_m = std::max(d, s.dof.lens.focal_length_mm * 2e-3f);
      }
    }

    draw_controls(s, ctx.description());
    std::vector<std::pair<std::string, std::string>> facts = {
        {"image", std::to_string(w) + " x " + std::to_string(h)},
        {"focus", std::to_string(s.dof.lens.focus_distance_m) + " m"}};
    if (const app::frame_record* r = history.newest()) {
      double sat = 0, filter = 0;
      for (const auto& st : r->stages) {
        if (st.first == "dof.sat") sat = st.second;
        if (st.first == "dof.filter") filter = st.second;
      }
      char line[96];
      std::snprintf(line, sizeof line, "SAT %.3f ms  filter %.3f ms  frame %.3f ms", sat, filter, r->wall_ms);
      facts.emplace_back("dof", line);
    }
    app::draw_timing_panel(history, facts);
    if (window.headless() && int(frame) + 1 == options.frames && !options.screenshot.empty())
      window.request_screenshot(options.screenshot);
    window.present(display);

    recorder.end_frame(frame, window.headless(), timer, raster_timer, history, window.headless() ? &log : nullptr);
  }

  if (window.headless()) {
    std::printf("canopy-dof: %d frames at %dx%d\n", options.frames, window.width(), window.height());
    for (const std::string& name : history.stage_names())
      std::printf("  %-14s %9.3f ms\n", name.c_str(), history.mean(name));
    if (!options.timings.empty()) {
      log.set_info("size", std::to_string(window.width()) + "x" + std::to_string(window.height()));
      log.set_info("kernel", s.dof.kernel == canopy::dof_kernel::box ? "box" : "polygon");
      log.set_info("f_number", std::to_string(s.dof.lens.f_number));
      log.set_info("focus_m", std::to_string(s.dof.lens.focus_distance_m));
      log.write_json(options.timings, "canopy-dof", canopy::to_string(ctx.backend_kind()), ctx.description(), window.renderer());
    }
    // Self-check of the last frame. The capture: its colour is the target's (read back by GL) and
    // its window depth, through the depth copy, is the depth buffer's, bit for bit. The blur:
    // pixels in focus that no near-field blur reaches are unchanged, and some pixels are blurred.
    const int w = window.width(), h = window.height();
    const std::vector<std::uint8_t> gl_rgba = target.read_rgba();  // top row first, as the capture
    const std::vector<float> gl_depth = target.read_depth();
    std::vector<float> copied_depth(gl_depth.size());
    canopy::copy(ctx, capture.window_depth(), canopy::host_span(copied_depth.data(), copied_depth.size()));
    std::vector<std::uint32_t> raw(std::size_t(w) * h), out(raw.size());
    std::vector<float> coc(raw.size()), reach(std::size_t(dof.tiles_x()) * std::size_t(dof.tiles_y()));
    canopy::copy(ctx, capture.colour(), canopy::host_span(raw.data(), raw.size()));
    canopy::copy(ctx, canopy::span<const std::uint32_t>(blurred.view()), canopy::host_span(out.data(), out.size()));
    canopy::copy(ctx, dof.coc(), canopy::host_span(coc.data(), coc.size()));
    if (s.dof.near_field) canopy::copy(ctx, dof.near_tiles(), canopy::host_span(reach.data(), reach.size()));
    ctx.synchronize();
    std::size_t focus_changed = 0, blurred_pixels = 0, colour_differs = 0, depth_differs = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const std::size_t i = std::size_t(y) * w + x;
        std::uint32_t gl_pixel = 0;
        std::memcpy(&gl_pixel, gl_rgba.data() + 4 * i, 4);
        colour_differs += (gl_pixel | 0xff000000u) != raw[i];
        depth_differs += gl_depth[i] != copied_depth[std::size_t(h - 1 - y) * w + x];
        const float r = reach[std::size_t(y / 16) * std::size_t(dof.tiles_x()) + std::size_t(x / 16)];
        if (std::fabs(coc[i]) < 1.0f && r < 0.5f && out[i] != raw[i]) ++focus_changed;
        blurred_pixels += out[i] != raw[i];
      }
    std::printf("canopy-dof: last frame: %zu of %zu pixels blurred, %zu in-focus pixels changed\n", blurred_pixels,
                raw.size(), focus_changed);
    std::printf("canopy-dof: capture against GL's read-back: %zu colour and %zu depth pixels differ\n", colour_differs,
                depth_differs);
    if (focus_changed != 0 || blurred_pixels == 0 || colour_differs != 0 || depth_differs != 0) {
      std::fprintf(stderr, "canopy-dof: self-check failed\n");
      return 1;
    }
    std::printf("canopy-dof: ok\n");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "canopy-dof: %s\n", e.what());
  return 1;
}
