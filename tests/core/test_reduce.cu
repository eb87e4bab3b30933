// Reduce on both backends against std::accumulate and sequential folds; non-commutative operators;
// misaligned spans; bad arguments. GPU-only: 2^26 and 2^28 elements vs host and vs CUB's sum.
#include "common/backends.hpp"

#include <canopy/core/reduce.hpp>
#include <canopy/core/scan.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/reduce_dispatch.cuh>
#include <cub/device/device_reduce.cuh>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

const std::vector<std::size_t> kSizes = {0,    1,     2,     31,    32,     33,     1023,  1024,   1025,
                                         4095, 4097,  32767, 32769, 131071, 131073, 999983, 4194305};

// 2x2 matrices of uint32 with wrap-around products: associative, not commutative, exact.
struct mat2 {
  std::uint32_t a, b, c, d;
  bool operator==(const mat2& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
struct mat2_mul {
  CANOPY_HD mat2 operator()(const mat2& x, const mat2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};

// "Keep the first non-zero": associative, not commutative, order bugs change the answer.
struct first_nonzero {
  CANOPY_HD std::int32_t operator()(std::int32_t a, std::int32_t b) const { return a != 0 ? a : b; }
};

}  // namespace

class ReduceTest : public BackendTest {};

TEST_P(ReduceTest, SumsMatchAccumulate) {
  for (std::size_t n : kSizes) {
    std::mt19937 rng{std::uint32_t(n)};
    std::vector<std::int32_t> in(n);
    for (auto& x : in) x = std::int32_t(rng());  // wraps: compare in uint32
    auto b = upload(in);
    const std::int32_t got = canopy::reduce<std::int32_t>(ctx(), b.view(), 0, canopy::plus<std::int32_t>{});
    std::uint32_t want = 0;
    for (auto x : in) want += std::uint32_t(x);
    EXPECT_EQ(std::uint32_t(got), want) << "n=" << n;

    std::vector<std::uint64_t> in64(n);
    for (auto& x : in64) x = (std::uint64_t(rng()) << 32) | rng();
    auto b64 = upload(in64);
    canopy::buffer<std::uint64_t> r(ctx(), 1);
    canopy::reduce<std::uint64_t>(ctx(), b64.view(), r.view(), 0, canopy::plus<std::uint64_t>{});
    EXPECT_EQ(r.to_host()[0], std::accumulate(in64.begin(), in64.end(), std::uint64_t(0))) << "u64 n=" << n;
  }
}

TEST_P(ReduceTest, MaxMinHostileDistributions) {
  for (std::size_t n : kSizes) {
    if (n == 0) continue;
    std::vector<float> asc(n), desc(n), same(n, -3.5f);
    for (std::size_t i = 0; i < n; ++i) asc[i] = float(i) * 0.5f - 100.0f, desc[i] = -asc[i];
    for (const auto* v : {&asc, &desc, &same}) {
      auto b = upload(*v);
      EXPECT_EQ(canopy::reduce<float>(ctx(), b.view(), -std::numeric_limits<float>::infinity(), canopy::maximum<float>{}),
                *std::max_element(v->begin(), v->end()))
          << n;
      EXPECT_EQ(canopy::reduce<float>(ctx(), b.view(), std::numeric_limits<float>::infinity(), canopy::minimum<float>{}),
                *std::min_element(v->begin(), v->end()))
          << n;
    }
  }
}

TEST_P(ReduceTest, EmptyGivesIdentity) {
  canopy::buffer<double> r(ctx(), 1);
  r.fill_bytes(0x7f);
  canopy::reduce<double>(ctx(), canopy::span<const double>{}, r.view(), -1e300, canopy::maximum<double>{});
  EXPECT_EQ(r.to_host()[0], -1e300);
  EXPECT_EQ(canopy::reduce<double>(ctx(), canopy::span<const double>{}, 1.0, canopy::multiplies<double>{}), 1.0);
}

TEST_P(ReduceTest, NonCommutativeOrderIsKept) {
  for (std::size_t n : kSizes) {
    std::mt19937 rng{std::uint32_t(n) + 1};
    std::vector<mat2> m(n);
    for (auto& x : m) x = {std::uint32_t(rng() % 5), std::uint32_t(rng() % 5 + 1), std::uint32_t(rng() % 3), std::uint32_t(rng() % 4 + 1)};
    auto b = upload(m);
    mat2 want{1, 0, 0, 1};
    for (const auto& x : m) want = mat2_mul{}(want, x);
    EXPECT_TRUE(canopy::reduce<mat2>(ctx(), b.view(), mat2{1, 0, 0, 1}, mat2_mul{}) == want) << "n=" << n;

    // Sparse non-zeros: the first one must win.
    std::vector<std::int32_t> v(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      if (rng() % 1000 == 0) v[i] = std::int32_t(i + 1);
    auto bv = upload(v);
    std::int32_t first = 0;
    for (auto x : v)
      if (first == 0) first = x;
    EXPECT_EQ(canopy::reduce<std::int32_t>(ctx(), bv.view(), 0, first_nonzero{}), first) << "n=" << n;
  }
}

TEST_P(ReduceTest, MisalignedSpan) {
  std::vector<std::int32_t> in(100003);
  std::iota(in.begin(), in.end(), -5000);
  auto b = upload(in);
  for (std::size_t off : {1, 2, 3}) {
    const auto sub = canopy::span<const std::int32_t>(b.view().subspan(off, in.size() - off));
    EXPECT_EQ(canopy::reduce<std::int32_t>(ctx(), sub, 0, canopy::plus<std::int32_t>{}),
              std::accumulate(in.begin() + off, in.end(), 0))
        << off;
  }
}

TEST_P(ReduceTest, RefusesBadArguments) {
  canopy::buffer<int> a(ctx(), 10), r2(ctx(), 2);
  const canopy::plus<int> add;
  expect_error<canopy::invalid_argument>([&] { canopy::reduce<int>(ctx(), a.view(), r2.view(), 0, add); },
                                         {"canopy::reduce", "'result'", "1 element"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::reduce<int>(ctx(), canopy::span<const int>(nullptr, 3, ctx().space()), 0, add); },
      {"canopy::reduce", "'in'", "null"});
  std::vector<int> host(10);
  const auto other = is_cuda() ? canopy::host_span<const int>(host.data(), host.size())
                               : canopy::device_span<const int>(reinterpret_cast<int*>(std::uintptr_t(256)), 10);
  expect_error<canopy::invalid_argument>([&] { canopy::reduce<int>(ctx(), other, 0, add); },
                                         {"canopy::reduce", "'in'", "memory"});
}

CANOPY_INSTANTIATE_BACKENDS(ReduceTest);

class CudaReduce : public canopy_test::CudaTest {};

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
TEST_F(CudaReduce, At2Pow28MatchesHostAndCub) {
  canopy::context& ctx = this->ctx();
  for (int lg : {26, 28}) {
    const std::size_t n = std::size_t(1) << lg;
    std::vector<std::int32_t> h(n);
    std::mt19937 rng(lg);
    for (auto& x : h) x = std::int32_t(rng());
    canopy::buffer<std::int32_t> in(ctx, n), out(ctx, 1), ref(ctx, 1);
    in.assign(h);
    const std::int32_t want = canopy::reduce<std::int32_t>(
        canopy_test::host_context(), canopy::host_span<const std::int32_t>(h.data(), n), 0, canopy::plus<std::int32_t>{});

    std::size_t temp_bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in.data(), ref.data(), int(n), ctx.stream()));
    canopy::buffer<unsigned char> temp(ctx, temp_bytes);
    CANOPY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, in.data(), ref.data(), int(n), ctx.stream()));
    canopy::reduce<std::int32_t>(ctx, in.view(), out.view(), 0, canopy::plus<std::int32_t>{});
    EXPECT_EQ(out.to_host()[0], want);
    EXPECT_EQ(ref.to_host()[0], want);
  }
}
// The streamed bulk-copy reduction, called directly (so that a fallback cannot make the test pass):
// sizes around its chunks, a ragged tail, capped grids that cycle through the stages many times;
// max with a planted extreme at the very end checks that the tail is folded.
TEST_F(CudaReduce, BulkKernelMatchesHost) {
  canopy::context& ctx = this->ctx();
  using canopy::plus;
  if (canopy::detail::reduce_bulk_blocks_per_sm<std::int32_t, plus<std::int32_t>, 256, 16384, 6>(ctx) == 0)
    GTEST_SKIP() << "no sm_90 streamed reduction on " << ctx.device().name;
  for (std::size_t n : {std::size_t(1), std::size_t(4097), std::size_t(32768) * 4 + 3, std::size_t(999983)}) {
    std::vector<std::int32_t> h(n);
    std::mt19937 rng{std::uint32_t(n)};
    for (auto& x : h) x = std::int32_t(rng() % 2001) - 1000;
    h.back() = 5000;  // the maximum is the last element
    canopy::buffer<std::int32_t> in(ctx, n), out(ctx, 1);
    in.assign(h);
    const std::int32_t want = std::accumulate(h.begin(), h.end(), 0);
    const auto got = [&] { return out.to_host()[0]; };
    for (std::size_t grid : {std::size_t(0), std::size_t(3)}) {  // 3 blocks: many trips around the stages
      out.fill_bytes(0x5a);  // each run must write its own result
      const bool bulk = canopy::detail::cuda_reduce_bulk<std::int32_t, plus<std::int32_t>, 256, 16384, 6>(
          ctx, in.data(), n, out.data(), 0, plus<std::int32_t>{}, grid);
      EXPECT_EQ(bulk, n >= 4 * 4096) << n;  // refused only below four chunks
      if (bulk) EXPECT_EQ(got(), want) << "bulk n=" << n << " grid cap " << grid;
    }
    out.fill_bytes(0x5a);
    const bool bulk_max = canopy::detail::cuda_reduce_bulk<std::int32_t, canopy::maximum<std::int32_t>, 256, 16384, 6>(
        ctx, in.data(), n, out.data(), std::numeric_limits<std::int32_t>::lowest(), canopy::maximum<std::int32_t>{});
    EXPECT_EQ(bulk_max, n >= 4 * 4096) << n;  // the same conditions as the sum above
    if (bulk_max) EXPECT_EQ(got(), 5000) << "bulk max n=" << n;
  }
}

