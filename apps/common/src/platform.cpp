#include <canopy/app/platform.hpp>

#include <canopy/app/image_io.hpp>
#include <canopy/core/error.hpp>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace canopy::app {

namespace {

bool has_extension(const char* list, const char* name) {
  if (!list) return false;
  const std::size_t n = std::strlen(name);
  for (const char* p = list; (p = std::strstr(p, name)) != nullptr; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

std::string egl_error_text() {
  char buf[32];
  std::snprintf(buf, sizeof buf, "EGL error 0x%04x", unsigned(eglGetError()));
  return buf;
}

void glfw_error(int code, const char* text) { std::fprintf(stderr, "glfw error %d: %s\n", code, text); }

std::string describe_gl() {
  auto s = [](GLenum e) {
    const GLubyte* v = glGetString(e);
    return v ? std::string(reinterpret_cast<const char*>(v)) : std::string("?");
  };
  return s(GL_VENDOR) + " / " + s(GL_RENDERER) + " / " + s(GL_VERSION);
}

}  // namespace

struct platform::egl_state {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  std::string how;          // which display path worked
  render_target screen;     // stands in for the window's framebuffer
};

namespace {

// Tries to make a GL 4.5 core context current on `display`; returns false (display terminated)
// when it cannot.
bool try_display(EGLDisplay display, EGLContext& out, std::string& why) {
  if (display == EGL_NO_DISPLAY) {
    why += " no display;";
    return false;
  }
  EGLint major = 0, minor = 0;
  if (!eglInitialize(display, &major, &minor)) {
    why += " eglInitialize: " + egl_error_text() + ";";
    return false;
  }
  const char* ext = eglQueryString(display, EGL_EXTENSIONS);
  if (!has_extension(ext, "EGL_KHR_surfaceless_context")) {
    why += " no EGL_KHR_surfaceless_context;";
    eglTerminate(display);
    return false;
  }
  if (!eglBindAPI(EGL_OPENGL_API)) {
    why += " eglBindAPI(OpenGL): " + egl_error_text() + ";";
    eglTerminate(display);
    return false;
  }
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8,
                                   EGL_BLUE_SIZE, 8, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint count = 0;
  EGLConfig chosen = nullptr;
  if (eglChooseConfig(display, config_attribs, &config, 1, &count) && count > 0) chosen = config;
  if (!chosen && !has_extension(ext, "EGL_KHR_no_config_context")) {
    why += " no OpenGL config;";
    eglTerminate(display);
    return false;
  }
  const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 5,
                                    EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                    EGL_NONE};
  const EGLContext ctx = eglCreateContext(display, chosen, EGL_NO_CONTEXT, context_attribs);
  if (ctx == EGL_NO_CONTEXT) {
    why += " GL 4.5 core context: " + egl_error_text() + ";";
    eglTerminate(display);
    return false;
  }
  if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx)) {
    why += " eglMakeCurrent: " + egl_error_text() + ";";
    eglDestroyContext(display, ctx);
    eglTerminate(display);
    return false;
  }
  out = ctx;
  return true;
}

}  // namespace

