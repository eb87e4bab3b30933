// canopy/structures/detail/sat_functors.cuh — the per-row, per-column and per-pixel functors of
// summed-area tables, written once for canopy::for_each on both backends. Used by sat.cu.
#pragma once

#include <atomic>

#include <canopy/core/config.hpp>
#include <canopy/structures/sat.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace canopy::detail::sat {

//! Index of (x, y, c) in a tightly packed interleaved image.
CANOPY_HD inline std::size_t element(int x, int y, int c, int width, int channels) {
  return (std::size_t(y) * std::size_t(width) + std::size_t(x)) * std::size_t(channels) + std::size_t(c);
}

//! Test hooks of the CUDA single-pass build (tests/structures/test_sat.cu); defined in sat.cu on
//! every backend, used only by the CUDA one. Not for library users.
struct testing_hooks {
  //! Blocks added to the persistent mode's grid beyond what fits on the device at once (when there
  //! are that many tiles): the cooperative launch is then refused and the build must fall back to
  //! one tile per block, the path that an MPS SM limit makes builds take.
  std::atomic<int> persistent_grid_surplus{0};
  //! Persistent launches refused as too large (cudaErrorCooperativeLaunchTooLarge) since start.
  std::atomic<unsigned long long> cooperative_refusals{0};
  //! Persistent launches attempted (the refused ones included), and launches of the deferred-store
  //! kernel (16-byte pixels) that ran, since start.
  std::atomic<unsigned long long> persistent_attempts{0};
  std::atomic<unsigned long long> deferred_launches{0};
  //! Region kernels (RGBA8 -> u32 and RGBA32F -> f32 on sm_90, detail/sat_region_kernels.cuh and
  //! sat_region_f32_kernels.cuh): launches that ran; which
  //! builds take it (region_by_size: those launch_region's measured size rule picks; region_never:
  //! none, so tests and benchmarks can compare the tile kernel; region_always: every build it can
  //! run, so tests can check it at small shapes); blocks added to its grid beyond what fits at
  //! once, as persistent_grid_surplus.
  static constexpr int region_by_size = 0, region_never = 1, region_always = 2;
  std::atomic<unsigned long long> region_launches{0};
  std::atomic<int> region_kernel_choice{region_by_size};
  std::atomic<int> region_grid_surplus{0};
  //! The region kernels' plan, for measuring (canopy-sat-bench --region-plan); 0 keeps the
  //! library's: rows a region after chunk 0 (RGBA8 56, RGBA32F 28; fewer for wide images), carry
  //! slots (3; 2 to 4), staging rows a walker (1; 1 to 3).
  std::atomic<int> region_rows{0};
  std::atomic<int> region_slots{0};
  std::atomic<int> region_stage_rows{0};
  //! R8 -> u32 tables built as RGBA8 quads (4 pixels a word, sat.cu's quads_pay): builds that ran
  //! that way, and which builds take it (the region_* values: by the measured size rule, never,
  //! or every build whose width and alignment allow it).
  std::atomic<unsigned long long> quad_launches{0};
  std::atomic<int> quad_choice{region_by_size};
};
testing_hooks& testing();

//! Position of a tile of the single-pass kernel: tile row ti, tile column tj.
struct tile_position {
  int ti, tj;
};

//! Largest e with e (e + 1) / 2 <= m (m < 2^24: the float root is then off by at most one).
CANOPY_HD inline long long triangular_root(long long m) {
  long long e = (long long)((sqrtf(8.0f * float(m) + 1.0f) - 1.0f) * 0.5f);
  while (e > 0 && e * (e + 1) / 2 > m) --e;
  while ((e + 1) * (e + 2) / 2 <= m) ++e;
  return e;
}

