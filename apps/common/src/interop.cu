// CUDA-GL interop. Compiled by nvcc with the CUDA backend, as C++ without it (the CUDA branches
// drop out and the host path remains).
#include <canopy/app/interop.hpp>

#include <canopy/core/error.hpp>

#if CANOPY_HAS_CUDA
// glad's gl.h is already included (it defines __gl_h_), so this does not pull in GL/gl.h.
#include <cuda_gl_interop.h>
#endif

#include <cstring>
#include <string>
#include <vector>

namespace canopy::app {

namespace {
#if CANOPY_HAS_CUDA
cudaGraphicsResource_t as_resource(void* p) { return static_cast<cudaGraphicsResource_t>(p); }

//! Registers a GL 2D texture with CUDA.
void* register_image(GLuint texture, unsigned flags) {
  cudaGraphicsResource_t r = nullptr;
  CANOPY_CUDA_CHECK(cudaGraphicsGLRegisterImage(&r, texture, GL_TEXTURE_2D, flags));
  return r;
}

//! Maps a registered image on `stream`, hands its level-0 array to `f`, unmaps it (stream-ordered).
template <class F>
void with_mapped_array(void* resource, cudaStream_t stream, F f) {
  cudaGraphicsResource_t r = as_resource(resource);
  CANOPY_CUDA_CHECK(cudaGraphicsMapResources(1, &r, stream));
  cudaArray_t array = nullptr;
  CANOPY_CUDA_CHECK(cudaGraphicsSubResourceGetMappedArray(&array, r, 0, 0));
  f(array);
  CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(1, &r, stream));
}
#endif

//! Unregisters a registered image (if any) and clears the handle.
void unregister(void*& resource) {
#if CANOPY_HAS_CUDA
  if (resource) {
    CANOPY_CUDA_CHECK(cudaGraphicsUnregisterResource(as_resource(resource)));
    resource = nullptr;
  }
#else
  (void)resource;
#endif
}
}  // namespace

interop_buffer::~interop_buffer() {
  try {
    release();
  } catch (...) {
    // Destructors must not throw; a failed unregister at shutdown leaves nothing to recover.
  }
}

void interop_buffer::release() {
#if CANOPY_HAS_CUDA
  if (slot_.resource) {
    if (mapped_ && !slot_.holder) {
      cudaGraphicsResource_t r = as_resource(slot_.resource);
      CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(1, &r, slot_.ctx->stream()));
      mapped_ = false;
    }
    CANOPY_CUDA_CHECK(cudaGraphicsUnregisterResource(as_resource(slot_.resource)));
    slot_.resource = nullptr;
  }
#endif
  gl_.reset();
  capacity_ = 0;
}

void interop_buffer::reserve(std::size_t bytes) {
  require(!mapped_, "canopy::app::interop_buffer::reserve", "this", "buffer is mapped");
  if (bytes <= capacity_ && gl_) {
    reserved_ = bytes;
    return;
  }
  require(slot_.holder == nullptr, "canopy::app::interop_buffer::reserve", "this",
          "is held by an interop_mapping (growing it re-registers it)");
  reserved_ = bytes;
  release();
  // Grow by half again, so that slowly rising counts do not re-register every frame.
  const std::size_t cap = std::max<std::size_t>(bytes + bytes / 2, 256);
  gl_ = make_buffer(cap);
  capacity_ = cap;
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    cudaGraphicsResource_t r = nullptr;
    const unsigned flags = access_ == interop_access::kernels_read ? cudaGraphicsRegisterFlagsReadOnly
                                                                    : cudaGraphicsRegisterFlagsWriteDiscard;
    CANOPY_CUDA_CHECK(cudaGraphicsGLRegisterBuffer(&r, gl_.get(), flags));
    slot_.resource = r;
#endif
  } else {
    staging_.assign(cap, 0);
  }
}

