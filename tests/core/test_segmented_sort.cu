// segmented_sort_keys / segmented_sort_pairs on both backends against std::stable_sort per
// segment (values = original index, so stability is checked), and the CUDA result against the host
// backend's.
#include "common/backends.hpp"

#include <canopy/core/segmented_sort.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

// Offsets of segments with the given sizes, starting at `first` (keys before it are outside).
std::vector<std::uint32_t> offsets_from_sizes(const std::vector<std::uint32_t>& sizes, std::uint32_t first = 0) {
  std::vector<std::uint32_t> off(sizes.size() + 1);
  off[0] = first;
  for (std::size_t i = 0; i < sizes.size(); ++i) off[i + 1] = off[i] + sizes[i];
  return off;
}

// Log-normal sizes clamped to [lo, hi]; median around e^mu.
std::vector<std::uint32_t> lognormal_sizes(std::size_t count, double mu, double sigma, std::uint32_t lo,
                                           std::uint32_t hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> d(mu, sigma);
  std::vector<std::uint32_t> s(count);
  for (auto& x : s) x = std::uint32_t(std::clamp(d(rng), double(lo), double(hi)));
  return s;
}

template <class K>
std::vector<K> random_keys(std::size_t n, std::uint64_t modulo, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> k(n);
  for (auto& x : k) {
    const std::uint64_t r = modulo ? rng() % modulo : rng();
    if constexpr (std::is_floating_point_v<K>) x = K(std::int64_t(r % 2000001) - 1000000) * K(0.25);
    else x = K(r);
  }
  return k;
}

struct point {
  float x;
  std::int32_t y;
};
struct x_desc_y_asc {
  CANOPY_HD bool operator()(const point& a, const point& b) const { return a.x > b.x || (a.x == b.x && a.y < b.y); }
};

class SegmentedSortTest : public BackendTest {
 protected:
  // Sorts on this backend and compares with std::stable_sort per segment, keys untouched outside.
  template <class K, class Comp>
  void check(const std::vector<K>& keys_in, const std::vector<std::uint32_t>& offsets, Comp comp, const char* what) {
    const std::size_t n = keys_in.size();
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    std::vector<K> want_k = keys_in;
    std::vector<std::uint32_t> want_v = values;
    for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
      std::vector<std::uint32_t> perm(values.begin() + offsets[s], values.begin() + offsets[s + 1]);
      std::stable_sort(perm.begin(), perm.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return comp(keys_in[a], keys_in[b]); });
      for (std::size_t i = 0; i < perm.size(); ++i) {
        want_k[offsets[s] + i] = keys_in[perm[i]];
        want_v[offsets[s] + i] = perm[i];
      }
    }
    auto k = upload(keys_in);
    auto v = upload(values);
    auto o = upload(offsets);
    canopy::segmented_sort_pairs(ctx(), k.view(), v.view(), canopy::span<const std::uint32_t>(o.view()), comp);
    const auto got_k = k.to_host();
    EXPECT_TRUE(std::memcmp(got_k.data(), want_k.data(), n * sizeof(K)) == 0) << what << ": pair keys differ";
    EXPECT_EQ(v.to_host(), want_v) << what << ": values differ (not stable?)";

    auto k2 = upload(keys_in);
    canopy::segmented_sort_keys(ctx(), k2.view(), canopy::span<const std::uint32_t>(o.view()), comp,
                                canopy::offsets_check::trusted);
    const auto got_k2 = k2.to_host();
    EXPECT_TRUE(std::memcmp(got_k2.data(), want_k.data(), n * sizeof(K)) == 0) << what << ": keys-only differs";
  }
};

}  // namespace

TEST_P(SegmentedSortTest, EmptyAndTinySegments) {
  check(std::vector<std::uint32_t>{}, {}, canopy::less<std::uint32_t>{}, "no offsets");
  check(std::vector<std::uint32_t>{}, {0}, canopy::less<std::uint32_t>{}, "one offset, no segment");
  check(std::vector<std::uint32_t>{}, {0, 0, 0}, canopy::less<std::uint32_t>{}, "empty segments");
  check(std::vector<std::uint32_t>{5, 4, 3}, {0, 1, 1, 2, 3}, canopy::less<std::uint32_t>{}, "size-1 segments");
  check(std::vector<std::uint32_t>{5, 4, 3, 2, 1}, {0, 2, 2, 5}, canopy::less<std::uint32_t>{}, "mixed");
}

