// Radix sort entry points: argument checks, buffer choice, explicit instantiations.
#include <canopy/core/detail/radix_engine.cuh>
#include <canopy/core/detail/radix_hybrid.cuh>
#include <canopy/core/radix_sort.hpp>

namespace canopy {

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
detail::hybrid_testing_hooks& detail::hybrid_testing() {
  static hybrid_testing_hooks hooks;
  return hooks;
}
#endif

namespace {

//! The LSD run of `job`, or on CUDA for 8-byte keys over 64-bit windows the hybrid sort
//! (detail/radix_hybrid.cuh), which leaves the result where an LSD run of an even pass count does.
template <class K, class V>
void run_sort(context& ctx, const detail::lsd_job<K, V>& job, const char* function) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
  if constexpr (sizeof(K) == 8) {
    const detail::hybrid_plan plan = detail::plan_hybrid<K, V>(ctx, job.n, job.begin_bit, job.end_bit);
    if (plan.use) {
      detail::hybrid_run_cuda(ctx, job, plan, function);
      return;
    }
  }
#endif
  detail::lsd_run(ctx, job, function);
}

template <class Key>
using bits_t = typename key_traits<Key>::bits_type;

template <class Key>
bool sort_keys_impl(context& ctx, span<Key> keys, span<Key> keys_alt, bool alt_is_scratch, int begin_bit,
                    int end_bit, const char* function) {
  static_assert(is_radix_key<Key>::value, "unsupported key type");
  check_span(keys, ctx.space(), function, "keys");
  detail::check_bit_range(begin_bit, end_bit, int(sizeof(Key) * 8), function);
  if (!alt_is_scratch) {
    check_span(keys_alt, ctx.space(), function, "keys_alt");
    require(keys_alt.size() == keys.size(), function, "keys_alt",
            "length " + std::to_string(keys_alt.size()) + " differs from keys length " + std::to_string(keys.size()));
    require(!detail::overlaps(keys, keys_alt), function, "keys_alt", "overlaps keys");
  }
  const std::size_t n = keys.size();
  if (n <= 1 || begin_bit == end_bit) return false;
  buffer<Key> scratch;
  if (alt_is_scratch) {
    scratch = buffer<Key>(ctx, n);
    keys_alt = scratch.view();
  }
  detail::lsd_job<bits_t<Key>, detail::no_value> job;
  job.keys_in = reinterpret_cast<const bits_t<Key>*>(keys.data());
  job.keys[0] = reinterpret_cast<bits_t<Key>*>(keys.data());
  job.keys[1] = reinterpret_cast<bits_t<Key>*>(keys_alt.data());
  job.n = n;
  job.begin_bit = begin_bit;
  job.end_bit = end_bit;
  job.kind = key_traits<Key>::kind;
  job.first_dst = 1;  // pass 0 never writes over its own input
  run_sort(ctx, job, function);
  const bool in_alt = detail::lsd_passes(begin_bit, end_bit) % 2 == 1;
  if (in_alt && alt_is_scratch) copy(ctx, span<const Key>(keys_alt), keys);
  return in_alt;
}

template <class Key, class Value>
bool sort_pairs_impl(context& ctx, span<Key> keys, span<Key> keys_alt, span<Value> values, span<Value> values_alt,
                     bool alt_is_scratch, int begin_bit, int end_bit, const char* function) {
  static_assert(is_radix_key<Key>::value, "unsupported key type");
  static_assert(sizeof(Value) == 4 || sizeof(Value) == 8, "values of 4 or 8 bytes");
  using V = detail::raw_value_t<Value>;
  check_span(keys, ctx.space(), function, "keys");
  check_span(values, ctx.space(), function, "values");
  require(values.size() == keys.size(), function, "values",
          "length " + std::to_string(values.size()) + " differs from keys length " + std::to_string(keys.size()));
  detail::check_bit_range(begin_bit, end_bit, int(sizeof(Key) * 8), function);
  if (!alt_is_scratch) {
    check_span(keys_alt, ctx.space(), function, "keys_alt");
    check_span(values_alt, ctx.space(), function, "values_alt");
    require(keys_alt.size() == keys.size(), function, "keys_alt",
            "length " + std::to_string(keys_alt.size()) + " differs from keys length " + std::to_string(keys.size()));
    require(values_alt.size() == keys.size(), function, "values_alt",
            "length " + std::to_string(values_alt.size()) + " differs from keys length " +
                std::to_string(keys.size()));
    require(!detail::overlaps(keys, keys_alt), function, "keys_alt", "overlaps keys");
    require(!detail::overlaps(values, values_alt), function, "values_alt", "overlaps values");
    // Every pass writes one key buffer and one value buffer while reading the other pair, so the
    // alternate buffers must not alias the other array's buffers either.
    require(!detail::overlaps(keys, values_alt), function, "values_alt", "overlaps keys");
    require(!detail::overlaps(keys_alt, values), function, "keys_alt", "overlaps values");
    require(!detail::overlaps(keys_alt, values_alt), function, "values_alt", "overlaps keys_alt");
  }
  require(!detail::overlaps(keys, values), function, "values", "overlaps keys");
  const std::size_t n = keys.size();
  if (n <= 1 || begin_bit == end_bit) return false;
  buffer<Key> key_scratch;
  buffer<Value> value_scratch;
  if (alt_is_scratch) {
    key_scratch = buffer<Key>(ctx, n);
    value_scratch = buffer<Value>(ctx, n);
    keys_alt = key_scratch.view();
    values_alt = value_scratch.view();
  }
  detail::lsd_job<bits_t<Key>, V> job;
  job.keys_in = reinterpret_cast<const bits_t<Key>*>(keys.data());
  job.keys[0] = reinterpret_cast<bits_t<Key>*>(keys.data());
  job.keys[1] = reinterpret_cast<bits_t<Key>*>(keys_alt.data());
  job.vals_in = reinterpret_cast<const V*>(values.data());
  job.vals[0] = reinterpret_cast<V*>(values.data());
  job.vals[1] = reinterpret_cast<V*>(values_alt.data());
  job.n = n;
  job.begin_bit = begin_bit;
  job.end_bit = end_bit;
  job.kind = key_traits<Key>::kind;
  job.first_dst = 1;
  run_sort(ctx, job, function);
  const bool in_alt = detail::lsd_passes(begin_bit, end_bit) % 2 == 1;
  if (in_alt && alt_is_scratch) {
    copy(ctx, span<const Key>(keys_alt), keys);
    copy(ctx, span<const Value>(values_alt), values);
  }
  return in_alt;
}

}  // namespace

