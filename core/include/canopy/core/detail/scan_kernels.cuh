// canopy/core/detail/scan_kernels.cuh — the single-pass scan kernels: one thread block per tile
// (every scan mode), and the persistent plain scan (sm_90, section below).
//
// Data layout of a tile: each warp owns a contiguous run of 32 x ITEMS elements, cut into ROWS
// rows of 32 x VEC elements; lane l holds the VEC consecutive elements l*VEC.. of every row.
// Loads and stores of a full row are one 16-byte vector per lane (512 contiguous bytes per warp,
// fully coalesced), so no shared-memory transpose is needed: each lane scans its VEC items in
// registers, a shuffle scan across lanes gives the lane prefixes and the row totals, and the rows
// are chained in registers. One block per tile: one atomic for the tile id (dynamic ordering, so a
// tile only waits on tiles that started before it), three barriers (tile id, warp totals, tile
// prefix), and one warp-wide look-back.
// Measured (docs/performance/scan.md): for one block per tile the per-tile latency (tile-id atomic,
// barriers, look-back round trips) dominates, so large tiles win. Persistent blocks lose to it
// unless no tile's aggregate waits on its block's previous look-back (the convoy of session 1,
// run 2, and of session 3, run 9); with early aggregates they reach the pipeline's own ceiling
// (session 3, runs 10-11).
#pragma once

#include <canopy/core/detail/host_scan.hpp>
#include <canopy/core/detail/bulk_copy.cuh>
#include <canopy/core/functional.hpp>
#include <canopy/core/detail/scan_tile_state.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {
namespace detail {

//! How heads of segments are found: none (plain scan), a flags array, or every segment_length.
enum scan_mode : int { scan_plain = 0, scan_flagged = 1, scan_regular = 2 };

//! Folds lanes in lane order; the result is valid in lane 0.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_ordered(T v, const Op& op) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const T other = shfl_down(v, d);
    if (lane_id() + d < 32) v = op(v, other);
  }
  return v;
}

//! Operators known to be commutative on T: their reduction may fold each lane's values across rows
//! before the warp combines lanes (one shuffle tree per warp instead of one per row), and the
//! persistent scan may compute a tile's total in any order.
template <class Op>
struct is_commutative : std::false_type {};
template <class T>
struct is_commutative<plus<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<maximum<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<minimum<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<multiplies<T>> : std::is_arithmetic<T> {};

template <class T, class Op>
struct scan_kernel_params {
  const T* in;                 // may equal out
  T* out;
  std::size_t n;
  const std::uint8_t* flags;   // scan_flagged only
  std::size_t segment_length;  // scan_regular only
  T identity;                  // exclusive only
  bool exclusive;
  void* status;                // tile descriptors: zeroed (epoch 0) or kept with epochs
  std::size_t tiles;
  unsigned* tile_counter;      // zero at the start; the block claiming the last tile zeroes it again
  Op op;                       // the user's operator on T
  //! Diagnostics (persistent kernel with the persist_profile option): 16 words per tile.
  unsigned long long* profile = nullptr;
  unsigned epoch = 0;          // this call's descriptor epoch (context::keep_tile_descriptors)
};

template <class T, int Vec>
struct alignas(16) vector_of {
  T v[Vec];
};

//! 16-byte load/store, optionally with the evict-first (.cs) cache hint for data touched once.
template <bool Streaming, class V>
__device__ __forceinline__ V load_vector(const V* p) {
  static_assert(sizeof(V) == 16, "16-byte vectors");
  if constexpr (Streaming) {
    const int4 w = __ldcs(reinterpret_cast<const int4*>(p));
    V v;
    memcpy(&v, &w, 16);
    return v;
  } else {
    return *p;
  }
}
template <bool Streaming, class V>
__device__ __forceinline__ void store_vector(V* p, const V& v) {
  static_assert(sizeof(V) == 16, "16-byte vectors");
  if constexpr (Streaming) {
    int4 w;
    memcpy(&w, &v, 16);
    __stcs(reinterpret_cast<int4*>(p), w);
  } else {
    *p = v;
  }
}

