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
// Every map and every unmap waits on GL's commands so far and costs frame time whatever it maps
// (about 0.35 ms a pair in canopy-dof at 4K on an H200). An interop_mapping maps any set of these
// objects with one call and unmaps them with one; while it holds them, their own map(), read() and
// upload() only hand out or copy through that mapping:
//
//   interop_mapping maps;                        // once
//   maps.add(boxes).add(colour_reader).add(shown);
//   maps.map();                                  // every frame, after GL drew what is read
//   ...boxes.map() / unmap(), colour_reader.read(), kernels, shown.upload()...
//   maps.unmap();                                // before GL uses any of them
//
// Both need a current GL context and, on CUDA, a device that shares it (the EGL device or window
// on the same GPU). Not thread-safe.
#pragma once

#include <canopy/app/gl.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace canopy::app {

//! Which way the data of an interop_buffer flows.
enum class interop_access {
  kernels_write,  //!< kernels write, GL reads (vertex buffers); CUDA: registered write-discard
  kernels_read,   //!< GL writes (pixel-pack buffers), kernels read; CUDA: registered read-only
};

class interop_mapping;

namespace detail {
//! What an interop_mapping reads and sets on each object it maps.
struct interop_slot {
  context* ctx = nullptr;
  void* resource = nullptr;                 // cudaGraphicsResource_t while registered (CUDA)
  bool texture = false;                     // a texture (mapped as its level-0 array) or a buffer
  const interop_mapping* holder = nullptr;  // the mapping holding the object, while mapped
  void* mapped = nullptr;                   // cudaArray_t or device pointer then (CUDA)
};
}  // namespace detail

//! Untyped GL buffer shared with canopy kernels; see shared_buffer<T>.
class interop_buffer {
 public:
  explicit interop_buffer(context& ctx, interop_access access = interop_access::kernels_write) : access_(access) {
    slot_.ctx = &ctx;
  }
  ~interop_buffer();
  interop_buffer(const interop_buffer&) = delete;
  interop_buffer& operator=(const interop_buffer&) = delete;

  //! Makes the GL buffer hold at least `bytes`; reallocates (and re-registers) only when growing.
  //! Contents are undefined after a reallocation. Must not be mapped; growing is refused while an
  //! interop_mapping holds the buffer.
  void reserve(std::size_t bytes);
  //! Pointer to the whole buffer in the context's space. Stream-ordered on CUDA (under an
  //! interop_mapping that holds the buffer: its mapping, no map of its own). Host backend,
  //! kernels_read: first copies the bytes of the last reserve() out of GL (waits for GL).
  void* map();
  //! Ends the mapping; on the host uploads bytes [0, bytes_written). kernels_read buffers upload
  //! nothing: pass 0.
  void unmap(std::size_t bytes_written);
  GLuint gl_name() const noexcept { return gl_.get(); }
  std::size_t capacity_bytes() const noexcept { return capacity_; }
  context& ctx() const noexcept { return *slot_.ctx; }

 private:
  friend class interop_mapping;
  void release();
  detail::interop_slot slot_;  // context, CUDA registration, interop_mapping state
  interop_access access_;
  gl_buffer gl_;
  std::size_t capacity_ = 0;
  std::size_t reserved_ = 0;  // bytes of the last reserve(): what a kernels_read map() copies on the host
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
  //! The untyped buffer, e.g. for interop_mapping::add.
  interop_buffer& raw() noexcept { return raw_; }

 private:
  interop_buffer raw_;
};

//! An RGBA8 GL texture filled from a canopy buffer of packed pixels (R in the low byte, rows top
//! first; the texture's row 0 is then the image's top row, which image_renderer accounts for).
class shared_image {
 public:
  explicit shared_image(context& ctx) {
    slot_.ctx = &ctx;
    slot_.texture = true;
  }
  ~shared_image();
  shared_image(const shared_image&) = delete;
  shared_image& operator=(const shared_image&) = delete;

  //! Reallocates (and re-registers) when the size changed; a new size is refused while an
  //! interop_mapping holds the image.
  void resize(int width, int height);
  //! Copies width * height pixels (in the context's space) into the texture: on CUDA an
  //! array copy on the stream while mapped (its own map and unmap, or an interop_mapping's), on the
  //! host glTextureSubImage2D.
  void upload(span<const std::uint32_t> pixels);
  GLuint gl_name() const noexcept { return tex_.get(); }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }

 private:
  friend class interop_mapping;
  void release();
  detail::interop_slot slot_;  // context, CUDA registration, interop_mapping state
  gl_texture tex_;
  int width_ = 0, height_ = 0;
};