//! The single-pass kernel's processing order: the n-th tile (0 <= n < tiles_x * tiles_y) in
//! anti-diagonal order, diagonals d = ti + tj in increasing d, within a diagonal by increasing ti.
//! A tile's left, upper and upper-left tiles (everything its look-backs read) lie on smaller
//! diagonals, so they come earlier in this order for every grid shape (the deadlock freedom of the
//! look-back needs exactly that), and in a round of G consecutive tiles only tiles within
//! G / (diagonal length) diagonals of each other run at once: the chains of look-backs that wait
//! on a tile still in flight are that short, instead of a whole tile row (raster order).
//! Diagonals 0..a-1 hold 1..a tiles, a..b-1 hold a, the last a-1 hold a-1..1 (a = min, b = max of
//! tiles_x, tiles_y); the diagonal of n comes from a triangular root in the first and last part.
CANOPY_HD inline tile_position diagonal_tile(unsigned n, int tiles_x, int tiles_y) {
  const long long a = tiles_x < tiles_y ? tiles_x : tiles_y;
  const long long b = tiles_x < tiles_y ? tiles_y : tiles_x;
  const long long i = n, total = a * b, head = a * (a + 1) / 2, tail = a * (a - 1) / 2;
  long long d, start;
  if (i < head) {
    d = triangular_root(i);
    start = d * (d + 1) / 2;
  } else if (i < total - tail) {
    d = a + (i - head) / a;
    start = head + (d - a) * a;
  } else {
    const long long e = triangular_root(total - 1 - i);  // e-th diagonal from the end, e + 1 tiles
    d = tiles_x + tiles_y - 2 - e;
    start = total - (e + 1) * (e + 2) / 2;
  }
  const long long lo = d - tiles_x + 1 > 0 ? d - tiles_x + 1 : 0;  // first tile row on diagonal d
  const int ti = int(lo + (i - start));
  return {ti, int(d) - ti};
}

//! Converts one image value to the table type, minus the channel's offset for float tables.
template <class Table, class In>
CANOPY_HD Table to_table(In v, const Table* offset, int c) {
  if constexpr (sat_has_offset_v<Table>) return Table(v) - offset[c];
  else return Table(v);
}

//! Row pass: row y gets its inclusive prefix sums, per channel. One call per row.
template <class In, class Table>
struct row_prefix {
  const In* image;
  Table* table;
  const Table* offset;
  int width, channels;
  CANOPY_HD void operator()(std::size_t row) const {
    const int y = int(row);
    Table acc[4] = {Table(0), Table(0), Table(0), Table(0)};  // channels <= 4
    std::size_t i = element(0, y, 0, width, channels);
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c, ++i) {
        acc[c] += to_table<Table>(image[i], offset, c);
        table[i] = acc[c];
      }
  }
};

//! Column pass over a row-prefixed table: each call owns `group` adjacent elements of a row and
//! walks down all rows, so neighbouring calls touch neighbouring addresses (coalesced on CUDA,
//! cache lines shared on the host).
template <class Table>
struct column_prefix {
  Table* table;
  std::size_t row_elements;  // width * channels
  int height;
  std::size_t group;
  CANOPY_HD void operator()(std::size_t g) const {
    const std::size_t begin = g * group;
    const std::size_t end = begin + group < row_elements ? begin + group : row_elements;
    for (int y = 1; y < height; ++y) {
      Table* cur = table + std::size_t(y) * row_elements;
      const Table* prev = cur - row_elements;
      for (std::size_t k = begin; k < end; ++k) cur[k] += prev[k];
    }
  }
};

//! Per-channel offset of float tables: the mean of a 16 x 16 grid of samples at pixel centres
//! (x = (2i + 1) * width / 32, same for y). Cheap (256 reads) and deterministic; it only has to be
//! near the mean, not equal to it, to keep table entries small. One call per channel.
template <class In, class Table>
struct sample_mean {
  const In* image;
  Table* offset;
  int width, height, channels;
  CANOPY_HD void operator()(std::size_t ch) const {
    const int c = int(ch);
    double sum = 0;
    for (int j = 0; j < 16; ++j) {
      const int y = int((std::int64_t(2 * j + 1) * height) / 32);
      for (int i = 0; i < 16; ++i) {
        const int x = int((std::int64_t(2 * i + 1) * width) / 32);
        sum += double(image[element(x, y, c, width, channels)]);
      }
    }
    offset[c] = Table(sum / 256.0);
  }
};

//! Box filter with a per-pixel radius; one call per pixel.
template <class Table>
struct box_filter_pixel {
  sat_view<Table> sat;
  const std::int32_t* radius;
  float* out;
  CANOPY_HD void operator()(std::size_t i) const {
    const int x = int(i % std::size_t(sat.width));
    const int y = int(i / std::size_t(sat.width));
    const int r = radius[i] > 0 ? radius[i] : 0;
    Table s[4];
    sat.box_sums(x - r, y - r, x + r, y + r, s);
    const double area = double(sat.box_area(x - r, y - r, x + r, y + r));
    for (int c = 0; c < sat.channels; ++c)
      out[i * std::size_t(sat.channels) + std::size_t(c)] = area > 0 ? float(double(s[c]) / area) : 0.f;
  }
};

}  // namespace canopy::detail::sat
