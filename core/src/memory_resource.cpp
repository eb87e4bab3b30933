#include <canopy/core/error.hpp>
#include <canopy/core/memory_resource.hpp>

#include <cstdlib>
#include <new>

namespace canopy {

const char* to_string(memory_space space) noexcept {
  return space == memory_space::device ? "device" : "host";
}

namespace {
constexpr std::size_t host_alignment = 256;

std::size_t size_class(std::size_t bytes) {
  std::size_t c = host_alignment;
  while (c < bytes) c <<= 1;
  return c;
}
}  // namespace

host_pool_resource::~host_pool_resource() { release(); }

void* host_pool_resource::allocate(std::size_t bytes, stream_t) {
  if (bytes == 0) return nullptr;
  const std::size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  stats_.bytes_in_use += cls;
  auto it = free_.find(cls);
  if (it != free_.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    return p;
  }
  void* p = std::aligned_alloc(host_alignment, cls);
  if (!p) {
    stats_.bytes_in_use -= cls;
    throw error("canopy::host_pool_resource: out of host memory allocating " + std::to_string(cls) + " bytes");
  }
  ++stats_.upstream_allocations;
  stats_.bytes_reserved += cls;
  return p;
}

void host_pool_resource::deallocate(void* p, std::size_t bytes, stream_t) {
  if (!p) return;
  const std::size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= cls;
  free_[cls].push_back(p);
}

memory_statistics host_pool_resource::statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void host_pool_resource::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [cls, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    stats_.bytes_reserved -= cls * blocks.size();
  }
  free_.clear();
}

bool stream_capturing(stream_t stream) {
#if CANOPY_HAS_CUDA
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CANOPY_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
#else
  (void)stream;
  return false;
#endif
}

#if CANOPY_HAS_CUDA
cuda_pool_resource::cuda_pool_resource(int device) : device_(device) {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  CANOPY_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
  // Keep everything once reserved: per-frame allocations must never reach the driver again.
  std::uint64_t threshold = UINT64_MAX;
  CANOPY_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
}

cuda_pool_resource::~cuda_pool_resource() {
  if (pool_) {
    cudaDeviceSynchronize();
    cudaMemPoolDestroy(pool_);
  }
}

void* cuda_pool_resource::allocate(std::size_t bytes, stream_t stream) {
  if (bytes == 0) return nullptr;
  std::uint64_t before = 0, after = 0;
  void* p = nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  // Under stream capture the allocation becomes a graph memory node and the pool may not be
  // queried (cudaErrorStreamCaptureUnsupported): the reserve statistics skip such allocations.
  const bool capturing = stream_capturing(stream);
  if (!capturing) CANOPY_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &before));
  CANOPY_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, pool_, stream));
  ++stats_.allocations;
  stats_.bytes_in_use += bytes;
  if (!capturing) {
    CANOPY_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &after));
    if (after > before) ++stats_.upstream_allocations;
    stats_.bytes_reserved = after;
  }
  return p;
}

void cuda_pool_resource::deallocate(void* p, std::size_t bytes, stream_t stream) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Destructors must not throw: a failing free here means the context is already broken.
  cudaFreeAsync(p, stream);
  stats_.bytes_in_use -= bytes;
}

memory_statistics cuda_pool_resource::statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_statistics s = stats_;
  std::uint64_t reserved = 0;
  CANOPY_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved));
  s.bytes_reserved = reserved;
  return s;
}
#endif

}  // namespace canopy
