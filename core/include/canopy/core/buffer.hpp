// canopy/core/buffer.hpp — owning, typed buffers that know their memory space.
//
// A buffer takes its memory from a context's memory_resource, stream-ordered on the context's
// stream, and gives it back the same way. Builders keep buffers from frame to frame and call
// resize_discard(), which reallocates only when the size grows past the capacity.
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace canopy {

namespace detail {
//! Copies `bytes` between two memory spaces, ordered on the context's stream (synchronous on host).
void copy_bytes(context& ctx, void* dst, memory_space dst_space, const void* src, memory_space src_space,
                std::size_t bytes);
//! Sets `bytes` bytes to `value`, ordered on the context's stream.
void fill_bytes(context& ctx, void* dst, memory_space space, int value, std::size_t bytes);
}  // namespace detail

template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>, "canopy::buffer holds trivially copyable types only");

 public:
  buffer() = default;
  //! n elements in the context's working space (device for cuda, host for host). Contents uninitialised.
  buffer(context& ctx, std::size_t n) : buffer(ctx, n, ctx.space()) {}
  //! n elements in a given space. A device buffer needs a CUDA context.
  buffer(context& ctx, std::size_t n, memory_space space) : ctx_(&ctx), space_(space) {
    require(space == ctx.space() || space == memory_space::host, "canopy::buffer", "space",
            "device memory needs a context on the CUDA backend");
    resize_discard(n);
  }
  ~buffer() { release(); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }

  //! Makes the buffer hold n elements. Reallocates only when n exceeds the capacity; the contents
  //! are unspecified afterwards whenever it reallocated.
  void resize_discard(std::size_t n) {
    require(ctx_ != nullptr || n == 0, "canopy::buffer::resize_discard", "this", "buffer has no context");
    if (n > capacity_) {
      const std::size_t bytes = checked_mul(n, sizeof(T), "canopy::buffer::resize_discard", "n");
      release_storage();
      data_ = static_cast<T*>(resource().allocate(bytes, ctx_->stream()));
      capacity_ = n;
    }
    size_ = n;
  }
  //! Gives the memory back to the context's resource.
  void release() {
    release_storage();
    size_ = 0;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  memory_space space() const noexcept { return space_; }
  context* owner() const noexcept { return ctx_; }

  span<T> view() noexcept { return span<T>(data_, size_, space_); }
  span<const T> view() const noexcept { return span<const T>(data_, size_, space_); }
  operator span<T>() noexcept { return view(); }
  operator span<const T>() const noexcept { return view(); }

  //! Copies host data in (resizing to its length). Ordered on the stream; the source must stay
  //! valid until the stream reaches the copy (it is synchronous for pageable host memory).
  void assign(const T* src, std::size_t n) {
    resize_discard(n);
    if (n) detail::copy_bytes(*ctx_, data_, space_, src, memory_space::host, n * sizeof(T));
  }
  void assign(const std::vector<T>& src) { assign(src.data(), src.size()); }
  //! Copies the contents to a new host vector. Synchronises the context's stream.
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    if (size_) {
      detail::copy_bytes(*ctx_, out.data(), memory_space::host, data_, space_, size_ * sizeof(T));
      ctx_->synchronize();
    }
    return out;
  }
  //! Sets every byte to `value`.
  void fill_bytes(int value) {
    if (size_) detail::fill_bytes(*ctx_, data_, space_, value, size_ * sizeof(T));
  }

 private:
  memory_resource& resource() {
    return space_ == ctx_->space() ? ctx_->resource() : host_fallback_resource();
  }
  static memory_resource& host_fallback_resource() {
    static host_pool_resource pool;
    return pool;
  }
  void release_storage() {
    if (data_) resource().deallocate(data_, capacity_ * sizeof(T), ctx_->stream());
    data_ = nullptr;
    capacity_ = 0;
  }
  void swap(buffer& o) noexcept {
    std::swap(ctx_, o.ctx_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    std::swap(space_, o.space_);
  }

  context* ctx_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  memory_space space_ = memory_space::host;
};

//! Copies src to dst (same length, any spaces), ordered on the context's stream.
template <class T>
void copy(context& ctx, span<const T> src, span<T> dst) {
  require(src.size() == dst.size(), "canopy::copy", "dst",
          "length " + std::to_string(dst.size()) + " differs from src length " + std::to_string(src.size()));
  require(src.data() != nullptr || src.size() == 0, "canopy::copy", "src", "null pointer with size > 0");
  require(dst.data() != nullptr || dst.size() == 0, "canopy::copy", "dst", "null pointer with size > 0");
  if (src.size()) detail::copy_bytes(ctx, dst.data(), dst.space(), src.data(), src.space(), src.size_bytes());
}

}  // namespace canopy
