// canopy/core/split.hpp — stable multi-way split and its index variants.
//
// Split distributes records into up to 256 bins by an 8-bit (or narrower) digit, keeping the input
// order inside each bin (stable). Iterating 8-bit splits from the least significant digit up is
// LSD radix sort (radix_sort.hpp); the index variants below do exactly that but return the
// permutation instead of moving records, so that bulky records move once, with gather_records().
//
// Digits and bit ranges refer to a key's ordered-unsigned form (key_traits.hpp), so signed and
// floating-point keys split and sort in their natural order.
//
// Backends: CUDA (one upfront digit histogram, then one kernel per 8-bit pass: warp-level match
// ranking, decoupled look-back over per-tile digit counts, coalesced writes of each digit's run)
// and host (oneTBB: per-chunk histograms, digit-major scan, stable per-chunk scatter).
// None of these functions synchronises the CUDA stream. Temporary memory comes from ctx.resource().
// The CUDA backend handles n < 2^30 elements per call; larger n is refused (invalid_argument).
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/key_traits.hpp>
#include <canopy/core/span.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {

//! Stable split of keys by the digit (ordered_bits(key) >> bit_offset) & ((1 << num_bits) - 1):
//! keys_out holds every key with digit 0 first, then digit 1, ..., each bin in input order.
//! num_bits in [1, 8] (≤ 256 bins per pass); bit_offset + num_bits ≤ key width.
//! keys_in and keys_out must not overlap. O(n) work, one pass over the data on the GPU.
//! Temporary memory (CUDA): 1 KiB of look-back state (256 digit counts) per tile of 384 threads x
//! items per thread: 9984 records (4-byte keys alone), 9216 (4-byte keys and values), 6912 (8-byte keys,
//! 4-byte values) or 6144 (8-byte keys, or 8-byte values), i.e. 0.10 to 0.17 bytes per record, on
//! devices of high bandwidth per SM clock (H200); on lower ones (H100) 11520 (4-byte keys), 8448 (4-byte
//! keys and values) or 9984 (8-byte keys), 0.09 to 0.17 bytes per record; plus
//! 1 KiB of digit histogram and 128 bytes of tile counters. Host: 2 KiB per chunk of at least 64 Ki records.
//! Key: uint32_t, int32_t, float, uint64_t, int64_t, double.
template <class Key>
void split_keys(context& ctx, span<const Key> keys_in, span<Key> keys_out, int bit_offset, int num_bits);

//! split_keys() that moves values with their keys. Value: any type of 4 or 8 bytes among
//! uint32_t, int32_t, float, uint64_t, int64_t, double.
template <class Key, class Value>
void split_pairs(context& ctx, span<const Key> keys_in, span<Key> keys_out, span<const Value> values_in,
                 span<Value> values_out, int bit_offset, int num_bits);

//! Permutation that stably sorts keys by bits [begin_bit, end_bit) of their ordered form, as a
//! gather index: sorted[i] = keys[gather_index[i]]. Iterates 8-bit splits (LSD), so 48-bit keys
//! (uint64_t, end_bit = 48) take 6 passes. begin_bit == end_bit yields the identity.
//! gather_index.size() must equal keys.size() and must not overlap keys; keys is not modified.
//! Temporary memory: two key arrays, one index array, look-back state.
template <class Key>
void sort_gather_index(context& ctx, span<const Key> keys, span<std::uint32_t> gather_index, int begin_bit,
                       int end_bit);

//! The same permutation as a scatter index: sorted[scatter_index[i]] = keys[i] (the rank of key i).
//! scatter_index has keys.size() elements and must not overlap keys.
template <class Key>
void sort_scatter_index(context& ctx, span<const Key> keys, span<std::uint32_t> scatter_index, int begin_bit,
                        int end_bit);

namespace detail {
//! in and out have been checked against ctx.space() by split(); n records of record_bytes each.
void split_records_by_category(context& ctx, span<const std::uint8_t> categories, const std::byte* in,
                               std::byte* out, std::size_t n, std::size_t record_bytes, int num_bins);
}  // namespace detail

//! Stable split of records by an explicit category per record: out holds the records of category
//! 0 first, then 1, ..., each bin in input order. num_bins in [1, 256]; every category should be
//! < num_bins (a larger one is still placed by its value, after the bins below it, on both
//! backends). T is trivially copyable with sizeof(T) a multiple of 4 and at most 256 bytes
//! (records of other sizes than 4 and 8 bytes go through a gather index and gather_records()).
//! in and out must not overlap; categories, in and out have the same length.
template <class T>
void split(context& ctx, span<const std::uint8_t> categories, span<const T> in, span<T> out, int num_bins) {
  static_assert(std::is_trivially_copyable_v<T>, "canopy::split moves trivially copyable records");
  static_assert(sizeof(T) % 4 == 0 && sizeof(T) <= 256, "canopy::split: record size must be a multiple of 4, at most 256");
  require(out.size() == in.size(), "canopy::split", "out",
          "length " + std::to_string(out.size()) + " differs from in length " + std::to_string(in.size()));
  require(categories.size() == in.size(), "canopy::split", "categories",
          "length " + std::to_string(categories.size()) + " differs from in length " + std::to_string(in.size()));
  check_span(out, ctx.space(), "canopy::split", "out");
  check_span(in, ctx.space(), "canopy::split", "in");
  detail::split_records_by_category(ctx, categories, reinterpret_cast<const std::byte*>(in.data()),
                                    reinterpret_cast<std::byte*>(out.data()), in.size(), sizeof(T), num_bins);
}

}  // namespace canopy
