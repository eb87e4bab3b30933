// CUDA-GL interop. Compiled by nvcc with the CUDA backend, as C++ without it (the CUDA branches
// drop out and the host path remains).
#include <canopy/app/interop.hpp>

#include <canopy/core/error.hpp>

#if CANOPY_HAS_CUDA
// glad's gl.h is already included (it defines __gl_h_), so this does not pull in GL/gl.h.
#include <cuda_gl_interop.h>
#endif

#include <cstring>

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
  if (resource_) {
    if (mapped_) {
      cudaGraphicsResource_t r = as_resource(resource_);
      CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(1, &r, ctx_->stream()));
      mapped_ = false;
    }
    CANOPY_CUDA_CHECK(cudaGraphicsUnregisterResource(as_resource(resource_)));
    resource_ = nullptr;
  }
#endif
  gl_.reset();
  capacity_ = 0;
}

void interop_buffer::reserve(std::size_t bytes) {
  require(!mapped_, "canopy::app::interop_buffer::reserve", "this", "buffer is mapped");
  reserved_ = bytes;
  if (bytes <= capacity_ && gl_) return;
  release();
  // Grow by half again, so that slowly rising counts do not re-register every frame.
  const std::size_t cap = std::max<std::size_t>(bytes + bytes / 2, 256);
  gl_ = make_buffer(cap);
  capacity_ = cap;
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    cudaGraphicsResource_t r = nullptr;
    const unsigned flags = access_ == interop_access::kernels_read ? cudaGraphicsRegisterFlagsReadOnly
                                                                    : cudaGraphicsRegisterFlagsWriteDiscard;
    CANOPY_CUDA_CHECK(cudaGraphicsGLRegisterBuffer(&r, gl_.get(), flags));
    resource_ = r;
#endif
  } else {
    staging_.assign(cap, 0);
  }
}

void* interop_buffer::map() {
  require(gl_ && !mapped_, "canopy::app::interop_buffer::map", "this", "not reserved, or already mapped");
  mapped_ = true;
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    cudaGraphicsResource_t r = as_resource(resource_);
    CANOPY_CUDA_CHECK(cudaGraphicsMapResources(1, &r, ctx_->stream()));
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
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    cudaGraphicsResource_t r = as_resource(resource_);
    CANOPY_CUDA_CHECK(cudaGraphicsUnmapResources(1, &r, ctx_->stream()));
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
  unregister(resource_);
  tex_.reset();
}

void shared_image::resize(int width, int height) {
  require(width > 0 && height > 0, "canopy::app::shared_image::resize", "width/height", "must be positive");
  if (width == width_ && height == height_ && tex_) return;
  release();
  tex_ = make_texture_2d(GL_RGBA8, width, height);
  width_ = width;
  height_ = height;
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    resource_ = register_image(tex_.get(), cudaGraphicsRegisterFlagsWriteDiscard);
#endif
  }
}

void shared_image::upload(span<const std::uint32_t> pixels) {
  require(pixels.size() == std::size_t(width_) * height_, "canopy::app::shared_image::upload", "pixels",
          "must hold width * height pixels");
  check_span(pixels, ctx_->space(), "canopy::app::shared_image::upload", "pixels");
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    const std::size_t pitch = std::size_t(width_) * 4;
    with_mapped_array(resource_, ctx_->stream(), [&](cudaArray_t array) {
      CANOPY_CUDA_CHECK(cudaMemcpy2DToArrayAsync(array, 0, 0, pixels.data(), pitch, pitch, std::size_t(height_),
                                                 cudaMemcpyDeviceToDevice, ctx_->stream()));
    });
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
  unregister(resource_);
  texture_ = 0;
}

void texture_reader::attach(GLuint texture, GLenum internal_format, int width, int height) {
  const char* where = "canopy::app::texture_reader::attach";
  require(texture != 0, where, "texture", "must be a texture name, got 0");
  require(internal_format == GL_RGBA8 || internal_format == GL_R32F, where, "internal_format",
          "must be GL_RGBA8 or GL_R32F (CUDA cannot register depth formats: read a render_target's depth copy)");
  require(width > 0 && height > 0, where, "width/height", "must be positive");
  release();
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    resource_ = register_image(texture, cudaGraphicsRegisterFlagsReadOnly);
#endif
  }
  texture_ = texture;
  format_ = internal_format;
  width_ = width;
  height_ = height;
}

void texture_reader::read(span<std::uint32_t> out) {
  check_span(out, ctx_->space(), "canopy::app::texture_reader::read", "out");
  read_bytes(GL_RGBA8, out.data(), out.size_bytes(), "out (RGBA8 pixels)");
}

void texture_reader::read(span<float> out) {
  check_span(out, ctx_->space(), "canopy::app::texture_reader::read", "out");
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
  if (ctx_->is_cuda()) {
#if CANOPY_HAS_CUDA
    with_mapped_array(resource_, ctx_->stream(), [&](cudaArray_t array) {
      CANOPY_CUDA_CHECK(cudaMemcpy2DFromArrayAsync(out, row, array, 0, 0, row, std::size_t(height_),
                                                   cudaMemcpyDeviceToDevice, ctx_->stream()));
    });
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

}  // namespace canopy::app
