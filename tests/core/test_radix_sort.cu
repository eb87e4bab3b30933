// Radix sort: keys and pairs of every key type against std::stable_sort with natural comparators,
// stability (values record original positions), float specials, bit windows, 48/63-bit keys,
// double buffering, bad arguments, the CUDA backend against the host backend at 2^28, the device
// class that picks the CUDA tile shapes, and every device class's shapes on whichever GPU runs.
#include "common/backends.hpp"

#include <canopy/core/detail/radix_engine.cuh>
#include <canopy/core/detail/radix_hybrid.cuh>
#include <canopy/core/radix_sort.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

enum class dist { uniform, all_equal, sorted, reverse, two_values, few_unique, low_entropy };
const dist all_dists[] = {dist::uniform,    dist::all_equal,  dist::sorted,     dist::reverse,
                          dist::two_values, dist::few_unique, dist::low_entropy};
const char* name(dist d) {
  switch (d) {
    case dist::uniform: return "uniform";
    case dist::all_equal: return "all_equal";
    case dist::sorted: return "sorted";
    case dist::reverse: return "reverse";
    case dist::two_values: return "two_values";
    case dist::few_unique: return "few_unique";
    default: return "low_entropy";
  }
}

// Raw random words of the key's width, shaped by the distribution, then reinterpreted as Key.
template <class Key>
std::vector<Key> make_keys(std::size_t n, dist d, std::uint64_t seed) {
  using bits = typename canopy::key_traits<Key>::bits_type;
  std::mt19937_64 rng(seed);
  auto word = [&] { return bits(rng()); };
  std::vector<bits> raw(n);
  const bits a = word(), b = word();
  std::vector<bits> pool(13);
  for (auto& p : pool) p = word();
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case dist::uniform: raw[i] = word(); break;
      case dist::all_equal: raw[i] = a; break;
      case dist::two_values: raw[i] = (rng() & 1) ? a : b; break;
      case dist::few_unique: raw[i] = pool[rng() % pool.size()]; break;
      case dist::low_entropy: raw[i] = word() & word() & word(); break;
      default: raw[i] = word(); break;
    }
  }
  std::vector<Key> keys(n);
  std::memcpy(keys.data(), raw.data(), n * sizeof(Key));
  if constexpr (std::is_floating_point_v<Key>) {
    // Random bit patterns include NaNs; keep the natural-order reference meaningful by mapping
    // NaNs to finite values here (NaN ordering has its own test).
    for (auto& k : keys)
      if (std::isnan(k)) k = Key(std::ldexp(double(rng() % 1000) - 500.0, int(rng() % 40) - 20));
  }
  if (d == dist::sorted || d == dist::reverse) {
    std::sort(keys.begin(), keys.end());
    if (d == dist::reverse) std::reverse(keys.begin(), keys.end());
  }
  return keys;
}

// Reference: stable sort of (key, position) by natural order, except that -0.0 goes before +0.0.
template <class Key>
bool natural_less(Key x, Key y) {
  if constexpr (std::is_floating_point_v<Key>) {
    if (x == 0 && y == 0) return std::signbit(x) && !std::signbit(y);
  }
  return x < y;
}

template <class Key>
std::vector<std::uint32_t> reference_order(const std::vector<Key>& keys) {
  std::vector<std::uint32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return natural_less(keys[a], keys[b]); });
  return order;
}

template <class Key>
bool same_bits(Key a, Key b) {
  return std::memcmp(&a, &b, sizeof(Key)) == 0;
}

template <class Key>
void check_keys(canopy::context& ctx, const std::vector<Key>& keys, const std::string& what) {
  canopy::buffer<Key> d(ctx, keys.size());
  d.assign(keys);
  canopy::radix_sort_keys<Key>(ctx, d.view());
  const auto got = d.to_host();
  const auto order = reference_order(keys);
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!same_bits(got[i], keys[order[i]])) {
      ADD_FAILURE() << what << ": keys differ first at " << i << " of " << keys.size();
      return;
    }
}

template <class Key, class Value>
void check_pairs(canopy::context& ctx, const std::vector<Key>& keys, const std::string& what) {
  std::vector<Value> values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values[i] = Value(i);
  canopy::buffer<Key> dk(ctx, keys.size());
  canopy::buffer<Value> dv(ctx, keys.size());
  dk.assign(keys);
  dv.assign(values);
  canopy::radix_sort_pairs<Key, Value>(ctx, dk.view(), dv.view());
  const auto got_k = dk.to_host();
  const auto got_v = dv.to_host();
  const auto order = reference_order(keys);
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!same_bits(got_k[i], keys[order[i]]) || got_v[i] != Value(order[i])) {
      ADD_FAILURE() << what << ": pairs differ first at " << i << " of " << keys.size() << " (value "
                    << double(got_v[i]) << ", expected " << order[i] << ")";
      return;
    }
}

const std::size_t small_sizes[] = {0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 4097, 6143, 6144, 6145, 65535, 65537};

}  // namespace

class RadixSortTest : public BackendTest {};

template <class Key>
void all_key_cases(canopy::context& ctx) {
  std::uint64_t seed = 1;
  for (dist d : all_dists)
    for (std::size_t n : small_sizes) check_keys(ctx, make_keys<Key>(n, d, seed++), std::string(name(d)) + " n=" + std::to_string(n));
}

TEST_P(RadixSortTest, KeysU32) { all_key_cases<std::uint32_t>(ctx()); }
TEST_P(RadixSortTest, KeysI32) { all_key_cases<std::int32_t>(ctx()); }
TEST_P(RadixSortTest, KeysF32) { all_key_cases<float>(ctx()); }
TEST_P(RadixSortTest, KeysU64) { all_key_cases<std::uint64_t>(ctx()); }
TEST_P(RadixSortTest, KeysI64) { all_key_cases<std::int64_t>(ctx()); }
TEST_P(RadixSortTest, KeysF64) { all_key_cases<double>(ctx()); }

TEST_P(RadixSortTest, PairsAreStableForEveryKeyAndValueType) {
  std::uint64_t seed = 100;
  for (dist d : {dist::uniform, dist::few_unique, dist::two_values, dist::all_equal, dist::reverse})
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(1025), std::size_t(70001)}) {
      const std::string w = std::string(name(d)) + " n=" + std::to_string(n);
      check_pairs<std::uint32_t, std::uint32_t>(ctx(), make_keys<std::uint32_t>(n, d, seed++), "u32/u32 " + w);
      check_pairs<std::int32_t, std::uint64_t>(ctx(), make_keys<std::int32_t>(n, d, seed++), "i32/u64 " + w);
      check_pairs<float, std::int32_t>(ctx(), make_keys<float>(n, d, seed++), "f32/i32 " + w);
      check_pairs<std::uint64_t, std::uint32_t>(ctx(), make_keys<std::uint64_t>(n, d, seed++), "u64/u32 " + w);
      check_pairs<std::int64_t, double>(ctx(), make_keys<std::int64_t>(n, d, seed++), "i64/f64 " + w);
      check_pairs<double, std::int64_t>(ctx(), make_keys<double>(n, d, seed++), "f64/i64 " + w);
    }
}

