// canopy/structures/detail/sat_kernels.cuh — CUDA kernels of summed-area tables: the single-pass
// tiled kernel (2D decoupled look-back), the two-pass baseline's row kernel and the offset kernel.
// Compiled only by nvcc with the CUDA backend; included by structures/src/sat.cu.
//
// [SECTION] Tile geometry and descriptors
// [SECTION] Row-segment loads and stores
// [SECTION] Single-pass kernel
// [SECTION] Two-pass row kernel, offset kernel
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/structures/detail/sat_functors.cuh>

#include <cstdint>

namespace canopy::detail::sat {

// ---------------------------------------------------------------------------------------------
// [SECTION] Tile geometry and descriptors
//
// A tile is 32 rows x 128 columns; a block of 8 warps takes one. Warp w owns rows 4w..4w+3 and
// lane l owns columns 4l..4l+3 of each, so one thread holds 16 pixels (16 * channels values of the
// table type in registers) and a warp reads one 128-pixel row segment at a time (coalesced).
//
// Descriptors (per tile, in global memory, reset before each build):
//   row:    32 x channels aggregates, 32 x channels inclusive prefixes, one flag
//   column: 128 x channels aggregates, 128 x channels inclusive prefixes, one flag
// Flag values: 0 = nothing yet, 1 = aggregate published, 2 = inclusive prefix published.
// A tile's row aggregate is its own row sums; its row inclusive prefix adds the row carries of all
// tiles to its left. Its column aggregate is the column sums of its rows *including* the row
// carries, so it is published only once the row look-back is done.
constexpr int tile_rows = 32;
constexpr int tile_cols = 128;
constexpr int block_threads = 256;
constexpr int rows_per_warp = 4;
constexpr int pixels_per_thread = 4;
constexpr unsigned flag_aggregate = 1;
constexpr unsigned flag_inclusive = 2;

template <class Table>
struct tile_descriptors {
  unsigned* counter;     // next tile id (raster order); 1 word
  unsigned* row_flag;    // [tiles]
  unsigned* col_flag;    // [tiles]
  Table* row_aggregate;  // [tiles][32][channels]
  Table* row_inclusive;  // [tiles][32][channels]
  Table* col_aggregate;  // [tiles][128][channels]
  Table* col_inclusive;  // [tiles][128][channels]
};

// ---------------------------------------------------------------------------------------------
// [SECTION] Row-segment loads and stores
//
// A thread's segment is 4 pixels x C channels, contiguous in memory. Whole segments are moved with
// the widest aligned vector (16, 8 or 4 bytes) that divides their size; partial segments at the
// right border and misaligned images fall back to scalar accesses.

template <int Bytes>
struct vector_word;
template <> struct vector_word<16> { using type = uint4; };
template <> struct vector_word<8> { using type = uint2; };
template <> struct vector_word<4> { using type = unsigned; };

template <int Bytes>
constexpr int vector_granule() {
  return Bytes % 16 == 0 ? 16 : Bytes % 8 == 0 ? 8 : Bytes % 4 == 0 ? 4 : 0;
}

template <class T, int N>
__device__ __forceinline__ void load_segment(const T* p, int count, T (&v)[N]) {
  constexpr int bytes = int(sizeof(T)) * N;
  constexpr int g = vector_granule<bytes>();
  if constexpr (g != 0) {
    if (count == N && (reinterpret_cast<std::uintptr_t>(p) % g) == 0) {
      using W = typename vector_word<g>::type;
      union {
        W w[bytes / g];
        T e[N];
      } u;
#pragma unroll
      for (int k = 0; k < bytes / g; ++k) u.w[k] = __ldcs(reinterpret_cast<const W*>(p) + k);
#pragma unroll
      for (int k = 0; k < N; ++k) v[k] = u.e[k];
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = k < count ? p[k] : T(0);
}

template <class T, int N>
__device__ __forceinline__ void store_segment(T* p, int count, const T (&v)[N]) {
  constexpr int bytes = int(sizeof(T)) * N;
  constexpr int g = vector_granule<bytes>();
  if constexpr (g != 0) {
    if (count == N && (reinterpret_cast<std::uintptr_t>(p) % g) == 0) {
      using W = typename vector_word<g>::type;
      union {
        W w[bytes / g];
        T e[N];
      } u;
#pragma unroll
      for (int k = 0; k < N; ++k) u.e[k] = v[k];
#pragma unroll
      for (int k = 0; k < bytes / g; ++k) __stcs(reinterpret_cast<W*>(p) + k, u.w[k]);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (k < count) p[k] = v[k];
}

// Descriptor values are read through L2 (never a stale L1 line) once their flag has been seen.
template <class T>
__device__ __forceinline__ T load_l2(const T* p) { return __ldcg(p); }

//! Decoupled look-back over up to 32 predecessors at a time, by one warp. Predecessor k (k = 0 is
//! the nearest) has flag flags[tile_of(k)]; `count` predecessors exist. Adds, for every predecessor
//! up to and including the nearest one with an inclusive prefix, value(k) (the inclusive prefix for
//! that one, aggregates before it) into `carry` through add(k, flag). The flags of a window are read
//! by all lanes at once and the values of a window are independent loads, so a look-back costs a
//! couple of L2 round trips instead of one per predecessor.
template <class TileOf, class Add>
__device__ __forceinline__ void look_back(const unsigned* flags, int count, TileOf tile_of, Add add) {
  const int lane = int(threadIdx.x) & 31;
  for (int base = 0; base < count; base += 32) {
    const int k = base + lane;
    unsigned f = flag_inclusive;  // lanes past the first tile act as an inclusive prefix of nothing
    int first_inclusive;
    for (;;) {
      if (k < count) f = *reinterpret_cast<const volatile unsigned*>(flags + tile_of(k));
      const unsigned inclusive = __ballot_sync(0xffffffffu, f == flag_inclusive);
      const unsigned empty = __ballot_sync(0xffffffffu, f == 0);
      first_inclusive = inclusive ? __ffs(int(inclusive)) - 1 : 32;
      const unsigned needed = first_inclusive >= 31 ? 0xffffffffu : ((2u << first_inclusive) - 1u);
      if ((empty & needed) == 0) break;
    }
    __threadfence();
    const int last = min(first_inclusive, min(31, count - 1 - base));
#pragma unroll 4
    for (int j = 0; j <= last; ++j) add(base + j, __shfl_sync(0xffffffffu, f, j));
    if (first_inclusive < 32) return;
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] Single-pass kernel
//
// Shared arrays indexed [p * C + c][lane] for pixel p of lane's 4-pixel segment: a warp's 32
// lanes hit 32 consecutive words (no bank conflicts). Column x of the tile is (p, lane) =
// (x % 4, x / 4).

template <class In, class Table, int C>
__global__ void __launch_bounds__(block_threads)
    sat_single_pass_kernel(const In* __restrict__ image, Table* __restrict__ table, int width, int height,
                           const Table* __restrict__ offset, int tiles_x, tile_descriptors<Table> d) {
  constexpr int segment = pixels_per_thread * C;
  __shared__ unsigned s_tile;
  __shared__ Table s_warp_col[block_threads / 32][segment][32];  // column sums per warp, then exclusive
  __shared__ Table s_row_sum[tile_rows][C];                       // row sums of the tile
  __shared__ Table s_carry_prefix[tile_rows][C];                  // inclusive prefix of row carries
  __shared__ Table s_col_carry[segment][32];

  const int tid = int(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  if (tid == 0) s_tile = atomicAdd(d.counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const int ti = int(tile / unsigned(tiles_x));
  const int tj = int(tile % unsigned(tiles_x));

  Table off[C];
#pragma unroll
  for (int c = 0; c < C; ++c) off[c] = sat_has_offset_v<Table> ? offset[c] : Table(0);

  // Load 4 rows x 4 pixels x C channels and form row prefixes within the thread.
  const int x0 = tj * tile_cols + lane * pixels_per_thread;
  const int count = width - x0 >= pixels_per_thread ? pixels_per_thread : (width - x0 > 0 ? width - x0 : 0);
  Table v[rows_per_warp][pixels_per_thread][C];
  {
    In raw[rows_per_warp][segment];
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) {
      const int y = ti * tile_rows + warp * rows_per_warp + r;
      const int n = y < height ? count * C : 0;
      load_segment<In, segment>(image + (std::size_t(y < height ? y : 0) * std::size_t(width) +
                                         std::size_t(x0 < width ? x0 : 0)) * C,
                                n, raw[r]);
    }
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) {
      const int y = ti * tile_rows + warp * rows_per_warp + r;
#pragma unroll
      for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const bool inside = p < count && y < height;
          const Table t = inside ? Table(raw[r][p * C + c]) - off[c] : Table(0);
          v[r][p][c] = p == 0 ? t : v[r][p - 1][c] + t;
        }
    }
  }

  // Row prefixes across the warp: exclusive scan of thread totals (Kogge-Stone over 32 lanes).
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    Table incl[C];
#pragma unroll
    for (int c = 0; c < C; ++c) incl[c] = v[r][pixels_per_thread - 1][c];
#pragma unroll
    for (int dlt = 1; dlt < 32; dlt <<= 1) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const Table t = __shfl_up_sync(0xffffffffu, incl[c], dlt);
        if (lane >= dlt) incl[c] += t;
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      Table excl = __shfl_up_sync(0xffffffffu, incl[c], 1);
      if (lane == 0) excl = Table(0);
#pragma unroll
      for (int p = 0; p < pixels_per_thread; ++p) v[r][p][c] += excl;
      const Table total = __shfl_sync(0xffffffffu, incl[c], 31);
      if (lane == 0) s_row_sum[warp * rows_per_warp + r][c] = total;
    }
  }
  // Column prefixes within the warp's 4 rows; the warp's column sums go to shared memory.
#pragma unroll
  for (int r = 1; r < rows_per_warp; ++r)
#pragma unroll
    for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
      for (int c = 0; c < C; ++c) v[r][p][c] += v[r - 1][p][c];
#pragma unroll
  for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
    for (int c = 0; c < C; ++c) s_warp_col[warp][p * C + c][lane] = v[rows_per_warp - 1][p][c];
  __syncthreads();

  // Row carries: warp 0, lane = row of the tile.
  if (warp == 0) {
    const std::size_t row_base = std::size_t(tile) * tile_rows * C + std::size_t(lane) * C;
    Table sum[C], carry[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      sum[c] = s_row_sum[lane][c];
      carry[c] = Table(0);
    }
#pragma unroll
    for (int c = 0; c < C; ++c) (tj == 0 ? d.row_inclusive : d.row_aggregate)[row_base + c] = sum[c];
    __threadfence();
    __syncwarp();
    if (lane == 0) atomicExch(d.row_flag + tile, tj == 0 ? flag_inclusive : flag_aggregate);
    if (tj > 0) {
      const unsigned row_start = unsigned(ti * tiles_x);
      look_back(
          d.row_flag, tj, [&](int k) { return row_start + unsigned(tj - 1 - k); },
          [&](int k, unsigned f) {
            const Table* src = (f == flag_inclusive ? d.row_inclusive : d.row_aggregate) +
                               std::size_t(row_start + unsigned(tj - 1 - k)) * tile_rows * C + std::size_t(lane) * C;
#pragma unroll
            for (int c = 0; c < C; ++c) carry[c] += load_l2(src + c);
          });
#pragma unroll
      for (int c = 0; c < C; ++c) d.row_inclusive[row_base + c] = carry[c] + sum[c];
      __threadfence();
      __syncwarp();
      if (lane == 0) atomicExch(d.row_flag + tile, flag_inclusive);
    }
    // Inclusive prefix of the carries down the tile's rows.
#pragma unroll
    for (int dlt = 1; dlt < 32; dlt <<= 1) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const Table t = __shfl_up_sync(0xffffffffu, carry[c], dlt);
        if (lane >= dlt) carry[c] += t;
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) s_carry_prefix[lane][c] = carry[c];
  }
  __syncthreads();

  // Column aggregates (threads 0..127, column x = tid), and the per-warp column sums turned into
  // exclusive prefixes over warps.
  const std::size_t col_base = std::size_t(tile) * tile_cols * C + std::size_t(tid) * C;
  const int xp = tid & 3, xl = (tid >> 2) & 31;
  Table col_sum[C];
  if (tid < tile_cols) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      Table acc = Table(0);
#pragma unroll
      for (int w = 0; w < block_threads / 32; ++w) {
        const Table t = s_warp_col[w][xp * C + c][xl];
        s_warp_col[w][xp * C + c][xl] = acc;
        acc += t;
      }
      col_sum[c] = acc + s_carry_prefix[tile_rows - 1][c];
      (ti == 0 ? d.col_inclusive : d.col_aggregate)[col_base + c] = col_sum[c];
    }
    __threadfence();
  }
  __syncthreads();
  if (tid == 0) atomicExch(d.col_flag + tile, ti == 0 ? flag_inclusive : flag_aggregate);
  if (tid < tile_cols) {
    Table carry[C];
#pragma unroll
    for (int c = 0; c < C; ++c) carry[c] = Table(0);
    if (ti > 0) {
      look_back(
          d.col_flag, ti, [&](int k) { return unsigned((ti - 1 - k) * tiles_x + tj); },
          [&](int k, unsigned f) {
            const Table* src = (f == flag_inclusive ? d.col_inclusive : d.col_aggregate) +
                               std::size_t(unsigned((ti - 1 - k) * tiles_x + tj)) * tile_cols * C + std::size_t(tid) * C;
#pragma unroll
            for (int c = 0; c < C; ++c) carry[c] += load_l2(src + c);
          });
#pragma unroll
      for (int c = 0; c < C; ++c) d.col_inclusive[col_base + c] = carry[c] + col_sum[c];
      __threadfence();
    }
#pragma unroll
    for (int c = 0; c < C; ++c) s_col_carry[xp * C + c][xl] = carry[c];
  }
  __syncthreads();
  if (tid == 0 && ti > 0) atomicExch(d.col_flag + tile, flag_inclusive);

