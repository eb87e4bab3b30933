#include <canopy/core/error.hpp>
#include <canopy/core/for_each.hpp>

#include <string>

namespace canopy::detail {

void throw_cuda_error(int code, const char* call, const char* file, int line) {
  std::string message = std::string("CUDA call failed: ") + call + " at " + file + ":" + std::to_string(line);
#if CANOPY_HAS_CUDA
  const auto status = static_cast<cudaError_t>(code);
  // The error is reported here; clear it so that the next launch check does not report it again.
  cudaGetLastError();
  message += ": " + std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
#else
  message += ": error " + std::to_string(code);
#endif
  throw cuda_error(code, message);
}

void throw_invalid_argument(const char* function, const char* argument, const std::string& reason) {
  throw invalid_argument(std::string(function) + ": argument '" + argument + "': " + reason);
}

void throw_cuda_from_host_compiler(const char* function) {
  throw error(std::string(function) +
              ": called with the CUDA backend from a translation unit compiled by the host compiler; "
              "compile the caller as CUDA (.cu, nvcc) or use the host backend");
}

}  // namespace canopy::detail