// Keys that start off a 16-byte boundary: the CUDA histogram reads 16-byte vectors and counts
// the keys before the first boundary and after the last vector one by one.
template <class Key>
void check_keys_at_offset(canopy::context& ctx, const std::vector<Key>& keys, std::size_t offset,
                          const std::string& what) {
  std::vector<Key> padded(offset, Key(7));
  padded.insert(padded.end(), keys.begin(), keys.end());
  padded.push_back(Key(9));
  canopy::buffer<Key> d(ctx, padded.size());
  d.assign(padded);
  canopy::radix_sort_keys<Key>(ctx, d.view().subspan(offset, keys.size()));
  const auto got = d.to_host();
  const auto order = reference_order(keys);
  for (std::size_t i = 0; i < offset; ++i)
    if (!same_bits(got[i], Key(7))) return void(ADD_FAILURE() << what << ": element before the span changed");
  if (!same_bits(got[offset + keys.size()], Key(9))) return void(ADD_FAILURE() << what << ": element after the span changed");
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!same_bits(got[offset + i], keys[order[i]])) {
      ADD_FAILURE() << what << ": keys differ first at " << i << " of " << keys.size();
      return;
    }
}

TEST_P(RadixSortTest, KeysOffAVectorBoundary) {
  std::uint64_t seed = 900;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(5), std::size_t(4099), std::size_t(65539)})
    for (std::size_t offset = 1; offset < 4; ++offset) {
      const std::string w = "n=" + std::to_string(n) + " offset=" + std::to_string(offset);
      check_keys_at_offset<std::uint32_t>(ctx(), make_keys<std::uint32_t>(n, dist::uniform, seed++), offset, "u32 " + w);
      check_keys_at_offset<float>(ctx(), make_keys<float>(n, dist::uniform, seed++), offset, "f32 " + w);
      if (offset == 1) check_keys_at_offset<std::uint64_t>(ctx(), make_keys<std::uint64_t>(n, dist::uniform, seed++), 1, "u64 " + w);
    }
}

TEST_P(RadixSortTest, PowerOfTwoSizesPlusMinusOne) {
  std::uint64_t seed = 500;
  for (int k = 10; k <= 20; k += 5)
    for (std::size_t n : {(std::size_t(1) << k) - 1, (std::size_t(1) << k) + 1}) {
      check_pairs<std::uint32_t, std::uint32_t>(ctx(), make_keys<std::uint32_t>(n, dist::low_entropy, seed++),
                                                "u32 low_entropy n=" + std::to_string(n));
      check_pairs<std::uint64_t, std::uint32_t>(ctx(), make_keys<std::uint64_t>(n, dist::few_unique, seed++),
                                                "u64 few_unique n=" + std::to_string(n));
    }
}

TEST_P(RadixSortTest, LargeU32Pairs) {
  const std::size_t n = (std::size_t(1) << 24) + 1;
  check_pairs<std::uint32_t, std::uint32_t>(ctx(), make_keys<std::uint32_t>(n, dist::uniform, 7), "2^24+1");
}

template <class F>
void float_specials(canopy::context& ctx) {
  const F inf = std::numeric_limits<F>::infinity();
  const F nan = std::numeric_limits<F>::quiet_NaN();
  const F neg_nan = -nan;
  const F den = std::numeric_limits<F>::denorm_min();
  // The documented order, one entry per class, as the expected result.
  const std::vector<F> expected = {neg_nan, -inf, -std::numeric_limits<F>::max(), F(-1.5), -den, F(-0.0),
                                   F(0.0),  den,  F(1.5), std::numeric_limits<F>::max(), inf, nan};
  ASSERT_TRUE(std::signbit(neg_nan) && !std::signbit(nan));
  std::mt19937 rng(3);
  std::vector<std::size_t> cls;
  for (std::size_t n : {std::size_t(12), std::size_t(1000), std::size_t(20001)}) {
    std::vector<F> keys(n);
    std::vector<std::size_t> which(n);
    for (std::size_t i = 0; i < n; ++i) which[i] = i < expected.size() ? i : rng() % expected.size();
    std::shuffle(which.begin(), which.end(), rng);
    for (std::size_t i = 0; i < n; ++i) keys[i] = expected[which[i]];
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    canopy::buffer<F> dk(ctx, n);
    canopy::buffer<std::uint32_t> dv(ctx, n);
    dk.assign(keys);
    dv.assign(values);
    canopy::radix_sort_pairs<F, std::uint32_t>(ctx, dk.view(), dv.view());
    const auto got_k = dk.to_host();
    const auto got_v = dv.to_host();
    // Expected: stable by class index.
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return which[a] < which[b]; });
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same_bits(got_k[i], expected[which[order[i]]])) << "n=" << n << " i=" << i << " got " << got_k[i];
      ASSERT_EQ(got_v[i], order[i]) << "n=" << n << " i=" << i;
    }
  }
}

TEST_P(RadixSortTest, FloatSpecialsFollowTheDocumentedOrder) {
  float_specials<float>(ctx());
  float_specials<double>(ctx());
}

// Windows [b, e) of unsigned keys: a stable sort by (key >> b) & mask, keys carried unchanged.
template <class Key>
void check_window(canopy::context& ctx, std::size_t n, int b, int e, std::uint64_t seed) {
  auto keys = make_keys<Key>(n, dist::uniform, seed);
  const Key mask = e - b >= int(sizeof(Key) * 8) ? Key(~Key(0)) : Key((Key(1) << (e - b)) - 1);
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto x, auto y) { return ((keys[x] >> b) & mask) < ((keys[y] >> b) & mask); });
  std::vector<std::uint32_t> values(n);
  std::iota(values.begin(), values.end(), 0u);
  canopy::buffer<Key> dk(ctx, n);
  canopy::buffer<std::uint32_t> dv(ctx, n);
  dk.assign(keys);
  dv.assign(values);
  canopy::radix_sort_pairs<Key, std::uint32_t>(ctx, dk.view(), dv.view(), b, e);
  const auto got_k = dk.to_host();
  const auto got_v = dv.to_host();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_v[i], order[i]) << "window [" << b << "," << e << ") n=" << n << " i=" << i;
    ASSERT_EQ(got_k[i], keys[order[i]]);
  }
}