template <class Key>
void radix_sort_keys(context& ctx, span<Key> keys, int begin_bit, int end_bit) {
  sort_keys_impl(ctx, keys, span<Key>(), true, begin_bit, end_bit, "canopy::radix_sort_keys");
}

template <class Key, class Value>
void radix_sort_pairs(context& ctx, span<Key> keys, span<Value> values, int begin_bit, int end_bit) {
  sort_pairs_impl(ctx, keys, span<Key>(), values, span<Value>(), true, begin_bit, end_bit,
                  "canopy::radix_sort_pairs");
}

template <class Key>
bool radix_sort_keys_double_buffered(context& ctx, span<Key> keys, span<Key> keys_alt, int begin_bit, int end_bit) {
  return sort_keys_impl(ctx, keys, keys_alt, false, begin_bit, end_bit, "canopy::radix_sort_keys_double_buffered");
}

template <class Key, class Value>
bool radix_sort_pairs_double_buffered(context& ctx, span<Key> keys, span<Key> keys_alt, span<Value> values,
                                      span<Value> values_alt, int begin_bit, int end_bit) {
  return sort_pairs_impl(ctx, keys, keys_alt, values, values_alt, false, begin_bit, end_bit,
                         "canopy::radix_sort_pairs_double_buffered");
}

#define CANOPY_RADIX_KEY(K)                                                                           \
  template void radix_sort_keys<K>(context&, span<K>, int, int);                                      \
  template bool radix_sort_keys_double_buffered<K>(context&, span<K>, span<K>, int, int);
#define CANOPY_RADIX_PAIR(K, V)                                                                       \
  template void radix_sort_pairs<K, V>(context&, span<K>, span<V>, int, int);                        \
  template bool radix_sort_pairs_double_buffered<K, V>(context&, span<K>, span<K>, span<V>, span<V>, int, int);
#define CANOPY_RADIX_PAIRS_OF(K)                                                                      \
  CANOPY_RADIX_PAIR(K, std::uint32_t)                                                                 \
  CANOPY_RADIX_PAIR(K, std::int32_t)                                                                  \
  CANOPY_RADIX_PAIR(K, float)                                                                         \
  CANOPY_RADIX_PAIR(K, std::uint64_t)                                                                 \
  CANOPY_RADIX_PAIR(K, std::int64_t)                                                                  \
  CANOPY_RADIX_PAIR(K, double)

CANOPY_RADIX_KEY(std::uint32_t)
CANOPY_RADIX_KEY(std::int32_t)
CANOPY_RADIX_KEY(float)
CANOPY_RADIX_KEY(std::uint64_t)
CANOPY_RADIX_KEY(std::int64_t)
CANOPY_RADIX_KEY(double)
CANOPY_RADIX_PAIRS_OF(std::uint32_t)
CANOPY_RADIX_PAIRS_OF(std::int32_t)
CANOPY_RADIX_PAIRS_OF(float)
CANOPY_RADIX_PAIRS_OF(std::uint64_t)
CANOPY_RADIX_PAIRS_OF(std::int64_t)
CANOPY_RADIX_PAIRS_OF(double)

}  // namespace canopy
