// Split: one digit pass of every key type against std::stable_sort by digit; pairs keep order;
// index variants (gather and scatter) for 32/48/64-bit keys against std::stable_sort of positions;
// split by explicit category for records of 4 to 256 bytes; bad arguments.
#include "common/backends.hpp"

#include <canopy/core/split.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

template <class Key>
std::vector<Key> random_keys(std::size_t n, std::uint64_t seed, bool low_entropy = false) {
  using bits = typename canopy::key_traits<Key>::bits_type;
  std::mt19937_64 rng(seed);
  std::vector<bits> raw(n);
  for (auto& r : raw) r = low_entropy ? bits(rng() & rng() & rng()) : bits(rng());
  std::vector<Key> keys(n);
  std::memcpy(keys.data(), raw.data(), n * sizeof(Key));
  return keys;
}

// Independent digit of the ordered form: integers by offsetting signed values, floats by class.
template <class Key>
std::uint64_t ordered_reference(Key k) {
  if constexpr (std::is_same_v<Key, std::int32_t>) return std::uint64_t(std::int64_t(k) + (std::int64_t(1) << 31));
  else if constexpr (std::is_same_v<Key, std::int64_t>) return std::uint64_t(k) + (std::uint64_t(1) << 63);
  else if constexpr (std::is_floating_point_v<Key>) {
    using bits = typename canopy::key_traits<Key>::bits_type;
    bits b;
    std::memcpy(&b, &k, sizeof b);
    const bits sign = bits(1) << (sizeof(bits) * 8 - 1);
    // Magnitude bits grow away from zero; negatives must come out in reverse.
    return std::signbit(k) ? std::uint64_t(bits(sign - 1 - (b & (sign - 1)))) : std::uint64_t(b | sign);
  } else
    return std::uint64_t(k);
}

template <class Key>
std::vector<std::uint32_t> reference_order(const std::vector<Key>& keys, int begin_bit, int end_bit) {
  const std::uint64_t mask = end_bit - begin_bit >= 64 ? ~0ull : ((1ull << (end_bit - begin_bit)) - 1);
  std::vector<std::uint32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return ((ordered_reference(keys[a]) >> begin_bit) & mask) < ((ordered_reference(keys[b]) >> begin_bit) & mask);
  });
  return order;
}

template <class Key>
void check_split(canopy::context& ctx, std::size_t n, int offset, int bits, std::uint64_t seed) {
  const auto keys = random_keys<Key>(n, seed, seed % 2 == 0);
  std::vector<std::uint64_t> values(n);
  std::iota(values.begin(), values.end(), std::uint64_t(1) << 40);
  canopy::buffer<Key> in(ctx, n), out(ctx, n), out2(ctx, n);
  canopy::buffer<std::uint64_t> vin(ctx, n), vout(ctx, n);
  in.assign(keys);
  vin.assign(values);
  canopy::split_keys<Key>(ctx, in.view(), out.view(), offset, bits);
  canopy::split_pairs<Key, std::uint64_t>(ctx, in.view(), out2.view(), vin.view(), vout.view(), offset, bits);
  const auto order = reference_order(keys, offset, offset + bits);
  const auto got = out.to_host(), got2 = out2.to_host();
  const auto gotv = vout.to_host();
  EXPECT_TRUE(in.to_host() == keys ||
              std::equal(keys.begin(), keys.end(), in.to_host().begin(),
                         [](Key a, Key b) { return std::memcmp(&a, &b, sizeof a) == 0; }))
      << "input modified";
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &keys[order[i]], sizeof(Key)), 0) << "split_keys n=" << n << " digit [" << offset
                                                                      << "," << offset + bits << ") i=" << i;
    ASSERT_EQ(std::memcmp(&got2[i], &keys[order[i]], sizeof(Key)), 0) << "split_pairs keys i=" << i;
    ASSERT_EQ(gotv[i], values[order[i]]) << "split_pairs values i=" << i;
  }
}

template <class Key>
void check_index(canopy::context& ctx, std::size_t n, int begin_bit, int end_bit, std::uint64_t seed) {
  auto keys = random_keys<Key>(n, seed, seed % 3 == 0);
  if constexpr (std::is_floating_point_v<Key>)
    for (auto& k : keys)
      if (std::isnan(k)) k = Key(seed % 7);  // NaN order is the radix sort test's business
  canopy::buffer<Key> dk(ctx, n);
  canopy::buffer<std::uint32_t> gather(ctx, n), scatter(ctx, n);
  dk.assign(keys);
  canopy::sort_gather_index<Key>(ctx, dk.view(), gather.view(), begin_bit, end_bit);
  canopy::sort_scatter_index<Key>(ctx, dk.view(), scatter.view(), begin_bit, end_bit);
  const auto order = reference_order(keys, begin_bit, end_bit);
  const auto g = gather.to_host(), s = scatter.to_host();
  ASSERT_EQ(g, order) << "gather index, n=" << n << " bits [" << begin_bit << "," << end_bit << ")";
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(s[order[i]], i) << "scatter index is not the inverse at " << i;
}

}  // namespace

