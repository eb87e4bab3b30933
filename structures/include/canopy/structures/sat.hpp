// canopy/structures/sat.hpp — summed-area tables of 1 to 4 channel images, and O(1) box queries.
//
//   canopy::summed_area_table<std::uint32_t> sat(ctx);
//   sat.build(image_rgba8, width, height, 4);              // every frame; buffers are kept
//   auto v = sat.view();                                    // CANOPY_HD, pass it to kernels
//   std::uint32_t s = v.box_sum(x0, y0, x1, y1, channel);   // inclusive box, O(1)
//   std::uint32_t all[4]; v.box_sums(x0, y0, x1, y1, all);  // every channel at once
//
// Layout. Images and tables are tightly packed, row-major, channels interleaved: element
// (x, y, c) sits at index (y * width + x) * channels + c. The table is inclusive:
// S(x, y, c) = sum of image(x', y', c) over 0 <= x' <= x, 0 <= y' <= y.
//
// Table types (In -> Table):
//   - u8, u16, u32 -> u32 or u64: exact. A u32 table holds every entry modulo 2^32. Box sums are
//     formed with the same wrap-around arithmetic (S11 - S01 - S10 + S00 mod 2^32), and that is
//     exact as long as the true sum over the box is below 2^32, however large the entries
//     themselves have grown (an 8192 x 8192 image of 255 overflows the table 4 times over, yet
//     every box of fewer than 16.8 M pixels sums exactly). Use u64 when a single box can reach 2^32.
//   - f32 -> f32 or f64: each channel has an offset m_c, an estimate of its mean from a 16 x 16 grid
//     of samples, subtracted before summation and added back by box_sum (m_c * area). Entries then
//     stay near zero instead of growing with x * y, which keeps the absolute rounding error of a
//     box sum at about (width + height) * eps(Table) * sum |v - m_c| over the image in the worst
//     case, and much less in practice (see docs/sat.md for measured numbers). Use f64 when boxes
//     must be exact to float precision over 4K and larger images.
//
// Algorithms (CUDA backend; the host backend runs rows then columns with oneTBB):
//   - single_pass, RGBA8 -> u32 at widths that are a multiple of 256 px (on sm_90 GPUs with 227 KB
//     of shared memory a block: H100, H200): the region kernel. One block an SM holds a 256-px
//     region of every chunk of rows; summer warps read the image ahead and publish row and column
//     sums, one grid barrier a chunk (a counter, no clearing between builds of a
//     summed_area_table) releases the carries, and walker warps write the table through TMA tensor
//     stores from a second read of the rows (from L2). About 80-82% of copy at 4K and 89% at 8K
//     on an H100, against 60% / 66% for the tile kernel below (docs/sat.md). Taken where it was
//     measured to pay: at least 2/3 of the SMs' worth of 256-px region columns x region rows, and
//     regions of at least 40 rows (about 2816 x 1584 and up at 16:9). It is launched
//     cooperatively; where that is refused, or the device, width or alignment do not fit, the tile
//     kernel runs instead.
//   - single_pass, RGBA32F -> f32 at widths that are a multiple of 128 px (same devices): the same
//     plan over 128-px regions (detail/sat_region_f32_kernels.cuh), the second read of each row by
//     tensor loads into shared memory. Taken only where it measured faster than the tile kernel:
//     2^24 pixels and more, at least 90% of the SMs' worth of blocks and at most 64 region columns
//     (7680 x 4320: 81% of copy against 78%; 4096 x 4096: 81% against 78%; docs/sat.md).
//   - single_pass, R8 -> u32 at widths that are a multiple of 16 px (16-byte aligned image and
//     table), from 3 M pixels up: the image is read as RGBA8 quads of 4 pixels, a quarter as wide,
//     through the tile kernel below, which turns each quad's four channel sums into the R8 table
//     just before storing it (the layouts are the same). 1.1-1.3x faster than R8 read directly
//     at 2560 x 1440 to 4K, 1.06x at 8K, on an H200 (docs/sat.md, "R8 tables as RGBA8 quads").
//   - single_pass otherwise: one kernel reads the image once and writes the table once. The image is cut
//     into 32 x 128 tiles taken in anti-diagonal order (tiles of one diagonal ti + tj in a row,
//     so that every look-back goes to an earlier tile); each tile publishes its row sums and column sums
//     and finds its row carries (from tiles to its left) and column carries (from tiles above) by
//     decoupled look-back, as in a single-pass scan, but in two dimensions. Where 4 pixels are
//     exactly 16 bytes (RGBA8, RG16, R32F/U; a 16-byte aligned image whose rows are a multiple of
//     16 bytes) the blocks are
//     persistent and copy their next tile's image into shared memory while working on the current
//     one; they are launched cooperatively (all resident at once), and where the runtime refuses
//     that (an MPS SM limit: the grid cannot be resident at once) the build takes one tile per block instead.
//   - two_pass: the plain baseline. Row prefix sums (one warp per row), then column prefix sums
//     over the table (one thread per column): one image read, one table read, two table writes.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/detail/kept_epoch.hpp>
#include <canopy/core/span.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {

