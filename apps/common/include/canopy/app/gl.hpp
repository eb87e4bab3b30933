// canopy/app/gl.hpp — OpenGL 4.5 core helpers shared by the apps: owning handles, shader programs
// loaded from shaders/, an offscreen render target and GPU timer queries read a few frames late.
//
// [SECTION] error checks
// [SECTION] owning handles (gl_handle, gl_buffer, gl_texture, gl_vertex_array)
// [SECTION] shader programs
// [SECTION] render_target: offscreen colour (RGBA8) + depth (32F)
// [SECTION] gpu_timer: GL_TIME_ELAPSED queries, never waited on
//
// Every function here needs a current GL 4.5 context (made by canopy::app::platform).
#pragma once

#include <glad/gl.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace canopy::app {

// [SECTION] error checks -----------------------------------------------------------------------

//! Throws canopy::error naming `where` and the GL error if glGetError() reports one.
void gl_check(const char* where);

// [SECTION] owning handles --------------------------------------------------------------------

//! A GL object name with its deleter. Move-only; deletes on destruction.
template <void (*Delete)(GLuint)>
class gl_handle {
 public:
  gl_handle() = default;
  explicit gl_handle(GLuint id) : id_(id) {}
  ~gl_handle() { reset(); }
  gl_handle(gl_handle&& o) noexcept : id_(std::exchange(o.id_, 0)) {}
  gl_handle& operator=(gl_handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, 0);
    }
    return *this;
  }
  gl_handle(const gl_handle&) = delete;
  gl_handle& operator=(const gl_handle&) = delete;
  GLuint get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ != 0; }
  void reset() {
    if (id_) Delete(id_);
    id_ = 0;
  }

 private:
  GLuint id_ = 0;
};

namespace detail {
void delete_buffer(GLuint id);
void delete_texture(GLuint id);
void delete_vertex_array(GLuint id);
void delete_framebuffer(GLuint id);
void delete_program(GLuint id);
void delete_query(GLuint id);
}  // namespace detail

using gl_buffer = gl_handle<detail::delete_buffer>;
using gl_texture = gl_handle<detail::delete_texture>;
using gl_vertex_array = gl_handle<detail::delete_vertex_array>;
using gl_framebuffer = gl_handle<detail::delete_framebuffer>;
using gl_program = gl_handle<detail::delete_program>;

//! A new buffer with immutable-size-free storage of `bytes` (glNamedBufferData, GL_DYNAMIC_DRAW).
gl_buffer make_buffer(std::size_t bytes, const void* data = nullptr);
//! A new 2D texture with `format` storage (e.g. GL_RGBA8), linear filtering, clamped.
gl_texture make_texture_2d(GLenum format, int width, int height);

// [SECTION] shader programs -------------------------------------------------------------------

//! The folder the GLSL sources are read from: $CANOPY_SHADER_DIR if set, else the source tree's
//! shaders/ baked in at build time, else the installed copy.
std::string shader_dir();
//! Compiles and links a program from files in shader_dir() (e.g. "boxes.vert", "boxes.frag").
//! `defines` (e.g. "#define DEPTH_COPY\n") is inserted into both sources after their #version line.
//! Throws canopy::error with the compiler's log on failure.
gl_program load_program(const std::string& vertex_file, const std::string& fragment_file,
                        const std::string& defines = "");
//! Location of a uniform; -1 (ignored by glProgramUniform*) when the driver optimised it away.
GLint uniform(const gl_program& p, const char* name);

// [SECTION] render_target ---------------------------------------------------------------------

//! An offscreen framebuffer: RGBA8 colour and 32-bit float depth. Apps render their view into it
//! and then show it (blit to the window) or read it back (headless screenshots, depth checks).
//!
//! With a depth copy it also holds an R32F colour attachment (GL_COLOR_ATTACHMENT1, drawn to
//! together with the colour) that shaders fill with the window depth: mesh.frag built with
//! DEPTH_COPY (mesh_renderer(true)) writes gl_FragCoord.z to its output 1, which the depth test
//! keeps equal to the depth buffer. It exists for CUDA: cudaGraphicsGLRegisterImage takes colour
//! formats but not depth ones, so a kernel reads depth from this copy (texture_reader) instead of a
//! glReadPixels. Every shader that draws into a target with a depth copy must write output 1.
class render_target {
 public:
  //! Reallocates when the size or the depth copy changed; a no-op otherwise. Sizes must be
  //! positive. Each reallocation makes new textures and advances generation().
  void resize(int width, int height, bool depth_copy = false);
  void bind() const;
  //! Clears the colour to (r, g, b, a), and the depth and the depth copy (if any) to 1.
  void clear(float r, float g, float b, float a) const;
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  GLuint framebuffer() const noexcept { return fbo_.get(); }
  GLuint color_texture() const noexcept { return color_.get(); }
  //! The R32F depth copy; 0 without one.
  GLuint depth_copy_texture() const noexcept { return depth_copy_.get(); }
  //! Counts reallocations: textures handed out before a change of generation are gone (their
  //! names may come back for new textures).
  std::uint64_t generation() const noexcept { return generation_; }
  //! Copies the colour to the bound draw framebuffer (e.g. the window) at (x, y, w, h).
  void blit_to(GLuint draw_fbo, int x, int y, int w, int h) const;
  //! Reads the colour back, top row first, 4 bytes per pixel (synchronises with the GPU).
  std::vector<std::uint8_t> read_rgba() const;
  //! Reads the depth buffer back (window-space depth in [0, 1]), top row first (synchronises).
  std::vector<float> read_depth() const;

 private:
  gl_framebuffer fbo_;
  gl_texture color_;
  gl_texture depth_;
  gl_texture depth_copy_;
  int width_ = 0;
  int height_ = 0;
  std::uint64_t generation_ = 0;
};

// [SECTION] gpu_timer -------------------------------------------------------------------------

//! GPU time of a span of GL commands, measured with GL_TIME_ELAPSED queries in a ring of
//! kLatency frames: the value reported for frame f is that of frame f - kLatency + 1 or older,
//! read only once available, so the timer never stalls the pipeline.
class gpu_timer {
 public:
  static constexpr int kLatency = 4;
  gpu_timer();
  ~gpu_timer();
  gpu_timer(const gpu_timer&) = delete;
  gpu_timer& operator=(const gpu_timer&) = delete;
  void begin();
  void end();
  //! Milliseconds of the newest completed measurement; negative until one has completed.
  double latest_ms();
  //! Waits for the most recent end() and returns its milliseconds (headless runs that log every
  //! frame; never in an interactive frame loop).
  double wait_ms();

 private:
  std::array<GLuint, kLatency> queries_{};
  std::array<bool, kLatency> pending_{};
  int next_ = 0;
  double latest_ms_ = -1;
};

}  // namespace canopy::app
