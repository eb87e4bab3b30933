// canopy/core/error.hpp — the one error path of canopy.
//
// Every failure is an exception derived from canopy::error:
//   - cuda_error: a CUDA runtime call failed; the message names the call, file:line and CUDA's text;
//   - invalid_argument: a caller's argument was refused; the message names the function and argument.
#pragma once

#include <canopy/core/config.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace canopy {

//! Base of every exception canopy throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! A CUDA runtime call failed. `code()` is the cudaError_t value as int.
class cuda_error : public error {
 public:
  cuda_error(int code, const std::string& message) : error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

//! An argument was refused. The message reads "<function>: argument '<name>': <reason>".
class invalid_argument : public error {
 public:
  using error::error;
};

namespace detail {
[[noreturn]] void throw_cuda_error(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_invalid_argument(const char* function, const char* argument, const std::string& reason);
}  // namespace detail

//! Refuses an argument unless `condition` holds.
inline void require(bool condition, const char* function, const char* argument, const std::string& reason) {
  if (!condition) detail::throw_invalid_argument(function, argument, reason);
}

//! a * b, refusing the argument if the product overflows size_t.
inline std::size_t checked_mul(std::size_t a, std::size_t b, const char* function, const char* argument) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b)
    detail::throw_invalid_argument(function, argument,
                                   "size " + std::to_string(a) + " x " + std::to_string(b) + " overflows size_t");
  return a * b;
}

}  // namespace canopy

#if CANOPY_HAS_CUDA
//! Checks a CUDA runtime call; on failure throws canopy::cuda_error naming the call and place.
#define CANOPY_CUDA_CHECK(call)                                                      \
  do {                                                                               \
    const cudaError_t canopy_status_ = (call);                                       \
    if (canopy_status_ != cudaSuccess)                                               \
      ::canopy::detail::throw_cuda_error(static_cast<int>(canopy_status_), #call,    \
                                         __FILE__, __LINE__);                        \
  } while (0)

//! Checks that the kernel launched just before succeeded; `kernel_name` is a string literal.
#define CANOPY_CUDA_CHECK_LAUNCH(kernel_name)                                        \
  do {                                                                               \
    const cudaError_t canopy_status_ = cudaGetLastError();                           \
    if (canopy_status_ != cudaSuccess)                                               \
      ::canopy::detail::throw_cuda_error(static_cast<int>(canopy_status_),           \
                                         "launch of " kernel_name, __FILE__, __LINE__); \
  } while (0)
#endif
