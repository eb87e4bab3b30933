// canopy/core/detail/bulk_copy.cuh — device helpers of the sm_90 kernels that stream through
// shared memory: bulk asynchronous global -> shared copies completing on mbarriers, the L2
// evict-first policy, and the global nanosecond timer of the measuring builds. Used by the persistent
// scan, the streamed reduction and the SAT's phase stamps.
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Bulk asynchronous copies (sm_90): global -> shared through the copy engine, completion counted in
// bytes on an mbarrier. Callers guarantee 16-byte aligned addresses and sizes that are multiples of 16.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CANOPY_HAS_BULK_COPY 1
#else
#define CANOPY_HAS_BULK_COPY 0
#endif

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

//! Initialises a barrier without making it visible yet: a thread that initialises many calls
//! mbarrier_init_visible() once after the last.
__device__ __forceinline__ void mbarrier_init_only(unsigned long long* bar, unsigned arrivals) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
#endif
}

//! Makes the barriers this thread initialised visible to the copy engine (async proxy) too.
__device__ __forceinline__ void mbarrier_init_visible() {
#if CANOPY_HAS_BULK_COPY
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned arrivals) {
  mbarrier_init_only(bar, arrivals);
  mbarrier_init_visible();
}

//! One arrival that also announces `bytes` of copies completing on the barrier's current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(unsigned long long* bar, unsigned bytes) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#endif
}

//! Waits until the barrier's phase of parity `parity` has completed (data of that phase visible).
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
#if CANOPY_HAS_BULK_COPY
  unsigned done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

//! L2 policy for data read once (evict first).
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
  unsigned long long policy = 0;
#if CANOPY_HAS_BULK_COPY
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

template <bool EvictFirst>
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes,
                                                    unsigned long long* bar, unsigned long long policy) {
#if CANOPY_HAS_BULK_COPY
  if constexpr (EvictFirst)
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
            "r"(shared_address(dst)),
        "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
        : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(bar))
                 : "memory");
#endif
}

//! %globaltimer in nanoseconds (phase stamps of the measuring builds).
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace detail
}  // namespace canopy

#endif
