// merge_sort_keys / merge_sort_pairs on both backends against std::stable_sort, stability checked
// by carrying each key's original index as its value.
#include "common/backends.hpp"

#include <canopy/core/merge_sort.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

enum class dist { uniform, few_distinct, sorted, reversed, all_equal, organ_pipe };
const dist all_dists[] = {dist::uniform, dist::few_distinct, dist::sorted, dist::reversed, dist::all_equal,
                          dist::organ_pipe};

template <class T>
std::vector<T> make_keys(std::size_t n, dist d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> k(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = rng();
    switch (d) {
      case dist::uniform: break;
      case dist::few_distinct: r %= 7; break;
      case dist::sorted: r = i / 3; break;
      case dist::reversed: r = (n - i) / 2; break;
      case dist::all_equal: r = 42; break;
      case dist::organ_pipe: r = i < n / 2 ? i : n - i; break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      k[i] = d == dist::uniform ? T(std::int64_t(r >> 11) - (std::int64_t(1) << 52)) * T(1e-10) : T(r) - T(3);
    } else {
      k[i] = d == dist::uniform ? T(r) : T(r);
    }
  }
  return k;
}

// The expected result: std::stable_sort of (key, original index) by key.
template <class K, class Comp>
void reference_sort(std::vector<K>& keys, std::vector<std::uint32_t>& values, Comp comp) {
  std::vector<std::uint32_t> perm(keys.size());
  std::iota(perm.begin(), perm.end(), 0u);
  std::stable_sort(perm.begin(), perm.end(), [&](std::uint32_t a, std::uint32_t b) { return comp(keys[a], keys[b]); });
  std::vector<K> k(keys.size());
  std::vector<std::uint32_t> v(keys.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    k[i] = keys[perm[i]];
    v[i] = values[perm[i]];
  }
  keys.swap(k);
  values.swap(v);
}

template <class K>
bool same_bits(const std::vector<K>& a, const std::vector<K>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(K)) == 0);
}

struct point {
  float x;
  std::int32_t y;
};
// x descending, then y ascending.
struct x_desc_y_asc {
  CANOPY_HD bool operator()(const point& a, const point& b) const { return a.x > b.x || (a.x == b.x && a.y < b.y); }
};
// Only the low byte matters: many equivalent keys of different bits, so stability is visible.
struct low_byte_less {
  CANOPY_HD bool operator()(std::uint32_t a, std::uint32_t b) const { return (a & 0xffu) < (b & 0xffu); }
};

// Besides 2^k +- 1: around the CUDA tiles of u32 keys (merge tile 256 x 23 = 5888, sorted tile
// 512 x 23 = 11776, so 11777 and 23553 add a merge pass each) and of u32 pairs (256 x 11 = 2816).
const std::size_t sizes[] = {0,    1,    2,    3,     31,    32,    33,    255,   1023,  1024,  1025,
                             2815, 2816, 2817, 3839,  3840,  3841,  5633,  5887,  5888,  5889,  7681,
                             11775, 11776, 11777, 23552, 23553, 47105, 65535, 65537, (1u << 18) + 1};

class MergeSortTest : public BackendTest {
 protected:
  template <class K, class Comp>
  void check_pairs(const std::vector<K>& keys_in, Comp comp, const char* what) {
    std::vector<std::uint32_t> values(keys_in.size());
    std::iota(values.begin(), values.end(), 0u);
    std::vector<K> want_k = keys_in;
    std::vector<std::uint32_t> want_v = values;
    reference_sort(want_k, want_v, comp);

    auto k = upload(keys_in);
    auto v = upload(values);
    canopy::merge_sort_pairs(ctx(), k.view(), v.view(), comp);
    EXPECT_TRUE(same_bits(k.to_host(), want_k)) << what << " n=" << keys_in.size() << ": pair keys differ";
    EXPECT_EQ(v.to_host(), want_v) << what << " n=" << keys_in.size() << ": values differ (not stable?)";

    auto k2 = upload(keys_in);
    canopy::merge_sort_keys(ctx(), k2.view(), comp);
    EXPECT_TRUE(same_bits(k2.to_host(), want_k)) << what << " n=" << keys_in.size() << ": keys-only result differs";
  }
};

}  // namespace

TEST_P(MergeSortTest, U32AllSizesAndDistributions) {
  for (std::size_t n : sizes)
    for (dist d : all_dists) check_pairs(make_keys<std::uint32_t>(n, d, n * 7 + int(d)), canopy::less<std::uint32_t>{}, "u32");
}

