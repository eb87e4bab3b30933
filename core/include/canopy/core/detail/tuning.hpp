// canopy/core/detail/tuning.hpp — launch shapes of the scan, reduce and compact kernels.
//
// The model (after the thesis's choice of items per thread from the operator's type): each thread
// keeps a fixed budget of bytes of values in registers, loaded as 16-byte vectors. A thread's items
// are ROWS vectors of VEC elements; the block tile is threads x ROWS x VEC elements. More bytes per
// thread mean fewer tiles (less look-back traffic and fewer block barriers per byte) but more
// registers and fewer resident blocks to hide the look-back latency.
#pragma once

#include <cstddef>

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
//! Budget: `bytes_per_thread` of input values per thread (64 bytes: 16 x int32, 8 x int64), capped
//! so that the accumulators (ROWS x VEC x sizeof(Acc)) stay within ~128 bytes = 32 registers.
template <class T, class Acc, int BytesPerThread = 64, int BlockThreads = 256>
struct scan_shape {
  static constexpr int block_threads = BlockThreads;
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

//! Reduction: 256 threads, 4 vectors of 16 bytes in flight per thread per step (64 bytes).
constexpr int reduce_block_threads = 256;
constexpr int reduce_vectors_per_thread = 4;
//! Blocks per SM for the reduction grid: enough resident warps to keep 16-byte loads in flight.
constexpr int reduce_blocks_per_sm = 8;

}  // namespace tuning
}  // namespace detail
}  // namespace canopy
