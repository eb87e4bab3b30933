// canopy/app/interop.hpp — GL buffers and textures that canopy kernels write, on either backend.
//
// CUDA backend: the GL object is registered with CUDA once (cudaGraphicsGLRegisterBuffer /
// cudaGraphicsGLRegisterImage) and mapped/unmapped every frame on the context's stream, so the
// data never goes through the host. Re-registration happens only when a buffer grows.
// Host backend: map() hands out a host staging array and unmap() uploads it with
// glNamedBufferSubData / glTextureSubImage2D.
//
//   shared_buffer<aabb> boxes(ctx);
//   boxes.reserve(n);                  // GL buffer of n elements (registered on CUDA)
//   span<aabb> out = boxes.map();      // device span on CUDA, host span on host
//   ...kernels write out...
//   boxes.unmap(written);              // host: uploads the first `written` elements
//   glVertexArrayVertexBuffer(vao, 0, boxes.gl_name(), 0, sizeof(aabb));
//
// The other way (GL writes, kernels read), a texture_reader copies a colour texture GL drew into a
// canopy buffer: on CUDA out of the registered texture's array on the stream, through neither the
// host nor GL's pixel-pack path; on the host with glGetTextureImage. (An interop_buffer made with
// interop_access::kernels_read also works, as the target of a glReadPixels into a pixel-pack
// buffer, but that copy runs in GL: 2.25 ms of GL time for 4K colour and depth on an H200, a
// data-centre part with little graphics hardware, against 0.08 ms for the colour through a
// texture_reader; apps/README.md.)
//
// Both need a current GL context and, on CUDA, a device that shares it (the EGL device or window
// on the same GPU). Not thread-safe.
#pragma once

#include <canopy/app/gl.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstdint>
#include <vector>

namespace canopy::app {

//! Which way the data of an interop_buffer flows.
enum class interop_access {
  kernels_write,  //!< kernels write, GL reads (vertex buffers); CUDA: registered write-discard
  kernels_read,   //!< GL writes (pixel-pack buffers), kernels read; CUDA: registered read-only
};

//! Untyped GL buffer shared with canopy kernels; see shared_buffer<T>.
class interop_buffer {
 public:
  explicit interop_buffer(context& ctx, interop_access access = interop_access::kernels_write)
      : ctx_(&ctx), access_(access) {}
  ~interop_buffer();
  interop_buffer(const interop_buffer&) = delete;
  interop_buffer& operator=(const interop_buffer&) = delete;

  //! Makes the GL buffer hold at least `bytes`; reallocates (and re-registers) only when growing.
  //! Contents are undefined after a reallocation. Must not be mapped.
  void reserve(std::size_t bytes);
  //! Pointer to the whole buffer in the context's space. Stream-ordered on CUDA. Host backend,
  //! kernels_read: first copies the bytes of the last reserve() out of GL (waits for GL).
  void* map();
  //! Ends the mapping; on the host uploads bytes [0, bytes_written). kernels_read buffers upload
  //! nothing: pass 0.
  void unmap(std::size_t bytes_written);
  GLuint gl_name() const noexcept { return gl_.get(); }
  std::size_t capacity_bytes() const noexcept { return capacity_; }
  context& ctx() const noexcept { return *ctx_; }

 private:
  void release();
  context* ctx_;
  interop_access access_;
  gl_buffer gl_;
  std::size_t capacity_ = 0;
  std::size_t reserved_ = 0;  // bytes of the last reserve(): what a kernels_read map() copies on the host
  void* resource_ = nullptr;  // cudaGraphicsResource_t on CUDA
  bool mapped_ = false;
  std::vector<unsigned char> staging_;
};

//! A GL buffer of T that kernels write through a span<T> in the context's space.
template <class T>
class shared_buffer {
 public:
  explicit shared_buffer(context& ctx) : raw_(ctx) {}
  void reserve(std::size_t n) { raw_.reserve(n * sizeof(T)); }
  std::size_t capacity() const noexcept { return raw_.capacity_bytes() / sizeof(T); }
  span<T> map() { return span<T>(static_cast<T*>(raw_.map()), capacity(), raw_.ctx().space()); }
  void unmap(std::size_t written) { raw_.unmap(written * sizeof(T)); }
  GLuint gl_name() const noexcept { return raw_.gl_name(); }

 private:
  interop_buffer raw_;
};

//! An RGBA8 GL texture filled from a canopy buffer of packed pixels (R in the low byte, rows top
//! first; the texture's row 0 is then the image's top row, which image_renderer accounts for).
class shared_image {
 public:
  explicit shared_image(context& ctx) : ctx_(&ctx) {}
  ~shared_image();
  shared_image(const shared_image&) = delete;
  shared_image& operator=(const shared_image&) = delete;

  //! Reallocates (and re-registers) when the size changed.
  void resize(int width, int height);
  //! Copies width * height pixels (in the context's space) into the texture: on CUDA an
  //! array copy on the stream while mapped, on the host glTextureSubImage2D.
  void upload(span<const std::uint32_t> pixels);
  GLuint gl_name() const noexcept { return tex_.get(); }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }

 private:
  void release();
  context* ctx_;
  gl_texture tex_;
  int width_ = 0, height_ = 0;
  void* resource_ = nullptr;
};

//! Copies a GL texture's level 0 into a canopy buffer, rows bottom first as GL stores them. The
//! formats are GL_RGBA8 (read as packed pixels, R in the low byte) and GL_R32F (floats): CUDA
//! registers colour formats only, so depth is read from a render_target's depth copy.
//! CUDA backend: attach() registers the texture read-only; read() maps it on the context's stream,
//! copies its array (cudaMemcpy2DFromArrayAsync) and unmaps it, ordered after GL's commands so far.
//! Host backend: read() is a glGetTextureImage (waits for GL).
//!
//!   texture_reader colour(ctx);
//!   colour.attach(target.color_texture(), GL_RGBA8, w, h);   // again after the texture changed
//!   colour.read(pixels.view());                               // every frame, after drawing
class texture_reader {
 public:
  explicit texture_reader(context& ctx) : ctx_(&ctx) {}
  ~texture_reader();
  texture_reader(const texture_reader&) = delete;
  texture_reader& operator=(const texture_reader&) = delete;

  //! Reads `texture` (width x height, internal format GL_RGBA8 or GL_R32F) from now on. Call it
  //! again whenever the texture is deleted or reallocated (render_target::generation): a deleted
  //! texture's name may come back for another one.
  void attach(GLuint texture, GLenum internal_format, int width, int height);
  //! Copies the attached GL_RGBA8 texture into `out` (width * height pixels, context's space).
  void read(span<std::uint32_t> out);
  //! Copies the attached GL_R32F texture into `out` (width * height floats, context's space).
  void read(span<float> out);
  GLuint texture() const noexcept { return texture_; }

 private:
  void release();
  void read_bytes(GLenum internal_format, void* out, std::size_t bytes, const char* what);
  context* ctx_;
  GLuint texture_ = 0;
  GLenum format_ = 0;
  int width_ = 0, height_ = 0;
  void* resource_ = nullptr;  // cudaGraphicsResource_t on CUDA
};

}  // namespace canopy::app
