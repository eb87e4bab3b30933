// SAT depth of field: the thin-lens CoC, in-focus pixels untouched, uniform images stay uniform,
// blur growing with the aperture, no in-focus leak into blurred regions, soft foreground
// silhouettes, round bokeh, every near_field / far_weighting combination against a box mean, both
// backends agreeing, and argument errors.
#include "common/backends.hpp"

#include <canopy/structures/dof.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using canopy_test::BackendTest;
using canopy_test::expect_error;

namespace {

std::uint32_t rgba(unsigned r, unsigned g, unsigned b, unsigned a = 255) { return r | (g << 8) | (b << 16) | (a << 24); }
unsigned ch(std::uint32_t p, int k) { return (p >> (8 * k)) & 0xffu; }

struct scene {
  int w, h;
  std::vector<std::uint32_t> colour;
  std::vector<float> depth;
};

// Runs apply() on the test's context; returns the output and the CoC read back.
struct result {
  std::vector<std::uint32_t> out;
  std::vector<float> coc;
};

// `shift` > 0 puts colour and depth that many elements into their buffers (spans that are not
// 8-byte aligned for an odd shift).
result run(canopy::context& ctx, const scene& s, const canopy::dof_options& o, std::size_t shift = 0) {
  const std::size_t n = s.colour.size();
  canopy::buffer<std::uint32_t> colour(ctx, n + shift), out(ctx, n);
  canopy::buffer<float> depth(ctx, n + shift);
  std::vector<std::uint32_t> c(shift, 0u);
  std::vector<float> d(shift, 1.0f);
  c.insert(c.end(), s.colour.begin(), s.colour.end());
  d.insert(d.end(), s.depth.begin(), s.depth.end());
  colour.assign(c);
  depth.assign(d);
  canopy::depth_of_field dof(ctx);
  dof.apply(colour.view().subspan(shift, n), depth.view().subspan(shift, n), s.w, s.h, out.view(), o);
  result r;
  r.out = out.to_host();
  r.coc.resize(s.depth.size());
  canopy::copy(ctx, dof.coc(), canopy::host_span(r.coc.data(), r.coc.size()));
  ctx.synchronize();
  return r;
}

// A 135 mm lens: CoCs of tens of pixels even on the small images of these tests.
canopy::dof_options lens(float focus, float f_number, float focal_mm = 135.0f) {
  canopy::dof_options o;
  o.lens.focal_length_mm = focal_mm;
  o.lens.focus_distance_m = focus;
  o.lens.f_number = f_number;
  return o;
}

scene random_scene(int w, int h, std::uint32_t seed, float min_depth) {
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h)};
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      s.colour[i] = rng();
      // Bands of depth: in focus, far, farther, and noise, never below min_depth.
      const int band = (x / 23 + y / 17) % 4;
      s.depth[i] = band == 0 ? 5.0f : band == 1 ? 9.0f : band == 2 ? 40.0f : min_depth + float(rng() % 1000) * 0.05f;
    }
  return s;
}

}  // namespace

TEST(DofLens, ThinLensCocFollowsTheFormula) {
  canopy::thin_lens l;  // 50 mm f/2.8 focused at 5 m, 36 mm sensor
  EXPECT_FLOAT_EQ(canopy::coc_diameter_px(l, 5.0f, 1920), 0.0f);
  // z = 10 m: A f (z - zf) / (z (zf - f)) = (0.05/2.8) * 0.05 * 5 / (10 * 4.95) m on the sensor.
  const double c = (0.05 / 2.8) * 0.05 * 5.0 / (10.0 * 4.95) / 0.036 * 1920.0;
  EXPECT_NEAR(canopy::coc_diameter_px(l, 10.0f, 1920), c, 1e-3 * c);
  EXPECT_LT(canopy::coc_diameter_px(l, 2.0f, 1920), 0.0f) << "near points have negative CoC";
  const float inf = canopy::coc_diameter_px(l, 0.0f, 1920);
  EXPECT_NEAR(inf, (0.05 / 2.8) * 0.05 / 4.95 / 0.036 * 1920.0, 1e-3 * inf);
  EXPECT_LT(canopy::coc_diameter_px(l, 1000.0f, 1920), inf);
  canopy::thin_lens wide = l;
  wide.f_number = 1.4f;
  EXPECT_NEAR(canopy::coc_diameter_px(wide, 10.0f, 1920), 2 * canopy::coc_diameter_px(l, 10.0f, 1920), 1e-3);
}

class DofTest : public BackendTest {};