//! Which algorithm builds a table on the CUDA backend. The host backend has one algorithm.
enum class sat_algorithm : std::uint8_t {
  automatic,    //!< single_pass
  single_pass,  //!< one image read, one table write; 2D decoupled look-back over 32 x 128 tiles
  two_pass,     //!< rows, then columns: the baseline
};

//! "automatic", "single_pass" or "two_pass".
const char* to_string(sat_algorithm a) noexcept;

//! Options of build_sat().
struct sat_options {
  sat_algorithm algorithm = sat_algorithm::automatic;  //!< CUDA only; ignored on the host backend
};

//! True for the (image type, table type) pairs canopy builds tables for.
template <class In, class Table>
inline constexpr bool sat_supported_v =
    ((std::is_same_v<In, std::uint8_t> || std::is_same_v<In, std::uint16_t> ||
      std::is_same_v<In, std::uint32_t>) &&
     (std::is_same_v<Table, std::uint32_t> || std::is_same_v<Table, std::uint64_t>)) ||
    (std::is_same_v<In, float> && (std::is_same_v<Table, float> || std::is_same_v<Table, double>));

//! True when Table is a floating-point table (which carries per-channel offsets).
template <class Table>
inline constexpr bool sat_has_offset_v = std::is_floating_point_v<Table>;

//! A read-only view of a summed-area table, usable in kernels (CANOPY_HD) and on the host.
//! The pointers live in the memory space of the context that built the table.
template <class Table>
struct sat_view {
  const Table* table = nullptr;   //!< width * height * channels entries, layout as above
  const Table* offset = nullptr;  //!< `channels` offsets for float tables, nullptr for integer tables
  int width = 0;
  int height = 0;
  int channels = 0;

  //! S(x, y, c); 0 when x < 0 or y < 0 (the empty prefix). x, y must not exceed the last pixel.
  CANOPY_HD Table at(int x, int y, int c) const {
    if (x < 0 || y < 0) return Table(0);
    return table[(std::size_t(y) * std::size_t(width) + std::size_t(x)) * std::size_t(channels) + std::size_t(c)];
  }

  //! Number of pixels of the inclusive box [x0, x1] x [y0, y1] after clipping to the image.
  CANOPY_HD std::int64_t box_area(int x0, int y0, int x1, int y1) const {
    clip(x0, y0, x1, y1);
    if (x0 > x1 || y0 > y1) return 0;
    return std::int64_t(x1 - x0 + 1) * std::int64_t(y1 - y0 + 1);
  }

  //! Sum of channel c over the inclusive box [x0, x1] x [y0, y1], clipped to the image; 0 when the
  //! clipped box is empty. Four table reads. Integer tables: exact modulo 2^bits (see above).
  //! Float tables: the offset times the area is added back.
  CANOPY_HD Table box_sum(int x0, int y0, int x1, int y1, int c) const {
    clip(x0, y0, x1, y1);
    if (x0 > x1 || y0 > y1) return Table(0);
    const Table s = at(x1, y1, c) - at(x0 - 1, y1, c) - at(x1, y0 - 1, c) + at(x0 - 1, y0 - 1, c);
    if constexpr (sat_has_offset_v<Table>) {
      return s + offset[c] * Table(std::int64_t(x1 - x0 + 1) * std::int64_t(y1 - y0 + 1));
    } else {
      return s;
    }
  }

