#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>

#include <tbb/info.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace canopy {

const char* to_string(backend b) noexcept { return b == backend::cuda ? "cuda" : "host"; }

backend_request parse_backend_request(std::string_view text, const char* argument) {
  if (text == "auto") return backend_request::automatic;
  if (text == "host") return backend_request::host;
  if (text == "cuda") return backend_request::cuda;
  detail::throw_invalid_argument("canopy::parse_backend_request", argument,
                                 "'" + std::string(text) + "' is not one of auto, host, cuda");
}

bool cuda_usable(std::string* why) {
#if CANOPY_HAS_CUDA
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")";
    cudaGetLastError();  // clear the sticky-free error so later calls see a clean state
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device is present";
    return false;
  }
  return true;
#else
  if (why) *why = "this build of canopy has no CUDA backend (configured without nvcc)";
  return false;
#endif
}

backend resolve_backend(std::optional<backend_request> explicit_request) {
  backend_request request = backend_request::automatic;
  const char* source = "automatic choice";
  if (explicit_request) {
    request = *explicit_request;
    source = "the caller";
  } else if (const char* env = std::getenv("CANOPY_BACKEND"); env && *env) {
    request = parse_backend_request(env, "CANOPY_BACKEND");
    source = "CANOPY_BACKEND";
  }
  std::string why;
  switch (request) {
    case backend_request::host: return backend::host;
    case backend_request::cuda:
      if (!cuda_usable(&why)) throw error(std::string("canopy: CUDA backend requested by ") + source + " but unusable: " + why);
      return backend::cuda;
    case backend_request::automatic: break;
  }
  return cuda_usable() ? backend::cuda : backend::host;
}

namespace {
std::string host_cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "host CPU";
}
}  // namespace

context::context(backend_request request) : context(context_options{request}) {}

context::context(const context_options& options) {
  backend_ = resolve_backend(options.request);
  if (backend_ == backend::host) {
    device_.name = host_cpu_name();
    device_.multiprocessors = tbb::info::default_concurrency();
    if (options.resource) {
      require(options.resource->space() == memory_space::host, "canopy::context", "options.resource",
              "the host backend needs a host memory resource");
      resource_ = options.resource;
    } else {
      owned_resource_ = std::make_unique<host_pool_resource>();
      resource_ = owned_resource_.get();
    }
    return;
  }
#if CANOPY_HAS_CUDA
  int count = 0;
  CANOPY_CUDA_CHECK(cudaGetDeviceCount(&count));
  require(options.device >= 0 && options.device < count, "canopy::context", "options.device",
          "device " + std::to_string(options.device) + " does not exist (" + std::to_string(count) + " present)");
  CANOPY_CUDA_CHECK(cudaSetDevice(options.device));
  cudaDeviceProp prop{};
  CANOPY_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
  device_.name = prop.name;
  device_.ordinal = options.device;
  device_.compute_capability_major = prop.major;
  device_.compute_capability_minor = prop.minor;
  device_.multiprocessors = prop.multiProcessorCount;
  device_.global_memory_bytes = prop.totalGlobalMem;
  device_.l2_cache_bytes = prop.l2CacheSize;
  device_.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  device_.shared_memory_per_multiprocessor = prop.sharedMemPerMultiprocessor;
  device_.max_threads_per_multiprocessor = prop.maxThreadsPerMultiProcessor;
  // Not in cudaDeviceProp since CUDA 13; the attributes remain. Kernels tuned per device read
  // these (bandwidth per SM clock), queried once here.
  int memory_clock_khz = 0, bus_width_bits = 0;
  CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&device_.clock_khz, cudaDevAttrClockRate, options.device));
  CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, options.device));
  CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, options.device));
  device_.memory_bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8.0;
  if (options.resource) {
    require(options.resource->space() == memory_space::device, "canopy::context", "options.resource",
            "the CUDA backend needs a device memory resource");
  }
  if (options.stream) {
    stream_ = options.stream;
  } else {
    CANOPY_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    owns_stream_ = true;
  }
  // From here on a throw leaves the constructor without running the destructor: release what was
  // made so far (the owned resource goes with its unique_ptr).
  try {
    if (options.resource) {
      resource_ = options.resource;
    } else {
      owned_resource_ = std::make_unique<cuda_pool_resource>(options.device);
      resource_ = owned_resource_.get();
    }
    constexpr std::size_t check_bytes = std::size_t(device_check::count) * sizeof(unsigned);
    CANOPY_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&check_host_), check_bytes, cudaHostAllocMapped));
    std::memset(check_host_, 0, check_bytes);
    CANOPY_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&check_device_), check_host_, 0));
  } catch (...) {
    if (check_host_) cudaFreeHost(check_host_);
    if (owns_stream_) cudaStreamDestroy(stream_);
    throw;
  }
#endif
}

context::~context() {
#if CANOPY_HAS_CUDA
  if (backend_ == backend::cuda) {
    cudaStreamSynchronize(stream_);
    for (kept_store& k : kept_)
      if (k.storage) resource_->deallocate(k.storage, k.bytes, stream_);
    owned_resource_.reset();
    if (check_host_) cudaFreeHost(check_host_);
    if (owns_stream_) cudaStreamDestroy(stream_);
  }
#endif
}

bool context::stream_capturing() const { return is_cuda() && canopy::stream_capturing(stream_); }