//! Loads the ROWS x VEC items of this lane (and nothing past n; missing items repeat a valid one,
//! which only later items could see).
template <class T, int Rows, int Vec, bool Streaming = false>
__device__ __forceinline__ void load_rows(const T* in, std::size_t n, std::size_t warp_base, bool full, bool aligned,
                                          T (&x)[Rows][Vec], const T& fill) {
  const unsigned lane = lane_id();
  if (full && aligned && Vec > 1) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const vector_of<T, Vec> v =
          load_vector<Streaming>(reinterpret_cast<const vector_of<T, Vec>*>(in + warp_base + r * 32 * Vec) + lane);
#pragma unroll
      for (int j = 0; j < Vec; ++j) x[r][j] = v.v[j];
    }
  } else if (full) {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int j = 0; j < Vec; ++j) x[r][j] = in[warp_base + r * 32 * Vec + lane * Vec + j];
  } else {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        const std::size_t i = warp_base + r * 32 * Vec + lane * Vec + j;
        x[r][j] = i < n ? in[i] : fill;
      }
  }
}

template <class T, int Rows, int Vec, bool Streaming = false>
__device__ __forceinline__ void store_rows(T* out, std::size_t n, std::size_t warp_base, bool full, bool aligned,
                                           const T (&y)[Rows][Vec]) {
  const unsigned lane = lane_id();
  if (full && aligned && Vec > 1) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      vector_of<T, Vec> v;
#pragma unroll
      for (int j = 0; j < Vec; ++j) v.v[j] = y[r][j];
      store_vector<Streaming>(reinterpret_cast<vector_of<T, Vec>*>(out + warp_base + r * 32 * Vec) + lane, v);
    }
  } else {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        const std::size_t i = warp_base + r * 32 * Vec + lane * Vec + j;
        if (full || i < n) out[i] = y[r][j];
      }
  }
}

//! Claims this block's tile from the counter (tiles in launch order, so every tile's predecessors
//! are resident or done: the look-back cannot deadlock) and loads its rows into x. Block-wide: all
//! threads call it; `s_tile` is a __shared__ word. The block that claims the last of `tiles` (one
//! block per tile, so every other claim came before it) zeroes the counter for the next call. With Shape::speculative it guesses that the
//! counter hands out blockIdx.x (blocks start in index order) and loads that tile while the atomic
//! is in flight; on a wrong guess it loads the tile really given (usually from L2, as the guessed
//! tile's owner has just read it or is about to).
template <class T, int Rows, int Vec, class Shape>
__device__ __forceinline__ std::size_t claim_and_load_tile(unsigned* tile_counter, std::size_t tiles, unsigned& s_tile,
                                                           const T* in, std::size_t n, unsigned warp,
                                                           T (&x)[Rows][Vec]) {
  if (threadIdx.x == 0) {
    const unsigned claimed = atomicAdd(tile_counter, 1u);
    s_tile = claimed;
    if (claimed + 1 == tiles) atomicExch(tile_counter, 0u);
  }
  const bool in_aligned = (reinterpret_cast<std::uintptr_t>(in) & 15u) == 0;
  const auto load_tile = [&](std::size_t t) {
    const std::size_t base = t * std::size_t(Shape::tile_items);
    const bool whole = base + Shape::tile_items <= n;
    load_rows<T, Rows, Vec, Shape::streaming>(in, n, base + std::size_t(warp) * Shape::warp_items, whole,
                                              in_aligned, x, whole ? T{} : in[base]);
  };
  std::size_t tile;
  if constexpr (Shape::speculative) {
    load_tile(blockIdx.x);
    __syncthreads();
    tile = s_tile;
    if (tile != blockIdx.x) load_tile(tile);
  } else {
    __syncthreads();
    tile = s_tile;
    load_tile(tile);
  }
  return tile;
}

