// canopy/core/span.hpp — a pointer, a length and the memory space they live in.
//
// Spans are how buffers are passed to primitives, builders and kernels. They are trivially
// copyable (16 bytes + space tag) and usable in __host__ __device__ code.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/memory_resource.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace canopy {

template <class T>
class span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  constexpr span() = default;
  CANOPY_HD constexpr span(T* data, std::size_t size, memory_space space) : data_(data), size_(size), space_(space) {}
  //! span<T> converts to span<const T>.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  CANOPY_HD constexpr span(const span<U>& other) : data_(other.data()), size_(other.size()), space_(other.space()) {}

  CANOPY_HD constexpr T* data() const { return data_; }
  CANOPY_HD constexpr std::size_t size() const { return size_; }
  CANOPY_HD constexpr bool empty() const { return size_ == 0; }
  CANOPY_HD constexpr memory_space space() const { return space_; }
  CANOPY_HD constexpr std::size_t size_bytes() const { return size_ * sizeof(T); }
  CANOPY_HD constexpr T& operator[](std::size_t i) const { return data_[i]; }
  CANOPY_HD constexpr T* begin() const { return data_; }
  CANOPY_HD constexpr T* end() const { return data_ + size_; }
  //! Elements [offset, offset + count). Unchecked; use subspan_checked() on the host for arguments.
  CANOPY_HD constexpr span subspan(std::size_t offset, std::size_t count) const { return span(data_ + offset, count, space_); }
  CANOPY_HD constexpr span first(std::size_t count) const { return span(data_, count, space_); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  memory_space space_ = memory_space::host;
};

//! Wraps host memory the caller owns.
template <class T>
constexpr span<T> host_span(T* data, std::size_t size) { return span<T>(data, size, memory_space::host); }
//! Wraps device memory the caller owns (e.g. from cudaMalloc or a CUDA-GL mapping).
template <class T>
constexpr span<T> device_span(T* data, std::size_t size) { return span<T>(data, size, memory_space::device); }

//! Refuses a span that is null with size > 0, or that lives in another memory space than `expected`.
template <class T>
void check_span(span<T> s, memory_space expected, const char* function, const char* argument) {
  require(s.data() != nullptr || s.size() == 0, function, argument,
          "null pointer with size " + std::to_string(s.size()));
  require(s.space() == expected || s.size() == 0, function, argument,
          std::string("buffer is in ") + to_string(s.space()) + " memory, but this context's backend needs " +
              to_string(expected) + " memory");
}

}  // namespace canopy
