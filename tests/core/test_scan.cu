// Scans: plain, segmented by flags and over regular segments, on both backends, against std:: and
// sequential references; non-commutative operators; bad arguments. GPU-only: 2^28 elements and
// large segmented scans, GPU vs host. (Timing against CUB: bench/tuning/canopy-scan-tuning.)
#include "common/backends.hpp"

#include <canopy/core/compact.hpp>
#include <canopy/core/scan.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/scan_dispatch.cuh>
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

// Sizes around warp, tile (4096 for 4-byte values, 2048 for 8-byte) and look-back-window boundaries.
const std::vector<std::size_t> kSizes = {0,    1,    2,    31,    32,    33,    1023,  1024,   1025, 2047,
                                         2049, 4095, 4096, 4097,  8191,  12289, 65535, 65537, 131071,
                                         (std::size_t(1) << 17) * 33 + 7};

enum class dist { uniform, zeros, ones, alternating, descending, extremes };
const dist kDists[] = {dist::uniform, dist::zeros, dist::ones, dist::alternating, dist::descending, dist::extremes};

template <class T>
std::vector<T> make_values(std::size_t n, dist d, std::uint32_t seed) {
  std::mt19937_64 rng(seed + n);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case dist::uniform: v[i] = T(std::int64_t(rng() % 201) - 100); break;
      case dist::zeros: v[i] = T(0); break;
      case dist::ones: v[i] = T(1); break;
      case dist::alternating: v[i] = (i & 1) ? T(-1) : T(1); break;
      case dist::descending: v[i] = T(std::int64_t(n) - std::int64_t(i)); break;
      case dist::extremes:
        v[i] = (rng() & 1) ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
        break;
    }
  }
  return v;
}

std::vector<std::uint8_t> make_flags(std::size_t n, std::uint32_t one_in, std::uint32_t seed) {
  std::mt19937 rng(seed + std::uint32_t(n));
  std::vector<std::uint8_t> f(n);
  // Any nonzero byte is a head: use several values to catch "== 1" checks.
  for (auto& x : f) x = (one_in != 0 && rng() % one_in == 0) ? std::uint8_t(1 + rng() % 255) : 0;
  return f;
}

// 2x2 matrices of uint32 with wrap-around products: associative and not commutative, exact.
struct mat2 {
  std::uint32_t a, b, c, d;
  bool operator==(const mat2& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
struct mat2_mul {
  CANOPY_HD mat2 operator()(const mat2& x, const mat2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};
std::ostream& operator<<(std::ostream& os, const mat2& m) {
  return os << "[" << m.a << " " << m.b << "; " << m.c << " " << m.d << "]";
}
std::vector<mat2> make_matrices(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<mat2> v(n);
  for (auto& m : v) m = {std::uint32_t(rng() % 7), std::uint32_t(rng() % 7 + 1), std::uint32_t(rng() % 5), std::uint32_t(rng() % 3 + 1)};
  return v;
}

// {sum, count} mean accumulator with float sums of small integers (exact in float).
struct mean_acc {
  float sum;
  int count;
};
struct mean_add {
  CANOPY_HD mean_acc operator()(const mean_acc& x, const mean_acc& y) const { return {x.sum + y.sum, x.count + y.count}; }
};

// Sequential references.
template <class T, class Op>
std::vector<T> ref_segmented(const std::vector<T>& in, const std::vector<std::uint8_t>& heads, std::size_t seg_len,
                             bool exclusive, T identity, Op op) {
  std::vector<T> out(in.size());
  T run = identity;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool head = i == 0 || (!heads.empty() && heads[i]) || (seg_len && i % seg_len == 0);
    if (head) run = identity;
    if (exclusive) {
      out[i] = run;
      run = op(run, in[i]);
    } else {
      run = op(run, in[i]);
      out[i] = run;
    }
  }
  return out;
}

template <class T>
void expect_equal_vectors(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i])) {
      FAIL() << what << ": first mismatch at " << i << " of " << want.size() << ": got " << got[i] << ", want "
             << want[i];
    }
}

}  // namespace

class ScanTest : public BackendTest {};

TEST_P(ScanTest, InclusiveInt32MatchesStd) {
  for (dist d : kDists)
    for (std::size_t n : kSizes) {
      const auto in = make_values<std::int32_t>(n, d, 1);
      auto bin = upload(in);
      canopy::buffer<std::int32_t> bout(ctx(), n);
      canopy::inclusive_scan<std::int32_t>(ctx(), bin.view(), bout.view(), canopy::plus<std::int32_t>{});
      std::vector<std::uint32_t> want(n);  // wrap-around arithmetic without signed overflow in the oracle
      std::vector<std::uint32_t> uin(in.begin(), in.end());
      std::inclusive_scan(uin.begin(), uin.end(), want.begin());
      const auto got = bout.to_host();
      expect_equal_vectors(std::vector<std::uint32_t>(got.begin(), got.end()), want,
                           "n=" + std::to_string(n) + " dist=" + std::to_string(int(d)));
    }
}