template <class T, class Op, int Mode>
struct scan_accumulator {
  using type = T;
  using op_type = Op;
  static __device__ __forceinline__ op_type make_op(const Op& op) { return op; }
  static __device__ __forceinline__ T make(const T& x, bool) { return x; }
};

template <class T, class Op>
struct scan_accumulator<T, Op, scan_flagged> {
  using type = flagged_value<T>;
  using op_type = segmented_op<T, Op>;
  static __device__ __forceinline__ op_type make_op(const Op& op) { return op_type{op}; }
  static __device__ __forceinline__ type make(const T& x, bool head) { return type{x, head ? 1u : 0u}; }
};

template <class T, class Op>
struct scan_accumulator<T, Op, scan_regular> : scan_accumulator<T, Op, scan_flagged> {};

template <class T, class Op, int Mode>
__device__ __forceinline__ T scan_value(const typename scan_accumulator<T, Op, Mode>::type& a) {
  if constexpr (Mode == scan_plain)
    return a;
  else
    return a.value;
}

// ---------------------------------------------------------------------------------------------
// The steps of one tile, shared by the one-block-per-tile kernel and the persistent kernel.

//! Per lane: in-register scan of each row's VEC accumulators; per warp: lane prefixes and row totals
//! chained into the warp aggregate and folded into acc at once, so acc ends as the warp-local
//! inclusive scan and no per-row prefixes stay live across the look-back (fewer registers). Returns
//! the warp's total (in every lane).
template <class Acc, int Rows, int Vec, class Op>
__device__ __forceinline__ Acc warp_scan_rows(Acc (&acc)[Rows][Vec], const Op& op) {
  const unsigned lane = lane_id();
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int j = 1; j < Vec; ++j) acc[r][j] = op(acc[r][j - 1], acc[r][j]);
  Acc warp_total{};
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const Acc inclusive = warp_inclusive_scan(acc[r][Vec - 1], op);
    const Acc lane_prefix = shfl_up(inclusive, 1);
    const Acc row_total = shfl_idx(inclusive, 31);
    bool has = r > 0;
    Acc pre = warp_total;  // rows before r
    combine_optional(has, pre, lane > 0, lane_prefix, op);
    if (has) {
#pragma unroll
      for (int j = 0; j < Vec; ++j) acc[r][j] = op(pre, acc[r][j]);
    }
    warp_total = r == 0 ? row_total : op(warp_total, row_total);
  }
  return warp_total;
}

//! Block-wide part of a tile: combines the warp totals, publishes the tile's aggregate, resolves its
//! prefix with the warp-wide look-back (warp 0) and returns in `pre` the combination of everything
//! before this warp's first item (false: nothing, i.e. the first warp of tile 0). Two barriers.
//! `after_totals()` runs in every thread right after the first barrier, by which point every thread
//! has finished reading its inputs (the persistent kernel refills the stage it read from there).
//! `published_total`, when not null, is the tile's total, already published as its aggregate (the
//! persistent kernel's early aggregates): it is used instead of the warp totals' combination, so
//! that the inclusive value matches the aggregate other tiles may have read. s_warp (Warps slots)
//! and s_prefix are shared; the second barrier of one tile orders their reads before the next
//! tile's writes. `polls` (diagnostics, may be null) counts the look-back's window reads.
template <class Acc, class Shape, bool SkipLookBack = false, class Op, class Status, class AfterTotals>
__device__ __forceinline__ bool tile_exclusive_prefix(std::size_t tile, const Acc& warp_total, Acc* s_warp,
                                                      Acc* s_prefix, const Status& status, const Op& op,
                                                      const AfterTotals& after_totals, Acc& pre,
                                                      const Acc* published_total = nullptr,
                                                      unsigned* polls = nullptr) {
  constexpr int Warps = Shape::warps;
  const unsigned warp = threadIdx.x / 32, lane = lane_id();
  if (lane == 0) s_warp[warp] = warp_total;
  __syncthreads();
  after_totals();

  bool has_warp_prefix = false;
  Acc warp_prefix{};
  for (unsigned w = 0; w < warp; ++w) combine_optional(has_warp_prefix, warp_prefix, true, s_warp[w], op);

  if (warp == 0) {
    Acc block_total;
    if (published_total != nullptr) {
      block_total = *published_total;
    } else {
      block_total = s_warp[0];
#pragma unroll
      for (int w = 1; w < Warps; ++w) block_total = op(block_total, s_warp[w]);
    }
    if (tile == 0 || SkipLookBack) {
      if (lane == 0) {
        status.publish(tile, tile_inclusive, block_total);
        if (SkipLookBack) *s_prefix = Acc{};  // diagnostics only: wrong prefixes
      }
    } else {
      if (lane == 0 && published_total == nullptr) status.publish(tile, tile_aggregate, block_total);
      const Acc prefix =
          warp_look_back<Acc, Shape::lookback_per_lane, Shape::max_backoff_ns>(status, tile, op, polls);
      if (lane == 0) {
        status.publish(tile, tile_inclusive, op(prefix, block_total));
        *s_prefix = prefix;
      }
    }
  }
  __syncthreads();

  bool has_pre = tile > 0;
  pre = has_pre ? *s_prefix : Acc{};
  combine_optional(has_pre, pre, has_warp_prefix, warp_prefix, op);
  return has_pre;
}

