// canopy/core/detail/compact_kernels.cuh — single-pass stable select/partition kernel and the
// reversal kernel that puts a partition's rejected elements back in input order.
//
// One block per tile, dynamic tile ids, same row layout as the scan (scan_kernels.cuh). The selected
// counts are scanned in the tile with shuffles (one per row per lane step); the tile's selected
// elements (and, for partition, its rejected ones after them) are staged in shared memory in
// output order, so the global writes are contiguous runs; the tile's place comes from a decoupled
// look-back over 64-bit selected counts. Rejected elements are written from the back of out,
// reversed (rejected element r goes to n-1-r), because their start (the total count) is unknown
// until the last tile; reverse_tail_kernel then reverses out[count, n).
#pragma once

#include <canopy/core/functional.hpp>
#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy {
namespace detail {

template <class T, class Selector>
struct select_kernel_params {
  const T* in;
  T* out;
  std::size_t n;
  std::size_t* count;
  void* status;  // tile descriptors of 64-bit counts: zeroed (epoch 0) or kept with epochs
  std::size_t tiles;
  unsigned* tile_counter;  // zero at the start; the block claiming the last tile zeroes it again
  Selector select;
  bool partition;
  unsigned epoch = 0;  // this call's descriptor epoch (context::keep_tile_descriptors)
};

//! Select shapes may set `vector_stores`: a select (not a partition) then writes its tile's run
//! with 16-byte stores from the first 16-byte boundary of its output range on (the few elements
//! before it and after the last whole vector one by one), instead of one store per element.
template <class Shape, class = void>
struct select_vector_stores : std::false_type {};
template <class Shape>
struct select_vector_stores<Shape, std::void_t<decltype(Shape::vector_stores)>>
    : std::integral_constant<bool, Shape::vector_stores> {};

template <class T, class Selector, class Shape>
__global__ void __launch_bounds__(Shape::block_threads, Shape::min_blocks)
    single_pass_select_kernel(select_kernel_params<T, Selector> p) {
  constexpr int Rows = Shape::rows, Vec = Shape::vec, Warps = Shape::warps, Block = Shape::block_threads;
  using count_t = unsigned long long;
  static_assert(Rows * Vec <= 32, "one selection bit per item");

  __shared__ unsigned s_tile;
  __shared__ unsigned s_warp[Warps];
  __shared__ count_t s_prefix;
  __shared__ alignas(T) unsigned char s_stage_raw[Shape::tile_items * sizeof(T)];
  T* s_stage = reinterpret_cast<T*>(s_stage_raw);

  const plus<unsigned> add;
  const plus<count_t> add64;
  const auto status = make_tile_status<count_t>(p.status, p.tiles, p.epoch);

  const unsigned warp = threadIdx.x / 32, lane = lane_id();
  T x[Rows][Vec];
  const std::size_t tile = claim_and_load_tile<T, Rows, Vec, Shape>(p.tile_counter, p.tiles, s_tile, p.in, p.n, warp, x);
  const std::size_t tile_base = tile * std::size_t(Shape::tile_items);
  const std::size_t warp_base = tile_base + std::size_t(warp) * Shape::warp_items;
  const bool full = tile_base + Shape::tile_items <= p.n;
  const unsigned tile_valid = full ? unsigned(Shape::tile_items) : unsigned(p.n - tile_base);

  unsigned selected = 0;
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      const std::size_t i = warp_base + r * 32 * Vec + lane * Vec + j;
      if ((full || i < p.n) && p.select(i, x[r][j])) selected |= 1u << (r * Vec + j);
    }

  // Tile-local rank of this lane's first selected item in each row.
  unsigned lane_prefix[Rows], row_prefix[Rows];
  unsigned warp_total = 0;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const unsigned c = __popc((selected >> (r * Vec)) & ((1u << Vec) - 1u));
    const unsigned inclusive = warp_inclusive_scan(c, add);
    lane_prefix[r] = inclusive - c;
    row_prefix[r] = warp_total;
    warp_total += __shfl_sync(0xffffffffu, inclusive, 31);
  }
  if (lane == 0) s_warp[warp] = warp_total;
  __syncthreads();
  unsigned warp_prefix = 0, tile_selected = 0;
