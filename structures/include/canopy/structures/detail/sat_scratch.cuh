// canopy/structures/detail/sat_scratch.cuh — the byte layout of the single-pass SAT kernel's
// look-back scratch: one buffer holding the tile counter, the flags and the descriptor values.
// Written once for every launcher of sat_single_pass_kernel (structures/src/sat.cu and the
// measuring harness bench/sat/sat_phases.cu), which allocate the bytes their own way.
//
//   const auto layout = scratch_layout::of<Table, C>(tiles);
//   ...allocate layout.total_bytes...; zero its first layout.zeroed_bytes before every build;
//   tile_descriptors<Table> d = carve_descriptors<Table, C>(scratch, layout);
//
// Layout (each array is [tiles] x the per-tile count in tile_descriptors' comments):
//   words  counter (1), row_flag, corner_flag, col_flag (col_groups per tile)   zeroed per build
//   pad    to a multiple of 256 bytes, so the values are as aligned as the buffer itself
//   values row_aggregate, row_inclusive (32 x C each), col_aggregate, col_inclusive (128 x C
//          each), corner_aggregate, corner_inclusive (C each): 2 x (32 + 128 + 1) x C per tile,
//          about 8% of a table's size
//
// Tagged layout (look_back_protocol::tagged, 4-byte tables):
//   words  counter (1)              zeroed before a build that reads it (one tile per block)
//   pad    to 256 bytes
//   tagged row_word (32 x C), col_word (128 x C), corner_word (C) per tile, 8 bytes each: the same
//          bytes as the two value slots of the flag layout; empty words must read as empty: zeroed
//          per build (zeroed_bytes covers them), or kept by one owner with a new epoch per build
//          (then only the counter is zeroed, and only for the one-tile-per-block mode; the
//          whole buffer on allocation and before the epoch wraps)
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/structures/detail/sat_kernels.cuh>

#include <cstddef>

namespace canopy::detail::sat {

//! Sizes, in bytes, of the scratch of one single-pass build over `tiles` tiles.
struct scratch_layout {
  std::size_t tiles = 0;
  std::size_t zeroed_bytes = 0;  //!< counter and flags: must be 0 when the kernel starts
  std::size_t flag_bytes = 0;    //!< zeroed_bytes rounded up to 256: where the values start
  std::size_t value_bytes = 0;   //!< descriptor values, never read before they are written
  std::size_t total_bytes = 0;   //!< flag_bytes + value_bytes
  bool tagged = false;

  template <class Table, int C, bool Tagged = false>
  static scratch_layout of(std::size_t tiles) {
    scratch_layout l;
    l.tiles = tiles;
    if constexpr (Tagged) {
      static_assert(sizeof(Table) == 4, "tagged descriptors hold 4-byte values");
      l.tagged = true;
      l.flag_bytes = 256;
      l.value_bytes = tiles * std::size_t(tile_rows + tile_cols + 1) * C * sizeof(tagged_word);
      l.total_bytes = l.flag_bytes + l.value_bytes;
      l.zeroed_bytes = l.total_bytes;
      return l;
    }
    l.zeroed_bytes = (1 + tiles * (2 + std::size_t(col_groups))) * sizeof(unsigned);
    l.flag_bytes = (l.zeroed_bytes + 255) / 256 * 256;
    l.value_bytes = tiles * 2 * std::size_t(tile_rows + tile_cols + 1) * C * sizeof(Table);
    l.total_bytes = l.flag_bytes + l.value_bytes;
    return l;
  }
};

//! Points the descriptors into `scratch` (layout.total_bytes bytes, aligned at least for Table).
//! `stamps` is left null.
template <class Table, int C>
tile_descriptors<Table> carve_descriptors(unsigned char* scratch, const scratch_layout& layout) {
  const std::size_t tiles = layout.tiles;
  tile_descriptors<Table> d;
  unsigned* flags = reinterpret_cast<unsigned*>(scratch);
  d.counter = flags;
  if (layout.tagged) {
    d.row_flag = d.corner_flag = d.col_flag = nullptr;
    d.row_aggregate = d.row_inclusive = d.col_aggregate = d.col_inclusive = nullptr;
    d.corner_aggregate = d.corner_inclusive = nullptr;
    tagged_word* words = reinterpret_cast<tagged_word*>(scratch + layout.flag_bytes);
    d.row_word = words;
    d.col_word = d.row_word + tiles * tile_rows * C;
    d.corner_word = d.col_word + tiles * tile_cols * C;
    return d;
  }
  d.row_flag = flags + 1;
  d.corner_flag = d.row_flag + tiles;
  d.col_flag = d.corner_flag + tiles;
  Table* values = reinterpret_cast<Table*>(scratch + layout.flag_bytes);
  d.row_aggregate = values;
  d.row_inclusive = d.row_aggregate + tiles * tile_rows * C;
  d.col_aggregate = d.row_inclusive + tiles * tile_rows * C;
  d.col_inclusive = d.col_aggregate + tiles * tile_cols * C;
  d.corner_aggregate = d.col_inclusive + tiles * tile_cols * C;
  d.corner_inclusive = d.corner_aggregate + tiles * C;
  return d;
}

}  // namespace canopy::detail::sat

#endif  // CANOPY_HAS_CUDA && __CUDACC__