TEST_P(MergeSortTest, OtherKeyTypes) {
  for (std::size_t n : {std::size_t(0), std::size_t(2), std::size_t(33), std::size_t(1025), std::size_t(3841),
                        std::size_t(40001)}) {
    for (dist d : {dist::uniform, dist::few_distinct, dist::reversed}) {
      check_pairs(make_keys<std::int32_t>(n, d, n + 1), canopy::less<std::int32_t>{}, "i32");
      check_pairs(make_keys<std::uint64_t>(n, d, n + 2), canopy::less<std::uint64_t>{}, "u64");
      check_pairs(make_keys<float>(n, d, n + 3), canopy::less<float>{}, "f32");
      check_pairs(make_keys<double>(n, d, n + 4), canopy::greater<double>{}, "f64 descending");
    }
  }
}

TEST_P(MergeSortTest, StabilityUnderCoarseComparator) {
  for (std::size_t n : {std::size_t(300), std::size_t(5000), std::size_t(100003)})
    check_pairs(make_keys<std::uint32_t>(n, dist::uniform, n), low_byte_less{}, "low byte");
}

// Descending order and heavy ties at sizes on either side of the tile and merge-pass boundaries:
// the split searches (binary in shared memory, several probes per step in global memory) meet
// long runs of equivalent keys there, and ties must still go to the left run.
TEST_P(MergeSortTest, DescendingAndTiesAtTileBoundaries) {
  for (std::size_t n : {std::size_t(5889), std::size_t(11777), std::size_t(23553), std::size_t(35329),
                        std::size_t(47105), std::size_t(94209)}) {
    check_pairs(make_keys<std::uint32_t>(n, dist::uniform, n + 11), canopy::greater<std::uint32_t>{}, "u32 descending");
    check_pairs(make_keys<std::uint32_t>(n, dist::few_distinct, n + 12), canopy::greater<std::uint32_t>{},
                "u32 descending, 7 values");
    check_pairs(make_keys<std::uint32_t>(n, dist::uniform, n + 13), low_byte_less{}, "low byte");
    check_pairs(make_keys<std::uint32_t>(n, dist::organ_pipe, n + 14), low_byte_less{}, "low byte, organ pipe");
  }
}

TEST_P(MergeSortTest, StructKeyWithUserComparator) {
  for (std::size_t n : {std::size_t(1), std::size_t(17), std::size_t(2049), std::size_t(77777)}) {
    std::mt19937 rng{unsigned(n)};
    std::vector<point> pts(n);
    for (auto& p : pts) p = point{float(rng() % 13) * 0.5f, std::int32_t(rng() % 5) - 2};
    check_pairs(pts, x_desc_y_asc{}, "point");
  }
}

TEST_P(MergeSortTest, FloatSignedZerosAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {-0.0f, 0.0f, inf, -inf, 1.0f, -1.0f, std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::max()};
  for (std::size_t n : {std::size_t(8), std::size_t(4000), std::size_t(20000)}) {
    std::mt19937 rng{unsigned(n)};
    std::vector<float> k(n);
    for (auto& x : k) x = specials[rng() % 8];
    // -0.0 and +0.0 are equivalent under <: their relative order must be the input order, which
    // check_pairs verifies bit for bit.
    check_pairs(k, canopy::less<float>{}, "float specials");
    auto b = upload(k);
    canopy::merge_sort_keys(ctx(), b.view(), canopy::less<float>{});
    const auto out = b.to_host();
    EXPECT_EQ(out.front(), -inf);
    EXPECT_EQ(out.back(), inf);
  }
}

TEST_P(MergeSortTest, NanKeysStayInBounds) {
  // NaN breaks strict weak ordering (documented as the caller's error); the sort must still
  // terminate and write only values taken from its input.
  std::vector<float> k(20000);
  std::mt19937 rng(5);
  for (auto& x : k) x = (rng() % 4 == 0) ? std::numeric_limits<float>::quiet_NaN() : float(rng() % 100);
  auto b = upload(k);
  canopy::merge_sort_keys(ctx(), b.view(), canopy::less<float>{});
  const auto out = b.to_host();
  std::vector<std::uint32_t> in_bits(k.size());
  std::memcpy(in_bits.data(), k.data(), k.size() * 4);
  std::sort(in_bits.begin(), in_bits.end());
  std::size_t foreign = 0;
  for (float x : out) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    foreign += !std::binary_search(in_bits.begin(), in_bits.end(), u);
  }
  EXPECT_EQ(foreign, 0u);
}