TEST_P(RadixSortTest, BitWindowsInsideTheKey) {
  std::uint64_t seed = 900;
  for (auto [b, e] : {std::pair{0, 1}, {3, 11}, {5, 5}, {7, 20}, {13, 32}, {31, 32}, {8, 16}})
    for (std::size_t n : {std::size_t(1), std::size_t(1025), std::size_t(40000)})
      check_window<std::uint32_t>(ctx(), n, b, e, seed++);
  for (auto [b, e] : {std::pair{0, 48}, {0, 63}, {16, 48}, {40, 64}, {1, 63}, {60, 61}, {0, 64}, {24, 40}, {28, 36}})
    for (std::size_t n : {std::size_t(2), std::size_t(6145), std::size_t(50001)})
      check_window<std::uint64_t>(ctx(), n, b, e, seed++);
}

TEST_P(RadixSortTest, DoubleBufferedEndsWhereItSays) {
  for (const auto& window : {std::pair{0, 32}, {0, 24}, {4, 12}, {0, 0}}) {
    const int b = window.first, e = window.second;  // named copies: the comparator below captures them
    const std::size_t n = 30001;
    auto keys = make_keys<std::uint32_t>(n, dist::uniform, 11);
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    canopy::buffer<std::uint32_t> k0(ctx(), n), k1(ctx(), n), v0(ctx(), n), v1(ctx(), n);
    k0.assign(keys);
    v0.assign(values);
    const bool alt = canopy::radix_sort_pairs_double_buffered<std::uint32_t, std::uint32_t>(
        ctx(), k0.view(), k1.view(), v0.view(), v1.view(), b, e);
    EXPECT_EQ(alt, ((e - b + 7) / 8) % 2 == 1) << b << "," << e;
    const auto got_k = (alt ? k1 : k0).to_host();
    const auto got_v = (alt ? v1 : v0).to_host();
    const std::uint32_t mask = e - b >= 32 ? ~0u : ((1u << (e - b)) - 1u);
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](auto x, auto y) { return ((keys[x] >> b) & mask) < ((keys[y] >> b) & mask); });
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got_v[i], order[i]) << i;
      ASSERT_EQ(got_k[i], keys[order[i]]) << i;
    }
    canopy::buffer<std::uint64_t> q0(ctx(), n), q1(ctx(), n);
    auto keys64 = make_keys<std::uint64_t>(n, dist::uniform, 12);
    q0.assign(keys64);
    const bool alt64 = canopy::radix_sort_keys_double_buffered<std::uint64_t>(ctx(), q0.view(), q1.view(), 0, 48);
    EXPECT_TRUE(!alt64);  // 6 passes
    const auto got64 = q0.to_host();
    std::stable_sort(keys64.begin(), keys64.end(), [](auto x, auto y) {
      return (x & ((std::uint64_t(1) << 48) - 1)) < (y & ((std::uint64_t(1) << 48) - 1));
    });
    EXPECT_EQ(got64, keys64);
  }
}

// 8-byte keys over windows of 8 passes with n >= 2^22 take the hybrid path on CUDA (two LSD
// passes over the window's top 16 bits, then a segmented sort of the 65536 buckets;
// detail/radix_hybrid.cuh) or, when a bucket would exceed detail::hybrid_max_bucket keys, its LSD
// fallback; other windows take the plain LSD run. The bucket bits sit below the highest bit that
// varies in a sample of the keys, and a key that varies above them (missed by the sample) makes
// the sort fall back too. Each input below is built for one of these, and
// on CUDA the test hook reports which one ran. Both backends must match the std::stable_sort
// reference of (window bits of the key, position): pairs carry the input positions as values.
namespace {
// What the probe hook reports: 0 buckets sorted, 1 fallback after the bucket passes, 2 fallback
// predicted by the sample (bucket passes skipped), 7 (the probe's initial value) no hybrid sort.
using paths = std::vector<std::uint32_t>;
const paths sorted_in_buckets{0u}, late_fallback{1u}, skipped{2u}, either_fallback{1u, 2u}, plain_lsd{7u};

struct wide_case {
  const char* what;
  int b, e;
  paths expect;        //!< with the default local sort (the segmented sort at these sizes)
  paths expect_radix;  //!< with the bucket radix kernel forced (buckets of at most 3072 keys)
  std::function<std::uint64_t(std::mt19937_64&, std::size_t)> key;
};

bool one_of(std::uint32_t got, const paths& ok) { return std::find(ok.begin(), ok.end(), got) != ok.end(); }

// The hybrid sort's local sorts to run on this backend: on CUDA the default (the segmented sort at
// these sizes) and the bucket radix kernel, forced through the test hook; on the host nothing to
// choose.
std::vector<int> local_sorts(bool cuda) { return cuda ? std::vector<int>{0, 2} : std::vector<int>{0}; }

// Sets a test hook to `value` for a scope and restores what it held.
template <class T>
struct hook_scope {
  hook_scope(T& hook, T value) : hook_(hook), saved_(hook) { hook_ = value; }
  ~hook_scope() { hook_ = saved_; }
  hook_scope(const hook_scope&) = delete;
  hook_scope& operator=(const hook_scope&) = delete;

 private:
  T& hook_;
  T saved_;
};

// Sets the hybrid sort's local-sort hook for a scope (CUDA builds; nothing to set on others).
struct local_sort_scope {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
  explicit local_sort_scope(int mode) : scope_(canopy::detail::hybrid_testing().local_sort, mode) {}
  hook_scope<int> scope_;
#else
  explicit local_sort_scope(int) {}
#endif
};

// Runs `body` with the hybrid sort's probe word set on CUDA and returns what it reported (above).
// Host: always 7.
std::uint32_t probe_path(canopy::context& ctx, const std::function<void()>& body) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
  if (ctx.is_cuda()) {
    canopy::buffer<std::uint32_t> probe(ctx, 1);
    probe.assign(std::vector<std::uint32_t>{7u});
    const hook_scope<std::uint32_t*> scope(canopy::detail::hybrid_testing().fallback_probe, probe.data());
    body();
    return probe.to_host()[0];
  }
#endif
  body();
  return 7u;
}
}  // namespace