  //! Sums of every channel over the clipped box: out[c] = box_sum(x0, y0, x1, y1, c) for c <
  //! channels, bit for bit, and 0 for the rest of out. Reads each of the four corners' channels
  //! together: on the GPU a 4-channel 4-byte table (u32, f32) whose corner is 16-byte aligned, as
  //! every table of summed_area_table and build_sat into a canopy buffer is, takes one 16-byte load
  //! a corner instead of four 4-byte loads.
  CANOPY_HD void box_sums(int x0, int y0, int x1, int y1, Table (&out)[4]) const {
    clip(x0, y0, x1, y1);
    for (int c = 0; c < 4; ++c) out[c] = Table(0);
    if (x0 > x1 || y0 > y1) return;
    Table a[4], b[4], d[4], e[4];
    pixel(x1, y1, a);
    pixel(x0 - 1, y1, b);
    pixel(x1, y0 - 1, d);
    pixel(x0 - 1, y0 - 1, e);
    for (int c = 0; c < channels && c < 4; ++c) {
      const Table s = a[c] - b[c] - d[c] + e[c];
      if constexpr (sat_has_offset_v<Table>) {
        out[c] = s + offset[c] * Table(std::int64_t(x1 - x0 + 1) * std::int64_t(y1 - y0 + 1));
      } else {
        out[c] = s;
      }
    }
  }

  //! Mean of channel c over the clipped box; 0 when it is empty.
  CANOPY_HD double box_mean(int x0, int y0, int x1, int y1, int c) const {
    const std::int64_t area = box_area(x0, y0, x1, y1);
    return area > 0 ? double(box_sum(x0, y0, x1, y1, c)) / double(area) : 0.0;
  }

 private:
  //! S(x, y, c) for c < channels into p (zeros left of or above the image, and past channels).
  CANOPY_HD void pixel(int x, int y, Table (&p)[4]) const {
    for (int c = 0; c < 4; ++c) p[c] = Table(0);
    if (x < 0 || y < 0) return;
    const Table* q = table + (std::size_t(y) * std::size_t(width) + std::size_t(x)) * std::size_t(channels);
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(Table) == 4) {
      if (channels == 4 && reinterpret_cast<std::uintptr_t>(q) % 16 == 0) {
        const uint4 v = *reinterpret_cast<const uint4*>(q);
        const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
        for (int c = 0; c < 4; ++c) {
          if constexpr (std::is_same_v<Table, float>) p[c] = __uint_as_float(w[c]);
          else p[c] = Table(w[c]);
        }
        return;
      }
    }
#endif
    for (int c = 0; c < channels && c < 4; ++c) p[c] = q[c];
  }
  CANOPY_HD void clip(int& x0, int& y0, int& x1, int& y1) const {
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > width - 1 ? width - 1 : x1;
    y1 = y1 > height - 1 ? height - 1 : y1;
  }
};

//! Builds the summed-area table of `image` (width x height x channels, layout above) into `table`
//! (same number of elements), on the context's stream; returns without synchronising on CUDA.
//! `offset` receives `channels` per-channel offsets for float tables and must be empty for
//! integer tables. All three live in the context's memory space and must not overlap: no build
//! works in place (refused with canopy::invalid_argument naming the span).
//!
//! Supported: In in {u8, u16, u32} with Table in {u32, u64}; In = f32 with Table in {f32, f64}.
//! channels in 1..4; width, height >= 0 (0 builds nothing), width * height * channels < 2^31.
//! Complexity: O(width * height * channels) work. Temporary memory from ctx.resource():
//! single_pass: (2 * (32 + 128 + 1) * channels * sizeof(Table) + 24) bytes per 32 x 128 tile (about
//! 1/12 of the table for u32 RGBA) + 260 bytes, or for the region kernels (RGBA8 -> u32, RGBA32F ->
//! f32, see above) their exchange: 8 slots of a region's row sums, column sums and total, about
//! 20 KB a block (2.4 MB for 120 blocks), and 4 bytes a chunk;
//! two_pass and host: none. (summed_area_table keeps
//! this memory from one build to the next instead, which lets 4-byte tables skip the flags and
//! fences of the look-back; see there.) Stable API.
template <class In, class Table>
void build_sat(context& ctx, span<const In> image, int width, int height, int channels, span<Table> table,
               span<Table> offset, const sat_options& options = {});