TEST_P(DofTest, PixelsWithCocUnderHalfAPixelAreUnchanged) {
  // No pixel in front of the focus plane, so no near-field blur can reach anything.
  const scene s = random_scene(301, 157, 1, 5.0f);
  for (auto kernel : {canopy::dof_kernel::box, canopy::dof_kernel::polygon}) {
    auto o = lens(5.0f, 1.4f);
    o.kernel = kernel;
    const result r = run(ctx(), s, o);
    std::size_t checked = 0, changed = 0;
    for (std::size_t i = 0; i < s.colour.size(); ++i) {
      if (std::fabs(r.coc[i]) < 1.0f) {
        ++checked;
        EXPECT_EQ(r.out[i], s.colour[i]) << "pixel " << i << " coc " << r.coc[i];
      } else if (r.out[i] != s.colour[i]) {
        ++changed;
      }
    }
    EXPECT_GT(checked, s.colour.size() / 8) << "the scene must have in-focus pixels";
    EXPECT_GT(changed, s.colour.size() / 4) << "and blurred ones";
  }
}

TEST_P(DofTest, UniformImageStaysUniform) {
  scene s = random_scene(257, 129, 2, 0.5f);  // includes near pixels (0.5 m .. 50 m)
  for (auto& p : s.colour) p = rgba(200, 31, 7, 99);
  for (bool near_field : {true, false})
    for (auto kernel : {canopy::dof_kernel::box, canopy::dof_kernel::polygon}) {
      auto o = lens(5.0f, 1.4f);
      o.kernel = kernel;
      o.near_field = near_field;
      const result r = run(ctx(), s, o);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < r.out.size(); ++i)
        if (r.out[i] != s.colour[i] && bad++ < 3) ADD_FAILURE() << "pixel " << i << ": " << std::hex << r.out[i];
      EXPECT_EQ(bad, 0u);
    }
}

namespace {
// Total variation of the red channel over a far, textured image.
double total_variation(const std::vector<std::uint32_t>& img, int w, int h) {
  double tv = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 1; x < w; ++x) tv += std::fabs(double(ch(img[std::size_t(y) * w + x], 0)) - ch(img[std::size_t(y) * w + x - 1], 0));
  return tv;
}
}  // namespace

TEST_P(DofTest, BlurGrowsWithTheAperture) {
  const int w = 200, h = 120;
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h, 30.0f)};
  std::mt19937 rng(12);
  for (auto& p : s.colour) p = rgba(rng() % 256, 0, 0);  // white noise
  double previous = total_variation(s.colour, w, h);
  // 85 mm focused at 3 m, background at 30 m: CoC diameter 12.4 / N pixels.
  for (float n : {8.0f, 4.0f, 2.0f, 1.0f}) {
    const result r = run(ctx(), s, lens(3.0f, n, 85.0f));
    const double tv = total_variation(r.out, w, h);
    EXPECT_LT(tv, previous * 0.95) << "f/" << n << ", CoC " << r.coc[0];
    previous = tv;
  }
}

namespace {
// Left of `edge`: in focus, red. Right: far and blurred, blue.
scene edge_scene(int w, int h, int edge) {
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      s.colour[i] = x < edge ? rgba(255, 0, 0) : rgba(0, 0, 255);
      s.depth[i] = x < edge ? 2.0f : 60.0f;
    }
  return s;
}
}  // namespace

TEST_P(DofTest, InFocusColourDoesNotLeakIntoTheBlur) {
  const int w = 160, h = 64, edge = 80;
  const scene s = edge_scene(w, h, edge);
  auto o = lens(2.0f, 1.4f);
  const result r = run(ctx(), s, o);
  ASSERT_GT(r.coc[std::size_t(10) * w + w - 1], 20.0f) << "the background must be well blurred";
  unsigned worst_leak = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      if (x < edge) EXPECT_EQ(r.out[i], s.colour[i]) << "in-focus side keeps its colour exactly at " << x;
      else worst_leak = std::max(worst_leak, ch(r.out[i], 0));
    }
  EXPECT_LE(worst_leak, 2u) << "red from the in-focus side leaked into the blurred side (bound: 2/255)";
  // The classic single table (no CoC weights) does leak: the property is not vacuous.
  o.far_weighting = false;
  o.near_field = false;
  const result classic = run(ctx(), s, o);
  unsigned classic_leak = 0;
  for (int y = 0; y < h; ++y) classic_leak = std::max(classic_leak, ch(classic.out[std::size_t(y) * w + edge], 0));
  EXPECT_GT(classic_leak, 60u);
}