//! Output values of a tile from the warp-local inclusive scan `acc` and the prefix before the warp.
template <class T, class Op, int Mode, int Rows, int Vec, class Acc, class AccOp>
__device__ __forceinline__ void tile_outputs(const Acc (&acc)[Rows][Vec], unsigned heads, bool has_pre,
                                             const Acc& pre, bool exclusive, const T& identity, const AccOp& op,
                                             T (&y)[Rows][Vec]) {
  const unsigned lane = lane_id();
  if (!exclusive) {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int j = 0; j < Vec; ++j) y[r][j] = scan_value<T, Op, Mode>(has_pre ? op(pre, acc[r][j]) : acc[r][j]);
  } else {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      // The warp-local inclusive value of the item before (r, 0) in warp order: lane - 1's last item
      // of row r, or for lane 0 lane 31's last item of row r - 1 (none for row 0).
      const Acc from_left = shfl_up(acc[r][Vec - 1], 1);
      Acc from_row_above{};
      if (r > 0) from_row_above = shfl_idx(acc[r - 1][Vec - 1], 31);
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        bool has_local = true;
        Acc local;
        if (j > 0) {
          local = acc[r][j - 1];
        } else if (lane > 0) {
          local = from_left;
        } else {
          local = from_row_above;
          has_local = r > 0;
        }
        bool has_before = has_pre;
        Acc before = pre;
        combine_optional(has_before, before, has_local, local, op);
        const bool head = Mode != scan_plain && ((heads >> (r * Vec + j)) & 1u);
        y[r][j] = (has_before && !head) ? scan_value<T, Op, Mode>(before) : identity;
      }
    }
  }
}

struct no_op_after_totals {
  __device__ void operator()() const {}
};

// ---------------------------------------------------------------------------------------------
// One block per tile (every scan mode; the plain scan's fallback).

