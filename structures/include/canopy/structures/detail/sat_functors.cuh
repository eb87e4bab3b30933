// canopy/structures/detail/sat_functors.cuh — the per-row, per-column and per-pixel functors of
// summed-area tables, written once for canopy::for_each on both backends. Used by sat.cu.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/structures/sat.hpp>

#include <cstddef>
#include <cstdint>

namespace canopy::detail::sat {

//! Index of (x, y, c) in a tightly packed interleaved image.
CANOPY_HD inline std::size_t element(int x, int y, int c, int width, int channels) {
  return (std::size_t(y) * std::size_t(width) + std::size_t(x)) * std::size_t(channels) + std::size_t(c);
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
    for (int c = 0; c < sat.channels; ++c)
      out[i * std::size_t(sat.channels) + std::size_t(c)] = float(sat.box_mean(x - r, y - r, x + r, y + r, c));
  }
};

}  // namespace canopy::detail::sat