class SplitTest : public BackendTest {};

TEST_P(SplitTest, EveryDigitWidthAndOffsetOfU32) {
  std::uint64_t seed = 1;
  for (std::size_t n : {0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 6145, 65537})
    for (auto [offset, bits] : {std::pair{0, 8}, {0, 1}, {3, 5}, {24, 8}, {31, 1}, {9, 7}, {20, 4}})
      check_split<std::uint32_t>(ctx(), n, offset, bits, seed++);
}

TEST_P(SplitTest, EveryKeyType) {
  std::uint64_t seed = 50;
  for (std::size_t n : {33, 4097, 20000}) {
    check_split<std::int32_t>(ctx(), n, 24, 8, seed++);
    check_split<float>(ctx(), n, 24, 8, seed++);
    check_split<float>(ctx(), n, 0, 6, seed++);
    check_split<std::uint64_t>(ctx(), n, 56, 8, seed++);
    check_split<std::uint64_t>(ctx(), n, 40, 3, seed++);
    check_split<std::int64_t>(ctx(), n, 58, 6, seed++);
    check_split<double>(ctx(), n, 56, 8, seed++);
    check_split<double>(ctx(), n, 12, 8, seed++);
  }
}

TEST_P(SplitTest, IndexVariantsFor32And48And64BitKeys) {
  std::uint64_t seed = 200;
  for (std::size_t n : {0, 1, 2, 31, 33, 1025, 6144, 65535, 100001}) {
    check_index<std::uint32_t>(ctx(), n, 0, 32, seed++);
    check_index<std::uint32_t>(ctx(), n, 5, 21, seed++);
    check_index<std::uint64_t>(ctx(), n, 0, 48, seed++);
    check_index<std::uint64_t>(ctx(), n, 0, 63, seed++);
    check_index<std::uint64_t>(ctx(), n, 0, 64, seed++);
    check_index<std::uint64_t>(ctx(), n, 16, 40, seed++);  // 3 passes: the key ping-pong
    check_index<std::int64_t>(ctx(), n, 0, 64, seed++);
    check_index<float>(ctx(), n, 0, 32, seed++);
    check_index<double>(ctx(), n, 0, 64, seed++);
    check_index<std::uint32_t>(ctx(), n, 7, 7, seed++);  // empty range: identity
  }
}

template <std::size_t Bytes>
struct record {
  std::array<std::uint32_t, Bytes / 4> w;
};

template <std::size_t Bytes>
void check_category_split(canopy::context& ctx, std::size_t n, int num_bins, std::uint64_t seed) {
  using R = record<Bytes>;
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> cats(n);
  for (auto& c : cats) c = std::uint8_t(rng() % num_bins);
  std::vector<R> recs(n);
  for (std::size_t i = 0; i < n; ++i)
    for (auto& w : recs[i].w) w = std::uint32_t(rng());
  canopy::buffer<std::uint8_t> dc(ctx, n);
  canopy::buffer<R> in(ctx, n), out(ctx, n);
  dc.assign(cats);
  in.assign(recs);
  canopy::split<R>(ctx, dc.view(), in.view(), out.view(), num_bins);
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return cats[a] < cats[b]; });
  const auto got = out.to_host();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&got[i], &recs[order[i]], Bytes), 0)
        << Bytes << "-byte records, n=" << n << ", bins=" << num_bins << ", i=" << i;
}

TEST_P(SplitTest, RecordsByCategory) {
  std::uint64_t seed = 400;
  for (std::size_t n : {0, 1, 33, 1025, 30001})
    for (int bins : {1, 2, 7, 256}) {
      check_category_split<4>(ctx(), n, bins, seed++);
      check_category_split<8>(ctx(), n, bins, seed++);
      check_category_split<12>(ctx(), n, bins, seed++);
      check_category_split<64>(ctx(), n, bins, seed++);
      check_category_split<256>(ctx(), n, bins, seed++);
    }
}

TEST_P(SplitTest, CategoriesAboveNumBinsArePlacedByValue) {
  const std::vector<std::uint8_t> cats = {9, 0, 3, 9, 1, 200, 0};
  const std::vector<std::uint32_t> recs = {0, 1, 2, 3, 4, 5, 6};
  canopy::buffer<std::uint8_t> dc(ctx(), cats.size());
  canopy::buffer<std::uint32_t> in(ctx(), recs.size()), out(ctx(), recs.size());
  dc.assign(cats);
  in.assign(recs);
  canopy::split<std::uint32_t>(ctx(), dc.view(), in.view(), out.view(), 4);
  EXPECT_EQ(out.to_host(), (std::vector<std::uint32_t>{1, 6, 4, 2, 0, 3, 5}));
}