platform::platform(const app_options& options, const std::string& title)
    : headless_(options.headless), ui_(options.ui), max_frames_(options.frames), width_(options.width),
      height_(options.height) {
  if (headless_) {
    egl_ = std::make_unique<egl_state>();
    std::string why;
    const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    auto get_platform_display =
        reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
    // 1. The device platform: NVIDIA's headless path (and Mesa's software device).
    if (get_platform_display && has_extension(client, "EGL_EXT_platform_device")) {
      auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
      EGLDeviceEXT devices[16];
      EGLint n = 0;
      if (query_devices && query_devices(16, devices, &n)) {
        for (EGLint i = 0; i < n && egl_->context == EGL_NO_CONTEXT; ++i) {
          EGLDisplay d = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
          why += " device " + std::to_string(i) + ":";
          if (try_display(d, egl_->context, why)) {
            egl_->display = d;
            egl_->how = "EGL device " + std::to_string(i) + " of " + std::to_string(n);
          }
        }
      } else {
        why += " eglQueryDevicesEXT found no device;";
      }
    }
    // 2. Mesa's surfaceless platform.
    if (egl_->context == EGL_NO_CONTEXT && get_platform_display &&
        has_extension(client, "EGL_MESA_platform_surfaceless")) {
      EGLDisplay d = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
      why += " surfaceless:";
      if (try_display(d, egl_->context, why)) {
        egl_->display = d;
        egl_->how = "EGL surfaceless (Mesa)";
      }
    }
    // 3. Whatever the default display is.
    if (egl_->context == EGL_NO_CONTEXT) {
      EGLDisplay d = eglGetDisplay(EGL_DEFAULT_DISPLAY);
      why += " default:";
      if (try_display(d, egl_->context, why)) {
        egl_->display = d;
        egl_->how = "EGL default display";
      }
    }
    if (egl_->context == EGL_NO_CONTEXT)
      throw error("canopy::app::platform: no headless GL 4.5 core context through EGL:" + why);
    if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(eglGetProcAddress)))
      throw error("canopy::app::platform: glad could not load GL 4.5 through EGL");
    egl_->screen.resize(width_, height_);
  } else {
    glfwSetErrorCallback(glfw_error);
    if (!glfwInit())
      throw error("canopy::app::platform: glfwInit failed (no display? use --headless)");
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 5);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    window_ = glfwCreateWindow(width_, height_, title.c_str(), nullptr, nullptr);
    if (!window_) {
      glfwTerminate();
      throw error("canopy::app::platform: could not open a window with a GL 4.5 core context");
    }
    glfwMakeContextCurrent(window_);
    glfwSwapInterval(0);  // frame times show the work, not the display's refresh
    if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(glfwGetProcAddress)))
      throw error("canopy::app::platform: glad could not load GL 4.5");
    glfwGetFramebufferSize(window_, &width_, &height_);
    last_time_ = glfwGetTime();
  }
  renderer_ = describe_gl() + (egl_ ? " (" + egl_->how + ")" : std::string(" (GLFW window)"));
  init_imgui();
  gl_check("canopy::app::platform");
}

void platform::init_imgui() {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini next to wherever the app was started
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 4.0f;
  ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w = 0.85f;
  if (window_) ImGui_ImplGlfw_InitForOpenGL(window_, true);
  if (!ImGui_ImplOpenGL3_Init("#version 450 core"))
    throw error("canopy::app::platform: ImGui's OpenGL3 backend failed to initialise");
}

platform::~platform() {
  ImGui_ImplOpenGL3_Shutdown();
  if (window_) ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  if (window_) {
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
  if (egl_) {
    egl_->screen = render_target();
    eglMakeCurrent(egl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(egl_->display, egl_->context);
    eglTerminate(egl_->display);
  }
}

void platform::set_vsync(bool on) {
  if (window_) glfwSwapInterval(on ? 1 : 0);
}

bool platform::next_frame() {
  if (max_frames_ > 0 && frame_ >= max_frames_) return false;
  if (window_) {
    if (glfwWindowShouldClose(window_)) return false;
    glfwPollEvents();
    const double now = glfwGetTime();
    dt_ = now - last_time_;
    last_time_ = now;
    glfwGetFramebufferSize(window_, &width_, &height_);
    while ((width_ == 0 || height_ == 0) && !glfwWindowShouldClose(window_)) {  // minimised
      glfwWaitEvents();
      glfwGetFramebufferSize(window_, &width_, &height_);
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
  } else {
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(float(width_), float(height_));
    io.DeltaTime = float(dt_);
    ImGui_ImplOpenGL3_NewFrame();
  }
  ImGui::NewFrame();
  ++frame_;
  return true;
}

void platform::present(const render_target& view) {
  const GLuint screen_fbo = egl_ ? egl_->screen.framebuffer() : 0;
  glBindFramebuffer(GL_FRAMEBUFFER, screen_fbo);
  glViewport(0, 0, width_, height_);
  glDisable(GL_SCISSOR_TEST);
  glClearColor(0, 0, 0, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  view.blit_to(screen_fbo, 0, 0, width_, height_);
  ImGui::Render();
  if (ui_) ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!screenshot_path_.empty()) {
    std::vector<std::uint8_t> rgba;
    if (egl_) {
      rgba = egl_->screen.read_rgba();
    } else {
      std::vector<std::uint8_t> rows(std::size_t(width_) * height_ * 4);
      glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
      glReadBuffer(GL_BACK);
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rows.data());
      rgba.resize(rows.size());
      const std::size_t pitch = std::size_t(width_) * 4;
      for (int y = 0; y < height_; ++y)
        std::memcpy(rgba.data() + std::size_t(y) * pitch, rows.data() + std::size_t(height_ - 1 - y) * pitch, pitch);
    }
    write_png(screenshot_path_, width_, height_, rgba);
    screenshot_path_.clear();
  }
  if (window_) glfwSwapBuffers(window_);
  gl_check("canopy::app::platform::present");
}

}  // namespace canopy::app