void* interop_buffer::map() {
  require(gl_ && !mapped_, "canopy::app::interop_buffer::map", "this", "not reserved, or already mapped");
  mapped_ = true;
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    if (slot_.holder) return slot_.mapped;  // the interop_mapping's
    cudaGraphicsResource_t r = as_resource(slot_.resource);
    CANOPY_CUDA_CHECK(cudaGraphicsMapResources(1, &r, slot_.ctx->stream()));
    void* ptr = nullptr;
    std::size_t size = 0;
    CANOPY_CUDA_CHECK(cudaGraphicsResourceGetMappedPointer(&ptr, &size, r));
    return ptr;
#endif
  }
  if (access_ == interop_access::kernels_read && reserved_) {
    glGetNamedBufferSubData(gl_.get(), 0, GLsizeiptr(reserved_), staging_.data());
    gl_check("canopy::app::interop_buffer::map (glGetNamedBufferSubData)");
  }
  return staging_.data();
}

void interop_buffer::unmap(std::size_t bytes_written) {
  require(mapped_, "canopy::app::interop_buffer::unmap", "this", "not mapped");
  require(bytes_written <= capacity_, "canopy::app::interop_buffer::unmap", "bytes_written", "exceeds the capacity");
  require(access_ == interop_access::kernels_write || bytes_written == 0, "canopy::app::interop_buffer::unmap",
          "bytes_written", "must be 0 for a kernels_read buffer (kernels do not write it)");
  mapped_ = false;
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    if (slot_.holder) return;  // the interop_mapping unmaps
    cudaGraphicsResource_t r = as_resource(slot_.resource);
    CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(1, &r, slot_.ctx->stream()));
#endif
    return;
  }
  if (bytes_written) glNamedBufferSubData(gl_.get(), 0, GLsizeiptr(bytes_written), staging_.data());
}

shared_image::~shared_image() {
  try {
    release();
  } catch (...) {
  }
}

void shared_image::release() {
  unregister(slot_.resource);
  tex_.reset();
}

void shared_image::resize(int width, int height) {
  require(width > 0 && height > 0, "canopy::app::shared_image::resize", "width/height", "must be positive");
  if (width == width_ && height == height_ && tex_) return;
  require(slot_.holder == nullptr, "canopy::app::shared_image::resize", "this",
          "is held by an interop_mapping (a new size re-registers it)");
  release();
  tex_ = make_texture_2d(GL_RGBA8, width, height);
  width_ = width;
  height_ = height;
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    slot_.resource = register_image(tex_.get(), cudaGraphicsRegisterFlagsWriteDiscard);
#endif
  }
}

void shared_image::upload(span<const std::uint32_t> pixels) {
  require(pixels.size() == std::size_t(width_) * height_, "canopy::app::shared_image::upload", "pixels",
          "must hold width * height pixels");
  check_span(pixels, slot_.ctx->space(), "canopy::app::shared_image::upload", "pixels");
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    const std::size_t pitch = std::size_t(width_) * 4;
    const cudaStream_t stream = slot_.ctx->stream();
    const auto copy = [&](cudaArray_t array) {
      CANOPY_CUDA_CHECK(cudaMemcpy2DToArrayAsync(array, 0, 0, pixels.data(), pitch, pitch, std::size_t(height_),
                                                 cudaMemcpyDeviceToDevice, stream));
    };
    if (slot_.holder)
      copy(static_cast<cudaArray_t>(slot_.mapped));
    else
      with_mapped_array(slot_.resource, stream, copy);
#endif
    return;
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTextureSubImage2D(tex_.get(), 0, 0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
}

texture_reader::~texture_reader() {
  try {
    release();
  } catch (...) {
  }
}

void texture_reader::release() {
  unregister(slot_.resource);
  texture_ = 0;
}

void texture_reader::attach(GLuint texture, GLenum internal_format, int width, int height) {
  const char* where = "canopy::app::texture_reader::attach";
  require(texture != 0, where, "texture", "must be a texture name, got 0");
  require(internal_format == GL_RGBA8 || internal_format == GL_R32F, where, "internal_format",
          "must be GL_RGBA8 or GL_R32F (CUDA cannot register depth formats: read a render_target's depth copy)");
  require(width > 0 && height > 0, where, "width/height", "must be positive");
  require(slot_.holder == nullptr, where, "this", "is held by an interop_mapping");
  release();
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    slot_.resource = register_image(texture, cudaGraphicsRegisterFlagsReadOnly);
#endif
  }
  texture_ = texture;
  format_ = internal_format;
  width_ = width;
  height_ = height;
}