TEST_P(SplitTest, RefusesBadArguments) {
  canopy::buffer<std::uint32_t> a(ctx(), 8), b(ctx(), 8), c(ctx(), 7);
  canopy::buffer<std::uint64_t> a64(ctx(), 8), b64(ctx(), 8);
  canopy::buffer<std::uint32_t> idx(ctx(), 8), idx7(ctx(), 7);
  canopy::buffer<std::uint8_t> cats(ctx(), 8);
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint32_t>(ctx(), a.view(), b.view(), 0, 9); },
                                         {"canopy::split_keys", "num_bits", "256"});
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint32_t>(ctx(), a.view(), b.view(), 0, 0); },
                                         {"canopy::split_keys", "num_bits"});
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint32_t>(ctx(), a.view(), b.view(), 28, 8); },
                                         {"canopy::split_keys", "bit_offset"});
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint64_t>(ctx(), a64.view(), b64.view(), -1, 8); },
                                         {"bit_offset"});
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint32_t>(ctx(), a.view(), c.view(), 0, 8); },
                                         {"canopy::split_keys", "keys_out", "length"});
  expect_error<canopy::invalid_argument>([&] { canopy::split_keys<std::uint32_t>(ctx(), a.view(), a.view(), 0, 8); },
                                         {"keys_out", "overlaps"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::split_pairs<std::uint32_t, std::uint32_t>(ctx(), a.view(), b.view(), c.view(), idx.view(), 0, 8); },
      {"canopy::split_pairs", "values_in"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_gather_index<std::uint64_t>(ctx(), a64.view(), idx7.view(), 0, 48); },
      {"canopy::sort_gather_index", "gather_index"});
  // An index written over its own keys would corrupt the digits of later passes (gather) or the
  // caller's read-only keys (scatter). A 32-bit index over 32-bit keys is the easy mistake.
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_gather_index<std::uint32_t>(ctx(), a.view(), a.view(), 0, 32); },
      {"canopy::sort_gather_index", "argument 'gather_index': overlaps keys"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_gather_index<std::uint32_t>(ctx(), a.view().first(4), a.view().subspan(3, 4), 0, 8); },
      {"canopy::sort_gather_index", "argument 'gather_index': overlaps keys"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_scatter_index<std::uint32_t>(ctx(), a.view(), a.view(), 0, 32); },
      {"canopy::sort_scatter_index", "argument 'scatter_index': overlaps keys"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_scatter_index<std::uint64_t>(ctx(), a64.view(), idx.view(), 0, 65); },
      {"canopy::sort_scatter_index", "end_bit"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::sort_gather_index<std::uint32_t>(ctx(), canopy::span<const std::uint32_t>(nullptr, 3, ctx().space()), idx.view().first(3), 0, 32); },
      {"canopy::sort_gather_index", "keys", "null"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::split<std::uint32_t>(ctx(), cats.view(), a.view(), b.view(), 257); }, {"canopy::split", "num_bins"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::split<std::uint32_t>(ctx(), cats.view(), a.view(), b.view(), 0); }, {"canopy::split", "num_bins"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::split<std::uint32_t>(ctx(), cats.view().first(7), a.view(), b.view(), 4); },
      {"canopy::split", "categories", "length"});
  const canopy::memory_space other =
      ctx().space() == canopy::memory_space::host ? canopy::memory_space::device : canopy::memory_space::host;
  std::vector<std::uint32_t> wrong(8);
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::split_keys<std::uint32_t>(ctx(), a.view(), canopy::span<std::uint32_t>(wrong.data(), 8, other), 0, 8);
      },
      {"canopy::split_keys", "keys_out", "memory"});
}

CANOPY_INSTANTIATE_BACKENDS(SplitTest);

// GPU only: large index variants against the host backend.
TEST(CudaSplitLarge, GatherIndexOf48BitKeysMatchesHostAt2To24) {
  std::string why;
  if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  canopy::context ctx(canopy::backend_request::cuda);
  const std::size_t n = (std::size_t(1) << 24) + 1;
  const auto keys = random_keys<std::uint64_t>(n, 77, true);
  canopy::buffer<std::uint64_t> dk(ctx, n);
  canopy::buffer<std::uint32_t> gi(ctx, n);
  dk.assign(keys);
  canopy::sort_gather_index<std::uint64_t>(ctx, dk.view(), gi.view(), 0, 48);
  std::vector<std::uint32_t> host_index(n);
  canopy::sort_gather_index<std::uint64_t>(canopy_test::host_context(), canopy::host_span(keys.data(), n),
                                           canopy::host_span(host_index.data(), n), 0, 48);
  EXPECT_TRUE(gi.to_host() == host_index);
}