namespace detail {
//! Look-back scratch of the CUDA single pass, kept by summed_area_table for 4-byte tables: tagged
//! descriptor words ({value, status} in one 64-bit word), each build tagged with a new epoch, so
//! that only the tile counter is cleared per build (the whole buffer when it grows and before the
//! epoch wraps); see detail/sat_kernels.cuh, look_back_protocol::tagged.
struct sat_kept_scratch {
  explicit sat_kept_scratch(context& ctx) : bytes(ctx, 0), region(ctx, 0) {}
  buffer<unsigned char> bytes;
  unsigned epoch = 0;  //!< the last build's epoch; 0: none since the last clear
  //! The region kernels' chunk counters (region_chunks u32 at the start) and exchange (RGBA8 ->
  //! u32 and RGBA32F -> f32 on sm_90, detail/sat_region_kernels.cuh, sat_region_f32_kernels.cuh). Each build adds its block count to every
  //! chunk's counter, so only a change of grid or chunk count, fresh memory or a wrap clears them.
  buffer<unsigned char> region;
  unsigned region_builds = 0;  //!< builds since the counters were cleared: each counter holds region_builds x region_blocks
  int region_blocks = 0, region_chunks = 0;
};
//! build_sat() with the scratch kept in `kept` (null: temporary memory, as build_sat()).
template <class In, class Table>
void build_sat_kept(context& ctx, span<const In> image, int width, int height, int channels, span<Table> table,
                    span<Table> offset, const sat_options& options, sat_kept_scratch* kept);
}  // namespace detail

//! Owns a summed-area table and its offsets, and keeps both from one build to the next (buffers
//! grow, never shrink). Non-copyable; the context must outlive it. On CUDA, for 4-byte tables
//! (u32, f32; 8-byte tables take build_sat()'s temporary memory), it also keeps the single pass's
//! look-back scratch (the temporary memory of build_sat(): about 1/12 of a u32 RGBA
//! table), with which 4-byte tables (u32, f32) publish each look-back value and its status in one
//! 64-bit word: no flags, no fences, no clearing per build.
template <class Table>
class summed_area_table {
 public:
  explicit summed_area_table(context& ctx) : ctx_(&ctx), table_(ctx, 0), offset_(ctx, 0), scratch_(ctx) {}

  //! Builds the table of `image`; see build_sat().
  template <class In>
  void build(span<const In> image, int width, int height, int channels, const sat_options& options = {}) {
    static_assert(sat_supported_v<In, Table>, "canopy::summed_area_table: unsupported image/table type pair");
    require(width >= 0 && height >= 0, "canopy::summed_area_table::build", "width/height", "must be >= 0");
    require(channels >= 1 && channels <= 4, "canopy::summed_area_table::build", "channels",
            "must be 1..4, got " + std::to_string(channels));
    const std::size_t n =
        checked_mul(checked_mul(std::size_t(width), std::size_t(height), "canopy::summed_area_table::build", "width"),
                    std::size_t(channels), "canopy::summed_area_table::build", "channels");
    table_.resize_discard(n);
    offset_.resize_discard(sat_has_offset_v<Table> ? std::size_t(channels) : 0);
    detail::build_sat_kept<In, Table>(*ctx_, image, width, height, channels, table_.view(), offset_.view(), options,
                                      &scratch_);
    width_ = width;
    height_ = height;
    channels_ = channels;
  }

  //! The table of the last build, for kernels and host code in the context's memory space.
  sat_view<Table> view() const {
    sat_view<Table> v;
    v.table = table_.data();
    v.offset = sat_has_offset_v<Table> ? offset_.data() : nullptr;
    v.width = width_;
    v.height = height_;
    v.channels = channels_;
    return v;
  }
  span<const Table> table() const { return table_.view(); }
  span<const Table> offset() const { return offset_.view(); }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  int channels() const noexcept { return channels_; }

 private:
  context* ctx_;
  buffer<Table> table_;
  buffer<Table> offset_;
  detail::sat_kept_scratch scratch_;
  int width_ = 0, height_ = 0, channels_ = 0;
};

//! Box filter with a per-pixel radius: out(x, y, c) = mean of channel c over the box
//! [x - r, x + r] x [y - r, y + r] clipped to the image, where r = radius[y * width + x]
//! (negative radii count as 0). `out` has width * height * channels floats; `radius` has
//! width * height entries; both in the context's memory space. O(1) per pixel (four table reads per
//! channel). Returns without synchronising on CUDA. No temporary memory.
template <class Table>
void box_filter(context& ctx, const sat_view<Table>& sat, span<const std::int32_t> radius, span<float> out);

}  // namespace canopy
