// bench/primitives/bench_split.cu — stable split of u32 keys into 256 bins (one 8-bit digit)
// against a one-pass cub::DeviceRadixSort::SortKeys over bits [0, 8), and split index + gather of
// 64- and 128-byte records. The latter has no CUB twin: its baseline is a plain device copy of the
// same records (cudaMemcpyAsync), so its ratio is the fraction of copy speed reached, and its rate
// is GB/s of the minimum traffic (keys read once, records read and written once).
#include "bench_util.cuh"

#include <algorithm>
#include <numeric>

#include <canopy/core/split.hpp>
#include <canopy/core/gather.hpp>

#if CANOPY_BENCH_CUB
#include <cub/device/device_radix_sort.cuh>
#endif

namespace canopy_bench {
namespace {

constexpr int split_bits = 8;  // 256 bins

void run_split_u32(env& e, std::size_t n, result& r) {
  using K = std::uint32_t;
  canopy::context& ctx = e.ctx();
  canopy::buffer<K> in(ctx, n), out(ctx, n), ref(ctx, n);
  fill_random(ctx, in.view(), e.opts().seed + 8);
  out.fill_bytes(0);
  ref.fill_bytes(0x44);
  const canopy::span<const K> cin = in.view();
  r.canopy_ms = e.time_ms([&] { canopy::split_keys<K>(ctx, cin, out.view(), 0, split_bits); });
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    std::size_t bytes = 0;
    const auto call = [&](void* temp) {
      CANOPY_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, in.data(), ref.data(), static_cast<std::int64_t>(n),
                                                       0, split_bits, ctx.stream()));
    };
    call(nullptr);
    temp_storage temp(ctx, bytes);
    r.baseline = "cub::DeviceRadixSort::SortKeys bits [0,8)";
    r.baseline_ms = e.time_ms([&] { call(temp.data()); });
#endif
  } else {
    r.baseline = "std::stable_sort by digit";
    r.baseline_ms = e.time_ms([&] {
      std::copy(in.data(), in.data() + n, ref.data());
      std::stable_sort(ref.data(), ref.data() + n, [](K a, K b) { return (a & 255u) < (b & 255u); });
    });
  }
  check_equal<K>(ctx, r, "split keys", out.view(), ref.view());
  finish_bytes(e, r, 2.0 * double(n) * sizeof(K));  // read n keys, write n keys
}

template <std::size_t R>
struct gathered_ok {
  canopy::span<const record<R>> in, out;
  canopy::span<const std::uint32_t> index;
  CANOPY_HD bool operator()(std::size_t i) const { return out[i] == in[index[i]]; }
};

template <std::size_t R>
void run_split_gather(env& e, std::size_t n, result& r) {
  using rec = record<R>;
  canopy::context& ctx = e.ctx();
  canopy::buffer<std::uint32_t> keys(ctx, n), index(ctx, n), ref_index(ctx, n);
  canopy::buffer<rec> in(ctx, n), out(ctx, n);
  fill_random(ctx, keys.view(), e.opts().seed + 9);
  fill_random(ctx, in.view(), e.opts().seed + 10);
  out.fill_bytes(0);
  index.fill_bytes(0);
  const canopy::span<const std::uint32_t> ckeys = keys.view();
  const canopy::span<const std::byte> in_bytes(reinterpret_cast<const std::byte*>(in.data()), n * R, ctx.space());
  const canopy::span<std::byte> out_bytes(reinterpret_cast<std::byte*>(out.data()), n * R, ctx.space());
  // Baseline first, into `out` (canopy's runs overwrite it): a plain copy of the same records.
  r.baseline = ctx.is_cuda() ? "cudaMemcpyAsync of the records (no CUB twin)" : "memcpy of the records (no std twin)";
  r.baseline_ms = e.time_ms([&] { canopy::copy(ctx, canopy::span<const rec>(in.view()), out.view()); });
  out.fill_bytes(0);
  r.canopy_ms = e.time_ms([&] {
    canopy::sort_gather_index<std::uint32_t>(ctx, ckeys, index.view(), 0, split_bits);
    canopy::gather_records(ctx, in_bytes, out_bytes, R, index.view());
  });

  // Reference index: stable order by the low 8 bits (CUB one-pass pair sort of (key, i) on CUDA).
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    canopy::buffer<std::uint32_t> iota(ctx, n), keys_out(ctx, n);
    fill_iota(ctx, iota.view());
    std::size_t bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_out.data(), iota.data(),
                                                      ref_index.data(), static_cast<std::int64_t>(n), 0, split_bits,
                                                      ctx.stream()));
    temp_storage temp(ctx, bytes);
    CANOPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), keys_out.data(), iota.data(),
                                                      ref_index.data(), static_cast<std::int64_t>(n), 0, split_bits,
                                                      ctx.stream()));
#endif
  } else {
    std::uint32_t* ri = ref_index.data();
    const std::uint32_t* k = keys.data();
    std::iota(ri, ri + n, 0u);
    std::stable_sort(ri, ri + n, [k](std::uint32_t a, std::uint32_t b) { return (k[a] & 255u) < (k[b] & 255u); });
  }
  if (!check_equal<std::uint32_t>(ctx, r, "split gather index", index.view(), ref_index.view())) return;
  const std::size_t bad = first_failure(ctx, n, gathered_ok<R>{in.view(), out.view(), ref_index.view()});
  if (bad != n) {
    report_mismatch(r, "gathered record " + std::to_string(bad) + " is not input record index[" + std::to_string(bad) + "]");
    return;
  }
  finish_bytes(e, r, double(n) * (sizeof(std::uint32_t) + 2.0 * R));  // keys read, records read + written
}

}  // namespace

void register_split(std::vector<variant>& v) {
  v.push_back({"split_u32_256bins", "split", [](std::size_t n) { return 5 * n * 4; }, run_split_u32});
  // keys, index, reference index, CUB scratch (iota, keys out, temp) and two record arrays.
  v.push_back({"split_gather_64B", "split_gather", [](std::size_t n) { return n * (2 * 64 + 28); },
               run_split_gather<64>});
  v.push_back({"split_gather_128B", "split_gather", [](std::size_t n) { return n * (2 * 128 + 28); },
               run_split_gather<128>});
}

}  // namespace canopy_bench