// The streamed reduction folds its partials in the last block to finish, counted on a word of the
// context's kept counters that each launch must leave at zero: reductions queued back to back (no
// synchronisation between them, different inputs, scans in between that use the neighbouring tile
// counter) must each be right, and a float sum must be the same bits every time.
TEST_F(CudaReduce, BulkLaunchesBackToBackLeaveTheirCounterClear) {
  canopy::context& ctx = this->ctx();
  using canopy::plus;
  if (canopy::detail::reduce_bulk_blocks_per_sm<std::int32_t, plus<std::int32_t>, 256, 16384, 6>(ctx) == 0)
    GTEST_SKIP() << "no sm_90 streamed reduction on " << ctx.device().name;
  const std::size_t n = (std::size_t(1) << 22) + 12345, rounds = 8;
  std::mt19937 rng(5);
  std::vector<std::vector<std::int32_t>> inputs(rounds, std::vector<std::int32_t>(n));
  std::vector<canopy::buffer<std::int32_t>> bufs;
  std::vector<std::int32_t> want;
  for (auto& h : inputs) {
    for (auto& x : h) x = std::int32_t(rng() % 2001) - 1000;
    bufs.emplace_back(ctx, n);
    bufs.back().assign(h);
    want.push_back(std::accumulate(h.begin(), h.end(), 0));
  }
  ctx.synchronize();
  canopy::buffer<std::int32_t> out(ctx, rounds), scanned(ctx, n);
  out.fill_bytes(0x5a);
  for (std::size_t r = 0; r < rounds; ++r) {
    canopy::reduce<std::int32_t>(ctx, bufs[r].view(), out.view().subspan(r, 1), 0, plus<std::int32_t>{});
    if (r % 3 == 1) canopy::inclusive_scan<std::int32_t>(ctx, bufs[r].view(), scanned.view(), plus<std::int32_t>{});
  }
  EXPECT_EQ(out.to_host(), want);
  std::vector<std::int32_t> scan_want(n);
  std::inclusive_scan(inputs[7].begin(), inputs[7].end(), scan_want.begin());
  EXPECT_TRUE(scanned.to_host() == scan_want) << "the scan sharing the counter words";

  std::vector<float> hf(n);
  for (auto& x : hf) x = float(rng() % 100000) * 1e-3f - 37.f;
  canopy::buffer<float> fin(ctx, n), fout(ctx, 5);
  fin.assign(hf);
  for (std::size_t r = 0; r < 5; ++r)
    canopy::reduce<float>(ctx, fin.view(), fout.view().subspan(r, 1), 0.f, plus<float>{});
  const std::vector<float> sums = fout.to_host();
  double exact = 0;
  for (float x : hf) exact += x;
  for (std::size_t r = 1; r < 5; ++r)
    EXPECT_EQ(std::memcmp(&sums[r], &sums[0], sizeof(float)), 0) << "run " << r << ": " << sums[r] << " vs " << sums[0];
  EXPECT_NEAR(sums[0], exact, 1e-6 * double(n) * 100);
}