void texture_reader::read(span<std::uint32_t> out) {
  check_span(out, slot_.ctx->space(), "canopy::app::texture_reader::read", "out");
  read_bytes(GL_RGBA8, out.data(), out.size_bytes(), "out (RGBA8 pixels)");
}

void texture_reader::read(span<float> out) {
  check_span(out, slot_.ctx->space(), "canopy::app::texture_reader::read", "out");
  read_bytes(GL_R32F, out.data(), out.size_bytes(), "out (R32F floats)");
}

void texture_reader::read_bytes(GLenum internal_format, void* out, std::size_t bytes, const char* what) {
  const char* fn = "canopy::app::texture_reader::read";
  require(texture_ != 0, fn, "this", "no texture attached");
  require(format_ == internal_format, fn, what,
          format_ == GL_RGBA8 ? "does not match the attached GL_RGBA8 texture (read into uint32 pixels)"
                              : "does not match the attached GL_R32F texture (read into floats)");
  const std::size_t row = std::size_t(width_) * 4;
  require(bytes == row * std::size_t(height_), fn, what, "must hold width * height elements of the attached texture");
  if (slot_.ctx->is_cuda()) {
#if CANOPY_HAS_CUDA
    const cudaStream_t stream = slot_.ctx->stream();
    const auto copy = [&](cudaArray_t array) {
      CANOPY_CUDA_CHECK(cudaMemcpy2DFromArrayAsync(out, row, array, 0, 0, row, std::size_t(height_),
                                                   cudaMemcpyDeviceToDevice, stream));
    };
    if (slot_.holder)
      copy(static_cast<cudaArray_t>(slot_.mapped));
    else
      with_mapped_array(slot_.resource, stream, copy);
#endif
    return;
  }
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  if (internal_format == GL_RGBA8)
    glGetTextureImage(texture_, 0, GL_RGBA, GL_UNSIGNED_BYTE, GLsizei(bytes), out);
  else
    glGetTextureImage(texture_, 0, GL_RED, GL_FLOAT, GLsizei(bytes), out);
  gl_check("canopy::app::texture_reader::read (glGetTextureImage)");
}

detail::interop_slot& interop_mapping::slot_of(const entry& e) {
  switch (e.k) {
    case kind::buffer: return static_cast<interop_buffer*>(e.object)->slot_;
    case kind::image: return static_cast<shared_image*>(e.object)->slot_;
    default: return static_cast<texture_reader*>(e.object)->slot_;
  }
}

interop_mapping::~interop_mapping() {
  try {
    release_all();
  } catch (...) {
    // Destructors must not throw; the CUDA error stays on the context for its next check.
  }
}

interop_mapping& interop_mapping::add_entry(kind k, void* object, detail::interop_slot& slot) {
  const char* fn = "canopy::app::interop_mapping::add";
  require(!mapped_, fn, "this", "is mapped (unmap() before adding)");
  require(ctx_ == nullptr || slot.ctx == ctx_, fn, "object", "has another context than the objects added before");
  for (std::size_t j = 0; j < entries_.size(); ++j)
    require(entries_[j].object != object, fn, "object", "was added before (entry " + std::to_string(j) + ")");
  entries_.push_back(entry{k, object});
  ctx_ = slot.ctx;
  return *this;
}

interop_mapping& interop_mapping::add(interop_buffer& buffer) { return add_entry(kind::buffer, &buffer, buffer.slot_); }
interop_mapping& interop_mapping::add(shared_image& image) { return add_entry(kind::image, &image, image.slot_); }
interop_mapping& interop_mapping::add(texture_reader& reader) { return add_entry(kind::reader, &reader, reader.slot_); }

