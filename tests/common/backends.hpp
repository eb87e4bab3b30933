// Test helpers for suites that run on both backends.
//
//   class ScanTest : public canopy_test::BackendTest {};
//   TEST_P(ScanTest, Inclusive) { canopy::context& ctx = this->ctx(); ... }
//   CANOPY_INSTANTIATE_BACKENDS(ScanTest);
//
// The CUDA instance skips, printing the reason, when no device can be used.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace canopy_test {

class BackendTest : public ::testing::TestWithParam<canopy::backend> {
 protected:
  void SetUp() override {
    if (GetParam() == canopy::backend::cuda) {
      std::string why;
      if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
      ctx_ = std::make_unique<canopy::context>(canopy::backend_request::cuda);
    } else {
      ctx_ = std::make_unique<canopy::context>(canopy::backend_request::host);
    }
  }
  canopy::context& ctx() { return *ctx_; }
  bool is_cuda() const { return GetParam() == canopy::backend::cuda; }

  //! A buffer in the context's space holding `values`.
  template <class T>
  canopy::buffer<T> upload(const std::vector<T>& values) {
    canopy::buffer<T> b(ctx(), values.size());
    b.assign(values);
    return b;
  }

 private:
  std::unique_ptr<canopy::context> ctx_;
};

//! A GPU-only suite: skips, printing the reason, when no CUDA device can be used; otherwise ctx()
//! is a CUDA context. (Name such suites Cuda*, so that CTest's gpu/cpu filters sort them.)
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
    ctx_ = std::make_unique<canopy::context>(canopy::backend_request::cuda);
  }
  canopy::context& ctx() { return *ctx_; }
  std::unique_ptr<canopy::context> ctx_;
};

//! Asserts that `statement` throws ExceptionType whose message contains every given fragment
//! (refused arguments must name the function and the argument).
template <class ExceptionType, class F>
void expect_error(F&& statement, std::initializer_list<const char*> fragments) {
  try {
    statement();
    ADD_FAILURE() << "expected an exception";
  } catch (const ExceptionType& e) {
    const std::string what = e.what();
    for (const char* f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
}

#if CANOPY_HAS_CUDA
//! Ends a stream capture still open when it goes out of scope (a call under capture threw), so the
//! stream is usable by the tests that follow; clear `stream` once the capture ended normally.
struct capture_guard {
  cudaStream_t stream = nullptr;
  ~capture_guard() {
    if (stream == nullptr) return;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
  }
};
#endif

//! A host context for the oracle side of GPU-vs-host comparisons.
inline canopy::context& host_context() {
  static canopy::context ctx(canopy::backend_request::host);
  return ctx;
}

}  // namespace canopy_test

#define CANOPY_INSTANTIATE_BACKENDS(Suite)                                                     \
  INSTANTIATE_TEST_SUITE_P(Host, Suite, ::testing::Values(canopy::backend::host),              \
                           [](const auto&) { return std::string("host"); });                   \
  INSTANTIATE_TEST_SUITE_P(Cuda, Suite, ::testing::Values(canopy::backend::cuda),              \
                           [](const auto&) { return std::string("cuda"); })