TEST_P(MergeSortTest, LargeHostSizedInput) {
  const std::size_t n = (std::size_t(1) << 22) - 1;
  check_pairs(make_keys<std::uint32_t>(n, dist::uniform, 99), canopy::less<std::uint32_t>{}, "u32 4M");
}

TEST_P(MergeSortTest, RefusesBadArguments) {
  auto k = upload(std::vector<std::uint32_t>(10, 1u));
  auto v = upload(std::vector<std::uint32_t>(9, 1u));
  expect_error<canopy::invalid_argument>(
      [&] { canopy::merge_sort_pairs(ctx(), k.view(), v.view(), canopy::less<std::uint32_t>{}); },
      {"canopy::merge_sort_pairs", "'values'", "differs"});
  canopy::span<std::uint32_t> null_span(nullptr, 5, ctx().space());
  expect_error<canopy::invalid_argument>(
      [&] { canopy::merge_sort_keys(ctx(), null_span, canopy::less<std::uint32_t>{}); },
      {"canopy::merge_sort_keys", "'keys'", "null"});
  std::vector<std::uint32_t> host_keys(4, 0u);
  std::uint32_t fake = 0;
  canopy::span<std::uint32_t> wrong =
      is_cuda() ? canopy::host_span(host_keys.data(), host_keys.size()) : canopy::device_span(&fake, 1);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::merge_sort_keys(ctx(), wrong, canopy::less<std::uint32_t>{}); },
      {"canopy::merge_sort_keys", "'keys'", "memory"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::merge_sort_pairs(ctx(), k.view().first(9), wrong, canopy::less<std::uint32_t>{}); },
      {"canopy::merge_sort_pairs", "'values'"});
  // n == 0 with null pointers works.
  canopy::merge_sort_keys(ctx(), canopy::span<std::uint32_t>(nullptr, 0, ctx().space()), canopy::less<std::uint32_t>{});
}

CANOPY_INSTANTIATE_BACKENDS(MergeSortTest);

// GPU only: sizes too big for CI's CPU budget, checked against the host backend's result.
class CudaMergeSortLarge : public BackendTest {};

TEST_P(CudaMergeSortLarge, Pow2Plus1And2Pow26) {
  for (std::size_t n : {(std::size_t(1) << 24) + 1, std::size_t(1) << 26}) {
    auto keys = make_keys<std::uint32_t>(n, dist::uniform, n);
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    auto k = upload(keys);
    auto v = upload(values);
    canopy::merge_sort_pairs(ctx(), k.view(), v.view(), canopy::less<std::uint32_t>{});
    // A stable sort with values = input index is exactly: values form a permutation, keys[i] is
    // the input key at values[i], keys ascend, and equal keys have ascending values.
    const auto out_k = k.to_host();
    const auto out_v = v.to_host();
    std::vector<char> seen(n, 0);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t src = out_v[i];
      if (src >= n || seen[src] || keys[src] != out_k[i]) ++bad;
      else seen[src] = 1;
      if (i > 0 && (out_k[i] < out_k[i - 1] || (out_k[i] == out_k[i - 1] && out_v[i] < out_v[i - 1]))) ++bad;
    }
    EXPECT_EQ(bad, 0u) << n;
    auto few = make_keys<std::uint32_t>(n, dist::few_distinct, n);
    auto k2 = upload(few);
    canopy::merge_sort_keys(ctx(), k2.view(), canopy::less<std::uint32_t>{});
    std::stable_sort(few.begin(), few.end());
    EXPECT_EQ(k2.to_host(), few) << n;
  }
}

