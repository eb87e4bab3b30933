// Batched BVH queries: argument checks and dispatch of detail/bvh_query_kernels.hpp.
#include <canopy/core/buffer.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/functional.hpp>
#include <canopy/core/scan.hpp>
#include <canopy/structures/bvh_queries.hpp>
#include <canopy/structures/detail/bvh_query_kernels.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace canopy {

namespace {
void check_view(context& ctx, const bvh_view& bvh, const char* fn) {
  check_span(bvh.nodes, ctx.space(), fn, "bvh.nodes");
  check_span(bvh.primitive_indices, ctx.space(), fn, "bvh.primitive_indices");
  require(bvh.nodes.empty() || bvh.root < bvh.nodes.size(), fn, "bvh.root", "out of range");
}
}  // namespace

void trace_closest(context& ctx, const bvh_view& bvh, span<const vec3> vertices, span<const std::uint32_t> indices,
                   span<const ray> rays, span<hit> hits) {
  const char* fn = "canopy::trace_closest";
  check_view(ctx, bvh, fn);
  check_span(vertices, ctx.space(), fn, "vertices");
  check_span(indices, ctx.space(), fn, "indices");
  check_span(rays, ctx.space(), fn, "rays");
  check_span(hits, ctx.space(), fn, "hits");
  require(hits.size() == rays.size(), fn, "hits",
          "length " + std::to_string(hits.size()) + " differs from rays length " + std::to_string(rays.size()));
  for_each(ctx, rays.size(), detail::trace_closest_functor{bvh, vertices, indices, rays, hits});
}

void trace_any(context& ctx, const bvh_view& bvh, span<const vec3> vertices, span<const std::uint32_t> indices,
               span<const ray> rays, span<std::uint8_t> occluded) {
  const char* fn = "canopy::trace_any";
  check_view(ctx, bvh, fn);
  check_span(vertices, ctx.space(), fn, "vertices");
  check_span(indices, ctx.space(), fn, "indices");
  check_span(rays, ctx.space(), fn, "rays");
  check_span(occluded, ctx.space(), fn, "occluded");
  require(occluded.size() == rays.size(), fn, "occluded",
          "length " + std::to_string(occluded.size()) + " differs from rays length " + std::to_string(rays.size()));
  for_each(ctx, rays.size(), detail::trace_any_functor{bvh, vertices, indices, rays, occluded});
}

namespace detail {

std::uint64_t overlap_offsets_in_place(context& ctx, span<std::uint64_t> counts) {
  if (counts.empty()) return 0;
  canopy::exclusive_scan(ctx, span<const std::uint64_t>(counts), counts, std::uint64_t(0), canopy::plus<std::uint64_t>{});
  std::uint64_t total = 0;
  copy_bytes(ctx, &total, memory_space::host, counts.data() + counts.size() - 1, ctx.space(), sizeof(total));
  ctx.synchronize();
  return total;
}

std::size_t overlap_output_length(std::uint64_t total) {
  constexpr std::uint64_t most = std::numeric_limits<std::size_t>::max() / sizeof(overlap_pair);
  canopy::require(total <= most, "canopy::overlap_pairs", "out",
          std::to_string(total) + " pairs of " + std::to_string(sizeof(overlap_pair)) +
              " bytes do not fit in size_t (at most " + std::to_string(most) + " pairs)");
  return std::size_t(total);
}

}  // namespace detail

std::size_t overlap_pairs(context& ctx, const bvh_view& bvh, span<const aabb> queries, buffer<overlap_pair>& out,
                          bool self) {
  const char* fn = "canopy::overlap_pairs";
  check_view(ctx, bvh, fn);
  check_span(queries, ctx.space(), fn, "queries");
  require(out.owner() == nullptr || out.space() == ctx.space(), fn, "out",
          "buffer is in another memory space than this context's backend needs");
  require(queries.size() < 0xffffffffu, fn, "queries", "at most 2^32 - 2 queries");
  if (out.owner() == nullptr) out = buffer<overlap_pair>(ctx, 0);
  const std::size_t n = queries.size();
  if (n == 0) {
    out.resize_discard(0);
    return 0;
  }
  // One 64-bit array: counts, then (scanned in place) offsets. The last entry starts at 0 so
  // that the exclusive scan leaves the total there.
  buffer<std::uint64_t> offsets(ctx, n + 1);
  detail::fill_bytes(ctx, offsets.data() + n, ctx.space(), 0, sizeof(std::uint64_t));
  for_each(ctx, n, detail::overlap_functor{bvh, queries, self, offsets.view(), {}, nullptr});
  const std::size_t total = detail::overlap_output_length(detail::overlap_offsets_in_place(ctx, offsets.view()));
  out.resize_discard(total);
  if (total) for_each(ctx, n, detail::overlap_functor{bvh, queries, self, {}, offsets.view(), out.data()});
  return total;
}

void knn(context& ctx, const bvh_view& bvh, span<const vec3> points, span<const vec3> queries, int k,
         span<std::uint32_t> out_indices, span<float> out_dist2) {
  const char* fn = "canopy::knn";
  check_view(ctx, bvh, fn);
  check_span(points, ctx.space(), fn, "points");
  check_span(queries, ctx.space(), fn, "queries");
  check_span(out_indices, ctx.space(), fn, "out_indices");
  check_span(out_dist2, ctx.space(), fn, "out_dist2");
  require(k >= 1 && k <= knn_max_k, fn, "k",
          "must be in [1, " + std::to_string(knn_max_k) + "], got " + std::to_string(k));
  require(bvh.primitive_indices.size() == points.size(), fn, "points",
          "holds " + std::to_string(points.size()) + " points, the tree was built over " +
              std::to_string(bvh.primitive_indices.size()));
  const std::size_t need = checked_mul(queries.size(), std::size_t(k), fn, "queries");
  require(out_indices.size() == need, fn, "out_indices",
          "length " + std::to_string(out_indices.size()) + ", needs queries * k = " + std::to_string(need));
  require(out_dist2.size() == need, fn, "out_dist2",
          "length " + std::to_string(out_dist2.size()) + ", needs queries * k = " + std::to_string(need));
  for_each(ctx, queries.size(), detail::knn_functor{bvh, points, queries, k, out_indices, out_dist2});
}

}  // namespace canopy