TEST_P(RadixSortTest, WideKeysTakeTheHybridPathOrItsFallback) {
  using u64 = std::uint64_t;
  const u64 low48 = (u64(1) << 48) - 1;
  const wide_case cases[] = {
      {"uniform, 64-bit window", 0, 64, sorted_in_buckets, sorted_in_buckets,
       [](std::mt19937_64& r, std::size_t) { return r(); }},
      {"top 16 bits from 512 values: buckets of ~8K keys, merged through the alternate buffer", 0, 64,
       sorted_in_buckets, either_fallback,
       [=](std::mt19937_64& r, std::size_t) { return (((r() % 512) * 127) << 48) | (r() & low48); }},
      {"keys below 2^48 in a 64-bit window: buckets from bits [32, 48)", 0, 64, sorted_in_buckets, sorted_in_buckets,
       [=](std::mt19937_64& r, std::size_t) { return r() & low48; }},
      {"window [2, 62) of keys with bits [44, 62) zero, bits outside random: buckets from bits [28, 44)", 2, 62,
       sorted_in_buckets, sorted_in_buckets,
       [](std::mt19937_64& r, std::size_t) { return r() & ~(((u64(1) << 18) - 1) << 44); }},
      {"63-bit Morton-style keys, window [0, 63)", 0, 63, sorted_in_buckets, sorted_in_buckets,
       [](std::mt19937_64& r, std::size_t) { return r() >> 1; }},
      {"keys below 2^48 but one, not sampled, with bit 60 set: the check falls back", 0, 64, late_fallback,
       late_fallback, [=](std::mt19937_64& r, std::size_t i) { return (r() & low48) | (i == 12345 ? u64(1) << 60 : 0); }},
      {"top 16 bits from 209 values: buckets of ~20K keys, over the limit, too few samples to tell", 0, 64,
       late_fallback, either_fallback,
       [=](std::mt19937_64& r, std::size_t) { return (((r() % 209) * 313) << 48) | (r() & low48); }},
      {"half the keys share their top 16 bits: the sample sees it", 0, 64, skipped, skipped,
       [=](std::mt19937_64& r, std::size_t i) { return i % 2 ? (u64(0xBEEF) << 48) | (r() & low48) : r(); }},
      {"all equal", 0, 64, skipped, skipped, [](std::mt19937_64&, std::size_t) { return u64(0x0123456789ABCDEFull); }},
      {"window [3, 61)", 3, 61, sorted_in_buckets, sorted_in_buckets, [](std::mt19937_64& r, std::size_t) { return r(); }},
      {"48-bit window, other bits random: 6 passes, plain LSD", 0, 48, plain_lsd, plain_lsd,
       [](std::mt19937_64& r, std::size_t) { return r(); }},
      {"window [16, 64): 6 passes, plain LSD", 16, 64, plain_lsd, plain_lsd,
       [](std::mt19937_64& r, std::size_t) { return r(); }},
      {"window [0, 56): 7 passes, plain LSD", 0, 56, plain_lsd, plain_lsd, [](std::mt19937_64& r, std::size_t) { return r(); }},
      {"window [0, 40): 5 passes, plain LSD", 0, 40, plain_lsd, plain_lsd, [](std::mt19937_64& r, std::size_t) { return r(); }},
  };
  const std::size_t n = (std::size_t(1) << 22) + 37;
  for (int local : local_sorts(is_cuda())) {
  const local_sort_scope scope(local);
  std::uint64_t seed = 5000;
  for (const wide_case& c : cases) {
    SCOPED_TRACE(local == 2 ? "bucket radix kernel" : "default local sort");
    const paths& expect = local == 2 ? c.expect_radix : c.expect;
    std::mt19937_64 rng(seed++);
    std::vector<u64> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = c.key(rng, i);
    const u64 mask = c.e - c.b >= 64 ? ~u64(0) : (u64(1) << (c.e - c.b)) - 1;
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return ((keys[x] >> c.b) & mask) < ((keys[y] >> c.b) & mask); });
    canopy::buffer<u64> dk(ctx(), n);
    canopy::buffer<std::uint32_t> dv(ctx(), n);
    dk.assign(keys);
    std::vector<std::uint32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0u);
    dv.assign(pos);
    const std::uint32_t path = probe_path(ctx(), [&] {
      canopy::radix_sort_pairs<u64, std::uint32_t>(ctx(), dk.view(), dv.view(), c.b, c.e);
    });
    if (is_cuda()) EXPECT_TRUE(one_of(path, expect)) << c.what << ": path " << path << " (0 hybrid, 1 fallback, 2 skipped, 7 LSD)";
    const auto got_k = dk.to_host();
    const auto got_v = dv.to_host();
    for (std::size_t i = 0; i < n; ++i)
      if (got_v[i] != order[i] || got_k[i] != keys[order[i]]) {
        ADD_FAILURE() << c.what << ": pairs differ first at " << i << " of " << n;
        break;
      }
    // Keys only, through the double-buffered entry: an even pass count leaves the result in keys.
    if (c.expect != plain_lsd) {
      canopy::buffer<u64> k0(ctx(), n), k1(ctx(), n);
      k0.assign(keys);
      bool alt = true;
      const std::uint32_t key_path = probe_path(ctx(), [&] {
        alt = canopy::radix_sort_keys_double_buffered<u64>(ctx(), k0.view(), k1.view(), c.b, c.e);
      });
      if (is_cuda()) EXPECT_TRUE(one_of(key_path, expect)) << c.what << " (keys only): path " << key_path;
      EXPECT_FALSE(alt) << c.what;
      const auto got = k0.to_host();
      for (std::size_t i = 0; i < n; ++i)
        if (got[i] != keys[order[i]]) {
          ADD_FAILURE() << c.what << ": keys only differ first at " << i << " of " << n;
          break;
        }
    }
  }
  }
}

// Signed and floating-point 8-byte keys (the buckets come from the ordered form), 8-byte values.
TEST_P(RadixSortTest, WideSignedAndFloatKeysAndWideValuesOnTheHybridPath) {
  const std::size_t n = (std::size_t(1) << 22) + 3;
  for (int local : local_sorts(is_cuda())) {
  const local_sort_scope scope(local);
  SCOPED_TRACE(local == 2 ? "bucket radix kernel" : "default local sort");
  check_keys(ctx(), make_keys<std::int64_t>(n, dist::uniform, 71), "i64 uniform");
  check_keys(ctx(), make_keys<double>(n, dist::uniform, 72), "f64 uniform");
  check_keys(ctx(), make_keys<double>(n, dist::few_unique, 73), "f64 few unique");
  check_pairs<std::int64_t, std::uint64_t>(ctx(), make_keys<std::int64_t>(n, dist::uniform, 74), "i64/u64 uniform");
  check_pairs<double, std::uint32_t>(ctx(), make_keys<double>(n, dist::low_entropy, 75), "f64/u32 low entropy");
  // Small magnitudes of both signs: the ordered form's top bits take few values (fallback).
  std::mt19937_64 rng(76);
  std::vector<double> small(n);
  for (auto& x : small) x = double(std::int64_t(rng() % 2001) - 1000) * 0.25;
  check_pairs<double, std::uint32_t>(ctx(), small, "f64 small magnitudes");
  }
}