TEST_P(SegmentedSortTest, FixedSizesAroundBinEdges) {
  // Bin edges for 4-8 byte items: 20, 72, 288, 1152, 4352 (see segsort_dispatch.cuh).
  for (std::uint32_t size : {2u, 3u, 16u, 19u, 20u, 21u, 33u, 71u, 72u, 73u, 256u, 288u, 289u, 1151u, 1153u, 4096u,
                             4352u, 4353u, 9000u}) {
    const std::size_t count = std::max<std::size_t>(3, 60000 / size);
    const auto off = offsets_from_sizes(std::vector<std::uint32_t>(count, size));
    check(random_keys<std::uint32_t>(off.back(), 50, size), off, canopy::less<std::uint32_t>{}, "fixed size");
  }
}

TEST_P(SegmentedSortTest, LogNormalMixAllKeyTypes) {
  const auto sizes = lognormal_sizes(3000, 3.5, 1.6, 0, 4096, 7);
  const auto off = offsets_from_sizes(sizes);
  check(random_keys<std::uint32_t>(off.back(), 0, 1), off, canopy::less<std::uint32_t>{}, "u32 lognormal");
  check(random_keys<std::uint32_t>(off.back(), 4, 2), off, canopy::less<std::uint32_t>{}, "u32 lognormal dups");
  check(random_keys<std::int32_t>(off.back(), 0, 3), off, canopy::less<std::int32_t>{}, "i32 lognormal");
  check(random_keys<float>(off.back(), 0, 4), off, canopy::less<float>{}, "f32 lognormal");
  check(random_keys<std::uint64_t>(off.back(), 0, 5), off, canopy::less<std::uint64_t>{}, "u64 lognormal");
  check(random_keys<double>(off.back(), 0, 6), off, canopy::greater<double>{}, "f64 descending lognormal");
}

TEST_P(SegmentedSortTest, OneHugeSegmentAndAllEqual) {
  const std::size_t n = (1u << 17) + 1;
  check(random_keys<std::uint32_t>(n, 0, 11), {0, std::uint32_t(n)}, canopy::less<std::uint32_t>{}, "one huge");
  check(std::vector<std::uint32_t>(n, 7u), {0, 1000, 1000, 50000, std::uint32_t(n)}, canopy::less<std::uint32_t>{},
        "all equal");
  // Huge segments next to tiny ones.
  std::vector<std::uint32_t> sizes = {1, 70000, 3, 0, 20000, 5000, 2};
  const auto off = offsets_from_sizes(sizes);
  check(random_keys<std::uint32_t>(off.back(), 1000, 12), off, canopy::less<std::uint32_t>{}, "huge and tiny");
}

TEST_P(SegmentedSortTest, KeysOutsideSegmentsUntouched) {
  // Segments cover [100, 100 + sum); the first 100 and the last 77 keys are outside.
  const auto sizes = lognormal_sizes(200, 3.0, 1.0, 0, 500, 13);
  const auto off = offsets_from_sizes(sizes, 100);
  check(random_keys<std::uint32_t>(off.back() + 77, 0, 14), off, canopy::less<std::uint32_t>{}, "outside");
}

TEST_P(SegmentedSortTest, StructKeyWithUserComparator) {
  const auto sizes = lognormal_sizes(500, 3.0, 1.5, 0, 6000, 21);
  const auto off = offsets_from_sizes(sizes);
  std::mt19937 rng(3);
  std::vector<point> pts(off.back());
  for (auto& p : pts) p = point{float(rng() % 9) * 0.5f, std::int32_t(rng() % 4)};
  check(pts, off, x_desc_y_asc{}, "point");
}

TEST_P(SegmentedSortTest, FloatSignedZerosAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {-0.0f, 0.0f, inf, -inf, 2.0f, -2.0f};
  const auto sizes = lognormal_sizes(400, 3.0, 1.5, 0, 5000, 31);
  const auto off = offsets_from_sizes(sizes);
  std::mt19937 rng(4);
  std::vector<float> k(off.back());
  for (auto& x : k) x = specials[rng() % 6];
  check(k, off, canopy::less<float>{}, "float specials");  // bitwise: -0/+0 keep input order
}