void interop_mapping::map() {
  const char* fn = "canopy::app::interop_mapping::map";
  require(!mapped_, fn, "this", "is mapped already");
  // Every check before anything is mapped or marked.
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    const entry& e = entries_[k];
    const detail::interop_slot& slot = slot_of(e);
    const auto which = [&] { return "entry " + std::to_string(k); };
    switch (e.k) {
      case kind::buffer: {
        const auto* b = static_cast<const interop_buffer*>(e.object);
        if (!b->gl_) require(false, fn, which().c_str(), "is a buffer that was never reserved");
        if (b->mapped_) require(false, fn, which().c_str(), "is a buffer mapped by its own map()");
        break;
      }
      case kind::image:
        if (!static_cast<const shared_image*>(e.object)->tex_)
          require(false, fn, which().c_str(), "is a shared_image that was never resized");
        break;
      case kind::reader:
        if (static_cast<const texture_reader*>(e.object)->texture_ == 0)
          require(false, fn, which().c_str(), "is a texture_reader with no texture attached");
        break;
    }
    if (slot.holder) require(false, fn, which().c_str(), "is held by another interop_mapping");
  }
  if (entries_.empty()) return;
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    std::vector<cudaGraphicsResource_t> rs(entries_.size());
    for (std::size_t k = 0; k < rs.size(); ++k) rs[k] = as_resource(slot_of(entries_[k]).resource);
    CANOPY_CUDA_CHECK(cudaGraphicsMapResources(int(rs.size()), rs.data(), ctx_->stream()));
    try {
      for (std::size_t k = 0; k < rs.size(); ++k) {
        detail::interop_slot& slot = slot_of(entries_[k]);
        if (slot.texture) {
          cudaArray_t array = nullptr;
          CANOPY_CUDA_CHECK(cudaGraphicsSubResourceGetMappedArray(&array, rs[k], 0, 0));
          slot.mapped = array;
        } else {
          std::size_t size = 0;
          CANOPY_CUDA_CHECK(cudaGraphicsResourceGetMappedPointer(&slot.mapped, &size, rs[k]));
        }
      }
    } catch (...) {
      // map() fails: leave nothing mapped or marked behind.
      for (const entry& e : entries_) slot_of(e).mapped = nullptr;
      cudaGraphicsUnmapResources(int(rs.size()), rs.data(), ctx_->stream());
      throw;
    }
#endif
  }
  for (const entry& e : entries_) slot_of(e).holder = this;
  mapped_ = true;
}

void interop_mapping::unmap() {
  if (!mapped_) return;
  for (std::size_t k = 0; k < entries_.size(); ++k)
    if (entries_[k].k == kind::buffer && static_cast<const interop_buffer*>(entries_[k].object)->mapped_)
      require(false, "canopy::app::interop_mapping::unmap", ("entry " + std::to_string(k)).c_str(),
              "is a buffer whose map() has not been ended by its unmap()");
  release_all();
}

void interop_mapping::release_all() {
  if (!mapped_) return;
  mapped_ = false;
  for (const entry& e : entries_) {
    detail::interop_slot& slot = slot_of(e);
    slot.holder = nullptr;
    slot.mapped = nullptr;
    if (e.k == kind::buffer) static_cast<interop_buffer*>(e.object)->mapped_ = false;  // a use left open ends here
  }
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    std::vector<cudaGraphicsResource_t> rs(entries_.size());
    for (std::size_t k = 0; k < rs.size(); ++k) rs[k] = as_resource(slot_of(entries_[k]).resource);
    CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(int(rs.size()), rs.data(), ctx_->stream()));
#endif
  }
}

void interop_mapping::clear() {
  require(!mapped_, "canopy::app::interop_mapping::clear", "this", "is mapped (unmap() first)");
  entries_.clear();
  ctx_ = nullptr;
}

}  // namespace canopy::app
