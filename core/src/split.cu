// Split and split-index entry points: argument checks, buffer choice, explicit instantiations.
#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/radix_engine.cuh>
#include <canopy/core/for_each.hpp>
#include <canopy/core/gather.hpp>
#include <canopy/core/split.hpp>

namespace canopy {

namespace {

template <class Key>
using bits_t = typename key_traits<Key>::bits_type;

void check_digit(int bit_offset, int num_bits, int key_bits, const char* function) {
  require(num_bits >= 1 && num_bits <= 8, function, "num_bits",
          "must lie in [1, 8] (at most 256 bins per pass), got " + std::to_string(num_bits));
  require(bit_offset >= 0 && bit_offset + num_bits <= key_bits, function, "bit_offset",
          "digit bits [" + std::to_string(bit_offset) + ", " + std::to_string(bit_offset + num_bits) +
              ") must lie inside the " + std::to_string(key_bits) + "-bit key");
}

struct scatter_from_gather {
  span<const std::uint32_t> gather;
  span<std::uint32_t> scatter;
  CANOPY_HD void operator()(std::size_t i) const { scatter[gather[i]] = std::uint32_t(i); }
};

struct iota_fill {
  span<std::uint32_t> out;
  CANOPY_HD void operator()(std::size_t i) const { out[i] = std::uint32_t(i); }
};

struct widen_categories {
  span<const std::uint8_t> categories;
  span<std::uint32_t> keys;
  CANOPY_HD void operator()(std::size_t i) const { keys[i] = categories[i]; }
};

template <class Key>
void gather_index_impl(context& ctx, span<const Key> keys, span<std::uint32_t> gather_index, int begin_bit,
                       int end_bit, const char* function, const char* index_name) {
  static_assert(is_radix_key<Key>::value, "unsupported key type");
  check_span(keys, ctx.space(), function, "keys");
  check_span(gather_index, ctx.space(), function, index_name);
  // The passes read keys while writing the index (and, with one pass, only the index), so an index
  // aliasing the keys would corrupt the digits still to be read.
  require(!detail::overlaps(keys, gather_index), function, index_name, "overlaps keys");
  detail::check_bit_range(begin_bit, end_bit, int(sizeof(Key) * 8), function);
  require(keys.size() <= 0xffffffffull, function, "keys", "more than 2^32 - 1 keys do not fit a 32-bit index");
  const std::size_t n = keys.size();
  if (n == 0) return;
  const int passes = detail::lsd_passes(begin_bit, end_bit);
  if (passes == 0) {
    for_each(ctx, n, iota_fill{gather_index});
    return;
  }
  // Key buffers: the last pass writes no keys, so one pass needs none and two passes need one.
  buffer<bits_t<Key>> key_buffers(ctx, passes >= 3 ? 2 * n : passes == 2 ? n : 0);
  buffer<std::uint32_t> index_scratch(ctx, passes >= 2 ? n : 0);
  detail::lsd_job<bits_t<Key>, std::uint32_t> job;
  job.keys_in = reinterpret_cast<const bits_t<Key>*>(keys.data());
  job.first_dst = (passes - 1) & 1;  // the last pass writes buffer 0 = gather_index
  // Pass 0 writes key buffer first_dst; with two passes that is the only one used.
  job.keys[job.first_dst] = key_buffers.data();
  job.keys[job.first_dst ^ 1] = passes >= 3 ? key_buffers.data() + n : nullptr;
  job.vals_in = nullptr;
  job.vals[0] = gather_index.data();
  job.vals[1] = index_scratch.data();
  job.n = n;
  job.begin_bit = begin_bit;
  job.end_bit = end_bit;
  job.kind = key_traits<Key>::kind;
  job.keep_keys = false;
  detail::lsd_run(ctx, job, function);
}

}  // namespace

template <class Key>
void split_keys(context& ctx, span<const Key> keys_in, span<Key> keys_out, int bit_offset, int num_bits) {
  constexpr const char* function = "canopy::split_keys";
  static_assert(is_radix_key<Key>::value, "unsupported key type");
  check_span(keys_in, ctx.space(), function, "keys_in");
  check_span(keys_out, ctx.space(), function, "keys_out");
  require(keys_out.size() == keys_in.size(), function, "keys_out",
          "length " + std::to_string(keys_out.size()) + " differs from keys_in length " +
              std::to_string(keys_in.size()));
  require(!detail::overlaps(keys_in, keys_out), function, "keys_out", "overlaps keys_in");
  check_digit(bit_offset, num_bits, int(sizeof(Key) * 8), function);
  detail::lsd_job<bits_t<Key>, detail::no_value> job;
  job.keys_in = reinterpret_cast<const bits_t<Key>*>(keys_in.data());
  job.keys[0] = reinterpret_cast<bits_t<Key>*>(keys_out.data());
  job.n = keys_in.size();
  job.begin_bit = bit_offset;
  job.end_bit = bit_offset + num_bits;
  job.kind = key_traits<Key>::kind;
  detail::lsd_run(ctx, job, function);
}

template <class Key, class Value>
void split_pairs(context& ctx, span<const Key> keys_in, span<Key> keys_out, span<const Value> values_in,
                 span<Value> values_out, int bit_offset, int num_bits) {
  constexpr const char* function = "canopy::split_pairs";
  static_assert(is_radix_key<Key>::value, "unsupported key type");
  static_assert(sizeof(Value) == 4 || sizeof(Value) == 8, "values of 4 or 8 bytes");
  using V = detail::raw_value_t<Value>;
  check_span(keys_in, ctx.space(), function, "keys_in");
  check_span(keys_out, ctx.space(), function, "keys_out");
  check_span(values_in, ctx.space(), function, "values_in");
  check_span(values_out, ctx.space(), function, "values_out");
  const std::string n = std::to_string(keys_in.size());
  require(keys_out.size() == keys_in.size(), function, "keys_out",
          "length " + std::to_string(keys_out.size()) + " differs from keys_in length " + n);
  require(values_in.size() == keys_in.size(), function, "values_in",
          "length " + std::to_string(values_in.size()) + " differs from keys_in length " + n);
  require(values_out.size() == keys_in.size(), function, "values_out",
          "length " + std::to_string(values_out.size()) + " differs from keys_in length " + n);
  require(!detail::overlaps(keys_in, keys_out), function, "keys_out", "overlaps keys_in");
  require(!detail::overlaps(values_in, values_out), function, "values_out", "overlaps values_in");
  require(!detail::overlaps(keys_out, values_out), function, "values_out", "overlaps keys_out");
  check_digit(bit_offset, num_bits, int(sizeof(Key) * 8), function);
  detail::lsd_job<bits_t<Key>, V> job;
  job.keys_in = reinterpret_cast<const bits_t<Key>*>(keys_in.data());
  job.keys[0] = reinterpret_cast<bits_t<Key>*>(keys_out.data());
  job.vals_in = reinterpret_cast<const V*>(values_in.data());
  job.vals[0] = reinterpret_cast<V*>(values_out.data());
  job.n = keys_in.size();
  job.begin_bit = bit_offset;
  job.end_bit = bit_offset + num_bits;
  job.kind = key_traits<Key>::kind;
  detail::lsd_run(ctx, job, function);
}

template <class Key>
void sort_gather_index(context& ctx, span<const Key> keys, span<std::uint32_t> gather_index, int begin_bit,
                       int end_bit) {
  constexpr const char* function = "canopy::sort_gather_index";
  require(gather_index.size() == keys.size(), function, "gather_index",
          "length " + std::to_string(gather_index.size()) + " differs from keys length " +
              std::to_string(keys.size()));
  gather_index_impl(ctx, keys, gather_index, begin_bit, end_bit, function, "gather_index");
}

template <class Key>
void sort_scatter_index(context& ctx, span<const Key> keys, span<std::uint32_t> scatter_index, int begin_bit,
                        int end_bit) {
  constexpr const char* function = "canopy::sort_scatter_index";
  require(scatter_index.size() == keys.size(), function, "scatter_index",
          "length " + std::to_string(scatter_index.size()) + " differs from keys length " +
              std::to_string(keys.size()));
  check_span(scatter_index, ctx.space(), function, "scatter_index");
  // The passes themselves write a private gather buffer, but keys is a read-only input: an index
  // over it would overwrite the caller's keys, so the same rule as sort_gather_index applies.
  require(!detail::overlaps(keys, scatter_index), function, "scatter_index", "overlaps keys");
  buffer<std::uint32_t> gather(ctx, keys.size());
  gather_index_impl(ctx, keys, gather.view(), begin_bit, end_bit, function, "scatter_index");
  for_each(ctx, keys.size(), scatter_from_gather{gather.view(), scatter_index});
}

namespace detail {

void split_records_by_category(context& ctx, span<const std::uint8_t> categories, const std::byte* in,
                               std::byte* out, std::size_t n, std::size_t record_bytes, int num_bins) {
  constexpr const char* function = "canopy::split";
  check_span(categories, ctx.space(), function, "categories");
  require(num_bins >= 1 && num_bins <= 256, function, "num_bins",
          "must lie in [1, 256] (one 8-bit split pass), got " + std::to_string(num_bins));
  require(n <= 0xffffffffull, function, "in", "more than 2^32 - 1 records do not fit a 32-bit index");
  require(!ranges_overlap(in, n * record_bytes, out, n * record_bytes), function, "out", "overlaps in");
  if (n == 0) return;
  buffer<std::uint32_t> keys(ctx, n);
  for_each(ctx, n, widen_categories{categories, keys.view()});
  const auto aligned = [&](std::size_t a) {
    return reinterpret_cast<std::uintptr_t>(in) % a == 0 && reinterpret_cast<std::uintptr_t>(out) % a == 0;
  };
  if (record_bytes == 4 && aligned(4)) {
    lsd_job<std::uint32_t, std::uint32_t> job;
    job.keys_in = keys.data();
    job.vals_in = reinterpret_cast<const std::uint32_t*>(in);
    job.vals[0] = reinterpret_cast<std::uint32_t*>(out);
    job.n = n;
    job.begin_bit = 0;
    job.end_bit = 8;
    job.keep_keys = false;
    lsd_run(ctx, job, function);
  } else if (record_bytes == 8 && aligned(8)) {
    lsd_job<std::uint32_t, std::uint64_t> job;
    job.keys_in = keys.data();
    job.vals_in = reinterpret_cast<const std::uint64_t*>(in);
    job.vals[0] = reinterpret_cast<std::uint64_t*>(out);
    job.n = n;
    job.begin_bit = 0;
    job.end_bit = 8;
    job.keep_keys = false;
    lsd_run(ctx, job, function);
  } else {
    buffer<std::uint32_t> index(ctx, n);
    gather_index_impl(ctx, span<const std::uint32_t>(keys.view()), index.view(), 0, 8, function, "categories");
    gather_records(ctx, span<const std::byte>(in, n * record_bytes, ctx.space()),
                   span<std::byte>(out, n * record_bytes, ctx.space()), record_bytes, index.view());
  }
}

}  // namespace detail

#define CANOPY_SPLIT_KEY(K)                                                                           \
  template void split_keys<K>(context&, span<const K>, span<K>, int, int);                            \
  template void sort_gather_index<K>(context&, span<const K>, span<std::uint32_t>, int, int);         \
  template void sort_scatter_index<K>(context&, span<const K>, span<std::uint32_t>, int, int);
#define CANOPY_SPLIT_PAIR(K, V) \
  template void split_pairs<K, V>(context&, span<const K>, span<K>, span<const V>, span<V>, int, int);
#define CANOPY_SPLIT_PAIRS_OF(K)  \
  CANOPY_SPLIT_PAIR(K, std::uint32_t) \
  CANOPY_SPLIT_PAIR(K, std::int32_t)  \
  CANOPY_SPLIT_PAIR(K, float)         \
  CANOPY_SPLIT_PAIR(K, std::uint64_t) \
  CANOPY_SPLIT_PAIR(K, std::int64_t)  \
  CANOPY_SPLIT_PAIR(K, double)

CANOPY_SPLIT_KEY(std::uint32_t)
CANOPY_SPLIT_KEY(std::int32_t)
CANOPY_SPLIT_KEY(float)
CANOPY_SPLIT_KEY(std::uint64_t)
CANOPY_SPLIT_KEY(std::int64_t)
CANOPY_SPLIT_KEY(double)
CANOPY_SPLIT_PAIRS_OF(std::uint32_t)
CANOPY_SPLIT_PAIRS_OF(std::int32_t)
CANOPY_SPLIT_PAIRS_OF(float)
CANOPY_SPLIT_PAIRS_OF(std::uint64_t)
CANOPY_SPLIT_PAIRS_OF(std::int64_t)
CANOPY_SPLIT_PAIRS_OF(double)

}  // namespace canopy