TEST_P(ScanTest, ExclusiveInt64MatchesStd) {
  for (dist d : {dist::uniform, dist::descending, dist::ones})
    for (std::size_t n : kSizes) {
      const auto in = make_values<std::int64_t>(n, d, 2);
      auto bin = upload(in);
      canopy::buffer<std::int64_t> bout(ctx(), n);
      canopy::exclusive_scan<std::int64_t>(ctx(), bin.view(), bout.view(), 0, canopy::plus<std::int64_t>{});
      std::vector<std::int64_t> want(n);
      std::exclusive_scan(in.begin(), in.end(), want.begin(), std::int64_t(0));
      expect_equal_vectors(bout.to_host(), want, "n=" + std::to_string(n));
    }
}

TEST_P(ScanTest, MaxMinAndOtherTypes) {
  for (std::size_t n : {std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(100003)}) {
    const auto in = make_values<float>(n, dist::uniform, 3);
    auto bin = upload(in);
    canopy::buffer<float> bout(ctx(), n);
    canopy::inclusive_scan<float>(ctx(), bin.view(), bout.view(), canopy::maximum<float>{});
    std::vector<float> want(n);
    std::inclusive_scan(in.begin(), in.end(), want.begin(), [](float a, float b) { return std::max(a, b); });
    expect_equal_vectors(bout.to_host(), want, "max n=" + std::to_string(n));

    const auto in64 = make_values<std::uint64_t>(n, dist::extremes, 4);
    auto bin64 = upload(in64);
    canopy::buffer<std::uint64_t> bout64(ctx(), n);
    canopy::exclusive_scan<std::uint64_t>(ctx(), bin64.view(), bout64.view(),
                                          std::numeric_limits<std::uint64_t>::max(), canopy::minimum<std::uint64_t>{});
    std::vector<std::uint64_t> want64(n);
    std::exclusive_scan(in64.begin(), in64.end(), want64.begin(), std::numeric_limits<std::uint64_t>::max(),
                        [](std::uint64_t a, std::uint64_t b) { return std::min(a, b); });
    expect_equal_vectors(bout64.to_host(), want64, "min u64 n=" + std::to_string(n));

    const auto in8 = make_values<std::uint8_t>(n, dist::uniform, 5);  // 1-byte values, wrapping sums
    auto bin8 = upload(in8);
    canopy::buffer<std::uint8_t> bout8(ctx(), n);
    canopy::inclusive_scan<std::uint8_t>(ctx(), bin8.view(), bout8.view(), canopy::plus<std::uint8_t>{});
    std::vector<std::uint8_t> want8(n);
    std::inclusive_scan(in8.begin(), in8.end(), want8.begin(),
                        [](std::uint8_t a, std::uint8_t b) { return std::uint8_t(a + b); });
    const auto got8 = bout8.to_host();
    ASSERT_TRUE(got8 == want8) << "u8 n=" << n;
  }
}

TEST_P(ScanTest, InPlaceAndMisalignedSpans) {
  for (std::size_t n : {std::size_t(4097), std::size_t(70001)}) {
    const auto in = make_values<std::int32_t>(n + 3, dist::uniform, 6);
    auto b = upload(in);
    // Offsets 1..3 elements: not 16-byte aligned, so the vector paths must step aside.
    const std::size_t off = 3;
    auto sub = b.view().subspan(off, n);
    canopy::inclusive_scan<std::int32_t>(ctx(), sub, sub, canopy::plus<std::int32_t>{});
    std::vector<std::int32_t> want(in.begin(), in.end());
    std::inclusive_scan(want.begin() + off, want.end(), want.begin() + off);
    expect_equal_vectors(b.to_host(), want, "in place, offset 3, n=" + std::to_string(n));
  }
}

TEST_P(ScanTest, NonCommutativeMatrixProducts) {
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(33), std::size_t(1025), std::size_t(4097),
                        std::size_t(300001)}) {
    const auto in = make_matrices(n, 7);
    auto bin = upload(in);
    canopy::buffer<mat2> bout(ctx(), n);
    canopy::inclusive_scan<mat2>(ctx(), bin.view(), bout.view(), mat2_mul{});
    const mat2 id{1, 0, 0, 1};
    expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, 0, false, id, mat2_mul{}),
                         "inclusive n=" + std::to_string(n));
    canopy::exclusive_scan<mat2>(ctx(), bin.view(), bout.view(), id, mat2_mul{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, 0, true, id, mat2_mul{}),
                         "exclusive n=" + std::to_string(n));
  }
}

TEST_P(ScanTest, StructSumCount) {
  const std::size_t n = 50001;
  std::vector<mean_acc> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = {float(i % 13), int(i % 3)};
  auto bin = upload(in);
  canopy::buffer<mean_acc> bout(ctx(), n);
  canopy::exclusive_scan<mean_acc>(ctx(), bin.view(), bout.view(), mean_acc{0.0f, 0}, mean_add{});
  const auto got = bout.to_host();
  double sum = 0;
  long count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i].sum, float(sum)) << i;  // sums stay below 2^24: exact in float
    ASSERT_EQ(got[i].count, count) << i;
    sum += in[i].sum;
    count += in[i].count;
  }
}

