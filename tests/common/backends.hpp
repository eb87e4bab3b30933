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

//! The calls `record` makes on ctx's stream, captured into a CUDA graph and instantiated (both
//! destroyed with the object). A failed capture or instantiation is a test failure, and ok() is false.
struct captured_graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  template <class Record>
  captured_graph(canopy::context& ctx, Record&& record) {
    const cudaError_t begun = cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal);
    if (begun != cudaSuccess) {
      ADD_FAILURE() << "cudaStreamBeginCapture: " << cudaGetErrorString(begun);
      return;
    }
    capture_guard guard{ctx.stream()};  // ends the capture if a call in `record` throws
    record();
    const cudaError_t ended = cudaStreamEndCapture(ctx.stream(), &graph);
    guard.stream = nullptr;
    if (ended != cudaSuccess) {
      ADD_FAILURE() << "cudaStreamEndCapture: " << cudaGetErrorString(ended);
      return;
    }
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess) ADD_FAILURE() << "cudaGraphInstantiate: " << cudaGetErrorString(made);
  }
  captured_graph(const captured_graph&) = delete;
  captured_graph& operator=(const captured_graph&) = delete;
  ~captured_graph() {
    if (exec != nullptr) EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    if (graph != nullptr) EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  bool ok() const { return exec != nullptr; }
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