TEST_P(RadixSortTest, RefusesBadArguments) {
  canopy::buffer<std::uint32_t> k(ctx(), 10), v(ctx(), 9), alt(ctx(), 10);
  canopy::buffer<std::uint64_t> k64(ctx(), 10);
  expect_error<canopy::invalid_argument>([&] { canopy::radix_sort_keys<std::uint32_t>(ctx(), k.view(), 0, 33); },
                                         {"canopy::radix_sort_keys", "end_bit"});
  expect_error<canopy::invalid_argument>([&] { canopy::radix_sort_keys<std::uint32_t>(ctx(), k.view(), -1, 8); },
                                         {"canopy::radix_sort_keys", "begin_bit"});
  expect_error<canopy::invalid_argument>([&] { canopy::radix_sort_keys<std::uint32_t>(ctx(), k.view(), 9, 8); },
                                         {"canopy::radix_sort_keys", "end_bit"});
  expect_error<canopy::invalid_argument>([&] { canopy::radix_sort_keys<std::uint64_t>(ctx(), k64.view(), 0, 65); },
                                         {"end_bit"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_pairs<std::uint32_t, std::uint32_t>(ctx(), k.view(), v.view()); },
      {"canopy::radix_sort_pairs", "values", "length"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_keys<std::uint32_t>(ctx(), canopy::span<std::uint32_t>(nullptr, 5, ctx().space())); },
      {"canopy::radix_sort_keys", "keys", "null"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_keys_double_buffered<std::uint32_t>(ctx(), k.view(), k.view()); },
      {"keys_alt", "overlaps"});
  // Double-buffered pairs: every pair of the four buffers must be disjoint (the passes read one
  // key/value pair while writing the other).
  canopy::buffer<std::uint32_t> v10(ctx(), 10), valt(ctx(), 10);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_pairs_double_buffered<std::uint32_t, std::uint32_t>(ctx(), k.view(), alt.view(), v10.view(), k.view()); },
      {"canopy::radix_sort_pairs_double_buffered", "argument 'values_alt': overlaps keys"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_pairs_double_buffered<std::uint32_t, std::uint32_t>(ctx(), k.view(), v10.view(), v10.view(), valt.view()); },
      {"canopy::radix_sort_pairs_double_buffered", "argument 'keys_alt': overlaps values"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_pairs_double_buffered<std::uint32_t, std::uint32_t>(ctx(), k.view(), alt.view(), v10.view(), alt.view()); },
      {"canopy::radix_sort_pairs_double_buffered", "argument 'values_alt': overlaps keys_alt"});
  // Partial overlap counts too (the last key_alt element is the first value).
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::radix_sort_pairs_double_buffered<std::uint32_t, std::uint32_t>(ctx(), k.view().first(5), alt.view().first(5),
                                                                       alt.view().subspan(4, 5), valt.view().first(5));
      },
      {"canopy::radix_sort_pairs_double_buffered", "argument 'keys_alt': overlaps values"});
  const canopy::memory_space other =
      ctx().space() == canopy::memory_space::host ? canopy::memory_space::device : canopy::memory_space::host;
  std::vector<std::uint32_t> host_keys(4);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::radix_sort_keys<std::uint32_t>(ctx(), canopy::span<std::uint32_t>(host_keys.data(), 4, other)); },
      {"canopy::radix_sort_keys", "keys", "memory"});
  // Empty input with an empty bit range is fine.
  canopy::radix_sort_keys<std::uint32_t>(ctx(), canopy::span<std::uint32_t>(), 0, 0);
}

CANOPY_INSTANTIATE_BACKENDS(RadixSortTest);

// GPU only: the CUDA backend against the host backend at 2^28 (u32 keys) and 2^26 (pairs, u64).
class CudaRadixSortLarge : public canopy_test::CudaTest {};

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// The bucket-size check is exact: a bucket of max_bucket keys is sorted in place, one more key
// makes the call fall back (the hook lowers the limit to 1000 so that a uniform rest stays far
// below it).
// Buckets of ~64K keys (4x the limit): with a 16-bit counter per bucket (devices with 128 KiB of
// shared memory per block) the sample sees them and the bucket passes are skipped; with hashed
// bins only the guard finds them, after the bucket passes. Either way the keys come out sorted.
TEST_F(CudaRadixSortLarge, HybridSampleSeesModerateSkewWithExactBins) {
  using u64 = std::uint64_t;
  const std::size_t n = canopy::detail::hybrid_min_keys;
  std::mt19937_64 rng(610);
  std::vector<u64> keys(n);
  for (auto& k : keys) k = (((rng() % 64) * 1021) << 48) | (rng() >> 16);
  canopy::buffer<u64> d(*ctx_, n);
  d.assign(keys);
  const std::uint32_t path = probe_path(*ctx_, [&] { canopy::radix_sort_keys<u64>(*ctx_, d.view()); });
  EXPECT_EQ(path, canopy::detail::plan_exact_bins(ctx_->device()) ? 2u : 1u);
  std::sort(keys.begin(), keys.end());
  EXPECT_TRUE(d.to_host() == keys);
}