TEST_P(ScanTest, SegmentedByFlags) {
  for (std::uint32_t one_in : {0u, 1u, 2u, 37u, 5000u}) {
    for (std::size_t n : kSizes) {
      const auto in = make_values<std::int32_t>(n, dist::uniform, 8);
      const auto heads = make_flags(n, one_in, 9);
      auto bin = upload(in);
      auto bflags = upload(heads);
      canopy::buffer<std::int32_t> bout(ctx(), n);
      const std::string what = "n=" + std::to_string(n) + " one_in=" + std::to_string(one_in);
      canopy::inclusive_segmented_scan<std::int32_t>(ctx(), bin.view(), bflags.view(), bout.view(),
                                                     canopy::plus<std::int32_t>{});
      expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, false, 0, canopy::plus<std::int32_t>{}),
                           "inclusive " + what);
      canopy::exclusive_segmented_scan<std::int32_t>(ctx(), bin.view(), bflags.view(), bout.view(), 0,
                                                     canopy::plus<std::int32_t>{});
      expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, true, 0, canopy::plus<std::int32_t>{}),
                           "exclusive " + what);
    }
  }
}

TEST_P(ScanTest, SegmentedEmptyFlagsIsOneSegment) {
  const auto in = make_values<std::int64_t>(10007, dist::uniform, 10);
  auto bin = upload(in);
  canopy::buffer<std::int64_t> bout(ctx(), in.size());
  canopy::inclusive_segmented_scan<std::int64_t>(ctx(), bin.view(), canopy::span<const std::uint8_t>{}, bout.view(),
                                                 canopy::plus<std::int64_t>{});
  std::vector<std::int64_t> want(in.size());
  std::inclusive_scan(in.begin(), in.end(), want.begin());
  expect_equal_vectors(bout.to_host(), want, "empty flags");
}

TEST_P(ScanTest, SegmentedNonCommutativeAndWide) {
  for (std::uint32_t one_in : {1u, 3u, 100u, 0u}) {
    const std::size_t n = 20011;
    const auto in = make_matrices(n, 11);
    const auto heads = make_flags(n, one_in, 12);
    auto bin = upload(in);
    auto bflags = upload(heads);
    canopy::buffer<mat2> bout(ctx(), n);
    const mat2 id{1, 0, 0, 1};
    canopy::inclusive_segmented_scan<mat2>(ctx(), bin.view(), bflags.view(), bout.view(), mat2_mul{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, false, id, mat2_mul{}),
                         "matrices one_in=" + std::to_string(one_in));
    canopy::exclusive_segmented_scan<mat2>(ctx(), bin.view(), bflags.view(), bout.view(), id, mat2_mul{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, true, id, mat2_mul{}),
                         "matrices exclusive one_in=" + std::to_string(one_in));

    const auto in64 = make_values<std::uint64_t>(n, dist::extremes, 13);  // 16-byte accumulators
    auto bin64 = upload(in64);
    canopy::buffer<std::uint64_t> bout64(ctx(), n);
    canopy::inclusive_segmented_scan<std::uint64_t>(ctx(), bin64.view(), bflags.view(), bout64.view(),
                                                    canopy::plus<std::uint64_t>{});
    expect_equal_vectors(bout64.to_host(),
                         ref_segmented(in64, heads, 0, false, std::uint64_t(0), canopy::plus<std::uint64_t>{}),
                         "u64 one_in=" + std::to_string(one_in));
  }
}

TEST_P(ScanTest, RegularSegments) {
  for (std::size_t n : {std::size_t(1), std::size_t(31), std::size_t(1025), std::size_t(4097), std::size_t(65537)})
    for (std::size_t len : {std::size_t(1), std::size_t(2), std::size_t(31), std::size_t(640), std::size_t(4096),
                            std::size_t(4097), n, n + 5}) {
      const auto in = make_values<std::int32_t>(n, dist::uniform, 14);
      auto bin = upload(in);
      canopy::buffer<std::int32_t> bout(ctx(), n);
      const std::string what = "n=" + std::to_string(n) + " len=" + std::to_string(len);
      canopy::inclusive_scan_regular_segments<std::int32_t>(ctx(), bin.view(), bout.view(), len,
                                                            canopy::plus<std::int32_t>{});
      expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, len, false, 0, canopy::plus<std::int32_t>{}),
                           "inclusive " + what);
      canopy::exclusive_scan_regular_segments<std::int32_t>(ctx(), bin.view(), bout.view(), len, 0,
                                                            canopy::plus<std::int32_t>{});
      expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, len, true, 0, canopy::plus<std::int32_t>{}),
                           "exclusive " + what);
    }
  // Rows of an image with a non-commutative operator.
  const auto m = make_matrices(1920 * 7 + 5, 15);
  auto bm = upload(m);
  canopy::buffer<mat2> bout(ctx(), m.size());
  canopy::inclusive_scan_regular_segments<mat2>(ctx(), bm.view(), bout.view(), 1920, mat2_mul{});
  expect_equal_vectors(bout.to_host(), ref_segmented(m, {}, 1920, false, mat2{1, 0, 0, 1}, mat2_mul{}), "rows");
}