// A reduction captured into a CUDA graph takes a zeroed scratch counter (a replay must not depend on
// the kept counters' state), and replays over new inputs while uncaptured reductions run between.
TEST_F(CudaReduce, GraphCaptureReplaysBulkReduction) {
  canopy::context& ctx = this->ctx();
  const std::size_t n = (std::size_t(3) << 20) + 7;
  canopy::buffer<std::int32_t> in(ctx, n), out(ctx, 1), other(ctx, 1);
  in.assign(std::vector<std::int32_t>(n, 1));
  const canopy_test::captured_graph captured(
      ctx, [&] { canopy::reduce<std::int32_t>(ctx, in.view(), out.view(), 0, canopy::plus<std::int32_t>{}); });
  ASSERT_TRUE(captured.ok());
  std::mt19937 rng(78);
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<std::int32_t> a(n);
    for (auto& x : a) x = std::int32_t(rng() % 2001) - 1000;
    in.assign(a);
    ASSERT_EQ(cudaGraphLaunch(captured.exec, ctx.stream()), cudaSuccess);
    canopy::reduce<std::int32_t>(ctx, in.view(), other.view(), 0, canopy::plus<std::int32_t>{});
    const std::int32_t want = std::accumulate(a.begin(), a.end(), 0);
    ASSERT_EQ(out.to_host()[0], want) << "replay " << replay;
    ASSERT_EQ(other.to_host()[0], want) << "replay " << replay << ": uncaptured";
  }
}
#endif
