// canopy/core/detail/tuning.hpp — launch shapes of the scan, reduce and compact kernels.
//
// The model (after the thesis's choice of items per thread from the operator's type): each thread
// keeps a fixed budget of bytes of values in registers, loaded as 16-byte vectors. A thread's items
// are ROWS vectors of VEC elements; the block tile is threads x ROWS x VEC elements. More bytes per
// thread mean fewer tiles (less look-back traffic and fewer block barriers per byte) but more
// registers and fewer resident blocks to hide the look-back latency.
#pragma once

#include <cstddef>
#include <type_traits>

namespace canopy {
namespace detail {
namespace tuning {

//! Elements per 16-byte vector access, or 1 when T does not tile 16 bytes.
template <class T>
constexpr int vector_elements() {
  return (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? int(16 / sizeof(T)) : 1;
}

constexpr int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

//! Scan/compact tile shape for input type T and accumulator type Acc.
//! Budget: `BytesPerThread` of input values per thread (every shape below passes 128 bytes: 32 x int32,
//! 16 x int64), capped at 32 items and so that the accumulators (ROWS x VEC x sizeof(Acc)) stay within
//! ~128 bytes = 32 registers.
template <class T, class Acc, int BytesPerThread, int BlockThreads, int MinBlocks = 1, bool Streaming = false,
          bool Speculative = false, int LookBackPerLane = 1, unsigned MaxBackoffNs = 256>
struct scan_shape {
  //! Look-back window: 32 x lookback_per_lane predecessor descriptors read per round trip.
  static constexpr int lookback_per_lane = LookBackPerLane;
  //! Cap of the look-back's doubling __nanosleep back-off (0: spin without sleeping).
  static constexpr unsigned max_backoff_ns = MaxBackoffNs;
  static constexpr int block_threads = BlockThreads;
  //! Load tile blockIdx.x while the tile-id atomic is in flight (reloading on a wrong guess).
  static constexpr bool speculative = Speculative;
  //! Evict-first cache hints on the 16-byte loads and stores of data touched once.
  static constexpr bool streaming = Streaming;
  //! Minimum resident blocks per SM asked of the register allocator (__launch_bounds__).
  static constexpr int min_blocks = MinBlocks;
  static constexpr int warps = BlockThreads / 32;
  static constexpr int vec = vector_elements<T>();
  static constexpr int items_by_input = clamp_int(BytesPerThread / int(sizeof(T)), 1, 32);
  static constexpr int items_by_registers = clamp_int(128 / int(sizeof(Acc)), 1, 32);
  static constexpr int items_raw = items_by_input < items_by_registers ? items_by_input : items_by_registers;
  //! Vectors of VEC elements per thread (at least one).
  static constexpr int rows = items_raw / vec > 0 ? items_raw / vec : 1;
  static constexpr int items = rows * vec;
  static constexpr int warp_items = 32 * items;
  static constexpr int tile_items = block_threads * items;
  static_assert(BlockThreads % 32 == 0, "whole warps");
};

//! The default scan/compact tile: 128 bytes of input per thread (32 x 4-byte, 16 x 8-byte items),
//! 256 threads for values of up to 4 bytes and 128 above (measured best on H200 at 2^26 and 2^28,
//! docs/performance/scan.md; the per-tile latency is what larger tiles amortise).
template <class T, class Acc>
using default_scan_shape = scan_shape<T, Acc, 128, (sizeof(T) <= 4 ? 256 : 128)>;

//! The plain (unsegmented) scan's tile, chosen by resident warps per SM first (the look-back and
//! barriers of a tile are latency that only other resident tiles hide; measured on H200 with
//! canopy-scan-tuning, docs/performance/scan.md, runs 5-6):
//!   4-byte values: 128 bytes per thread x 1024 threads (64 registers, 32 warps), evict-first
//!     hints: 2^28 i32 0.801 -> 0.707 ms (CUB 0.690; 512 x 2 blocks 0.716). The speculative first
//!     load, a gain at 24 warps per SM, cost 5% at 32.
//!   8-byte values: 128 bytes per thread x 256 threads, 4 blocks per SM (64 registers, 32 warps),
//!     evict-first hints: 2^28 i64 1.486 -> 1.273 ms (CUB 1.234).
template <class T>
using plain_scan_shape = std::conditional_t<(sizeof(T) <= 4), scan_shape<T, T, 128, 1024, 1, true, false>,
                                            scan_shape<T, T, 128, 256, 4, true, false>>;

//! Options of persistent_scan_shape (bit mask).
enum persistent_scan_option : unsigned {
  //! L2 evict-first policy on the bulk loads (stores always use evict-first).
  persist_evict_first_loads = 1u,
  //! Diagnostics only (canopy-scan-tuning): per-tile phase timestamps into scan_kernel_params::profile.
  persist_profile = 8u,
  //! Diagnostics only, WRONG RESULTS: no look-back (every tile's prefix is taken as zero); measures the
  //! pipeline without the cross-block dependency.
  persist_skip_lookback = 16u,
  //! Tuning only: plain write-back stores instead of evict-first (st.global.cs) ones.
  persist_plain_stores = 64u,
  //! Tuning only: look-back back-off capped at 64 ns instead of 256 ns.
  persist_backoff_64 = 128u,
  //! Tuning only: no back-off between look-back polls.
  persist_no_backoff = 256u,
};

//! Persistent plain-scan shape (persistent_scan_kernel, sm_90): the tile is BlockThreads x Rows
//! 16-byte vectors, staged through Stages shared-memory buffers that the copy engine fills Stages
//! tiles ahead. Byte budget per SM: MinBlocks x Stages x tile_bytes of shared memory (228 KB on
//! H100/H200, 227 KB at most per block). LookBackPerLane: descriptors per lane and look-back step
//! (32 x this per L2 round trip). Options: persistent_scan_option bits.
template <class T, int BlockThreads, int Rows, int Stages, int MinBlocks, int LookBackPerLane = 1,
          unsigned Options = 0>
struct persistent_scan_shape {
  static_assert(vector_elements<T>() > 1 && vector_elements<T>() * sizeof(T) == 16, "whole 16-byte rows");
  static_assert(BlockThreads % 32 == 0 && BlockThreads >= 64, "whole warps, at least two (warp 1 issues copies)");
  static_assert(Stages >= 2, "the next tile must have a stage of its own");
  static constexpr int lookback_per_lane = LookBackPerLane;
  static constexpr unsigned max_backoff_ns =
      (Options & persist_no_backoff) != 0 ? 0u : (Options & persist_backoff_64) != 0 ? 64u : 256u;
  static constexpr bool streaming = (Options & persist_plain_stores) == 0;
  static constexpr bool evict_first_loads = (Options & persist_evict_first_loads) != 0;
  static constexpr bool profile = (Options & persist_profile) != 0;
  static constexpr bool skip_lookback = (Options & persist_skip_lookback) != 0;
  static constexpr int block_threads = BlockThreads;
  static constexpr int warps = BlockThreads / 32;
  static constexpr int min_blocks = MinBlocks;
  static constexpr int stages = Stages;
  static constexpr int vec = vector_elements<T>();
  static constexpr int rows = Rows;
  static constexpr int items = rows * vec;
  static constexpr int warp_items = 32 * items;
  static constexpr int tile_items = block_threads * items;
  //! Rows of 32 x 16 bytes in a tile.
  static constexpr int tile_rows = block_threads * rows / 32;
  static constexpr std::size_t tile_bytes = std::size_t(tile_items) * sizeof(T);
  static constexpr std::size_t shared_bytes = std::size_t(Stages) * tile_bytes;
  static_assert(tile_bytes < (1u << 20), "an mbarrier counts at most 2^20 - 1 bytes per phase");
};

//! Whether the persistent plain scan handles T (4- and 8-byte values: whole 16-byte rows); it also
//! needs an operator known to be commutative (is_commutative, scan_kernels.cuh).
template <class T>
constexpr bool persistent_scan_supports() {
  return sizeof(T) >= 4 && vector_elements<T>() > 1 && vector_elements<T>() * sizeof(T) == 16;
}

//! The persistent plain scan's default shape: 256 threads x 12 rows (48 KB tiles; 8-byte values: 10
//! rows, 40 KB), 2 stages, 2 blocks per SM = 192 KB (160 KB) of stages per SM, evict-first bulk
//! loads. History: 512 threads x 4 rows (32 KB tiles), 3 stages, 2 blocks per SM until session 10.
//! H100, session 3, run 11 (docs/performance/scan.md): 2^28 i32 inclusive 0.765 ms (CUB 0.886, copy
//! 0.720), i64 exclusive 1.488 ms (CUB 1.585); 24 KB x 3 blocks within 1.5%, 64 KB x 1 block 3%
//! slower, wider look-back windows 3-10% slower (run 10). Session 4, run 13 (GPU-only timing):
//! evict-first loads 1.9% / 1.0% faster at 2^26 / 2^28 i32 and 0.9% / 0.5% for i64 (within noise
//! in run 11); bulk shared -> global stores 1-2% slower; a staggered start within 0.5%.
//! Session 10 (H100, canopy-scan-tuning, up to five processes, docs/performance/scan.md): larger tiles
//! with two stages instead of three, 256 threads, the same 96 KB of stages per block. i32: 48 KB
//! tiles (12 rows a thread), 2^28 0.7407-0.7437 ms against 0.7502-0.7554 for 32 KB x 3 (16 KB and
//! 24 KB tiles were 4% and 1.4% slower, 52 and 56 KB no better); i64: 40 KB tiles (10 rows),
//! 1.4626 ms against 1.4749, and at 2^20, where 48 KB tiles leave too few tiles for the grid, the
//! same as 32 KB (0.0101 ms against 0.0100; 48 KB 0.0110).
template <class T>
using plain_persistent_shape =
    persistent_scan_shape<T, 256, (sizeof(T) <= 4 ? 12 : 10), 2, 2, 1, persist_evict_first_loads>;

//! A select shape whose tiles write their selected run with 16-byte stores (single_pass_select_kernel;
//! a partition still stores element by element).
template <class Shape>
struct select_vector_stores_shape : Shape {
  static constexpr bool vector_stores = true;
};

//! Select/partition tile: for values of up to 4 bytes 4 blocks per SM (63 registers, no spills;
//! 2^28 u32 50%: 0.632 -> 0.572 ms, CUB 0.596, run 6), with evict-first loads and 16-byte
//! evict-first stores of the selected run (H100, session 5: 2^26 / 2^28 u32 50% 0.1819 -> 0.1800 ms
//! and 0.6912 -> 0.6839 ms; either change alone was within 0.3%); larger values keep
//! default_scan_shape.
template <class T>
using select_shape =
    std::conditional_t<(sizeof(T) <= 4), select_vector_stores_shape<scan_shape<T, unsigned, 128, 256, 4, true>>,
                       default_scan_shape<T, unsigned>>;

//! Reduction: 128 threads, 4 vectors of 16 bytes in flight per thread per step (64 bytes); the grid
//! is one wave of resident blocks (occupancy query), each folding a contiguous run of rows.
//! 128 threads measured about 1% faster than 256 in two runs (H200, 2^26 and 2^28); 8 vectors, 512
//! threads and an L2::256B prefetch hint on the loads were not faster (docs/performance/scan.md).
constexpr int reduce_block_threads = 128;
constexpr int reduce_vectors_per_thread = 4;

//! Streamed reduction (reduce_bulk_kernel: commutative operators, 16-byte aligned input, sm_90):
//! 256 threads, chunks of 32 KB through 6 shared-memory stages, one block per SM (192 KB of stages).
//! H100, 2^26 / 2^28 i32 (canopy-scan-tuning, session 3, runs 9-11): CUB/canopy 1.003 / 1.014,
//! 1.031 / 1.024, 0.998 / 1.009 (512 threads x 3 stages x 2 blocks: 1.010 / 1.012, 1.014 / 1.010,
//! 1.006 / 0.994; the register kernel 0.972 / 0.977, 1.008 / 0.982, 0.983 / 0.963).
constexpr int reduce_bulk_block_threads = 256;
constexpr int reduce_bulk_chunk_bytes = 32768;
constexpr int reduce_bulk_stages = 6;

}  // namespace tuning
}  // namespace detail
}  // namespace canopy