TEST_P(ScanTest, LargeHostSizes) {
  // A few sizes near 2^24 (kept to one type to bound CPU time).
  for (std::size_t n : {(std::size_t(1) << 24) - 1, (std::size_t(1) << 24) + 1}) {
    const auto in = make_values<std::int32_t>(n, dist::uniform, 16);
    auto bin = upload(in);
    canopy::buffer<std::int32_t> bout(ctx(), n);
    canopy::exclusive_scan<std::int32_t>(ctx(), bin.view(), bout.view(), 0, canopy::plus<std::int32_t>{});
    std::vector<std::int32_t> want(n);
    std::exclusive_scan(in.begin(), in.end(), want.begin(), 0);
    expect_equal_vectors(bout.to_host(), want, "n=" + std::to_string(n));
    const auto heads = make_flags(n, 1000, 17);
    auto bflags = upload(heads);
    canopy::inclusive_segmented_scan<std::int32_t>(ctx(), bin.view(), bflags.view(), bout.view(),
                                                   canopy::plus<std::int32_t>{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, false, 0, canopy::plus<std::int32_t>{}),
                         "segmented n=" + std::to_string(n));
  }
}

TEST_P(ScanTest, RefusesBadArguments) {
  canopy::buffer<int> a(ctx(), 10), b(ctx(), 9);
  canopy::buffer<std::uint8_t> f(ctx(), 8);
  const canopy::plus<int> add;
  expect_error<canopy::invalid_argument>(
      [&] { canopy::inclusive_scan<int>(ctx(), a.view(), b.view(), add); },
      {"canopy::inclusive_scan", "'out'", "length 9", "10"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::exclusive_scan<int>(ctx(), canopy::span<const int>(nullptr, 5, ctx().space()), a.view(), 0, add); },
      {"canopy::exclusive_scan", "'in'", "null"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::inclusive_scan_regular_segments<int>(ctx(), a.view(), a.view(), 0, add); },
      {"canopy::inclusive_scan_regular_segments", "'segment_length'"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::exclusive_scan_regular_segments<int>(ctx(), a.view(), a.view(), 0, 0, add); },
      {"canopy::exclusive_scan_regular_segments", "'segment_length'"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::inclusive_segmented_scan<int>(ctx(), a.view(), f.view(), a.view(), add); },
      {"canopy::inclusive_segmented_scan", "'head_flags'", "length 8"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::inclusive_scan<int>(ctx(), a.view().subspan(0, 9), a.view().subspan(1, 9), add); },
      {"canopy::inclusive_scan", "overlaps"});
  // A span of the other memory space.
  std::vector<int> host(10);
  const auto other = is_cuda() ? canopy::host_span(host.data(), host.size())
                               : canopy::device_span(reinterpret_cast<int*>(std::uintptr_t(256)), 10);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::inclusive_scan<int>(ctx(), a.view(), other, add); },
      {"canopy::inclusive_scan", "'out'", "memory"});
  // n == 0 with null spans is fine.
  canopy::inclusive_scan<int>(ctx(), canopy::span<const int>{}, canopy::span<int>{}, add);
}

CANOPY_INSTANTIATE_BACKENDS(ScanTest);

class CudaScan : public canopy_test::CudaTest {};

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// GPU-only: the sizes the issue names, and GPU == host.
TEST_F(CudaScan, Int32At2Pow28MatchesHost) {
  canopy::context& ctx = this->ctx();
  const std::size_t n = std::size_t(1) << 28;
  std::vector<std::int32_t> in(n);
  std::mt19937 rng(18);
  for (auto& x : in) x = std::int32_t(rng() % 2001) - 1000;
  canopy::buffer<std::int32_t> bin(ctx, n), bout(ctx, n);
  bin.assign(in);
  canopy::inclusive_scan<std::int32_t>(ctx, bin.view(), bout.view(), canopy::plus<std::int32_t>{});
  std::vector<std::int32_t> want(n);
  canopy::inclusive_scan<std::int32_t>(canopy_test::host_context(), canopy::host_span<const std::int32_t>(in.data(), n),
                                       canopy::host_span(want.data(), n), canopy::plus<std::int32_t>{});
  expect_equal_vectors(bout.to_host(), want, "2^28 inclusive");
  canopy::exclusive_scan<std::int32_t>(ctx, bin.view(), bin.view(), 0, canopy::plus<std::int32_t>{});  // in place
  std::exclusive_scan(in.begin(), in.end(), want.begin(), 0);
  expect_equal_vectors(bin.to_host(), want, "2^28 exclusive in place");
}