  // S(x, y) = column carry(x) + exclusive column sums of the warps above + own column prefix
  //          + inclusive prefix of the row carries down to row y.
  Table column_base[segment];
#pragma unroll
  for (int k = 0; k < segment; ++k) column_base[k] = s_warp_col[warp][k][lane] + s_col_carry[k][lane];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const int ty = warp * rows_per_warp + r;
    const int y = ti * tile_rows + ty;
    Table out[segment];
#pragma unroll
    for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
      for (int c = 0; c < C; ++c) out[p * C + c] = v[r][p][c] + column_base[p * C + c] + s_carry_prefix[ty][c];
    if (y < height && count > 0)
      store_segment<Table, segment>(table + (std::size_t(y) * std::size_t(width) + std::size_t(x0)) * C, count * C, out);
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] Two-pass row kernel, offset kernel

//! Baseline row pass: one warp per row, 32 pixels per step, carry kept in registers.
template <class In, class Table, int C>
__global__ void __launch_bounds__(256)
    sat_row_kernel(const In* __restrict__ image, Table* __restrict__ table, int width, int height,
                   const Table* __restrict__ offset) {
  const int lane = int(threadIdx.x) & 31;
  const int y = int(blockIdx.x) * (int(blockDim.x) / 32) + int(threadIdx.x) / 32;
  if (y >= height) return;
  Table off[C], carry[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    off[c] = sat_has_offset_v<Table> ? offset[c] : Table(0);
    carry[c] = Table(0);
  }
  const std::size_t row = std::size_t(y) * std::size_t(width) * C;
  for (int xb = 0; xb < width; xb += 32) {
    const int x = xb + lane;
    Table incl[C];
#pragma unroll
    for (int c = 0; c < C; ++c) incl[c] = x < width ? Table(image[row + std::size_t(x) * C + c]) - off[c] : Table(0);
#pragma unroll
    for (int dlt = 1; dlt < 32; dlt <<= 1)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const Table t = __shfl_up_sync(0xffffffffu, incl[c], dlt);
        if (lane >= dlt) incl[c] += t;
      }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (x < width) table[row + std::size_t(x) * C + c] = carry[c] + incl[c];
      carry[c] += __shfl_sync(0xffffffffu, incl[c], 31);
    }
  }
}

//! Float tables: offsets = means of the 16 x 16 sample grid (see sample_mean), one block of 256.
template <class In, class Table>
__global__ void __launch_bounds__(256)
    sat_offset_kernel(const In* __restrict__ image, Table* __restrict__ offset, int width, int height, int channels) {
  __shared__ double s_sum[256];
  const int i = int(threadIdx.x) % 16, j = int(threadIdx.x) / 16;
  const int x = int((std::int64_t(2 * i + 1) * width) / 32);
  const int y = int((std::int64_t(2 * j + 1) * height) / 32);
  for (int c = 0; c < channels; ++c) {
    s_sum[threadIdx.x] = double(image[element(x, y, c, width, channels)]);
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
      if (int(threadIdx.x) < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) offset[c] = Table(s_sum[0] / 256.0);
    __syncthreads();
  }
}

}  // namespace canopy::detail::sat

#endif  // CANOPY_HAS_CUDA && __CUDACC__
