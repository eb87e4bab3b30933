// Compaction and stable partition on both backends against std::copy_if / std::stable_partition;
// selection densities from none to all; counts in device memory and returned; bad arguments.
// GPU-only: 2^26 and 2^28 elements, partition vs host and select vs CUB at 50% selected.
#include "common/backends.hpp"

#include <canopy/core/compact.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <cub/device/device_select.cuh>
#endif

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

const std::vector<std::size_t> kSizes = {0,    1,    2,    31,    32,    33,     1023,   1024,   1025,
                                         4095, 4096, 4097, 65535, 65537, 131073, 1000003};

// Selects values below a threshold (keeps a fraction `threshold / 2^32` of uniform values).
struct below {
  std::uint32_t threshold;
  CANOPY_HD bool operator()(std::uint32_t v) const { return v < threshold; }
};

struct odd_key {
  CANOPY_HD bool operator()(const std::uint64_t& v) const { return (v >> 32) & 1u; }
};

// 12-byte records: not a multiple of 16 bytes (scalar paths).
struct record {
  std::uint32_t key, a, b;
  bool operator==(const record& o) const { return key == o.key && a == o.a && b == o.b; }
};
struct record_even {
  CANOPY_HD bool operator()(const record& r) const { return (r.key & 1u) == 0; }
};

const std::uint32_t kThresholds[] = {0u, 1u << 20, 1u << 31, 0xC0000000u, 0xFFFFFFFFu};

}  // namespace

class CompactTest : public BackendTest {};

TEST_P(CompactTest, SelectIfMatchesCopyIf) {
  for (std::uint32_t t : kThresholds)
    for (std::size_t n : kSizes) {
      std::mt19937 rng(std::uint32_t(n) ^ t);
      std::vector<std::uint32_t> in(n);
      for (auto& x : in) x = rng();
      if (t == 0xFFFFFFFFu) std::fill(in.begin(), in.end(), 7u);  // all selected
      auto bin = upload(in);
      constexpr std::uint32_t untouched = 0xDEADBEEFu;  // what out holds before the call
      auto bout = upload(std::vector<std::uint32_t>(n, untouched));
      const std::size_t k = canopy::select_if_count<std::uint32_t>(ctx(), bin.view(), bout.view(), below{t});
      std::vector<std::uint32_t> want;
      std::copy_if(in.begin(), in.end(), std::back_inserter(want), below{t});
      ASSERT_EQ(k, want.size()) << "n=" << n << " t=" << t;
      auto got = bout.to_host();
      // A select writes out[0, k) only (the GPU writes whole 16-byte vectors inside that range).
      ASSERT_TRUE(std::all_of(got.begin() + k, got.end(), [](std::uint32_t v) { return v == untouched; }))
          << "n=" << n << " t=" << t << ": wrote past the selected count";
      got.resize(k);
      ASSERT_TRUE(got == want) << "n=" << n << " t=" << t;
    }
}

TEST_P(CompactTest, SelectFlaggedWithDeviceCount) {
  for (std::size_t n : kSizes)
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::mt19937 rng(std::uint32_t(n) + pattern);
      std::vector<std::uint64_t> in(n);
      std::vector<std::uint8_t> flags(n);
      for (std::size_t i = 0; i < n; ++i) {
        in[i] = (std::uint64_t(i) << 20) ^ rng();
        flags[i] = pattern == 0 ? 0 : pattern == 1 ? std::uint8_t(1 + rng() % 200) : pattern == 2 ? (i % 2) * 9 : (rng() % 50 == 0);
      }
      auto bin = upload(in);
      auto bflags = upload(flags);
      canopy::buffer<std::uint64_t> bout(ctx(), n);
      canopy::buffer<std::size_t> count(ctx(), 1);
      canopy::select_flagged<std::uint64_t>(ctx(), bin.view(), bflags.view(), bout.view(), count.view());
      std::vector<std::uint64_t> want;
      for (std::size_t i = 0; i < n; ++i)
        if (flags[i]) want.push_back(in[i]);
      const std::size_t k = count.to_host()[0];
      ASSERT_EQ(k, want.size()) << "n=" << n << " pattern=" << pattern;
      auto got = bout.to_host();
      got.resize(k);
      ASSERT_TRUE(got == want) << "n=" << n << " pattern=" << pattern;
    }
}