struct odd_value {
  CANOPY_HD bool operator()(std::int32_t v) const { return (v & 1) != 0; }
};

// Single-pass kernels keep their look-back descriptors and tile counter in the context between
// calls, one epoch per call, never cleared per call. Interleaves on one context: 8-byte
// descriptors (i32 scans) and 16-byte ones (i64 scans, select counts); the persistent kernel
// (aligned spans) and the one-block-per-tile kernel (misaligned spans, segmented scans, select:
// these claim tiles from the kept counter); sizes that grow the store and sizes that leave stale
// words of larger calls behind; then epochs run up to the wrap-around (store cleared, epochs
// restart) and past it. Every result against std::.
TEST_F(CudaScan, KeptDescriptorsAcrossCallsKernelsAndEpochWrap) {
  canopy::context& ctx = this->ctx();
  std::mt19937 rng(4242);
  int step = 0;
  const auto check_round = [&](std::size_t n) {
    const std::string what = "step " + std::to_string(step++) + " n=" + std::to_string(n);
    std::vector<std::int32_t> a(n + 1);
    for (auto& x : a) x = std::int32_t(rng() % 2001) - 1000;
    std::vector<std::int64_t> b(n);
    for (auto& x : b) x = std::int64_t(rng()) - (1ll << 31);
    canopy::buffer<std::int32_t> ain(ctx, n + 1), aout(ctx, n + 1);
    canopy::buffer<std::int64_t> bin(ctx, n), bout(ctx, n);
    ain.assign(a);
    aout.assign(std::vector<std::int32_t>(n + 1, 0));  // the element a call does not write is read back too
    bin.assign(b);
    // Persistent (aligned) and one-block-per-tile (misaligned by one element) i32 scans.
    canopy::inclusive_scan<std::int32_t>(ctx, ain.view().subspan(0, n), aout.view().subspan(0, n),
                                         canopy::plus<std::int32_t>{});
    std::vector<std::int32_t> want(n);
    std::inclusive_scan(a.begin(), a.begin() + std::ptrdiff_t(n), want.begin());
    auto got = aout.to_host();
    got.resize(n);
    ASSERT_TRUE(got == want) << what << ": aligned i32 scan";
    canopy::inclusive_scan<std::int32_t>(ctx, ain.view().subspan(1, n), aout.view().subspan(1, n),
                                         canopy::plus<std::int32_t>{});
    std::inclusive_scan(a.begin() + 1, a.end(), want.begin());
    got = aout.to_host();
    ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + 1)) << what << ": misaligned i32 scan";
    // 16-byte descriptors: i64 exclusive scan, a segmented i64 scan and a select.
    canopy::exclusive_scan<std::int64_t>(ctx, bin.view(), bout.view(), 0, canopy::plus<std::int64_t>{});
    std::vector<std::int64_t> want64(n);
    std::exclusive_scan(b.begin(), b.end(), want64.begin(), std::int64_t(0));
    ASSERT_TRUE(bout.to_host() == want64) << what << ": i64 exclusive scan";
    std::vector<std::uint8_t> heads(n);
    for (std::size_t i = 0; i < n; ++i) heads[i] = (rng() % 1000) == 0;
    canopy::buffer<std::uint8_t> bheads(ctx, n);
    bheads.assign(heads);
    canopy::inclusive_segmented_scan<std::int64_t>(ctx, bin.view(), bheads.view(), bout.view(),
                                                   canopy::plus<std::int64_t>{});
    for (std::size_t i = 0; i < n; ++i) want64[i] = (i == 0 || heads[i]) ? b[i] : want64[i - 1] + b[i];
    ASSERT_TRUE(bout.to_host() == want64) << what << ": segmented i64 scan";
    const odd_value odd;
    const std::size_t k = canopy::select_if_count<std::int32_t>(ctx, ain.view(), aout.view(), odd);
    std::vector<std::int32_t> kept;
    std::copy_if(a.begin(), a.end(), std::back_inserter(kept), odd);
    got = aout.to_host();
    got.resize(k);
    ASSERT_TRUE(got == kept) << what << ": select";
  };
  for (std::size_t n : {std::size_t(3) << 20, std::size_t(1000), std::size_t(9) << 20, std::size_t(65537),
                        std::size_t(1) << 20})
    check_round(n);
  // Up to the wrap-around and past it, for both descriptor sizes.
  for (std::size_t bytes : {std::size_t(8), std::size_t(16)})
    canopy::detail::set_tile_descriptor_epoch_for_testing(ctx, bytes, canopy::context::max_tile_epoch - 2);
  for (std::size_t n : {std::size_t(5) << 20, std::size_t(70000), std::size_t(5) << 20, std::size_t(4097)})
    check_round(n);
}