//! Copies a GL texture's level 0 into a canopy buffer, rows bottom first as GL stores them. The
//! formats are GL_RGBA8 (read as packed pixels, R in the low byte) and GL_R32F (floats): CUDA
//! registers colour formats only, so depth is read from a render_target's depth copy.
//! CUDA backend: attach() registers the texture read-only; read() maps it on the context's stream,
//! copies its array (cudaMemcpy2DFromArrayAsync) and unmaps it, ordered after GL's commands so far;
//! under an interop_mapping that holds it, read() only copies.
//! Host backend: read() is a glGetTextureImage (waits for GL).
//!
//!   texture_reader colour(ctx);
//!   colour.attach(target.color_texture(), GL_RGBA8, w, h);   // again after the texture changed
//!   colour.read(pixels.view());                               // every frame, after drawing
class texture_reader {
 public:
  explicit texture_reader(context& ctx) {
    slot_.ctx = &ctx;
    slot_.texture = true;
  }
  ~texture_reader();
  texture_reader(const texture_reader&) = delete;
  texture_reader& operator=(const texture_reader&) = delete;

  //! Reads `texture` (width x height, internal format GL_RGBA8 or GL_R32F) from now on. Call it
  //! again whenever the texture is deleted or reallocated (render_target::generation): a deleted
  //! texture's name may come back for another one. Refused while an interop_mapping holds it.
  void attach(GLuint texture, GLenum internal_format, int width, int height);
  //! Copies the attached GL_RGBA8 texture into `out` (width * height pixels, context's space).
  void read(span<std::uint32_t> out);
  //! Copies the attached GL_R32F texture into `out` (width * height floats, context's space).
  void read(span<float> out);
  GLuint texture() const noexcept { return texture_; }

 private:
  friend class interop_mapping;
  void release();
  void read_bytes(GLenum internal_format, void* out, std::size_t bytes, const char* what);
  detail::interop_slot slot_;  // context, CUDA registration, interop_mapping state
  GLuint texture_ = 0;
  GLenum format_ = 0;
  int width_ = 0, height_ = 0;
};

//! Maps CUDA-GL interop objects (interop_buffer, shared_buffer, shared_image, texture_reader)
//! together: one cudaGraphicsMapResources for all of them at map(), one
//! cudaGraphicsUnmapResources at unmap(). Between the two the objects are held: a buffer's map()
//! hands out the mapped pointer and its unmap() ends only the caller's use, a reader's read() and an
//! image's upload() only copy, and a reserve() that grows, a resize() to a new size and attach() are
//! refused. GL must not use a held object. The objects can be added once and mapped and unmapped
//! every frame; what map() maps is each object's registration at that moment, so they may grow
//! between frames.
//! Every object must share one context, be added once, and outlive the mapping (or a clear()).
//! map() needs each one ready: a buffer reserved, an image resized, a reader attached.
//! Host backend: nothing is mapped; the objects are held all the same (the same refusals), and
//! their map/unmap, read() and upload() go through GL as always.
class interop_mapping {
 public:
  interop_mapping() = default;
  ~interop_mapping();  //!< unmaps if mapped (ending any buffer use left open)
  interop_mapping(const interop_mapping&) = delete;
  interop_mapping& operator=(const interop_mapping&) = delete;

  interop_mapping& add(interop_buffer& buffer);
  template <class T>
  interop_mapping& add(shared_buffer<T>& buffer) {
    return add(buffer.raw());
  }
  interop_mapping& add(shared_image& image);
  interop_mapping& add(texture_reader& reader);
  //! Maps every object added, in one call on the context's stream (ordered after GL's commands so
  //! far). Refused while mapped, and for an object that is not ready, is mapped by itself, or is
  //! held by another mapping; nothing is mapped then.
  void map();
  //! Unmaps them, in one call (stream-ordered; GL's later commands see what kernels wrote). Does
  //! nothing when not mapped. Every buffer's own map() must have been ended with its unmap().
  void unmap();
  bool mapped() const noexcept { return mapped_; }
  //! Forgets every object. Refused while mapped.
  void clear();
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  enum class kind { buffer, image, reader };
  struct entry {
    kind k;
    void* object;
  };
  interop_mapping& add_entry(kind k, void* object, detail::interop_slot& slot);
  void release_all();  // unmap() without its check (the destructor's)
  static detail::interop_slot& slot_of(const entry& e);
  std::vector<entry> entries_;
  context* ctx_ = nullptr;
  bool mapped_ = false;
};

}  // namespace canopy::app