TEST_P(CompactTest, PartitionMatchesStablePartition) {
  for (std::uint32_t t : kThresholds)
    for (std::size_t n : kSizes) {
      std::mt19937 rng(std::uint32_t(n) * 3 + t);
      std::vector<std::uint32_t> in(n);
      for (auto& x : in) x = rng();
      auto bin = upload(in);
      canopy::buffer<std::uint32_t> bout(ctx(), n);
      const std::size_t k = canopy::partition_count<std::uint32_t>(ctx(), bin.view(), bout.view(), below{t});
      std::vector<std::uint32_t> want = in;
      const auto mid = std::stable_partition(want.begin(), want.end(), below{t});
      ASSERT_EQ(k, std::size_t(mid - want.begin())) << "n=" << n << " t=" << t;
      ASSERT_TRUE(bout.to_host() == want) << "n=" << n << " t=" << t;
    }
}

TEST_P(CompactTest, RecordsAndFlaggedPartition) {
  for (std::size_t n : {std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(70001)}) {
    std::vector<record> in(n);
    std::mt19937 rng{std::uint32_t(n)};
    for (std::size_t i = 0; i < n; ++i) in[i] = {std::uint32_t(rng()), std::uint32_t(i), ~std::uint32_t(i)};
    auto bin = upload(in);
    canopy::buffer<record> bout(ctx(), n);
    std::vector<record> want = in;
    const auto mid = std::stable_partition(want.begin(), want.end(), record_even{});
    ASSERT_EQ(canopy::partition_count<record>(ctx(), bin.view(), bout.view(), record_even{}),
              std::size_t(mid - want.begin()));
    ASSERT_TRUE(bout.to_host() == want) << n;

    std::vector<std::uint8_t> flags(n);
    for (std::size_t i = 0; i < n; ++i) flags[i] = record_even{}(in[i]) ? 3 : 0;
    auto bflags = upload(flags);
    ASSERT_EQ(canopy::partition_flagged_count<record>(ctx(), bin.view(), bflags.view(), bout.view()),
              std::size_t(mid - want.begin()));
    ASSERT_TRUE(bout.to_host() == want) << n;

    std::vector<std::uint64_t> in64(n);
    for (auto& x : in64) x = (std::uint64_t(rng()) << 32) | rng();
    auto b64 = upload(in64);
    canopy::buffer<std::uint64_t> o64(ctx(), n);
    std::vector<std::uint64_t> want64;
    std::copy_if(in64.begin(), in64.end(), std::back_inserter(want64), odd_key{});
    const std::size_t k = canopy::select_if_count<std::uint64_t>(ctx(), b64.view(), o64.view(), odd_key{});
    auto got64 = o64.to_host();
    got64.resize(k);
    ASSERT_TRUE(got64 == want64) << n;
  }
}

TEST_P(CompactTest, MisalignedSpans) {
  const std::size_t n = 50001;
  std::vector<std::uint32_t> in(n + 1);
  std::mt19937 rng(5);
  for (auto& x : in) x = rng();
  auto bin = upload(in);
  canopy::buffer<std::uint32_t> bout(ctx(), n + 1);
  const auto src = canopy::span<const std::uint32_t>(bin.view().subspan(1, n));
  const std::size_t k = canopy::select_if_count<std::uint32_t>(ctx(), src, bout.view().subspan(1, n), below{1u << 30});
  std::vector<std::uint32_t> want;
  std::copy_if(in.begin() + 1, in.end(), std::back_inserter(want), below{1u << 30});
  ASSERT_EQ(k, want.size());
  auto got = bout.to_host();
  ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + 1));
}