TEST_P(DofTest, BlurredForegroundHasASoftSilhouette) {
  // A near square (1 m, green) in front of an in-focus background (5 m, blue).
  const int w = 200, h = 200;
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const bool in = x >= 60 && x < 140 && y >= 60 && y < 140;
      s.colour[std::size_t(y) * w + x] = in ? rgba(0, 255, 0) : rgba(0, 0, 255);
      s.depth[std::size_t(y) * w + x] = in ? 1.0f : 5.0f;
    }
  auto o = lens(5.0f, 1.4f);
  const result r = run(ctx(), s, o);
  const float radius = std::fabs(r.coc[std::size_t(100) * w + 100]) / 2;
  ASSERT_GT(radius, 8.0f);
  // Along the row through the middle, outside the square on its right: green fades out gradually.
  std::vector<unsigned> g;
  for (int x = 140; x < 140 + int(radius); ++x) g.push_back(ch(r.out[std::size_t(100) * w + x], 1));
  EXPECT_GT(g[1], 40u) << "the blurred foreground must spill over its silhouette";
  EXPECT_LT(g[1], 255u);
  for (std::size_t k = 1; k < g.size(); ++k) EXPECT_LE(g[k], g[k - 1]) << "coverage falls off monotonically";
  int partial = 0;
  for (unsigned v : g) partial += v > 5 && v < 250;
  EXPECT_GE(partial, 3) << "a soft edge spans several pixels";
  // Without the near layer the in-focus background stops the blur dead: a hard silhouette.
  o.near_field = false;
  const result hard = run(ctx(), s, o);
  EXPECT_EQ(hard.out[std::size_t(100) * w + 141], s.colour[std::size_t(100) * w + 141]);
}

TEST_P(DofTest, PolygonKernelCutsTheCornersOfTheBox) {
  // One bright point on a dark far background: the blur footprint is the kernel's shape.
  const int w = 81, h = 81;
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h, rgba(0, 0, 0)), std::vector<float>(std::size_t(w) * h, 50.0f)};
  s.colour[std::size_t(40) * w + 40] = rgba(255, 255, 255);
  auto o = lens(1.0f, 1.4f);
  // r = 6: a lone 255 spread over the box's 169 pixels still rounds to a visible 2.
  o.max_radius = 6;
  const result probe = run(ctx(), s, o);
  ASSERT_GE(std::fabs(probe.coc[0]) / 2, 6.0f) << "radius must hit max_radius";
  const int r = 6;
  o.kernel = canopy::dof_kernel::box;
  const result box = run(ctx(), s, o);
  o.kernel = canopy::dof_kernel::polygon;
  const result poly = run(ctx(), s, o);
  const std::size_t corner = std::size_t(40 + r) * w + 40 + r, axis = std::size_t(40) * w + 40 + r;
  EXPECT_GT(ch(box.out[corner], 0), 0u) << "the box reaches its corner";
  EXPECT_EQ(ch(poly.out[corner], 0), 0u) << "the polygon does not";
  EXPECT_GT(ch(poly.out[axis], 0), 0u) << "but reaches along the axis";
  std::size_t lit_box = 0, lit_poly = 0;
  for (std::size_t i = 0; i < box.out.size(); ++i) lit_box += ch(box.out[i], 0) > 0, lit_poly += ch(poly.out[i], 0) > 0;
  EXPECT_EQ(lit_box, std::size_t((2 * r + 1) * (2 * r + 1)));
  // The polygon should cover about as many pixels as a disc of radius r + 1/2 (within 15%).
  EXPECT_NEAR(double(lit_poly), 3.14159 * (r + 0.5) * (r + 0.5), 0.15 * 3.14159 * r * r);
}

namespace {
// Brute-force mean of the box of radius r around every pixel, clipped to the image; alpha kept.
std::vector<std::uint32_t> box_mean(const scene& s, int r) {
  std::vector<std::uint32_t> out(s.colour.size());
  for (int y = 0; y < s.h; ++y)
    for (int x = 0; x < s.w; ++x) {
      double sum[3] = {0, 0, 0};
      int count = 0;
      for (int v = std::max(0, y - r); v <= std::min(s.h - 1, y + r); ++v)
        for (int u = std::max(0, x - r); u <= std::min(s.w - 1, x + r); ++u, ++count)
          for (int k = 0; k < 3; ++k) sum[k] += ch(s.colour[std::size_t(v) * s.w + u], k);
      const std::size_t i = std::size_t(y) * s.w + x;
      out[i] = rgba(unsigned(std::lround(sum[0] / count)), unsigned(std::lround(sum[1] / count)),
                    unsigned(std::lround(sum[2] / count)), ch(s.colour[i], 3));
    }
  return out;
}
}  // namespace