context::tile_descriptors context::keep_tile_descriptors(std::size_t descriptor_bytes, std::size_t tiles) {
  require(descriptor_bytes == 8 || descriptor_bytes == 16, "canopy::context::keep_tile_descriptors",
          "descriptor_bytes", "internal: 8 or 16, got " + std::to_string(descriptor_bytes));
  require(is_cuda(), "canopy::context::keep_tile_descriptors", "context", "internal: CUDA backend only");
#if CANOPY_HAS_CUDA
  constexpr std::size_t counter_bytes = 256;
  const std::size_t descriptors = (descriptor_bytes * tiles + 255) / 256 * 256;
  std::lock_guard<std::mutex> lock(kept_mutex_);
  kept_store& k = kept_[descriptor_bytes == 8 ? 0 : 1];
  const bool grow = descriptors + counter_bytes > k.bytes;
  if (grow) {
    // Grow by at least half, so that slowly growing sizes do not reallocate every call. The old
    // store is released in stream order (earlier kernels still read it).
    const std::size_t bytes = std::max(descriptors + counter_bytes, k.bytes + k.bytes / 2);
    void* fresh = resource_->allocate(bytes, stream_);
    if (k.storage) resource_->deallocate(k.storage, k.bytes, stream_);
    k.storage = fresh;
    k.bytes = bytes;
  }
  if (detail::advance_epoch(k.epoch, grow)) CANOPY_CUDA_CHECK(cudaMemsetAsync(k.storage, 0, k.bytes, stream_));
  unsigned char* base = static_cast<unsigned char*>(k.storage);
  return {base, reinterpret_cast<unsigned*>(base + k.bytes - counter_bytes), k.epoch};
#else
  (void)tiles;
  return {};
#endif
}

namespace detail {
void set_tile_descriptor_epoch_for_testing(context& ctx, std::size_t descriptor_bytes, unsigned epoch) {
  std::lock_guard<std::mutex> lock(ctx.kept_mutex_);
  unsigned& current = ctx.kept_[descriptor_bytes == 8 ? 0 : 1].epoch;
  // Only forward: an epoch already handed out may still tag words in the store.
  require(epoch >= current && epoch <= context::max_tile_epoch, "canopy::detail::set_tile_descriptor_epoch_for_testing",
          "epoch", "must lie in [" + std::to_string(current) + ", max_tile_epoch], got " + std::to_string(epoch));
  current = epoch;
}
}  // namespace detail

std::string context::description() const {
  std::ostringstream out;
  out << "backend " << to_string(backend_) << ", device '" << device_.name << "'";
  if (is_cuda()) {
    out << " (ordinal " << device_.ordinal << ", sm_" << device_.compute_capability_major
        << device_.compute_capability_minor << ", " << device_.multiprocessors << " SMs, "
        << (device_.global_memory_bytes >> 20) << " MiB)";
  } else {
    out << " (" << device_.multiprocessors << " TBB threads)";
  }
  return out.str();
}

void context::synchronize() const {
#if CANOPY_HAS_CUDA
  if (!is_cuda()) return;
  CANOPY_CUDA_CHECK(cudaStreamSynchronize(stream_));
  struct message {
    const char* function;
    const char* argument;
    const char* reason;
  };
  static constexpr message what[] = {
      {"canopy::gather_records", "gather_index",
       "has an entry >= the number of records of in (found on the device; the output records of such entries "
       "were left unchanged)"},
      {"canopy::scatter_records", "scatter_index",
       "has an entry >= the number of records of out (found on the device; the input records of such entries "
       "were not written)"}};
  static_assert(sizeof(what) / sizeof(what[0]) == std::size_t(device_check::count), "one message per check");
  // Every raised flag is reported (the first names the function and argument, the others follow in
  // the reason) and all are cleared, so that none is lost and none is reported twice.
  volatile unsigned* flags = check_host_;
  const message* first = nullptr;
  std::string reason;
  for (std::size_t i = 0; i < std::size_t(device_check::count); ++i) {
    if (flags[i] == 0) continue;
    flags[i] = 0;
    if (first == nullptr) {
      first = &what[i];
      reason = what[i].reason;
    } else {
      reason += std::string("; also ") + what[i].function + ": " + what[i].argument + " " + what[i].reason;
    }
  }
  if (first != nullptr) detail::throw_invalid_argument(first->function, first->argument, reason);
#endif
}

namespace detail {

void copy_bytes(context& ctx, void* dst, memory_space dst_space, const void* src, memory_space src_space,
                std::size_t bytes) {
  if (bytes == 0) return;
  if (!ctx.is_cuda()) {
    require(dst_space == memory_space::host, "canopy::copy", "dst", "device memory with the host backend");
    require(src_space == memory_space::host, "canopy::copy", "src", "device memory with the host backend");
    std::memcpy(dst, src, bytes);
    return;
  }
#if CANOPY_HAS_CUDA
  CANOPY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx.stream()));
#endif
}

void fill_bytes(context& ctx, void* dst, memory_space space, int value, std::size_t bytes) {
  if (bytes == 0) return;
  if (space == memory_space::host) {
    if (ctx.is_cuda()) ctx.synchronize();  // host memory may still be a pending copy's target
    std::memset(dst, value, bytes);
    return;
  }
#if CANOPY_HAS_CUDA
  CANOPY_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, ctx.stream()));
#endif
}

}  // namespace detail
}  // namespace canopy