TEST_P(CompactTest, RefusesBadArguments) {
  canopy::buffer<std::uint32_t> a(ctx(), 10), small(ctx(), 9);
  canopy::buffer<std::uint8_t> f(ctx(), 9);
  canopy::buffer<std::size_t> count(ctx(), 1), count2(ctx(), 2);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::select_flagged<std::uint32_t>(ctx(), a.view(), f.view(), a.view(), count.view()); },
      {"canopy::select_flagged", "'flags'", "length 9"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::select_if<std::uint32_t>(ctx(), a.view(), small.view(), count.view(), below{5}); },
      {"canopy::select_if", "'out'", "needs"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::partition<std::uint32_t>(ctx(), a.view(), a.view(), count.view(), below{5}); },
      {"canopy::partition", "overlaps"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::select_if<std::uint32_t>(ctx(), a.view(), small.view(), count2.view(), below{5}); },
      {"canopy::select_if", "'count'"});
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::select_if<std::uint32_t>(ctx(), canopy::span<const std::uint32_t>(nullptr, 4, ctx().space()),
                                         small.view(), count.view(), below{5});
      },
      {"canopy::select_if", "'in'", "null"});
  std::size_t host_count = 0;
  const auto other = is_cuda() ? canopy::host_span(&host_count, 1)
                               : canopy::device_span(reinterpret_cast<std::size_t*>(std::uintptr_t(256)), 1);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::select_if<std::uint32_t>(ctx(), a.view(), small.view().first(0), other, below{5}); },
      {"canopy::select_if", "'count'", "memory"});
  // n == 0: count 0.
  EXPECT_EQ(canopy::select_if_count<std::uint32_t>(ctx(), canopy::span<const std::uint32_t>{},
                                                   canopy::span<std::uint32_t>{}, below{5}),
            0u);
}

CANOPY_INSTANTIATE_BACKENDS(CompactTest);

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
TEST(CudaCompact, At2Pow28MatchesHostAndCub) {
  std::string why;
  if (!canopy::cuda_usable(&why)) GTEST_SKIP() << why;
  canopy::context ctx(canopy::backend_request::cuda);
  for (int lg : {26, 28}) {
    const std::size_t n = std::size_t(1) << lg;
    std::vector<std::uint32_t> h(n);
    std::mt19937 rng(lg);
    for (auto& x : h) x = rng();
    canopy::buffer<std::uint32_t> in(ctx, n), out(ctx, n), ref(ctx, n);
    canopy::buffer<std::size_t> count(ctx, 1);
    canopy::buffer<int> ref_count(ctx, 1);
    in.assign(h);
    const below half{1u << 31};
    std::size_t temp_bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, in.data(), ref.data(), ref_count.data(), int(n), half,
                                            ctx.stream()));
    canopy::buffer<unsigned char> temp(ctx, temp_bytes);
    CANOPY_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), temp_bytes, in.data(), ref.data(), ref_count.data(), int(n),
                                            half, ctx.stream()));
    canopy::partition<std::uint32_t>(ctx, in.view(), out.view(), count.view(), half);
    // Check the last partition against the host engine, and a fresh select against CUB.
    std::vector<std::uint32_t> want(n);
    const std::size_t want_k = canopy::partition_count<std::uint32_t>(
        canopy_test::host_context(), canopy::host_span<const std::uint32_t>(h.data(), n),
        canopy::host_span(want.data(), n), half);
    EXPECT_EQ(count.to_host()[0], want_k);
    EXPECT_TRUE(out.to_host() == want) << "partition 2^" << lg;
    canopy::select_if<std::uint32_t>(ctx, in.view(), out.view(), count.view(), half);
    const std::size_t k = count.to_host()[0];
    EXPECT_EQ(k, std::size_t(ref_count.to_host()[0]));
    auto got = out.to_host(), cub_got = ref.to_host();
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + k, cub_got.begin())) << "select 2^" << lg;
  }
}
#endif