// A scan and a select captured into a CUDA graph and replayed over new inputs: calls under stream
// capture must not use the context's kept descriptors (a replay would reuse the captured epoch and
// read the previous replay's descriptors as its own). Aligned spans take the persistent scan.
TEST_F(CudaScan, GraphCaptureReplaysWithFreshDescriptors) {
  canopy::context& ctx = this->ctx();
  const std::size_t n = (std::size_t(3) << 20) + 5;
  canopy::buffer<std::int32_t> in(ctx, n), out(ctx, n), kept(ctx, n);
  canopy::buffer<std::size_t> count(ctx, 1);
  in.assign(std::vector<std::int32_t>(n, 1));
  // A call before the capture leaves descriptors in the kept store; the graph must not see them.
  canopy::inclusive_scan<std::int32_t>(ctx, in.view(), out.view(), canopy::plus<std::int32_t>{});
  ctx.synchronize();
  const canopy_test::captured_graph captured(ctx, [&] {
    EXPECT_TRUE(ctx.stream_capturing());
    canopy::inclusive_scan<std::int32_t>(ctx, in.view(), out.view(), canopy::plus<std::int32_t>{});
    canopy::select_if<std::int32_t>(ctx, in.view(), kept.view(), count.view(), odd_value{});
  });
  ASSERT_TRUE(captured.ok());
  EXPECT_FALSE(ctx.stream_capturing());
  std::mt19937 rng(77);
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<std::int32_t> a(n);
    for (auto& x : a) x = std::int32_t(rng() % 2001) - 1000;
    in.assign(a);
    ASSERT_EQ(cudaGraphLaunch(captured.exec, ctx.stream()), cudaSuccess);
    // Uncaptured calls between replays use (and advance) the kept store.
    canopy::buffer<std::int32_t> other(ctx, n);
    canopy::inclusive_scan<std::int32_t>(ctx, in.view(), other.view(), canopy::plus<std::int32_t>{});
    std::vector<std::int32_t> want(n);
    std::inclusive_scan(a.begin(), a.end(), want.begin());
    ASSERT_TRUE(out.to_host() == want) << "replay " << replay << ": scan";
    ASSERT_TRUE(other.to_host() == want) << "replay " << replay << ": uncaptured scan";
    std::vector<std::int32_t> odd;
    std::copy_if(a.begin(), a.end(), std::back_inserter(odd), odd_value{});
    ASSERT_EQ(count.to_host()[0], odd.size()) << "replay " << replay;
    auto got = kept.to_host();
    got.resize(odd.size());
    ASSERT_TRUE(got == odd) << "replay " << replay << ": select";
  }
}

TEST_F(CudaScan, SegmentedLargeMatchesHost) {
  canopy::context& ctx = this->ctx();
  const std::size_t n = (std::size_t(1) << 25) + 3;
  std::vector<std::int64_t> in(n);
  std::mt19937 rng(19);
  for (auto& x : in) x = std::int64_t(rng()) - (1 << 30);
  const auto heads = make_flags(n, 100000, 20);
  canopy::buffer<std::int64_t> bin(ctx, n), bout(ctx, n);
  canopy::buffer<std::uint8_t> bflags(ctx, n);
  bin.assign(in);
  bflags.assign(heads);
  canopy::exclusive_segmented_scan<std::int64_t>(ctx, bin.view(), bflags.view(), bout.view(), 0,
                                                 canopy::plus<std::int64_t>{});
  expect_equal_vectors(bout.to_host(), ref_segmented(in, heads, 0, true, std::int64_t(0), canopy::plus<std::int64_t>{}),
                       "segmented exclusive i64");
  canopy::inclusive_scan_regular_segments<std::int64_t>(ctx, bin.view(), bout.view(), 3840,
                                                        canopy::maximum<std::int64_t>{});
  expect_equal_vectors(bout.to_host(),
                       ref_segmented(in, {}, 3840, false, std::numeric_limits<std::int64_t>::lowest(),
                                     canopy::maximum<std::int64_t>{}),
                       "regular max i64");
}

// The persistent kernel needs sm_90 code and a cooperative launch; elsewhere its tests are skipped
// (and say why) rather than failing on the kernel's refusal.
bool persistent_scan_runs_here(canopy::context& ctx) {
  return canopy::detail::persistent_scan_blocks_per_sm<
             std::int32_t, canopy::plus<std::int32_t>,
             canopy::detail::tuning::plain_persistent_shape<std::int32_t>>(ctx) > 0;
}

