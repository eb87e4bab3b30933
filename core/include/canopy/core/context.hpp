// canopy/core/context.hpp — the backend, the stream and the memory a piece of work runs with.
//
// One runtime API over two backends, chosen at run time:
//   - cuda: kernels on a CUDA stream, temporary memory from a cudaMallocAsync pool;
//   - host: parallel loops with oneTBB, temporary memory from a caching host pool.
// Choice order: an explicit request (e.g. an app's --backend flag), then the environment variable
// CANOPY_BACKEND=host|cuda|auto, then auto (CUDA when a usable device is present, else host).
// Asking for CUDA where it is unusable throws canopy::error saying why; it never falls back.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/detail/kept_epoch.hpp>
#include <canopy/core/memory_resource.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace canopy {

enum class backend : std::uint8_t { host, cuda };

//! "host" or "cuda".
const char* to_string(backend b) noexcept;

//! What a caller asks for. `automatic` picks CUDA when usable, else host.
enum class backend_request : std::uint8_t { automatic, host, cuda };

//! Parses "auto", "host" or "cuda"; anything else throws invalid_argument naming `argument`.
backend_request parse_backend_request(std::string_view text, const char* argument = "backend");

//! True when this build has the CUDA backend and a device can be used. Otherwise false, and
//! `why` (if given) receives the reason.
bool cuda_usable(std::string* why = nullptr);

//! Resolves a request to a backend. `explicit_request` (a flag) wins over CANOPY_BACKEND.
//! A request for CUDA that cannot be met throws canopy::error with the reason.
backend resolve_backend(std::optional<backend_request> explicit_request = std::nullopt);

//! Facts about the device a context runs on (the host's, for the host backend).
struct device_info {
  std::string name;                        //!< "NVIDIA H100 80GB HBM3", or the host CPU description
  int ordinal = -1;                        //!< CUDA device ordinal; -1 on the host backend
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;                 //!< SMs, or hardware threads TBB uses on the host
  std::size_t global_memory_bytes = 0;
  std::size_t l2_cache_bytes = 0;
  std::size_t shared_memory_per_block_optin = 0;
  std::size_t shared_memory_per_multiprocessor = 0;
  int max_threads_per_multiprocessor = 0;
  int clock_khz = 0;                       //!< peak SM clock; 0 on the host backend
  double memory_bandwidth = 0;             //!< peak DRAM bytes/s (2 x memory clock x bus width); 0 on the host
};

//! Options for a context. Null members mean "the context makes its own".
struct context_options {
  std::optional<backend_request> request;  //!< overrides CANOPY_BACKEND when set
  int device = 0;                          //!< CUDA device ordinal
  stream_t stream = nullptr;               //!< an external stream the context uses and does not own
  memory_resource* resource = nullptr;     //!< an external resource; must outlive the context
};

//! Checks that a kernel makes but cannot act on (stopping would need a synchronisation): it sets
//! the flag, the context reports it at its next synchronisation (see context::synchronize).
enum class device_check : unsigned {
  gather_index_out_of_range = 0,   //!< gather_records: an entry of gather_index >= the records of in
  scatter_index_out_of_range = 1,  //!< scatter_records: an entry of scatter_index >= the records of out
  count
};

class context;

namespace detail {
//! Sets the epoch of the context's kept tile descriptors of `descriptor_bytes` (tests of the epoch
//! wrap-around only).
void set_tile_descriptor_epoch_for_testing(context& ctx, std::size_t descriptor_bytes, unsigned epoch);
}  // namespace detail

//! Carries the backend, CUDA stream and memory resource. Non-copyable; buffers made from a
//! context keep a pointer to its resource, so the context must outlive them.
class context {
 public:
  explicit context(const context_options& options = {});
  //! Shorthand for a context on a given backend request.
  explicit context(backend_request request);
  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  backend backend_kind() const noexcept { return backend_; }
  bool is_cuda() const noexcept { return backend_ == backend::cuda; }
  //! The memory space of this backend's working buffers: device for cuda, host for host.
  memory_space space() const noexcept { return is_cuda() ? memory_space::device : memory_space::host; }
  //! The stream all work is ordered on (null on the host backend).
  stream_t stream() const noexcept { return stream_; }
  memory_resource& resource() noexcept { return *resource_; }
  const device_info& device() const noexcept { return device_; }
  //! One line: backend, device name and key properties.
  std::string description() const;
  //! Waits until all work on the context's stream is done (no-op on the host). Then, if a kernel
  //! since the last synchronisation set a device_check flag (e.g. a gather index out of range, whose
  //! records the kernel skipped), clears the flags and throws canopy::invalid_argument naming the
  //! function and argument. Copies to host memory through buffer::to_host synchronise this way too.
  void synchronize() const;

  //! Device-visible flags, one word per device_check, in mapped pinned host memory (allocated with
  //! the context; null on the host backend, whose functions check their arguments up front).
  //! Kernels store 1 into flags[int(check)]; nothing else writes them.
  unsigned* device_check_flags() const noexcept { return check_device_; }

  //! True while the context's stream is being captured into a CUDA graph (cudaStreamIsCapturing;
  //! false on the host backend). A captured call replays with the arguments it was captured with, so
  //! state kept between calls with a per-call epoch (keep_tile_descriptors, the SAT's kept scratch)
  //! is not used under capture: those calls clear a temporary scratch instead, which replays
  //! correctly.
  bool stream_capturing() const;

  //! Look-back state of canopy's single-pass kernels (scan, select), kept by the context between
  //! calls so that no call has to clear it first (CUDA only; one clear of the whole store when it
  //! grows and when the epoch wraps). Each call gets the next epoch; a kernel tags the descriptors
  //! it publishes with its epoch and reads any other epoch as "not yet published", so words left by
  //! earlier calls are never taken for this call's. Calls are ordered by the stream: a kernel runs
  //! after every earlier call's kernel. Descriptors of 8 and 16 bytes are kept apart, so a word
  //! is only ever read back in the layout it was written in. Not for calls under stream capture
  //! (stream_capturing): a replayed graph would reuse one epoch.
  struct tile_descriptors {
    void* storage = nullptr;          //!< descriptor_bytes x tiles: zero, or words of earlier epochs
    //! The first of 64 counter words, all zero when a kernel starts; every kernel leaves them zero.
    //! Word 0: the tile counter of scan and select; word 1: reduce's count of finished blocks.
    unsigned* tile_counter = nullptr;
    unsigned epoch = 0;               //!< this call's, in [1, max_tile_epoch]
  };
  static constexpr unsigned max_tile_epoch = detail::kept_epoch_limit - 1;
  //! Storage for `tiles` descriptors of `descriptor_bytes` (8 or 16) and the call's epoch. Allocates
  //! from the context's resource only when the store must grow. Thread-safe.
  tile_descriptors keep_tile_descriptors(std::size_t descriptor_bytes, std::size_t tiles);

 private:
  friend void detail::set_tile_descriptor_epoch_for_testing(context&, std::size_t, unsigned);
  struct kept_store {
    void* storage = nullptr;
    std::size_t bytes = 0;
    unsigned epoch = 0;
  };
  kept_store kept_[2];  // 8- and 16-byte descriptors
  std::mutex kept_mutex_;

  backend backend_ = backend::host;
  stream_t stream_ = nullptr;
  bool owns_stream_ = false;
  memory_resource* resource_ = nullptr;
  std::unique_ptr<memory_resource> owned_resource_;
  device_info device_;
  unsigned* check_host_ = nullptr;    // device_check flags, host view (mapped pinned memory)
  unsigned* check_device_ = nullptr;  // the same words, device view
};

}  // namespace canopy
