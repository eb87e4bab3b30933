// canopy/app/platform.hpp — a GL 4.5 core context with Dear ImGui, in a window or headless.
//
// Windowed: a GLFW window, GLAD loaded through glfwGetProcAddress, ImGui's GLFW + OpenGL3 backends.
// Headless: EGL with no window and no display server. The EGL display is tried in this order:
//   1. EGL_EXT_platform_device on a device from EGL_EXT_device_enumeration (NVIDIA's headless path,
//      and Mesa's software device);
//   2. EGL_MESA_platform_surfaceless (Mesa llvmpipe);
//   3. eglGetDisplay(EGL_DEFAULT_DISPLAY).
// The context is surfaceless (EGL_KHR_surfaceless_context): apps render into a render_target.
// ImGui then runs with only its OpenGL3 backend and a fixed display size, so overlays render the
// same way in screenshots.
//
// Frame loop of an app:
//   platform p(options, "canopy-viewer");
//   while (p.next_frame()) {      // polls events, starts the ImGui frame; false when done
//     ...update, render into a render_target, build the UI...
//     p.present(target);          // shows the target, draws ImGui, swaps (windowed)
//   }
#pragma once

#include <canopy/app/gl.hpp>
#include <canopy/app/options.hpp>

#include <memory>
#include <string>

struct GLFWwindow;

namespace canopy::app {

class platform {
 public:
  //! Creates the window (or the headless context) and ImGui. Throws canopy::error saying what
  //! failed (no display, no EGL device, GL < 4.5).
  platform(const app_options& options, const std::string& title);
  ~platform();
  platform(const platform&) = delete;
  platform& operator=(const platform&) = delete;

  //! Ends when the window closes or the frame budget (--frames) is spent. Starts the ImGui frame.
  bool next_frame();
  //! Shows `view` filling the framebuffer, draws ImGui on top (unless --no-ui), swaps buffers.
  void present(const render_target& view);

  //! The next present() writes what it shows (view + overlay) to a PNG at `path`.
  void request_screenshot(const std::string& path) { screenshot_path_ = path; }
  //! Windowed: waits for the display's refresh when on (off by default, so frame times show the work).
  void set_vsync(bool on);

  bool headless() const noexcept { return headless_; }
  //! Framebuffer size in pixels (the window's, or --width x --height headless).
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  //! Frames begun so far (the current frame's index is frame() - 1).
  int frame() const noexcept { return frame_; }
  //! Seconds since the previous next_frame(); a fixed 1/60 s headless, so runs are repeatable.
  double delta_seconds() const noexcept { return dt_; }
  //! "NVIDIA Corporation / NVIDIA H100 ... / 4.5.0 NVIDIA ..." — who renders.
  const std::string& renderer() const noexcept { return renderer_; }
  //! The GLFW window; null headless.
  GLFWwindow* window() const noexcept { return window_; }

 private:
  struct egl_state;
  void init_imgui();
  bool headless_ = false;
  bool ui_ = true;
  int max_frames_ = 0;
  int frame_ = 0;
  int width_ = 0, height_ = 0;
  double dt_ = 1.0 / 60.0;
  double last_time_ = 0;
  std::string renderer_;
  std::string screenshot_path_;
  GLFWwindow* window_ = nullptr;
  std::unique_ptr<egl_state> egl_;
};

}  // namespace canopy::app
