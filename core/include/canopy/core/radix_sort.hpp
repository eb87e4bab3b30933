// canopy/core/radix_sort.hpp — stable radix sort of keys and key/value pairs.
//
// Keys are sorted by bits [begin_bit, end_bit) of their ordered-unsigned form (key_traits.hpp):
// integers in numeric order; floats in IEEE-754 total order, -NaN < -inf < ... < -0.0 < +0.0 < ...
// < +inf < +NaN (-0.0 strictly before +0.0; NaNs at the end that matches their sign bit).
// Only the bits in the range decide the order; ties keep their input order (stable), so sorting
// a bit window [b, e) of a key equals a stable sort by ((ordered >> b) & mask).
//
// Passes: ceil((end_bit - begin_bit) / 8) 8-bit splits (split.hpp), so a 48-bit key of a uint64_t
// takes 6 passes. On the CUDA backend each pass is one kernel (Onesweep-style: upfront histogram of
// every pass's digits, decoupled look-back over per-tile digit counts, warp-level match ranking);
// nothing synchronises the stream. Host backend: oneTBB-parallel LSD with the same passes.
//
// 8-byte keys over windows of 57 to 64 bits (8 passes) on CUDA, from 2^22 keys: a hybrid instead
// (detail/radix_hybrid.cuh). A one-block sample places 16 bucket bits just below the highest window
// bit that varies; two LSD passes put the keys in bucket order; each bucket (65536) is then sorted by
// a thread block in shared memory (segmented_sort's merge; for pairs with buckets larger than its
// tile, from about 2^27.7 pairs, an LSD radix kernel). 3 instead of 8 trips through memory: 1.3-1.45x
// CUB on uniform u64 keys where LSD gives 1.08x, 1.43x on u64/u32 pairs (H100,
// docs/performance/sort.md). The result is the same (stable, in the same buffer). Inputs whose buckets would be too large for one block (more
// than 16384 keys: few distinct values, skewed high bits) fall back to the LSD passes without
// synchronising: when the sample sees the skew the bucket passes are skipped (0.96-1.03x CUB from
// 2^24), otherwise the fallback follows them (about 0.75x CUB; measured for buckets just over the
// limit that a sample of one key in 4096 cannot resolve).
// Keys: uint32_t, int32_t, float, uint64_t, int64_t, double. Values: the same six types.
// The CUDA backend handles n < 2^30 elements per call (larger n is refused with invalid_argument).
// CUDA tile shapes follow the device class (docs/performance/sort.md) and must fit the device's
// per-block shared memory (device_info::shared_memory_per_block_optin): where a default does not
// (8-byte keys with 8-byte values take 108 KiB, sm_86/sm_89 allow 99 KiB; sm_75 allows 64 KiB) a
// compact shape of at most 48 KiB runs instead (smaller tiles: slower, more look-back state);
// a device that allows less than that gets canopy::error naming the limit. Builds for sm_70/sm_75
// work (no cp.async there).
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/key_traits.hpp>
#include <canopy/core/span.hpp>

namespace canopy {

//! Sorts keys in place. Temporary memory: n keys, plus on CUDA 0.09 to 0.17 bytes per key per pass
//! of look-back state (1 KiB per tile of 384 x items records: 11520 to 6144 with the default
//! shapes, split.hpp; up to 0.55 with a compact shape) and 1 KiB of digit histogram per pass; the
//! hybrid path adds about 1.6 MiB (bucket offsets, the segmented sort's lists) and holds the
//! state of both its runs.
//! begin_bit/end_bit: 0 ≤ begin_bit ≤ end_bit ≤ key width (else invalid_argument).
template <class Key>
void radix_sort_keys(context& ctx, span<Key> keys, int begin_bit = 0, int end_bit = int(sizeof(Key) * 8));

//! Sorts pairs in place by key; values follow their keys, equal keys keep their input order.
//! keys and values have the same length. Temporary memory: n keys + n values + look-back state.
template <class Key, class Value>
void radix_sort_pairs(context& ctx, span<Key> keys, span<Value> values, int begin_bit = 0,
                      int end_bit = int(sizeof(Key) * 8));

//! Double-buffered sort (like CUB's DoubleBuffer): the input is in `keys`, `keys_alt` (same length,
//! contents overwritten) is the other buffer; the sorted result ends in `keys_alt` when this returns
//! true, else in `keys`. No final copy; temporary memory is only the look-back state (and about
//! 1.6 MiB on the hybrid path, which merges large buckets through `keys_alt`).
template <class Key>
bool radix_sort_keys_double_buffered(context& ctx, span<Key> keys, span<Key> keys_alt, int begin_bit = 0,
                                     int end_bit = int(sizeof(Key) * 8));

//! Double-buffered pair sort: keys and values both end in their `_alt` buffer when this returns
//! true, else in the originals. None of the four spans may overlap another.
template <class Key, class Value>
bool radix_sort_pairs_double_buffered(context& ctx, span<Key> keys, span<Key> keys_alt, span<Value> values,
                                      span<Value> values_alt, int begin_bit = 0,
                                      int end_bit = int(sizeof(Key) * 8));

}  // namespace canopy