#pragma unroll
  for (int w = 0; w < Warps; ++w) {
    warp_prefix += w < int(warp) ? s_warp[w] : 0u;
    tile_selected += s_warp[w];
  }

  // Stage in output order: selected at [0, tile_selected), rejected after them.
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    unsigned rank = warp_prefix + row_prefix[r] + lane_prefix[r];
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      const unsigned item = unsigned(warp) * Shape::warp_items + r * 32 * Vec + lane * Vec + j;  // in tile
      if ((selected >> (r * Vec + j)) & 1u) {
        s_stage[rank++] = x[r][j];
      } else if (p.partition && item < tile_valid) {
        s_stage[tile_selected + (item - rank)] = x[r][j];
      }
    }
  }

  if (warp == 0) {
    const count_t total = tile_selected;
    if (tile == 0) {
      if (lane == 0) {
        status.publish(0, tile_inclusive, total);
        s_prefix = 0;
      }
    } else {
      if (lane == 0) status.publish(tile, tile_aggregate, total);
      const count_t prefix = warp_look_back<count_t, Shape::lookback_per_lane, Shape::max_backoff_ns>(status, tile, add64);
      if (lane == 0) {
        status.publish(tile, tile_inclusive, prefix + total);
        s_prefix = prefix;
      }
    }
  }
  __syncthreads();

  const count_t selected_before = s_prefix;
  if (tile + 1 == p.tiles && threadIdx.x == 0) *p.count = std::size_t(selected_before + tile_selected);
  if constexpr (select_vector_stores<Shape>::value && Vec > 1 && sizeof(T) * Vec == 16) {
    if (!p.partition) {
      T* const out = p.out + selected_before;
      const unsigned misaligned = unsigned(reinterpret_cast<std::uintptr_t>(out) & 15u);
      const unsigned head = (misaligned % sizeof(T)) != 0
                                ? tile_selected  // not even T-aligned in 16 bytes: element stores only
                                : min(tile_selected, unsigned((16u - misaligned) & 15u) / unsigned(sizeof(T)));
      const unsigned vectors = (tile_selected - head) / Vec;
      const unsigned tail = head + vectors * Vec;
      for (unsigned k = threadIdx.x; k < head; k += Block) out[k] = s_stage[k];
      if (tail + threadIdx.x < tile_selected) out[tail + threadIdx.x] = s_stage[tail + threadIdx.x];
      using V = vector_of<T, Vec>;
      V* const out_vectors = reinterpret_cast<V*>(out + head);
      for (unsigned v = threadIdx.x; v < vectors; v += Block) {
        V w;
#pragma unroll
        for (int j = 0; j < Vec; ++j) w.v[j] = s_stage[head + v * Vec + j];
        store_vector<Shape::streaming>(out_vectors + v, w);
      }
      return;
    }
  }
  const unsigned limit = p.partition ? tile_valid : tile_selected;
  const count_t rejected_before = count_t(tile_base) - selected_before;
  for (unsigned k = threadIdx.x; k < limit; k += Block) {
    const T v = s_stage[k];
    if (k < tile_selected)
      p.out[selected_before + k] = v;
    else
      p.out[p.n - 1 - (rejected_before + (k - tile_selected))] = v;
  }
}

//! Reverses out[*count, n) in place (the rejected part of a partition written back to front).
template <class T>
__global__ void reverse_tail_kernel(T* out, std::size_t n, const std::size_t* count) {
  const std::size_t k = *count;
  const std::size_t half = (n - k) / 2;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < half; i += stride) {
    const T a = out[k + i];
    out[k + i] = out[n - 1 - i];
    out[n - 1 - i] = a;
  }
}

}  // namespace detail
}  // namespace canopy

#endif
