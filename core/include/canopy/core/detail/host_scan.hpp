// canopy/core/detail/host_scan.hpp — host (oneTBB) scan engine, the segmented operator shared by
// both backends, and argument checks of the scan/reduce/compact entry points.
//
// Host scans are two-pass over chunks: pass 1 reduces each chunk, a short serial pass turns the
// chunk aggregates into chunk prefixes, pass 2 scans each chunk from its prefix. Each element is
// read before it is written in pass 2, so in == out works. No identity is needed for inclusive scans.
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/detail/overlap.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace canopy {
namespace detail {

//! A value with its "segment starts here or earlier in this range" flag. The segmented operator
//! (Schwartz; Sengupta et al.) is associative when op is:
//!   (fa, a) . (fb, b) = (fa | fb, fb ? b : a op b)
template <class T>
struct flagged_value {
  T value;
  std::uint32_t head;
};

template <class T, class Op>
struct segmented_op {
  Op op;
  CANOPY_HD flagged_value<T> operator()(const flagged_value<T>& a, const flagged_value<T>& b) const {
    return flagged_value<T>{b.head ? b.value : op(a.value, b.value), a.head | b.head};
  }
};

template <class T>
void check_scan_arguments(const context& ctx, const char* fn, span<const T> in, span<T> out) {
  check_span(in, ctx.space(), fn, "in");
  check_span(out, ctx.space(), fn, "out");
  require(in.size() == out.size(), fn, "out",
          "length " + std::to_string(out.size()) + " differs from in length " + std::to_string(in.size()));
  require(in.data() == out.data() || !overlaps(in, out), fn,
          "out", "overlaps in without being the same span (only exact in-place scans are supported)");
}

//! Chunking of [0, n) for the two-pass host algorithms: about 8 chunks per hardware thread so that
//! TBB can balance, and at least 16384 elements per chunk so that small inputs stay serial.
struct host_chunks {
  std::size_t size, count;
  explicit host_chunks(std::size_t n) {
    const std::size_t threads = std::max<std::size_t>(1, tbb::this_task_arena::max_concurrency());
    size = std::max<std::size_t>(16384, (n + threads * 8 - 1) / (threads * 8));
    count = (n + size - 1) / size;
  }
  std::size_t begin(std::size_t c) const { return c * size; }
  std::size_t end(std::size_t c, std::size_t n) const { return std::min(n, (c + 1) * size); }
};

//! Calls body(c) for every chunk c, in parallel when there is more than one.
template <class Body>
void for_each_chunk(std::size_t chunks, const Body& body) {
  if (chunks == 1) {
    body(std::size_t(0));
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t c = r.begin(); c != r.end(); ++c) body(c);
  });
}

//! Generic host scan over values V read by load(i) and combined by op; store(i, inclusive, has_prefix,
//! exclusive) writes element i, where `exclusive` (valid when has_prefix) is the combination of
//! everything before i.
template <class V, class Load, class Op, class Store>
void host_scan_engine(std::size_t n, const Load& load, const Op& op, const Store& store) {
  const host_chunks chunks(n);
  std::vector<V> aggregate(chunks.count);
  if (chunks.count > 1) {
    for_each_chunk(chunks.count - 1, [&](std::size_t c) {  // the last chunk's aggregate is never needed
      V acc = load(chunks.begin(c));
      for (std::size_t i = chunks.begin(c) + 1; i < chunks.end(c, n); ++i) acc = op(acc, load(i));
      aggregate[c] = acc;
    });
    for (std::size_t c = 1; c + 1 < chunks.count; ++c) aggregate[c] = op(aggregate[c - 1], aggregate[c]);
  }
  for_each_chunk(chunks.count, [&](std::size_t c) {
    const std::size_t b = chunks.begin(c), e = chunks.end(c, n);
    bool has = c > 0;
    V running = has ? aggregate[c - 1] : load(b);
    for (std::size_t i = b; i < e; ++i) {
      const V x = load(i);
      if (has) {
        const V prev = running;
        running = op(running, x);
        store(i, running, true, prev);
      } else {
        running = x;
        has = true;
        store(i, running, false, running);
      }
    }
  });
}

template <class T, class Op>
void host_scan(const T* in, T* out, std::size_t n, const std::uint8_t* head_flags, std::size_t segment_length,
               const T* identity, const Op& op) {
  const bool exclusive = identity != nullptr;
  const T id = exclusive ? *identity : T{};
  if (head_flags == nullptr && segment_length == 0) {
    host_scan_engine<T>(
        n, [&](std::size_t i) { return in[i]; }, op,
        [&](std::size_t i, const T& inc, bool has, const T& exc) { out[i] = exclusive ? (has ? exc : id) : inc; });
    return;
  }
  using V = flagged_value<T>;
  const segmented_op<T, Op> sop{op};
  host_scan_engine<V>(
      n,
      [&](std::size_t i) {
        const bool head = head_flags ? head_flags[i] != 0 : i % segment_length == 0;
        return V{in[i], head ? 1u : 0u};
      },
      sop,
      [&](std::size_t i, const V& inc, bool has, const V& exc) {
        if (!exclusive) {
          out[i] = inc.value;
          return;
        }
        // inc.value is final; exc is the running value before i, which a head at i discards.
        const bool head = (head_flags ? head_flags[i] != 0 : i % segment_length == 0) || i == 0;
        out[i] = (head || !has) ? id : exc.value;
      });
}

}  // namespace detail
}  // namespace canopy