// A textured plane wholly in front of (or behind) the focus plane, every pixel with the same CoC
// and so the same weight: whatever the flags, each pixel must come out as the plain mean of its
// box (no in-focus pixel to exclude, and the near coverage is 1 everywhere). With CoC weights on
// and the near layer off the weights were once 0 for every pixel in front of the focus plane:
// the only table then had no weight there and the near plane came out unblurred.
TEST_P(DofTest, EveryFlagCombinationBlursAUniformDepthPlaneToTheBoxMean) {
  const int w = 97, h = 61, max_radius = 4;
  std::mt19937 rng(4);
  for (const float plane_depth : {0.5f, 60.0f}) {  // focus at 2 m: in front of it, then behind
    scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h, plane_depth)};
    for (auto& p : s.colour) p = rng();
    const std::vector<std::uint32_t> expected = box_mean(s, max_radius);
    for (const bool near_field : {true, false})
      for (const bool far_weighting : {true, false}) {
        auto o = lens(2.0f, 1.4f);
        o.kernel = canopy::dof_kernel::box;
        o.max_radius = max_radius;
        o.near_field = near_field;
        o.far_weighting = far_weighting;
        const result r = run(ctx(), s, o);
        ASSERT_GE(std::fabs(r.coc[0]) / 2, float(max_radius)) << "the radius must be clamped to max_radius";
        ASSERT_EQ(r.coc[0] < 0, plane_depth < 2.0f);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < expected.size(); ++i) {
          bool ok = ch(r.out[i], 3) == ch(expected[i], 3);
          for (int k = 0; k < 3; ++k) ok = ok && std::abs(int(ch(r.out[i], k)) - int(ch(expected[i], k))) <= 1;
          if (!ok && bad++ < 3)
            ADD_FAILURE() << "depth " << plane_depth << " near_field " << near_field << " far_weighting "
                          << far_weighting << ": pixel " << i << " is " << std::hex << r.out[i] << ", box mean "
                          << expected[i] << " (input " << s.colour[i] << ")";
        }
        EXPECT_EQ(bad, 0u) << "depth " << plane_depth << " near_field " << near_field << " far_weighting "
                           << far_weighting;
      }
  }
}

TEST_P(DofTest, NearTilesHoldTheLargestNearRadiusThatReachesThem) {
  // near_tiles() against a brute-force reference from the CoC map read back: a tile's value is the
  // largest near-field radius (CoC < 0, radius capped at max_radius) of any tile whose blur reaches
  // it, i.e. whose closest pixel lies within that radius (Chebyshev), counting only tiles whose
  // largest radius is at least half a pixel. Partial tiles on the right and at the bottom. The
  // scene is in focus at 5 m but for one pixel in 150, at 3 to 4.9 m: radii of about 0.1 to 7.5 px,
  // below the cap of 16, so that each tile's maximum comes from one or two pixels of its own.
  const int w = 301, h = 157;
  scene s{w, h, std::vector<std::uint32_t>(std::size_t(w) * h), std::vector<float>(std::size_t(w) * h, 5.0f)};
  std::mt19937 rng(9);
  for (std::size_t i = 0; i < s.colour.size(); ++i) {
    s.colour[i] = rng();
    if (rng() % 150 == 0) s.depth[i] = 3.0f + float(rng() % 1000) * 0.0019f;
  }
  canopy::buffer<std::uint32_t> colour(ctx(), s.colour.size()), out(ctx(), s.colour.size());
  canopy::buffer<float> depth(ctx(), s.depth.size());
  colour.assign(s.colour);
  depth.assign(s.depth);
  for (int max_radius : {16, 40}) {
    auto o = lens(5.0f, 1.4f);
    o.max_radius = max_radius;
    canopy::depth_of_field dof(ctx());
    dof.apply(colour.view(), depth.view(), w, h, out.view(), o);
    std::vector<float> coc(s.depth.size()), got(dof.near_tiles().size());
    canopy::copy(ctx(), dof.coc(), canopy::host_span(coc.data(), coc.size()));
    canopy::copy(ctx(), dof.near_tiles(), canopy::host_span(got.data(), got.size()));
    ctx().synchronize();
    const int tx = (w + 15) / 16, ty = (h + 15) / 16;
    ASSERT_EQ(dof.tiles_x(), tx);
    ASSERT_EQ(dof.tiles_y(), ty);
    ASSERT_EQ(got.size(), std::size_t(tx) * ty);
    std::vector<float> tile_max(got.size(), 0.f);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const float c = coc[std::size_t(y) * w + x];
        if (c >= 0.f) continue;
        const float r = std::min(0.5f * -c, float(max_radius));
        float& m = tile_max[std::size_t(y / 16) * tx + x / 16];
        m = std::max(m, r);
      }
    std::size_t reached = 0;
    for (int j = 0; j < ty; ++j)
      for (int i = 0; i < tx; ++i) {
        float want = 0.f;
        for (int b = 0; b < ty; ++b)
          for (int a = 0; a < tx; ++a) {
            const float r = tile_max[std::size_t(b) * tx + a];
            if (r < 0.5f) continue;
            const int cheb = std::max(std::abs(a - i), std::abs(b - j));
            const float gap = cheb == 0 ? 0.f : float((cheb - 1) * 16 + 1);
            if (r >= gap) want = std::max(want, r);
          }
        EXPECT_EQ(got[std::size_t(j) * tx + i], want) << "tile " << i << "," << j << " max_radius " << max_radius;
        reached += want > 0.f;
      }
    EXPECT_GT(reached, got.size() / 2) << "the scene must put near blur over most tiles";
    EXPECT_LT(*std::max_element(tile_max.begin(), tile_max.end()), float(std::min(max_radius, 8)))
        << "no radius is capped, so each maximum comes from its own pixels";
  }
}