TEST_F(CudaRadixSortLarge, HybridBucketLimitIsExact) {
  using u64 = std::uint64_t;
  const std::size_t n = canopy::detail::hybrid_min_keys;
  const hook_scope<std::uint32_t> limit(canopy::detail::hybrid_testing().max_bucket, 1000u);
  for (int local : {1, 2})
  for (std::size_t big : {std::size_t(1000), std::size_t(1001)}) {
    const local_sort_scope scope(local);
    SCOPED_TRACE(local == 2 ? "bucket radix kernel" : "segmented sort");
    std::mt19937_64 rng(600 + big);
    std::vector<u64> keys(n);
    for (std::size_t i = 0; i < n; ++i) {
      u64 top = rng() >> 48;
      if (top == 0x1234) top = 0x1235;
      keys[i] = (i < big ? u64(0x1234) << 48 : top << 48) | (rng() >> 16);
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    canopy::buffer<u64> d(*ctx_, n);
    d.assign(keys);
    const std::uint32_t path = probe_path(*ctx_, [&] { canopy::radix_sort_keys<u64>(*ctx_, d.view()); });
    EXPECT_EQ(path, big == 1000 ? 0u : 1u) << "bucket of " << big << " keys";
    std::sort(keys.begin(), keys.end());
    EXPECT_TRUE(d.to_host() == keys) << "bucket of " << big << " keys";
  }
}
#endif


TEST_F(CudaRadixSortLarge, U32KeysAt2To28MatchHost) {
  const std::size_t n = std::size_t(1) << 28;
  auto keys = make_keys<std::uint32_t>(n, dist::uniform, 42);
  canopy::buffer<std::uint32_t> d(*ctx_, n);
  d.assign(keys);
  canopy::radix_sort_keys<std::uint32_t>(*ctx_, d.view());
  const auto got = d.to_host();
  canopy::radix_sort_keys<std::uint32_t>(canopy_test::host_context(), canopy::host_span(keys.data(), n));
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_TRUE(got == keys);
}

TEST_F(CudaRadixSortLarge, PairsAndWideKeysAt2To26MatchHost) {
  const std::size_t n = (std::size_t(1) << 26) + 3;
  for (dist d : {dist::uniform, dist::low_entropy, dist::all_equal}) {
    auto keys = make_keys<std::uint64_t>(n, d, 43);
    std::vector<std::uint32_t> vals(n);
    std::iota(vals.begin(), vals.end(), 0u);
    for (int end_bit : {48, 64}) {
      canopy::buffer<std::uint64_t> dk(*ctx_, n);
      canopy::buffer<std::uint32_t> dv(*ctx_, n);
      dk.assign(keys);
      dv.assign(vals);
      canopy::radix_sort_pairs<std::uint64_t, std::uint32_t>(*ctx_, dk.view(), dv.view(), 0, end_bit);
      auto hk = keys;
      auto hv = vals;
      canopy::radix_sort_pairs<std::uint64_t, std::uint32_t>(canopy_test::host_context(), canopy::host_span(hk.data(), n),
                                                             canopy::host_span(hv.data(), n), 0, end_bit);
      EXPECT_TRUE(dk.to_host() == hk) << name(d) << " end_bit " << end_bit;
      EXPECT_TRUE(dv.to_host() == hv) << name(d) << " end_bit " << end_bit;
    }
  }
}

// The digit plan of an LSD run: every bit of the window in exactly one digit, in order; digits of
// at most max_bits (8-bit digits when wider ones would not save a pass); the fewest passes that
// width allows; bins and offsets laid out back to back within the kernels' histogram.
TEST(RadixDigitPlan, CoversTheWindowInTheFewestPasses) {
  namespace cd = canopy::detail;
  for (int max_bits : {8, 9, 10}) {
    for (int begin = 0; begin <= 64; ++begin) {
      for (int end = begin; end <= 64; ++end) {
        const auto plan = cd::make_digit_plan(begin, end, max_bits);
        const int width = end - begin;
        const std::string what = "max_bits " + std::to_string(max_bits) + " bits [" + std::to_string(begin) + "," +
                                 std::to_string(end) + ")";
        const int narrow = (width + 7) / 8, wide = (width + max_bits - 1) / max_bits;
        ASSERT_EQ(plan.passes, std::min(narrow, wide)) << what;
        ASSERT_LE(plan.passes, cd::onesweep::max_passes) << what;
        int next = begin, bins = 0;
        for (int p = 0; p < plan.passes; ++p) {
          ASSERT_EQ(plan.shift[p], next) << what << " pass " << p;
          ASSERT_GE(plan.bits[p], 1) << what << " pass " << p;
          ASSERT_LE(plan.bits[p], plan.passes < narrow ? max_bits : 8) << what << " pass " << p;
          ASSERT_EQ(plan.bins[p], 1 << std::max(8, plan.bits[p])) << what << " pass " << p;
          ASSERT_EQ(plan.offset[p], bins) << what << " pass " << p;
          next += plan.bits[p];
          bins += plan.bins[p];
        }
        ASSERT_EQ(next, end) << what;
        ASSERT_EQ(plan.total_bins, bins) << what;
        ASSERT_LE(plan.total_bins, cd::onesweep::max_plan_bins) << what;
      }
    }
  }
  // The two plans the benchmarks run: full 64-bit keys and 48-bit keys.
  const auto full = cd::make_digit_plan(0, 64, 10);
  EXPECT_EQ(full.passes, 7);
  EXPECT_EQ(full.bits[0], 10);
  EXPECT_EQ(full.bits[6], 9);
  EXPECT_EQ(cd::make_digit_plan(0, 48, 10).passes, 5);
  EXPECT_EQ(cd::make_digit_plan(0, 32, 10).passes, 4);
  EXPECT_EQ(cd::make_digit_plan(0, 32, 10).bits[3], 8);
  EXPECT_EQ(cd::lsd_passes(0, 64), 8);
}

// The device class behind the CUDA tile shapes, from peak DRAM bandwidth per SM clock.
TEST(RadixDeviceClass, FromBandwidthPerSmClock) {
  using canopy::detail::onesweep_regime;
  canopy::device_info h100, h200, unknown, host;
  h100.multiprocessors = h200.multiprocessors = unknown.multiprocessors = 132;
  h100.clock_khz = h200.clock_khz = 1980000;
  h100.memory_bandwidth = 2.0 * 2619e6 * 5120 / 8;  // H100 SXM: 3.35 TB/s
  h200.memory_bandwidth = 2.0 * 3201e6 * 6144 / 8;  // H200: 4.92 TB/s
  host.multiprocessors = 16;
  EXPECT_NEAR(canopy::detail::memory_bytes_per_sm_clock(h100), 12.8, 0.1);
  EXPECT_NEAR(canopy::detail::memory_bytes_per_sm_clock(h200), 18.8, 0.1);
  EXPECT_EQ(canopy::detail::onesweep_regime_of(h100), onesweep_regime::bandwidth_bound);
  EXPECT_EQ(canopy::detail::onesweep_regime_of(h200), onesweep_regime::compute_bound);
  EXPECT_EQ(canopy::detail::onesweep_regime_of(unknown), onesweep_regime::compute_bound);
  EXPECT_EQ(canopy::detail::memory_bytes_per_sm_clock(host), 0.0);
  EXPECT_EQ(canopy::detail::onesweep_regime_of(host), onesweep_regime::compute_bound);
}

// The CUDA tile shape a device runs must fit its per-block shared memory (opt-in limit): the
// class's default where it fits, else the compact fallback (at most 48 KiB), else canopy::error
// naming the limit. Device facts of real parts; no GPU needed.
TEST(RadixShapeFit, FollowsTheSharedMemoryOptInLimit) {
  namespace cd = canopy::detail;
  using cd::no_value;
  using cd::onesweep_fit;
  using u32 = std::uint32_t;
  using u64 = std::uint64_t;
  canopy::device_info h100, rtx3090, t4, tiny, unknown;
  h100.name = "H100";
  h100.multiprocessors = 132;
  h100.clock_khz = 1980000;
  h100.memory_bandwidth = 2.0 * 2619e6 * 5120 / 8;
  h100.shared_memory_per_block_optin = 232448;  // 227 KiB (sm_90)
  rtx3090.name = "RTX 3090";
  rtx3090.multiprocessors = 82;
  rtx3090.clock_khz = 1695000;
  rtx3090.memory_bandwidth = 936e9;
  rtx3090.shared_memory_per_block_optin = 101376;  // 99 KiB (sm_86)
  t4.name = "T4";
  t4.multiprocessors = 40;
  t4.clock_khz = 1590000;
  t4.memory_bandwidth = 320e9;
  t4.shared_memory_per_block_optin = 65536;  // 64 KiB (sm_75)
  tiny = t4;
  tiny.name = "tiny";
  tiny.shared_memory_per_block_optin = 40000;  // below the 48 KiB every real device allows
  unknown = h100;
  unknown.shared_memory_per_block_optin = 0;  // not reported: 48 KiB assumed
  ASSERT_EQ(cd::onesweep_regime_of(rtx3090), cd::onesweep_regime::bandwidth_bound);
  ASSERT_EQ(cd::onesweep_regime_of(t4), cd::onesweep_regime::bandwidth_bound);

  const char* f = "test";
  // Every default fits an H100 (and the H200: same limit).
  EXPECT_EQ((cd::onesweep_fit_of<u32, no_value>(h100, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u64, no_value>(h100, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u32, u32>(h100, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u64, u32>(h100, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u64, u64>(h100, f)), onesweep_fit::class_default);
  // 99 KiB: 8-byte keys with 8-byte values (16 items: 108 KiB) take the compact shape; the rest fit.
  EXPECT_EQ((cd::onesweep_fit_of<u64, u64>(rtx3090, f)), onesweep_fit::compact);
  EXPECT_EQ((cd::onesweep_fit_of<u64, no_value>(rtx3090, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u64, u32>(rtx3090, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u32, u32>(rtx3090, f)), onesweep_fit::class_default);
  // 64 KiB: only 4-byte keys alone (30 items: 58 KiB) keep their default.
  EXPECT_EQ((cd::onesweep_fit_of<u32, no_value>(t4, f)), onesweep_fit::class_default);
  EXPECT_EQ((cd::onesweep_fit_of<u64, no_value>(t4, f)), onesweep_fit::compact);
  EXPECT_EQ((cd::onesweep_fit_of<u32, u32>(t4, f)), onesweep_fit::compact);
  EXPECT_EQ((cd::onesweep_fit_of<u64, u64>(t4, f)), onesweep_fit::compact);
  // What the choice is made from: each default's bytes against each limit, and the compact
  // shapes within 48 KiB.
  EXPECT_GT((cd::onesweep_default<u64, u64, cd::onesweep_regime::bandwidth_bound>::block_bytes), 101376u);
  EXPECT_LE((cd::onesweep_default<u64, u32, cd::onesweep_regime::bandwidth_bound>::block_bytes), 101376u);
  // Wider digits take more shared memory: a 10-bit pass's packed counters (24 KiB for 12 warps)
  // and its 4 KiB of bin offsets put that tile over 99 KiB.
  EXPECT_GT((cd::onesweep::shape<u64, u32, 18, 2, 10>::block_bytes), 101376u);
  EXPECT_GT((cd::onesweep_default<u64, no_value, cd::onesweep_regime::bandwidth_bound>::block_bytes), 65536u);
  EXPECT_LE((cd::onesweep_default<u32, no_value, cd::onesweep_regime::bandwidth_bound>::block_bytes), 65536u);
  EXPECT_LE((canopy::detail::onesweep::shape<u64, u64, cd::onesweep_compact<u64, u64>::items, 2>::block_bytes), 49152u);
  EXPECT_GE((cd::onesweep_compact<u64, u64>::items), 5);
  EXPECT_GE((cd::onesweep_compact<u32, no_value>::items), 20);
  // Unknown limit: 48 KiB assumed, which no default fits (4-byte keys: 30 items, 58 KiB).
  EXPECT_EQ((cd::onesweep_fit_of<u32, no_value>(unknown, f)), onesweep_fit::compact);
  EXPECT_EQ((cd::onesweep_fit_of<u64, u64>(unknown, f)), onesweep_fit::compact);
  // Below 48 KiB nothing fits: a clear error naming the limit and the device.
  expect_error<canopy::error>([&] { (void)cd::onesweep_fit_of<u32, no_value>(tiny, "canopy::radix_sort_keys"); },
                              {"canopy::radix_sort_keys", "40000", "tiny"});
}

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// The library runs one device class's shapes per GPU; these run both classes' default shapes (and
// so both kernel variants) through the LSD driver on whichever GPU is present: unsigned keys of
// the given bit window, values given or (index variant) the input positions, sizes around the
// tile of each shape (partial last tiles, one tile, several).
namespace {
// D: a shape (items, min_blocks, variant), e.g. onesweep_default<K, V, R> or onesweep_compact<K, V>;
// MaxBits: the widest digit (make_digit_plan), 8 as the library runs.
template <class K, class V, class D, int MaxBits = 8>
void check_shape(canopy::context& ctx, const char* label, dist d, int begin_bit, int end_bit, bool index_values,
                 std::uint64_t seed) {
  namespace cd = canopy::detail;
  constexpr bool pairs = !std::is_same_v<V, cd::no_value>;
  constexpr std::size_t tile = 384 * std::size_t(D::items);
  for (std::size_t n : {std::size_t(1), std::size_t(33), tile - 1, tile, 3 * tile + 17}) {
    const auto keys = make_keys<K>(n, d, seed++);
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    const K mask = end_bit - begin_bit >= int(sizeof(K) * 8) ? K(~K(0)) : K((K(1) << (end_bit - begin_bit)) - 1);
    std::stable_sort(order.begin(), order.end(),
                     [&](auto x, auto y) { return ((keys[x] >> begin_bit) & mask) < ((keys[y] >> begin_bit) & mask); });
    using VB = std::conditional_t<pairs, V, std::uint32_t>;
    std::vector<VB> values(pairs ? n : 0);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = VB(i * 2654435761u + 7);
    canopy::buffer<K> k0(ctx, n), k1(ctx, n);
    canopy::buffer<VB> v0(ctx, values.size()), v1(ctx, values.size());
    k0.assign(keys);
    if (pairs) v0.assign(values);
    cd::lsd_job<K, V> job;
    job.keys_in = k0.data();
    job.keys[0] = k0.data();
    job.keys[1] = k1.data();
    if constexpr (pairs) {
      job.vals_in = index_values ? nullptr : v0.data();
      job.vals[0] = v0.data();
      job.vals[1] = v1.data();
    }
    job.n = n;
    job.begin_bit = begin_bit;
    job.end_bit = end_bit;
    job.first_dst = 1;
    cd::lsd_run_cuda_shaped<K, V, D::items, D::min_blocks, D::variant, MaxBits>(ctx, job);
    const bool alt = cd::make_digit_plan(begin_bit, end_bit, MaxBits).passes % 2 == 1;
    const auto got_k = (alt ? k1 : k0).to_host();
    const std::string what = std::string(label) + " " + std::to_string(D::items) + "x" + std::to_string(D::min_blocks) + " variant " +
                             std::to_string(D::variant) + " digits<=" + std::to_string(MaxBits) + " " + name(d) +
                             " n=" + std::to_string(n) + " bits [" +
                             std::to_string(begin_bit) + "," + std::to_string(end_bit) + ")";
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got_k[i], keys[order[i]]) << what << ": keys differ first at " << i;
    if constexpr (pairs) {
      const auto got_v = (alt ? v1 : v0).to_host();
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(got_v[i], index_values ? VB(order[i]) : values[order[i]]) << what << ": values differ first at " << i;
    }
  }
}

template <class K, class V, canopy::detail::onesweep_regime R>
void check_device_class_shape(canopy::context& ctx, dist d, int begin_bit, int end_bit, bool index_values,
                              std::uint64_t seed) {
  check_shape<K, V, canopy::detail::onesweep_default<K, V, R>>(
      ctx, R == canopy::detail::onesweep_regime::bandwidth_bound ? "bandwidth_bound" : "compute_bound", d, begin_bit,
      end_bit, index_values, seed);
}

// A tile shape for the wide-digit runs (check_shape<..., 10>).
template <int Items, int MinBlocks, int Variant>
struct wide_digits {
  static constexpr int items = Items, min_blocks = MinBlocks, variant = Variant;
};

template <class K, class V>
void check_compact_shape(canopy::context& ctx, dist d, int begin_bit, int end_bit, bool index_values, std::uint64_t seed) {
  check_shape<K, V, canopy::detail::onesweep_compact<K, V>>(ctx, "compact", d, begin_bit, end_bit, index_values, seed);
}

}  // namespace

// One test per device class and record type, so that a sanitizer run can take a few of them.
class CudaRadixShapes : public canopy_test::CudaTest {};

#define CANOPY_DEVICE_CLASS_TESTS(Class, regime)                                                          \
  TEST_F(CudaRadixShapes, Class##Keys) {                                                                \
    using canopy::detail::no_value;                                                                      \
    check_device_class_shape<std::uint32_t, no_value, regime>(*ctx_, dist::uniform, 0, 32, false, 7000); \
    check_device_class_shape<std::uint64_t, no_value, regime>(*ctx_, dist::few_unique, 0, 64, false, 7010); \
    /* a digit straddling bit 32: the whole-key kernel */                                                \
    check_device_class_shape<std::uint64_t, no_value, regime>(*ctx_, dist::uniform, 28, 36, false, 7020); \
  }                                                                                                      \
  TEST_F(CudaRadixShapes, Class##U32U32Pairs) {                                                          \
    check_device_class_shape<std::uint32_t, std::uint32_t, regime>(*ctx_, dist::uniform, 0, 32, false, 7030); \
    check_device_class_shape<std::uint32_t, std::uint32_t, regime>(*ctx_, dist::few_unique, 0, 16, true, 7040); \
  }                                                                                                      \
  TEST_F(CudaRadixShapes, Class##WidePairs) {                                                            \
    check_device_class_shape<std::uint32_t, std::uint64_t, regime>(*ctx_, dist::uniform, 0, 24, false, 7050); \
    check_device_class_shape<std::uint64_t, std::uint32_t, regime>(*ctx_, dist::few_unique, 0, 64, false, 7060); \
    check_device_class_shape<std::uint64_t, std::uint32_t, regime>(*ctx_, dist::uniform, 0, 16, true, 7070); \
    check_device_class_shape<std::uint64_t, std::uint64_t, regime>(*ctx_, dist::uniform, 8, 48, true, 7080); \
  }

// Digits of 9 and 10 bits (packed 16-bit counters, several digits per scan thread) on this GPU:
// full keys (10 + 6 x 9 bits), 48 bits (3 x 10 + 2 x 9), windows whose digits straddle bit 32
// (whole-key kernels) or leave the low bits out, constant and few-valued digits (a counter half
// filled by a whole tile), pairs and the index variant.
TEST_F(CudaRadixShapes, WideDigits) {
  using canopy::detail::no_value;
  using u32 = std::uint32_t;
  using u64 = std::uint64_t;
  constexpr int S = canopy::detail::onesweep::variant::stage_values;
  using keys26 = wide_digits<26, 2, 0>;
  using pairs18 = wide_digits<18, 2, 0>;
  using staged16 = wide_digits<16, 2, S>;
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::uniform, 0, 64, false, 7200);
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::uniform, 0, 48, false, 7201);
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::few_unique, 3, 61, false, 7202);
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::low_entropy, 20, 40, false, 7203);
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::uniform, 24, 64, false, 7204);
  check_shape<u64, no_value, keys26, 10>(*ctx_, "wide", dist::all_equal, 0, 64, false, 7205);
  check_shape<u64, u32, pairs18, 10>(*ctx_, "wide", dist::uniform, 0, 64, false, 7210);
  check_shape<u64, u32, pairs18, 10>(*ctx_, "wide", dist::few_unique, 5, 50, true, 7211);
  check_shape<u64, u32, staged16, 10>(*ctx_, "wide", dist::uniform, 0, 48, false, 7212);
  check_shape<u32, u32, wide_digits<16, 2, 0>, 10>(*ctx_, "wide", dist::uniform, 0, 20, false, 7213);
}

CANOPY_DEVICE_CLASS_TESTS(ComputeBound, canopy::detail::onesweep_regime::compute_bound)
CANOPY_DEVICE_CLASS_TESTS(BandwidthBound, canopy::detail::onesweep_regime::bandwidth_bound)
#undef CANOPY_DEVICE_CLASS_TESTS

// The compact shapes (for devices whose shared memory cannot hold a class default) on this GPU.
TEST_F(CudaRadixShapes, CompactFallback) {
  using canopy::detail::no_value;
  check_compact_shape<std::uint32_t, no_value>(*ctx_, dist::uniform, 0, 32, false, 7100);
  check_compact_shape<std::uint64_t, no_value>(*ctx_, dist::few_unique, 0, 64, false, 7110);
  check_compact_shape<std::uint64_t, no_value>(*ctx_, dist::uniform, 28, 36, false, 7120);
  check_compact_shape<std::uint32_t, std::uint32_t>(*ctx_, dist::uniform, 0, 32, false, 7130);
  check_compact_shape<std::uint64_t, std::uint32_t>(*ctx_, dist::uniform, 0, 16, true, 7140);
  check_compact_shape<std::uint64_t, std::uint64_t>(*ctx_, dist::low_entropy, 0, 64, false, 7150);
}
#endif