// The persistent plain scan (scan_dispatch.cuh): sizes around its tile (12288 4-byte / 5120 8-byte
// items by default), around whole rounds of the grid (one tile per block) and past several trips
// around the shared-memory stages, so that refills, the partial last tile and the static tile order
// are all exercised; in place and out of place; the kernel is called directly (so that a silent
// fallback to the other kernel cannot make the test pass) and through the public entry point.
template <class T, class Op, class Shape = canopy::detail::tuning::plain_persistent_shape<T>>
void check_persistent_scan(canopy::context& ctx, std::size_t n, bool exclusive, bool in_place, T identity, Op op,
                           std::uint32_t seed, std::size_t max_grid = 0) {
  std::vector<T> in(n);
  std::mt19937_64 rng(seed + n);
  for (auto& x : in) x = T(std::int64_t(rng() % 2001) - 1000);
  canopy::buffer<T> bin(ctx, n), bout(ctx, n);
  bin.assign(in);
  bout.fill_bytes(0x5a);  // poison: every element must be written
  T* out = in_place ? bin.data() : bout.data();
  const bool launched = canopy::detail::launch_persistent_scan<T, Op, Shape>(ctx, bin.data(), out, n,
                                                                     exclusive ? &identity : nullptr, op, max_grid);
  ASSERT_TRUE(launched) << "the persistent kernel refused an aligned plain scan of n=" << n;
  const auto want = ref_segmented(in, {}, 0, exclusive, identity, op);
  const std::string what = std::string(exclusive ? "exclusive" : "inclusive") + (in_place ? " in place" : "") +
                           " tile " + std::to_string(Shape::tile_items) +
                           " sizeof(T)=" + std::to_string(sizeof(T)) + " n=" + std::to_string(n) +
                           " grid cap " + std::to_string(max_grid);
  expect_equal_vectors(in_place ? bin.to_host() : bout.to_host(), want, what);
}

TEST_F(CudaScan, PersistentKernelLargeSizesAndTypes) {
  canopy::context& ctx = this->ctx();
  if (!persistent_scan_runs_here(ctx)) GTEST_SKIP() << "no sm_90 persistent scan on " << ctx.device().name;
  const int sms = std::max(ctx.device().multiprocessors, 1);
  using S32 = canopy::detail::tuning::plain_persistent_shape<std::int32_t>;
  using S64 = canopy::detail::tuning::plain_persistent_shape<std::int64_t>;
  // One round = every resident block takes one tile (an upper bound of 4 blocks per SM is enough to
  // pass several rounds and stage cycles).
  const std::size_t round32 = std::size_t(sms) * 4 * S32::tile_items, round64 = std::size_t(sms) * 4 * S64::tile_items;
  for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(S32::tile_items) - 1, std::size_t(S32::tile_items),
                        std::size_t(S32::tile_items) + 1, round32 - 3, round32 * S32::stages * 2 + 4099})
    for (bool exclusive : {false, true}) {
      check_persistent_scan<std::int32_t>(ctx, n, exclusive, false, 0, canopy::plus<std::int32_t>{}, 21);
      check_persistent_scan<float>(ctx, n, exclusive, exclusive, -1e30f, canopy::maximum<float>{}, 22);
    }
  for (std::size_t n : {std::size_t(3), std::size_t(S64::tile_items) + 1, round64 + 17, round64 * S64::stages * 2 + 1})
    for (bool exclusive : {false, true}) {
      check_persistent_scan<std::int64_t>(ctx, n, exclusive, !exclusive, 0, canopy::plus<std::int64_t>{}, 23);
      check_persistent_scan<std::uint64_t>(ctx, n, exclusive, false, std::numeric_limits<std::uint64_t>::max(),
                                           canopy::minimum<std::uint64_t>{}, 24);
    }
  // Public entry point, aligned, in place, a size with a partial last tile.
  const std::size_t n = round32 * 3 + 12345;
  std::vector<std::int32_t> in(n);
  std::mt19937 rng(25);
  for (auto& x : in) x = std::int32_t(rng() % 2001) - 1000;
  canopy::buffer<std::int32_t> b(ctx, n);
  b.assign(in);
  canopy::inclusive_scan<std::int32_t>(ctx, b.view(), b.view(), canopy::plus<std::int32_t>{});
  std::inclusive_scan(in.begin(), in.end(), in.begin());
  expect_equal_vectors(b.to_host(), in, "public inclusive in place");
}

// Small sizes on capped grids (1-3 blocks): each block cycles through its stages many times; fast
// enough for the sanitizers.
TEST_F(CudaScan, PersistentKernelSmallGrids) {
  canopy::context& ctx = this->ctx();
  if (!persistent_scan_runs_here(ctx)) GTEST_SKIP() << "no sm_90 persistent scan on " << ctx.device().name;
  using S32 = canopy::detail::tuning::plain_persistent_shape<std::int32_t>;
  using S64 = canopy::detail::tuning::plain_persistent_shape<std::int64_t>;
  for (std::size_t grid : {std::size_t(1), std::size_t(2), std::size_t(3)})
    for (bool exclusive : {false, true}) {
      for (std::size_t n : {std::size_t(S32::tile_items) * 7 + 1, std::size_t(S32::tile_items) * 9})
        check_persistent_scan<std::int32_t>(ctx, n, exclusive, exclusive, 0, canopy::plus<std::int32_t>{}, 26, grid);
      for (std::size_t n : {std::size_t(S64::tile_items) * 8 - 1, std::size_t(S64::tile_items) * 6})
        check_persistent_scan<std::int64_t>(ctx, n, exclusive, !exclusive, 0, canopy::plus<std::int64_t>{}, 27, grid);
    }
}