template <class T, class Op, class Shape, int Mode>
__global__ void __launch_bounds__(Shape::block_threads, Shape::min_blocks)
    single_pass_scan_kernel(scan_kernel_params<T, Op> p) {
  using accumulator = scan_accumulator<T, Op, Mode>;
  using Acc = typename accumulator::type;
  constexpr int Rows = Shape::rows, Vec = Shape::vec, Warps = Shape::warps;

  __shared__ unsigned s_tile;
  __shared__ alignas(Acc) unsigned char s_warp_raw[Warps * sizeof(Acc)];
  __shared__ alignas(Acc) unsigned char s_prefix_raw[sizeof(Acc)];
  Acc* s_warp = reinterpret_cast<Acc*>(s_warp_raw);
  Acc* s_prefix = reinterpret_cast<Acc*>(s_prefix_raw);

  const auto op = accumulator::make_op(p.op);
  const auto status = make_tile_status<Acc>(p.status, p.tiles, p.epoch);

  const unsigned warp = threadIdx.x / 32, lane = lane_id();
  T x[Rows][Vec];
  const std::size_t tile = claim_and_load_tile<T, Rows, Vec, Shape>(p.tile_counter, p.tiles, s_tile, p.in, p.n, warp, x);
  const std::size_t tile_base = tile * std::size_t(Shape::tile_items);
  const std::size_t warp_base = tile_base + std::size_t(warp) * Shape::warp_items;
  const bool full = tile_base + Shape::tile_items <= p.n;

  // Heads as one bit per item (ROWS x VEC <= 32).
  unsigned heads = 0;
  if constexpr (Mode == scan_flagged) {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        const std::size_t i = warp_base + r * 32 * Vec + lane * Vec + j;
        if ((full || i < p.n) && p.flags[i] != 0) heads |= 1u << (r * Vec + j);
      }
  } else if constexpr (Mode == scan_regular) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      std::size_t rem = (warp_base + r * 32 * Vec + lane * Vec) % p.segment_length;
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        if (rem == 0) heads |= 1u << (r * Vec + j);
        rem = rem + 1 == p.segment_length ? 0 : rem + 1;
      }
    }
  }

  Acc acc[Rows][Vec];
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int j = 0; j < Vec; ++j) acc[r][j] = accumulator::make(x[r][j], (heads >> (r * Vec + j)) & 1u);
  const Acc warp_total = warp_scan_rows(acc, op);

  Acc pre;
  const bool has_pre =
      tile_exclusive_prefix<Acc, Shape>(tile, warp_total, s_warp, s_prefix, status, op, no_op_after_totals{}, pre);
  T y[Rows][Vec];
  tile_outputs<T, Op, Mode>(acc, heads, has_pre, pre, p.exclusive, p.identity, op, y);
  store_rows<T, Rows, Vec, Shape::streaming>(p.out, p.n, warp_base, full,
                                             (reinterpret_cast<std::uintptr_t>(p.out) & 15u) == 0, y);
}

// ---------------------------------------------------------------------------------------------
// Persistent plain scan (sm_90).
//
// The grid is one wave of resident blocks; block b scans tiles b, b + G, b + 2G, ... (G = gridDim.x)
// in that order. Each block keeps STAGES shared-memory buffers, each holding one tile in memory
// order, filled by bulk copies STAGES tiles ahead, so the copy engine keeps loads in flight while
// the block scans the current tile and waits on its look-back; the stage is refilled right after
// the first barrier of a tile (every thread has its values in registers by then). Stores go straight
// from registers (16-byte vectors, evict-first).
//
// Early aggregates: while warp 0 runs tile t's look-back, warp 1 folds the block's next tile t + G
// (already in its stage) and publishes its aggregate, so that no tile's aggregate waits for its
// block to finish the previous tile. Without this the static order convoys: tile t + G is assigned
// before its block is free, every later tile's look-back waits on it, and the whole grid advances
// one round per look-back chain (H100: 69% of copy; with early aggregates 93%,
// docs/performance/scan.md, session 3). The next tile's total is folded in any order, so the kernel
// takes only operators known to be commutative (is_commutative); the dispatch sends the others to
// the one-block-per-tile kernel. The published aggregate is also the total used for the tile's
// inclusive value, so every tile sees one value per predecessor.
//
// Deadlock freedom needs every block to be resident at once: tile t waits only on tiles < t, whose
// owners process their tiles in increasing order, so the smallest unfinished tile always progresses
// -- provided its owner is running. The dispatch launches with the cooperative attribute (the
// runtime refuses the launch rather than run a grid that cannot be co-resident) and falls back to the
// one-block-per-tile kernel, whose dynamic tile ids need no such guarantee, when it is refused.
// No tile id atomic: the static order replaces it.
//
// Requirements (checked by the dispatch): in and out 16-byte aligned, 16 % sizeof(T) == 0 and
// sizeof(T) >= 4 (whole 16-byte rows). Only the last tile can be partial; it is read with ordinary
// bounds-checked loads, every other tile through the copy engine. in == out is allowed: a tile's
// outputs overwrite only its own inputs, read before.