TEST_P(DofTest, ZeroSizeAndBadArguments) {
  canopy::depth_of_field dof(ctx());
  canopy::buffer<std::uint32_t> c(ctx(), 0), out(ctx(), 0);
  canopy::buffer<float> d(ctx(), 0);
  dof.apply(c.view(), d.view(), 0, 0, out.view(), {});
  dof.apply(c.view(), d.view(), 0, 7, out.view(), {});
  canopy::buffer<std::uint32_t> c6(ctx(), 6), o6(ctx(), 6);
  canopy::buffer<float> d6(ctx(), 6);
  auto expect = [&](canopy::dof_options o, const char* arg, int w = 3, int h = 2) {
    expect_error<canopy::invalid_argument>([&] { dof.apply(c6.view(), d6.view(), w, h, o6.view(), o); },
                                           {"canopy::depth_of_field::apply", arg});
  };
  canopy::dof_options o;
  expect(o, "colour", 4, 2);
  o.max_radius = 65;
  expect(o, "max_radius");
  o = {};
  o.lens.focus_distance_m = 0.01f;
  expect(o, "focus_distance_m");
  o = {};
  o.lens.f_number = 0;
  expect(o, "f_number");
  o = {};
  const canopy::span<std::uint32_t> aliasing(const_cast<std::uint32_t*>(c6.data()), 6, ctx().space());
  expect_error<canopy::invalid_argument>([&] { dof.apply(c6.view(), d6.view(), 3, 2, aliasing, o); },
                                         {"canopy::depth_of_field::apply", "'out'", "alias"});
}

CANOPY_INSTANTIATE_BACKENDS(DofTest);

TEST(CudaDof, MatchesTheHostBackend) {
  std::string why;
  if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  canopy::context cuda(canopy::backend_request::cuda);
  // An odd pixel count (the CUDA backend takes pixels in pairs), and on the second pass inputs
  // one element into their buffers, which the pairs' 8-byte loads must not assume aligned.
  const scene s = random_scene(1023, 769, 9, 0.4f);
  for (std::size_t shift : {0, 1}) {
    for (auto kernel : {canopy::dof_kernel::box, canopy::dof_kernel::polygon}) {
      SCOPED_TRACE("inputs shifted by " + std::to_string(shift));
      auto o = lens(5.0f, 2.0f);
      o.kernel = kernel;
      const result a = run(cuda, s, o, shift);
      const result b = run(canopy_test::host_context(), s, o);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < a.out.size(); ++i)
        for (int k = 0; k < 4; ++k) {
          const int d = int(ch(a.out[i], k)) - int(ch(b.out[i], k));
          if (std::abs(d) > 1 && bad++ < 3) ADD_FAILURE() << "pixel " << i << " channel " << k << ": " << d;
        }
      EXPECT_EQ(bad, 0u) << "same integer tables, float gather may round differently by 1";
    }
  }
}