// The other persistent shapes canopy-scan-tuning measures (plain bulk loads, 64 KB tiles with one
// block per SM, 24 KB tiles with three), on capped grids.
TEST_F(CudaScan, PersistentKernelShapes) {
  canopy::context& ctx = this->ctx();
  if (!persistent_scan_runs_here(ctx)) GTEST_SKIP() << "no sm_90 persistent scan on " << ctx.device().name;
  namespace tn = canopy::detail::tuning;
  using NormalLoads = tn::persistent_scan_shape<std::int32_t, 512, 4, 3, 2>;  // the old default minus evict-first
  using Big = tn::persistent_scan_shape<std::int32_t, 512, 8, 3, 1>;
  using Three = tn::persistent_scan_shape<std::int64_t, 384, 4, 3, 3>;
  using Plus32 = canopy::plus<std::int32_t>;
  using Plus64 = canopy::plus<std::int64_t>;
  for (std::size_t grid : {std::size_t(1), std::size_t(2), std::size_t(5)})
    for (bool exclusive : {false, true}) {
      for (std::size_t n : {std::size_t(Big::tile_items) * 13 + 7, std::size_t(Big::tile_items) * 4, std::size_t(100)}) {
        check_persistent_scan<std::int32_t, Plus32, NormalLoads>(ctx, n, exclusive, exclusive, 0, Plus32{}, 28, grid);
        check_persistent_scan<std::int32_t, Plus32, Big>(ctx, n, exclusive, !exclusive, 0, Plus32{}, 29, grid);
      }
      check_persistent_scan<std::int64_t, Plus64, Three>(ctx, std::size_t(Three::tile_items) * 11 + 1, exclusive,
                                                         false, 0, Plus64{}, 30, grid);
    }
}

// Operators not known to be commutative go to the one-block-per-tile kernel (the persistent kernel
// folds tile totals in any order): composition of affine maps x -> a x + b on 8-byte values, which
// is associative and not commutative, over sizes of many tiles; inclusive and exclusive.
struct affine {
  std::uint32_t a, b;
  bool operator==(const affine& o) const { return a == o.a && b == o.b; }
};
struct affine_then {  // first x, then y
  CANOPY_HD affine operator()(const affine& x, const affine& y) const { return {y.a * x.a, y.a * x.b + y.b}; }
};
std::ostream& operator<<(std::ostream& os, const affine& f) { return os << "(" << f.a << ", " << f.b << ")"; }

TEST_F(CudaScan, NonCommutativeEightByteValues) {
  canopy::context& ctx = this->ctx();
  static_assert(!canopy::detail::is_commutative<affine_then>::value, "must take the fallback");
  for (std::size_t n : {std::size_t(3), std::size_t(70001), std::size_t(1) << 21}) {
    std::vector<affine> in(n);
    std::mt19937 rng(35);
    for (auto& f : in) f = {std::uint32_t(rng() % 5 + 1), std::uint32_t(rng() % 7)};
    canopy::buffer<affine> bin(ctx, n), bout(ctx, n);
    bin.assign(in);
    canopy::inclusive_scan<affine>(ctx, bin.view(), bout.view(), affine_then{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, 0, false, affine{1, 0}, affine_then{}),
                         "affine inclusive n=" + std::to_string(n));
    canopy::exclusive_scan<affine>(ctx, bin.view(), bout.view(), affine{1, 0}, affine_then{});
    expect_equal_vectors(bout.to_host(), ref_segmented(in, {}, 0, true, affine{1, 0}, affine_then{}),
                         "affine exclusive n=" + std::to_string(n));
  }
}

// Misaligned pointers: the persistent kernel steps aside and the one-block-per-tile kernel runs.
TEST_F(CudaScan, PersistentKernelRefusesMisalignedPointers) {
  canopy::context& ctx = this->ctx();
  if (!persistent_scan_runs_here(ctx)) GTEST_SKIP() << "no sm_90 persistent scan on " << ctx.device().name;
  canopy::buffer<std::int32_t> b(ctx, 100);
  EXPECT_FALSE((canopy::detail::launch_persistent_scan<std::int32_t, canopy::plus<std::int32_t>>(
      ctx, b.data() + 1, b.data() + 1, 50, nullptr, canopy::plus<std::int32_t>{})));
  EXPECT_FALSE((canopy::detail::launch_persistent_scan<std::int32_t, canopy::plus<std::int32_t>>(
      ctx, b.data(), b.data() + 50, 49, nullptr, canopy::plus<std::int32_t>{})));
  // Control: the same buffer, aligned, is taken (so the refusals above are about alignment).
  EXPECT_TRUE((canopy::detail::launch_persistent_scan<std::int32_t, canopy::plus<std::int32_t>>(
      ctx, b.data(), b.data(), 48, nullptr, canopy::plus<std::int32_t>{})));
}

#endif