//! Total of one tile in shared memory (tile order, TileRows rows of 32 x 16 bytes) under a
//! commutative operator, folded by one warp: lane l folds the l-th vector of every row (512
//! contiguous bytes per row and warp: no bank conflicts), one accumulator per vector element, then
//! the lanes combine. Valid in lane 0.
template <class T, int TileRows, class Op>
__device__ __forceinline__ T warp_fold_tile(const unsigned char* stage, const Op& op) {
  constexpr int Vec = 16 / int(sizeof(T));
  using vec_t = vector_of<T, Vec>;
  const vec_t* rows = reinterpret_cast<const vec_t*>(stage) + lane_id();
  T acc[Vec];
  {
    const vec_t v = rows[0];
#pragma unroll
    for (int j = 0; j < Vec; ++j) acc[j] = v.v[j];
  }
#pragma unroll 8
  for (int r = 1; r < TileRows; ++r) {
    const vec_t v = rows[r * 32];
#pragma unroll
    for (int j = 0; j < Vec; ++j) acc[j] = op(acc[j], v.v[j]);
  }
  T x = acc[0];
#pragma unroll
  for (int j = 1; j < Vec; ++j) x = op(x, acc[j]);
  return warp_reduce_ordered(x, op);
}

template <class T, class Op, class Shape>
__global__ void __launch_bounds__(Shape::block_threads, Shape::min_blocks)
    persistent_scan_kernel(scan_kernel_params<T, Op> p) {
#if CANOPY_HAS_BULK_COPY
  static_assert(is_commutative<Op>::value, "early aggregates fold a tile in any order");
  using Acc = T;
  constexpr int Rows = Shape::rows, Vec = Shape::vec, Warps = Shape::warps, Stages = Shape::stages;
  using vec_t = vector_of<T, Vec>;

  extern __shared__ __align__(128) unsigned char s_stages[];  // Stages x tile_bytes
  __shared__ unsigned long long s_full[Stages];
  __shared__ alignas(Acc) unsigned char s_warp_raw[Warps * sizeof(Acc)];
  __shared__ alignas(Acc) unsigned char s_prefix_raw[sizeof(Acc)];
  // The next tile's total (early aggregate), double-buffered by iteration: iteration k reads slot
  // k & 1 (written by warp 1 in iteration k - 1) while warp 1 writes slot (k + 1) & 1.
  __shared__ alignas(Acc) unsigned char s_early_raw[2 * sizeof(Acc)];
  Acc* s_warp = reinterpret_cast<Acc*>(s_warp_raw);
  Acc* s_prefix = reinterpret_cast<Acc*>(s_prefix_raw);
  Acc* s_early = reinterpret_cast<Acc*>(s_early_raw);

  const auto status = make_tile_status<Acc>(p.status, p.tiles, p.epoch);
  const unsigned warp = threadIdx.x / 32;
  const std::size_t grid = gridDim.x;
  const std::size_t whole_tiles = p.n / Shape::tile_items;  // tiles with no element past n
  // Lane 0 of warp 1 issues the copies and publishes early aggregates: warp 0 runs the look-back.
  const bool issuer = threadIdx.x == 32;
  const unsigned long long policy = Shape::evict_first_loads ? l2_evict_first_policy() : 0ull;
  const auto stage_data = [&](int stage) { return s_stages + std::size_t(stage) * Shape::tile_bytes; };

  const auto issue = [&](std::size_t t, int stage) {
    if (t >= whole_tiles) return;  // the partial last tile (or none) is read directly
    mbarrier_arrive_expect_bytes(&s_full[stage], unsigned(Shape::tile_bytes));
    bulk_copy_to_shared<Shape::evict_first_loads>(stage_data(stage), p.in + t * std::size_t(Shape::tile_items),
                                                  unsigned(Shape::tile_bytes), &s_full[stage], policy);
  };

  if (threadIdx.x == 0)
    for (int s = 0; s < Stages; ++s) mbarrier_init(&s_full[s], 1);
  __syncthreads();
  if (issuer)
    for (int s = 0; s < Stages; ++s) issue(blockIdx.x + s * grid, s);

  int stage = 0;
  unsigned parity = 0;
  unsigned iteration = 0;
  for (std::size_t tile = blockIdx.x; tile < p.tiles; tile += grid, ++iteration) {
    unsigned long long* prof = Shape::profile ? p.profile + 16 * tile : nullptr;
    if (Shape::profile && threadIdx.x == 0) {
      prof[0] = global_timer_ns();
      prof[10] = clock64();
    }
    const std::size_t tile_base = tile * std::size_t(Shape::tile_items);
    const std::size_t warp_base = tile_base + std::size_t(warp) * Shape::warp_items;
    const bool whole = tile < whole_tiles;

    Acc acc[Rows][Vec];
    if (whole) {
      mbarrier_wait(&s_full[stage], parity);
      // Lane l reads the l-th 16-byte vector of each of its warp's rows: 512 contiguous bytes per
      // warp and row, no bank conflicts.
      const vec_t* src =
          reinterpret_cast<const vec_t*>(stage_data(stage)) + std::size_t(warp) * (Shape::warp_items / Vec) + lane_id();
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        const vec_t v = src[r * 32];
#pragma unroll
        for (int j = 0; j < Vec; ++j) acc[r][j] = v.v[j];
      }
    } else {
      load_rows<T, Rows, Vec>(p.in, p.n, warp_base, false, true, acc, p.in[tile_base]);
    }
    if (Shape::profile && threadIdx.x == 0) prof[11] = clock64();
    const Acc warp_total = warp_scan_rows(acc, p.op);

    // Whole tiles after the block's first had their aggregate published by the previous iteration.
    const bool early = iteration > 0 && whole;
    const std::size_t next_tile = tile + grid;
    const int this_stage = stage;
    const int next_stage = stage + 1 == Stages ? 0 : stage + 1;
    const unsigned next_parity = stage + 1 == Stages ? parity ^ 1u : parity;
    unsigned polls = 0;
    Acc pre;
    const bool has_pre = tile_exclusive_prefix<Acc, Shape, Shape::skip_lookback>(
        tile, warp_total, s_warp, s_prefix, status, p.op,
        [&] {
          if (Shape::profile && threadIdx.x == 0) {
            prof[12] = clock64();
            prof[2] = global_timer_ns();
          }
          if (warp == 1) {
            if (issuer) issue(tile + Stages * grid, this_stage);
            if (next_tile < whole_tiles) {
              mbarrier_wait(&s_full[next_stage], next_parity);
              const Acc next_total = warp_fold_tile<T, Shape::tile_rows>(stage_data(next_stage), p.op);
              if (issuer) {
                status.publish(next_tile, tile_aggregate, next_total);
                s_early[(iteration + 1) & 1u] = next_total;
                if (Shape::profile) p.profile[16 * next_tile + 8] = global_timer_ns();
              }
            }
          }
        },
        pre, early ? &s_early[iteration & 1u] : nullptr, Shape::profile ? &polls : nullptr);
    if (Shape::profile && threadIdx.x == 0) {
      prof[13] = clock64();
      prof[1] = global_timer_ns();
      prof[6] = polls;
    }
    T y[Rows][Vec];
    tile_outputs<T, Op, scan_plain>(acc, 0u, has_pre, pre, p.exclusive, p.identity, p.op, y);
    store_rows<T, Rows, Vec, Shape::streaming>(p.out, p.n, warp_base, whole, true, y);
    if (Shape::profile && threadIdx.x == 0) prof[14] = clock64();
    stage = next_stage;
    parity = next_parity;
  }
#else
  __trap();  // the dispatch never launches this kernel on a device without bulk copies
#endif
}

}  // namespace detail
}  // namespace canopy

#endif
