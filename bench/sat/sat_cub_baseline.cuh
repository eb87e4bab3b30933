// bench/sat/sat_cub_baseline.cuh — a summed-area table built the way a CUB user would build one,
// for canopy-sat-bench's side-by-side ratio (CUDA builds only). CUB has no 2D scan and no segmented
// scan, so the table is made of cub::DeviceScan::InclusiveScanByKey calls over pixel vectors (all
// of a pixel's channels in one value, so the channels never mix). Two forms:
//   strided:    rows (key = y, row-major) image -> `rows`; then columns (key = x, column-major),
//               read from `rows` and written to `table` through the same transposing permutation;
//   transposed: rows as above; a tiled transpose `rows` -> `scratch` (width x height becomes
//               height x width); the transposed rows (the columns) scanned `scratch` -> `rows`;
//               a transpose back `rows` -> `table`. The transposes are the only code here that is
//               not CUB's: 32 x 32 tiles through shared memory, the textbook kernel.
// Float tables subtract the per-channel offsets canopy's own build chose, so both tables hold the
// same quantities and can be compared within the float bound. Nothing here is canopy's code path.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/error.hpp>

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sat_cub {

//! One pixel's C channels as a single scanned value.
template <class T, int C>
struct pixel {
  T v[C];
};

template <class T, int C>
struct pixel_plus {
  __host__ __device__ pixel<T, C> operator()(const pixel<T, C>& a, const pixel<T, C>& b) const {
    pixel<T, C> r;
    for (int c = 0; c < C; ++c) r.v[c] = a.v[c] + b.v[c];
    return r;
  }
};

//! Pixel i of the image, converted to the table type (minus the offsets for float tables).
template <class In, class T, int C>
struct load_pixel {
  const In* image;
  pixel<T, C> offset;  // zeros for integer tables
  __host__ __device__ pixel<T, C> operator()(std::int64_t i) const {
    pixel<T, C> r;
    for (int c = 0; c < C; ++c) r.v[c] = T(image[i * C + c]) - offset.v[c];
    return r;
  }
};

//! Position j divided by a fixed count: the row of a row-major index, the column of a column-major one.
struct divide_by {
  std::int64_t d;
  __host__ __device__ std::int64_t operator()(std::int64_t j) const { return j / d; }
};

//! Row-major index of column-major position j in an image of width w and height h.
struct transpose_index {
  std::int64_t w, h;
  __host__ __device__ std::int64_t operator()(std::int64_t j) const { return (j % h) * w + j / h; }
};

constexpr int transpose_tile = 32;
constexpr int transpose_rows = 8;  // threads a block: 32 x 8, each moving 4 elements of a tile

//! out (w x h, row-major) = the transpose of in (h x w, row-major): a 32 x 32 tile a block.
template <class V>
__global__ void __launch_bounds__(transpose_tile* transpose_rows) transpose(const V* __restrict__ in, V* __restrict__ out, int w, int h) {
  __shared__ V tile[transpose_tile][transpose_tile + 1];
  const int x = blockIdx.x * transpose_tile + threadIdx.x;
  for (int r = threadIdx.y; r < transpose_tile; r += transpose_rows) {
    const int y = blockIdx.y * transpose_tile + r;
    if (x < w && y < h) tile[r][threadIdx.x] = in[std::size_t(y) * w + x];
  }
  __syncthreads();
  const int ox = blockIdx.y * transpose_tile + threadIdx.x;  // a column of `in` is a row of `out`
  for (int r = threadIdx.y; r < transpose_tile; r += transpose_rows) {
    const int oy = blockIdx.x * transpose_tile + r;
    if (ox < h && oy < w) out[std::size_t(oy) * h + ox] = tile[threadIdx.x][r];
  }
}

//! The scans, with their temporary storage sized once; run_strided() and run_transposed() enqueue
//! one form each on the context's stream and leave the table in `table`.
template <class In, class T, int C>
class two_scans {
 public:
  using value = pixel<T, C>;
  //! `offset` holds C values for float tables (canopy's offsets, on the host), nothing for integer
  //! ones. rows, scratch and table hold w x h values each.
  two_scans(canopy::context& ctx, const In* image, int w, int h, const T* offset, value* rows, value* scratch, value* table)
      : ctx_(ctx), w_(w), h_(h), rows_(rows), scratch_(scratch), table_(table), temp_(ctx, 0) {
    load_.image = image;
    for (int c = 0; c < C; ++c) load_.offset.v[c] = offset ? offset[c] : T(0);
    // With no storage, each scan only adds its need to temp_bytes_.
    row_scan();
    column_scan();
    transposed_scan();
    temp_ = canopy::buffer<unsigned char>(ctx, temp_bytes_ ? temp_bytes_ : 1);
  }
  void run_strided() {
    row_scan();
    column_scan();
  }
  void run_transposed() {
    row_scan();
    launch_transpose(rows_, scratch_, int(w_), int(h_));
    transposed_scan();
    launch_transpose(rows_, table_, int(h_), int(w_));
  }

 private:
  //! Inclusive scans of `in` into `out` over segments of `length` consecutive positions (the keys
  //! are position / length). Before temp_ is allocated, only records the storage it needs.
  template <class InIt, class OutIt>
  void scan_by_key(std::int64_t length, InIt in, OutIt out) {
    const auto keys = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), divide_by{length});
    const bool sizing = temp_.size() == 0;
    std::size_t bytes = sizing ? 0 : temp_bytes_;
    CANOPY_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(sizing ? nullptr : temp_.data(), bytes, keys, in, out,
                                                          pixel_plus<T, C>{}, w_ * h_, cuda::std::equal_to<>{},
                                                          ctx_.stream()));
    if (sizing) temp_bytes_ = std::max(temp_bytes_, bytes);
  }
  //! The image's rows, scanned into `rows`.
  void row_scan() { scan_by_key(w_, thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), load_), rows_); }
  //! The columns of `rows`, through a transposing permutation, into `table`.
  void column_scan() {
    const auto where = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), transpose_index{w_, h_});
    scan_by_key(h_, thrust::make_permutation_iterator(static_cast<const value*>(rows_), where),
                thrust::make_permutation_iterator(table_, where));
  }
  //! The rows of the transposed table (scratch, w rows of h) scanned into `rows`.
  void transposed_scan() { scan_by_key(h_, static_cast<const value*>(scratch_), rows_); }
  //! in: h rows of w values; out: w rows of h.
  void launch_transpose(const value* in, value* out, int w, int h) {
    const dim3 grid(unsigned((w + transpose_tile - 1) / transpose_tile), unsigned((h + transpose_tile - 1) / transpose_tile));
    transpose<value><<<grid, dim3(transpose_tile, transpose_rows), 0, ctx_.stream()>>>(in, out, w, h);
    CANOPY_CUDA_CHECK_LAUNCH("sat_cub::transpose");
  }

  canopy::context& ctx_;
  std::int64_t w_, h_;
  value* rows_;
  value* scratch_;
  value* table_;
  load_pixel<In, T, C> load_{};
  canopy::buffer<unsigned char> temp_;
  std::size_t temp_bytes_ = 0;
};

}  // namespace sat_cub