TEST_P(SegmentedSortTest, RefusesBadArguments) {
  auto k = upload(std::vector<std::uint32_t>(10, 1u));
  auto v = upload(std::vector<std::uint32_t>(9, 1u));
  auto good = upload(std::vector<std::uint32_t>{0, 5, 10});
  auto decreasing = upload(std::vector<std::uint32_t>{0, 6, 5, 10});
  auto past_end = upload(std::vector<std::uint32_t>{0, 5, 11});
  const canopy::less<std::uint32_t> lt{};
  using offs = canopy::span<const std::uint32_t>;
  expect_error<canopy::invalid_argument>(
      [&] { canopy::segmented_sort_pairs(ctx(), k.view(), v.view(), offs(good.view()), lt); },
      {"canopy::segmented_sort_pairs", "'values'", "differs"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::segmented_sort_keys(ctx(), k.view(), offs(decreasing.view()), lt); },
      {"canopy::segmented_sort_keys", "'offsets'", "offsets[2]", "decrease"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::segmented_sort_keys(ctx(), k.view(), offs(past_end.view()), lt); },
      {"canopy::segmented_sort_keys", "'offsets'", "11", "past the end"});
  // The refused calls did not touch the keys.
  EXPECT_EQ(k.to_host(), std::vector<std::uint32_t>(10, 1u));
  expect_error<canopy::invalid_argument>(
      [&] { canopy::segmented_sort_keys(ctx(), canopy::span<std::uint32_t>(nullptr, 3, ctx().space()), offs(good.view()), lt); },
      {"canopy::segmented_sort_keys", "'keys'", "null"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::segmented_sort_keys(ctx(), k.view(), offs(nullptr, 3, ctx().space()), lt); },
      {"canopy::segmented_sort_keys", "'offsets'", "null"});
  std::vector<std::uint32_t> host_offsets = {0, 10};
  std::uint32_t fake = 0;
  const offs wrong = is_cuda() ? offs(canopy::host_span(host_offsets.data(), 2)) : offs(canopy::device_span(&fake, 1));
  expect_error<canopy::invalid_argument>([&] { canopy::segmented_sort_keys(ctx(), k.view(), wrong, lt); },
                                         {"canopy::segmented_sort_keys", "'offsets'", "memory"});
  // Trusted bad offsets stay inside the array: no crash, keys still a multiset of the input.
  auto k3 = upload(std::vector<std::uint32_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  auto wild = upload(std::vector<std::uint32_t>{0, 4000000000u, 3, 12});
  canopy::segmented_sort_keys(ctx(), k3.view(), offs(wild.view()), lt, canopy::offsets_check::trusted);
  auto out = k3.to_host();
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

CANOPY_INSTANTIATE_BACKENDS(SegmentedSortTest);

// GPU only: big inputs of many small segments, the CUDA result against the host backend's.
class CudaSegmentedSortLarge : public BackendTest {};

TEST_P(CudaSegmentedSortLarge, MatchesHostBackend) {
  canopy::context& host = canopy_test::host_context();
  struct shape {
    const char* name;
    std::vector<std::uint32_t> sizes;
  };
  const shape shapes[] = {
      {"16", std::vector<std::uint32_t>((1u << 24) / 16, 16)},
      {"256", std::vector<std::uint32_t>((1u << 24) / 256, 256)},
      {"4096", std::vector<std::uint32_t>((1u << 24) / 4096, 4096)},
      {"lognormal", lognormal_sizes(40000, 4.5, 1.5, 1, 4096, 77)},
      {"large", {1u << 22, 100000, 5, 1u << 21}},
  };
  for (const auto& sh : shapes) {
    const auto off = offsets_from_sizes(sh.sizes);
    const auto keys = random_keys<std::uint32_t>(off.back(), 100000, 5);
    std::vector<std::uint32_t> values(keys.size());
    std::iota(values.begin(), values.end(), 0u);
    auto gk = upload(keys);
    auto gv = upload(values);
    auto go = upload(off);
    canopy::segmented_sort_pairs(ctx(), gk.view(), gv.view(), canopy::span<const std::uint32_t>(go.view()),
                                 canopy::less<std::uint32_t>{});
    std::vector<std::uint32_t> hk = keys, hv = values;
    canopy::segmented_sort_pairs(host, canopy::host_span(hk.data(), hk.size()), canopy::host_span(hv.data(), hv.size()),
                                 canopy::span<const std::uint32_t>(canopy::host_span(off.data(), off.size())),
                                 canopy::less<std::uint32_t>{});
    EXPECT_EQ(gk.to_host(), hk) << sh.name;
    EXPECT_EQ(gv.to_host(), hv) << sh.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaSegmentedSortLarge, ::testing::Values(canopy::backend::cuda),
                         [](const auto&) { return std::string("cuda"); });
