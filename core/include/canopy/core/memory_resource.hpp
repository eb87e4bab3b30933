// canopy/core/memory_resource.hpp — stream-ordered memory resources.
//
// The caller owns the memory: every canopy context carries a memory_resource, and all temporary
// storage of the primitives and builders comes from it. The CUDA resource is a cudaMallocAsync pool
// whose release threshold is "never", so after the first frame, per-frame allocations are served
// from the pool and never reach cudaMalloc. The host resource caches blocks by size class.
#pragma once

#include <canopy/core/config.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace canopy {

//! Where a buffer's bytes live.
enum class memory_space : std::uint8_t {
  host,    //!< ordinary host memory, readable by the host backend
  device,  //!< CUDA device memory, readable only by kernels of the CUDA backend
};

//! "host" or "device".
const char* to_string(memory_space space) noexcept;

//! True while `stream` is being captured into a CUDA graph (cudaStreamIsCapturing: active, or
//! invalidated, which fails the capture anyway); false in a build without CUDA.
bool stream_capturing(stream_t stream);

//! Counters kept by every memory_resource; tests use them to prove reuse.
struct memory_statistics {
  std::uint64_t allocations = 0;           //!< calls to allocate()
  std::uint64_t upstream_allocations = 0;  //!< times the resource had to take new memory from the system
  std::size_t bytes_in_use = 0;            //!< bytes handed out and not yet returned
  std::size_t bytes_reserved = 0;          //!< bytes held from the system (in use + cached)
};

//! Interface of a stream-ordered allocator. Thread-safe.
class memory_resource {
 public:
  virtual ~memory_resource() = default;
  //! Returns `bytes` bytes usable by work ordered after this call on `stream`, aligned to 256 bytes.
  //! bytes == 0 returns nullptr.
  virtual void* allocate(std::size_t bytes, stream_t stream) = 0;
  //! Returns memory; it may be reused by work ordered after this call on `stream`.
  virtual void deallocate(void* p, std::size_t bytes, stream_t stream) = 0;
  virtual memory_space space() const noexcept = 0;
  virtual memory_statistics statistics() const = 0;
};

//! Host memory, cached by power-of-two size class so that repeated frames reuse blocks.
class host_pool_resource final : public memory_resource {
 public:
  host_pool_resource() = default;
  ~host_pool_resource() override;
  host_pool_resource(const host_pool_resource&) = delete;
  host_pool_resource& operator=(const host_pool_resource&) = delete;

  void* allocate(std::size_t bytes, stream_t stream) override;
  void deallocate(void* p, std::size_t bytes, stream_t stream) override;
  memory_space space() const noexcept override { return memory_space::host; }
  memory_statistics statistics() const override;
  //! Returns every cached block to the system.
  void release();

 private:
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> cached blocks
  memory_statistics stats_;
};

#if CANOPY_HAS_CUDA
//! Device memory from a private cudaMemPool with release threshold UINT64_MAX.
class cuda_pool_resource final : public memory_resource {
 public:
  explicit cuda_pool_resource(int device);
  ~cuda_pool_resource() override;
  cuda_pool_resource(const cuda_pool_resource&) = delete;
  cuda_pool_resource& operator=(const cuda_pool_resource&) = delete;

  void* allocate(std::size_t bytes, stream_t stream) override;
  void deallocate(void* p, std::size_t bytes, stream_t stream) override;
  memory_space space() const noexcept override { return memory_space::device; }
  //! upstream_allocations counts growths of the pool's reserved memory seen at allocate().
  memory_statistics statistics() const override;
  cudaMemPool_t pool() const noexcept { return pool_; }

 private:
  int device_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex mutex_;
  memory_statistics stats_;
};
#endif

}  // namespace canopy
