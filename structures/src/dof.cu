// SAT depth of field: argument checks and the stage sequence; the per-pixel work is in
// detail/dof_functors.cuh, the tables come from build_sat().
#include <canopy/core/for_each.hpp>
#include <canopy/structures/detail/dof_functors.cuh>
#include <canopy/structures/dof.hpp>

#include <cmath>
#include <string>

namespace canopy {

depth_of_field::depth_of_field(context& ctx)
    : ctx_(&ctx), coc_(ctx, 0), far_layer_(ctx, 0), near_layer_(ctx, 0), near_columns_(ctx, 0), near_tiles_(ctx, 0),
      near_dilated_(ctx, 0),
      far_sat_(ctx), near_sat_(ctx) {}

void depth_of_field::apply(span<const std::uint32_t> colour, span<const float> depth, int width, int height,
                           span<std::uint32_t> out, const dof_options& options, stage_timer* timer) {
  constexpr const char* fn = "canopy::depth_of_field::apply";
  context& ctx = *ctx_;
  require(width >= 0, fn, "width", "must be >= 0, got " + std::to_string(width));
  require(height >= 0, fn, "height", "must be >= 0, got " + std::to_string(height));
  const std::size_t n = checked_mul(std::size_t(width), std::size_t(height), fn, "width");
  require(n < (std::size_t(1) << 29), fn, "width", "width * height must be below 2^29");
  require(colour.size() == n, fn, "colour", "has " + std::to_string(colour.size()) + " pixels, expected " + std::to_string(n));
  require(depth.size() == n, fn, "depth", "has " + std::to_string(depth.size()) + " pixels, expected " + std::to_string(n));
  require(out.size() == n, fn, "out", "has " + std::to_string(out.size()) + " pixels, expected " + std::to_string(n));
  require(n == 0 || out.data() != colour.data(), fn, "out", "must not alias colour");
  const thin_lens& L = options.lens;
  require(std::isfinite(L.focal_length_mm) && L.focal_length_mm > 0, fn, "options.lens.focal_length_mm", "must be > 0");
  require(std::isfinite(L.f_number) && L.f_number > 0, fn, "options.lens.f_number", "must be > 0");
  require(std::isfinite(L.sensor_width_mm) && L.sensor_width_mm > 0, fn, "options.lens.sensor_width_mm", "must be > 0");
  require(std::isfinite(L.focus_distance_m) && L.focus_distance_m > L.focal_length_mm * 1e-3f, fn,
          "options.lens.focus_distance_m", "must exceed the focal length");
  require(options.max_radius >= 0 && options.max_radius <= 64, fn, "options.max_radius",
          "must be 0..64 (u32 tables stay exact up to 64), got " + std::to_string(options.max_radius));
  check_span(colour, ctx.space(), fn, "colour");
  check_span(depth, ctx.space(), fn, "depth");
  check_span(out, ctx.space(), fn, "out");
  tiles_x_ = (width + detail::dof::tile - 1) / detail::dof::tile;
  tiles_y_ = (height + detail::dof::tile - 1) / detail::dof::tile;
  if (n == 0) return;

  coc_.resize_discard(n);
  far_layer_.resize_discard(4 * n);
  near_layer_.resize_discard(4 * n);
  const std::size_t tiles = std::size_t(tiles_x_) * std::size_t(tiles_y_);
  near_tiles_.resize_discard(tiles);
  near_dilated_.resize_discard(tiles);

  const auto stage = [&](const char* name) { return timer ? timer->begin(name) : std::size_t(0); };
  const auto done = [&](std::size_t s) { if (timer) timer->end(s); };

  std::size_t s = stage("dof.coc");
  const bool pairs_aligned = reinterpret_cast<std::uintptr_t>(colour.data()) % 8 == 0 &&
                             reinterpret_cast<std::uintptr_t>(depth.data()) % 8 == 0;
  for_each(ctx, (n + 1) / 2,
           detail::dof::coc_and_layers{colour.data(), depth.data(), coc_.data(), far_layer_.data(), near_layer_.data(),
                                       L, width, options.max_radius, options.near_field, options.far_weighting, n,
                                       pairs_aligned});
  done(s);

  if (options.near_field) {
    s = stage("dof.near");
    near_columns_.resize_discard(std::size_t(tiles_y_) * std::size_t(width));
    for_each(ctx, near_columns_.size(),
             detail::dof::near_column_max{coc_.data(), near_columns_.data(), width, height, options.max_radius});
    for_each(ctx, tiles, detail::dof::near_tile_max{near_columns_.data(), near_tiles_.data(), width, tiles_x_});
    const int reach = (options.max_radius + detail::dof::tile - 1) / detail::dof::tile;
    for_each(ctx, tiles,
             detail::dof::near_tile_dilate{near_tiles_.data(), near_dilated_.data(), tiles_x_, tiles_y_, reach});
    done(s);
  }

  s = stage("dof.sat");
  far_sat_.build<std::uint16_t>(far_layer_.view(), width, height, 4);
  if (options.near_field) near_sat_.build<std::uint16_t>(near_layer_.view(), width, height, 4);
  done(s);

  s = stage("dof.filter");
  for_each(ctx, n,
           detail::dof::gather_pixel{colour.data(), coc_.data(), near_dilated_.data(), out.data(), far_sat_.view(),
                                     near_sat_.view(), width, tiles_x_, options.max_radius, options.kernel,
                                     options.near_field});
  done(s);
}

}  // namespace canopy