// Many merge passes over keys with only 256 classes (ties everywhere, so every split search ends in
// a long run of equivalent keys): pairs and keys against std::stable_sort.
TEST_P(CudaMergeSortLarge, StableUnderCoarseComparatorManyPasses) {
  const std::size_t n = (std::size_t(1) << 22) + 3;
  auto keys = make_keys<std::uint32_t>(n, dist::uniform, 4242);
  std::vector<std::uint32_t> values(n);
  std::iota(values.begin(), values.end(), 0u);
  std::vector<std::uint32_t> want_k = keys, want_v = values;
  reference_sort(want_k, want_v, low_byte_less{});
  auto k = upload(keys);
  auto v = upload(values);
  canopy::merge_sort_pairs(ctx(), k.view(), v.view(), low_byte_less{});
  EXPECT_EQ(k.to_host(), want_k);
  EXPECT_EQ(v.to_host(), want_v);
  auto k2 = upload(keys);
  canopy::merge_sort_keys(ctx(), k2.view(), low_byte_less{});
  EXPECT_EQ(k2.to_host(), want_k);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaMergeSortLarge, ::testing::Values(canopy::backend::cuda),
                         [](const auto&) { return std::string("cuda"); });

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// Every tile-sort code path that merge_shape offers (merge_tile_code bits: full-tile path, per-warp
// load/store, named barriers per pair of runs, clamped serial merge; register bounds) must give the
// stable sort, not only the default's: u32 keys under a coarse comparator (equivalent keys of
// different bits) keys-only with the 512 x 23 tile sort, and u32/u32 pairs (values = input index)
// with the 256 x 11 one, against std::stable_sort. Sizes: one full tile and a partial one (the
// general path), and whole multiples of the tile, through one to four merge passes.
class CudaMergeSortTileCodes : public BackendTest {
 protected:
  template <class Shape>
  void check_keys(std::size_t n, const char* what) {
    auto keys = make_keys<std::uint32_t>(n, dist::uniform, n + 21);
    std::vector<std::uint32_t> want_k = keys, want_v(n);
    std::iota(want_v.begin(), want_v.end(), 0u);
    reference_sort(want_k, want_v, low_byte_less{});
    auto k = upload(keys);
    canopy::detail::merge_sort_cuda<std::uint32_t, canopy::detail::merge_no_value, false, Shape>(
        ctx(), k.data(), nullptr, n, low_byte_less{});
    EXPECT_TRUE(same_bits(k.to_host(), want_k)) << what << " n=" << n << ": keys differ (not stable?)";
  }
  template <class Shape>
  void check_pairs_shape(std::size_t n, const char* what) {
    auto keys = make_keys<std::uint32_t>(n, dist::few_distinct, n + 22);
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    std::vector<std::uint32_t> want_k = keys, want_v = values;
    reference_sort(want_k, want_v, canopy::greater<std::uint32_t>{});
    auto k = upload(keys);
    auto v = upload(values);
    canopy::detail::merge_sort_cuda<std::uint32_t, std::uint32_t, true, Shape>(ctx(), k.data(), v.data(), n,
                                                                               canopy::greater<std::uint32_t>{});
    EXPECT_EQ(k.to_host(), want_k) << what << " n=" << n << ": pair keys differ";
    EXPECT_EQ(v.to_host(), want_v) << what << " n=" << n << ": values differ (not stable?)";
  }
  void check_all(std::initializer_list<std::size_t> sizes) {
    using canopy::detail::merge_shape;
    constexpr int F = canopy::detail::tile_code_full, W = canopy::detail::tile_code_warp_io,
                  G = canopy::detail::tile_code_group_barriers, M = canopy::detail::tile_code_clamped_merge;
    for (std::size_t n : sizes) {
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G, 3>>(n, "keys F|W|G mb3");
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G | M, 3>>(n, "keys F|W|G|M mb3");
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | M, 3>>(n, "keys F|W|M mb3");
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W, 3>>(n, "keys F|W mb3");
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | G, 0>>(n, "keys F|G");
      check_keys<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G | M, 0>>(n, "keys F|W|G|M");
      check_pairs_shape<merge_shape<256, 256, 11, 2, true, 1, 27, 8, F | W | G, 0>>(n, "pairs F|W|G");
      check_pairs_shape<merge_shape<256, 256, 11, 2, true, 1, 27, 8, F | W | G | M, 0>>(n, "pairs F|W|G|M");
      check_pairs_shape<merge_shape<256, 256, 11, 2, true, 1, 27, 8, F | M, 0>>(n, "pairs F|M");
    }
  }
};

TEST_P(CudaMergeSortTileCodes, SmallTiles) { check_all({11777}); }

TEST_P(CudaMergeSortTileCodes, BoundarySizes) { check_all({2817, 5888, 11776, 23552, 23553, 47104, 47105, 100003}); }

INSTANTIATE_TEST_SUITE_P(Cuda, CudaMergeSortTileCodes, ::testing::Values(canopy::backend::cuda),
                         [](const auto&) { return std::string("cuda"); });
#endif
