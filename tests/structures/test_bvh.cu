// The BVH builder: structure of every built tree, rays / overlaps / kNN against brute force,
// degenerate and invalid inputs, refit, quality against the host binned-SAH reference, memory
// reuse, stage timings, and agreement of the two backends.
#include "common/backends.hpp"

#include <canopy/structures/binned_sah.hpp>
#include <canopy/structures/bvh.hpp>
#include <canopy/structures/bvh_queries.hpp>
#include <canopy/structures/detail/bvh_query_kernels.hpp>
#include <canopy/structures/scene.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using canopy_test::BackendTest;
using namespace canopy;

namespace {

using canopy_test::expect_error;

// Random triangles of mixed sizes inside [-1, 1]^3 (some long and thin, some tiny).
mesh random_triangles(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pos(-1.0f, 1.0f), size(0.0f, 1.0f);
  mesh m;
  for (std::size_t t = 0; t < n; ++t) {
    const vec3 c{pos(rng), pos(rng), pos(rng)};
    const float s = 0.3f * size(rng) * size(rng) * size(rng) + 1e-4f;
    for (int k = 0; k < 3; ++k) {
      m.vertices.push_back(c + vec3{s * pos(rng), s * pos(rng), s * pos(rng)});
      m.indices.push_back(std::uint32_t(m.vertices.size() - 1));
    }
  }
  return m;
}

// Rays: from outside toward the scene, from inside, axis-parallel (parallel to faces of an
// axis-aligned flat scene), missing, with limited tmax and tmin > 0.
std::vector<ray> random_rays(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<ray> rays(n);
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    ray r;
    switch (i % 5) {
      case 0: {  // from a sphere of radius 3 toward a point in the scene
        const vec3 o{3 * u(rng), 3 * u(rng), 3 * u(rng)};
        const vec3 target{u(rng), u(rng), u(rng)};
        r = ray{o * scale, 0.0f, target - o, inf};
        break;
      }
      case 1:  // from inside, random direction
        r = ray{vec3{u(rng), u(rng), u(rng)} * scale, 0.0f, vec3{u(rng), u(rng), u(rng)}, inf};
        break;
      case 2: {  // axis-parallel
        vec3 d{0, 0, 0};
        const int axis = int(rng() % 3);
        (axis == 0 ? d.x : axis == 1 ? d.y : d.z) = (rng() & 1) ? 1.0f : -1.0f;
        r = ray{vec3{u(rng), u(rng), u(rng)} * scale, 0.0f, d, inf};
        break;
      }
      case 3:  // mostly misses: far away, pointing away
        r = ray{vec3{5 + u(rng), 5 + u(rng), 5 + u(rng)} * scale, 0.0f, vec3{1 + u(rng), 1, 1}, inf};
        break;
      default:  // segment [tmin, tmax] inside the scene
        r = ray{vec3{u(rng), u(rng), u(rng)} * scale, 0.2f * std::fabs(u(rng)), vec3{u(rng), u(rng), u(rng)},
                0.5f + std::fabs(u(rng))};
        break;
    }
    rays[i] = r;
  }
  return rays;
}

hit brute_closest(const mesh& m, const ray& r) {
  return closest_hit_brute_force(host_span(m.vertices.data(), m.vertices.size()),
                                 host_span(m.indices.data(), m.indices.size()), r);
}

struct host_tree {
  std::vector<bvh_node> nodes;
  std::vector<std::uint32_t> parents, prims;
};

host_tree download(const bvh_builder& b) {
  host_tree t;
  const bvh_view v = b.view();
  context& ctx = b.ctx();
  t.nodes.resize(v.nodes.size());
  t.parents.resize(v.parents.size());
  t.prims.resize(v.primitive_indices.size());
  copy(ctx, v.nodes, host_span(t.nodes.data(), t.nodes.size()));
  copy(ctx, v.parents, host_span(t.parents.data(), t.parents.size()));
  copy(ctx, v.primitive_indices, host_span(t.prims.data(), t.prims.size()));
  ctx.synchronize();
  return t;
}

// Every structural invariant of a built tree over primitives with the given boxes (empty box =
// invalid primitive).
void check_structure(const bvh_builder& b, const std::vector<aabb>& prim_boxes) {
  const std::size_t n = prim_boxes.size();
  const host_tree t = download(b);
  ASSERT_EQ(b.primitive_count(), n);
  ASSERT_EQ(t.nodes.size(), n == 0 ? 0 : 2 * n - 1);
  ASSERT_EQ(t.prims.size(), n);
  if (n == 0) return;
  EXPECT_EQ(t.parents[0], bvh_no_parent);
  std::vector<int> seen_node(t.nodes.size(), 0), seen_prim(n, 0), seen_entry(n, 0);
  std::vector<std::uint32_t> stack{0};
  std::size_t leaves = 0;
  while (!stack.empty()) {
    const std::uint32_t x = stack.back();
    stack.pop_back();
    ASSERT_LT(x, t.nodes.size());
    ASSERT_EQ(seen_node[x]++, 0) << "node " << x << " reached twice";
    const bvh_node& node = t.nodes[x];
    if (is_leaf(node)) {
      ++leaves;
      ASSERT_GE(leaf_count(node), 1u);
      for (std::uint32_t k = 0; k < leaf_count(node); ++k) {
        const std::uint32_t e = node.left_or_first + k;
        ASSERT_LT(e, n);
        ++seen_entry[e];
        const std::uint32_t p = t.prims[e];
        ASSERT_LT(p, n);
        ++seen_prim[p];
        EXPECT_TRUE(contains(node.box, prim_boxes[p])) << "leaf " << x << " misses primitive " << p;
        if (leaf_count(node) == 1 && !is_empty(prim_boxes[p])) {
          // == rather than memcmp: fminf may pick either zero of -0.0 / +0.0.
          EXPECT_TRUE(node.box.lo.x == prim_boxes[p].lo.x && node.box.lo.y == prim_boxes[p].lo.y &&
                      node.box.lo.z == prim_boxes[p].lo.z && node.box.hi.x == prim_boxes[p].hi.x &&
                      node.box.hi.y == prim_boxes[p].hi.y && node.box.hi.z == prim_boxes[p].hi.z)
              << "leaf box is not the primitive's";
        }
      }
    } else {
      for (std::uint32_t c : {node.left_or_first, node.right_or_count}) {
        ASSERT_LT(c, t.nodes.size());
        EXPECT_EQ(t.parents[c], x) << "parent link of " << c;
        EXPECT_TRUE(contains(node.box, t.nodes[c].box)) << "node " << x << " does not contain child " << c;
        stack.push_back(c);
      }
    }
  }
  EXPECT_EQ(leaves, n);
  for (std::size_t i = 0; i < t.nodes.size(); ++i) EXPECT_EQ(seen_node[i], 1) << "node " << i << " unreachable";
  for (std::size_t p = 0; p < n; ++p) {
    EXPECT_EQ(seen_prim[p], 1) << "primitive " << p << " in " << seen_prim[p] << " leaves";
    EXPECT_EQ(seen_entry[p], 1);
  }
  const bvh_statistics s = b.statistics();
  EXPECT_LT(s.max_depth, std::size_t(bvh_max_stack));
  std::size_t invalid = 0;
  for (const aabb& box : prim_boxes) invalid += is_empty(box);
  EXPECT_EQ(s.invalid_primitives, invalid);
}

std::vector<aabb> boxes_of(const mesh& m) {
  std::vector<aabb> boxes(m.triangle_count());
  for (std::size_t t = 0; t < boxes.size(); ++t) {
    const std::uint32_t ia = m.indices[3 * t], ib = m.indices[3 * t + 1], ic = m.indices[3 * t + 2];
    if (ia >= m.vertices.size() || ib >= m.vertices.size() || ic >= m.vertices.size()) {
      boxes[t] = empty_aabb();
      continue;
    }
    const vec3 a = m.vertices[ia], b = m.vertices[ib], c = m.vertices[ic];
    boxes[t] = is_finite(a) && is_finite(b) && is_finite(c) ? triangle_aabb(a, b, c) : empty_aabb();
  }
  return boxes;
}

bvh_build_options options_for(int bits, bvh_quality q) {
  bvh_build_options o;
  o.morton_bits = bits;
  o.quality = q;
  return o;
}

class BvhTest : public BackendTest {
 protected:
  // Builds over m and checks that closest and any hits of `rays` equal brute force exactly.
  void check_rays(bvh_builder& b, const device_mesh& dm, const mesh& m, const std::vector<ray>& rays,
                  std::vector<hit>* cache = nullptr) {
    if (cache && cache->empty())
      for (const ray& r : rays) cache->push_back(brute_closest(m, r));
    buffer<ray> dr = upload(rays);
    buffer<hit> dh(ctx(), rays.size());
    buffer<std::uint8_t> docc(ctx(), rays.size());
    trace_closest(ctx(), b.view(), dm.vertices.view(), dm.indices.view(), dr.view(), dh.view());
    trace_any(ctx(), b.view(), dm.vertices.view(), dm.indices.view(), dr.view(), docc.view());
    const std::vector<hit> hits = dh.to_host();
    const std::vector<std::uint8_t> occ = docc.to_host();
    std::size_t hit_count = 0, bad = 0;
    for (std::size_t i = 0; i < rays.size(); ++i) {
      const hit ref = cache ? (*cache)[i] : brute_closest(m, rays[i]);
      hit_count += ref.primitive != no_hit;
      if (hits[i].primitive != ref.primitive || !(hits[i].t == ref.t || (std::isinf(ref.t) && std::isinf(hits[i].t)))) {
        if (++bad < 10)
          ADD_FAILURE() << "ray " << i << ": bvh (" << hits[i].t << ", " << hits[i].primitive << ") vs brute force ("
                        << ref.t << ", " << ref.primitive << ")";
      }
      EXPECT_EQ(occ[i] != 0, ref.primitive != no_hit) << "any-hit of ray " << i;
    }
    EXPECT_EQ(bad, 0u);
    // The ray set must exercise both outcomes, or the comparison proves little.
    if (m.triangle_count() >= 1000 && rays.size() >= 100) {
      EXPECT_GT(hit_count, rays.size() / 20);
      EXPECT_LT(hit_count, rays.size());
    }
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Structure

TEST_P(BvhTest, StructureOfEveryTreeOverAwkwardSizes) {
  for (std::size_t n : {0, 1, 2, 3, 31, 33, 1023, 1025}) {
    const mesh m = random_triangles(n, 7 + std::uint32_t(n));
    const device_mesh dm = canopy::upload(ctx(), m);
    for (int bits : {30, 63}) {
      for (bvh_quality q : {bvh_quality::none, bvh_quality::treelet}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " bits=" + std::to_string(bits) + " q=" + std::to_string(int(q)));
        bvh_builder b(ctx(), options_for(bits, q));
        b.build_triangles(dm.vertices.view(), dm.indices.view());
        check_structure(b, boxes_of(m));
      }
    }
  }
}

TEST_P(BvhTest, AllCentroidsEqual) {
  mesh m;
  const std::size_t n = 1000;
  for (std::size_t t = 0; t < n; ++t) {
    // Box centroid exactly (0.5, 0.25, 0.75) for every triangle (all values dyadic); the first
    // third identical, the rest nested.
    const float s = t < n / 3 ? 0.25f : float(t % 256 + 1) / 1024.0f;
    m.vertices.push_back(vec3{0.5f - s, 0.25f, 0.75f - s});
    m.vertices.push_back(vec3{0.5f + s, 0.25f, 0.75f - s});
    m.vertices.push_back(vec3{0.5f, 0.25f, 0.75f + s});
    for (int k = 0; k < 3; ++k) m.indices.push_back(std::uint32_t(3 * t + k));
  }
  const device_mesh dm = canopy::upload(ctx(), m);
  std::vector<ray> rays = random_rays(500, 3);
  for (std::size_t i = 0; i < 200; ++i)  // aimed at the common centroid, through the stack of triangles
    rays.push_back(ray{rays[i].origin, 0.0f, vec3{0.5f, 0.25f, 0.75f} - rays[i].origin + rays[i].direction * 0.01f,
                       std::numeric_limits<float>::infinity()});
  std::vector<hit> reference;
  for (int bits : {30, 63}) {
    for (bvh_quality q : {bvh_quality::none, bvh_quality::treelet}) {
      bvh_builder b(ctx(), options_for(bits, q));
      b.build_triangles(dm.vertices.view(), dm.indices.view());
      check_structure(b, boxes_of(m));
      // Equal codes split by position: balanced. (The SAH step may then peel the nested
      // triangles off one by one, which is deeper and cheaper.)
      if (q == bvh_quality::none) {
        EXPECT_EQ(b.statistics().max_depth, 10u);
      }
      check_rays(b, dm, m, rays, &reference);
    }
  }
}

TEST_P(BvhTest, PointsAllEqualAndZeroAreaTriangles) {
  // 1025 copies of one point as degenerate triangles (zero area): build, rays never hit.
  mesh m;
  m.vertices.assign(3, vec3{1, 2, 3});
  for (int t = 0; t < 1025; ++t) m.indices.insert(m.indices.end(), {0u, 1u, 2u});
  const device_mesh dm = canopy::upload(ctx(), m);
  bvh_builder b(ctx());
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  check_structure(b, boxes_of(m));
  std::vector<ray> rays = {ray{{1, 2, 0}, 0, {0, 0, 1}, 1e30f}, ray{{0, 0, 0}, 0, {1, 2, 3}, 1e30f}};
  check_rays(b, dm, m, rays);
}

TEST_P(BvhTest, FlatSceneAndRaysParallelToIt) {
  // A 40 x 40 grid of triangles in the plane y = 0.25.
  mesh m;
  const int g = 40;
  for (int i = 0; i <= g; ++i)
    for (int j = 0; j <= g; ++j) m.vertices.push_back(vec3{-1 + 2.0f * i / g, 0.25f, -1 + 2.0f * j / g});
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      const std::uint32_t a = i * (g + 1) + j, b = a + 1, c = a + g + 1, d = c + 1;
      m.indices.insert(m.indices.end(), {a, c, b, b, c, d});
    }
  const device_mesh dm = canopy::upload(ctx(), m);
  bvh_builder b(ctx());
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  check_structure(b, boxes_of(m));
  std::vector<ray> rays = random_rays(1000, 11);
  // Rays in the plane itself, parallel to every face.
  for (int i = 0; i < 50; ++i) rays.push_back(ray{{-2.0f, 0.25f, -1 + 0.04f * i}, 0, {1, 0, 0.01f * i}, 1e30f});
  check_rays(b, dm, m, rays);
}

TEST_P(BvhTest, HugeAndTinyCoordinates) {
  for (float scale : {1e30f, 1e-30f, 3e38f}) {
    mesh m = random_triangles(257, 5);
    for (vec3& v : m.vertices) v = v * scale;
    const device_mesh dm = canopy::upload(ctx(), m);
    for (int bits : {30, 63}) {
      SCOPED_TRACE("scale " + std::to_string(scale));
      bvh_builder b(ctx(), options_for(bits, bvh_quality::treelet));
      b.build_triangles(dm.vertices.view(), dm.indices.view());
      check_structure(b, boxes_of(m));
    }
  }
}

TEST_P(BvhTest, InvalidPrimitivesAreExcludedAndCounted) {
  mesh m = random_triangles(300, 9);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  m.vertices[3 * 10].x = nan;
  m.vertices[3 * 11 + 1].y = inf;
  m.vertices[3 * 12 + 2].z = -inf;
  m.indices[3 * 13 + 1] = std::uint32_t(m.vertices.size() + 5);  // out of range
  const device_mesh dm = canopy::upload(ctx(), m);
  bvh_builder b(ctx());
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  check_structure(b, boxes_of(m));
  EXPECT_EQ(b.statistics().invalid_primitives, 4u);
  std::uint32_t device_count = 0;
  copy(ctx(), b.invalid_primitive_count(), host_span(&device_count, 1));
  ctx().synchronize();
  EXPECT_EQ(device_count, 4u);
  // The root box stays finite: invalid primitives enlarge nothing.
  const host_tree t = download(b);
  EXPECT_TRUE(is_finite(t.nodes[0].box.lo) && is_finite(t.nodes[0].box.hi));
  check_rays(b, dm, m, random_rays(600, 21));
}

TEST_P(BvhTest, IllegalArgumentsAreRefused) {
  bvh_build_options o;
  o.morton_bits = 32;
  expect_error<invalid_argument>([&] { bvh_builder b(ctx(), o); }, {"canopy::bvh_builder", "morton_bits"});
  bvh_builder b(ctx());
  buffer<vec3> v(ctx(), 3);
  buffer<std::uint32_t> idx(ctx(), 4);
  expect_error<invalid_argument>([&] { b.build_triangles(v.view(), idx.view()); },
                                 {"build_triangles", "'indices'", "multiple of 3"});
  expect_error<invalid_argument>([&] { b.refit_triangles(v.view(), idx.view()); }, {"refit_triangles"});
  expect_error<invalid_argument>([&] { b.build_triangles(span<const vec3>(nullptr, 3, ctx().space()), idx.view()); },
                                 {"build_triangles", "'vertices'", "null"});
  if (is_cuda()) {
    std::vector<vec3> host_vertices(3);
    expect_error<invalid_argument>(
        [&] { b.build_points(host_span<const vec3>(host_vertices.data(), 3)); }, {"build_points", "'points'", "host"});
  }
  buffer<vec3> pts(ctx(), 4);
  pts.fill_bytes(0);
  b.build_points(pts.view());
  buffer<std::uint32_t> oi(ctx(), 4);
  buffer<float> od(ctx(), 4);
  expect_error<invalid_argument>([&] { knn(ctx(), b.view(), pts.view(), pts.view(), 0, oi.view(), od.view()); },
                                 {"canopy::knn", "'k'"});
  expect_error<invalid_argument>([&] { knn(ctx(), b.view(), pts.view(), pts.view(), 33, oi.view(), od.view()); },
                                 {"canopy::knn", "'k'"});
  expect_error<invalid_argument>([&] { knn(ctx(), b.view(), pts.view(), pts.view(), 2, oi.view(), od.view()); },
                                 {"canopy::knn", "'out_indices'"});
  expect_error<invalid_argument>([&] { b.refit_points(pts.view().first(3)); }, {"refit_points", "'points'"});
}

// ---------------------------------------------------------------------------------------------
// Rays

TEST_P(BvhTest, ClosestAndAnyHitMatchBruteForce) {
  for (std::size_t n : {1, 2, 33, 2049}) {
    const mesh m = random_triangles(n, 100 + std::uint32_t(n));
    const device_mesh dm = canopy::upload(ctx(), m);
    const std::vector<ray> rays = random_rays(n > 1000 ? 1500 : 400, 1 + std::uint32_t(n));
    std::vector<hit> reference;
    for (int bits : {30, 63}) {
      for (bvh_quality q : {bvh_quality::none, bvh_quality::treelet}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " bits=" + std::to_string(bits) + " q=" + std::to_string(int(q)));
        bvh_builder b(ctx(), options_for(bits, q));
        b.build_triangles(dm.vertices.view(), dm.indices.view());
        check_rays(b, dm, m, rays, &reference);
      }
    }
  }
}

TEST_P(BvhTest, EmptyTreeMissesEverything) {
  bvh_builder b(ctx());
  buffer<vec3> v(ctx(), 0);
  buffer<std::uint32_t> idx(ctx(), 0);
  b.build_triangles(v.view(), idx.view());
  EXPECT_EQ(b.node_count(), 0u);
  EXPECT_TRUE(b.view().empty());
  const std::vector<ray> rays = random_rays(10, 1);
  buffer<ray> dr = upload(rays);
  buffer<hit> dh(ctx(), rays.size());
  trace_closest(ctx(), b.view(), v.view(), idx.view(), dr.view(), dh.view());
  for (const hit& h : dh.to_host()) EXPECT_EQ(h.primitive, no_hit);
  EXPECT_EQ(b.statistics().sah_cost, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Refit, quality, memory, timings

TEST_P(BvhTest, RefitFollowsTheAnimatedMesh) {
  const wave_sphere s = make_wave_sphere(3000);
  device_mesh dm = make_wave_sphere_mesh(ctx(), s);
  bvh_builder b(ctx());
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  animate_wave_sphere(ctx(), s, 1.7f, dm.vertices.view());
  b.refit_triangles(dm.vertices.view(), dm.indices.view());
  mesh m;
  m.vertices = dm.vertices.to_host();
  m.indices = dm.indices.to_host();
  check_structure(b, boxes_of(m));
  std::vector<ray> rays = random_rays(800, 77);
  check_rays(b, dm, m, rays);
  // A refitted tree is never better than a rebuilt one by much; it must stay sane (bounded cost).
  bvh_builder fresh(ctx());
  fresh.build_triangles(dm.vertices.view(), dm.indices.view());
  EXPECT_LT(b.statistics().sah_cost, 3.0 * fresh.statistics().sah_cost);
}

TEST_P(BvhTest, TreeletStepBringsSahWithinTenPercentOfBinnedSah) {
  const wave_sphere s = make_wave_sphere(20000);
  device_mesh dm = make_wave_sphere_mesh(ctx(), s);
  animate_wave_sphere(ctx(), s, 0.5f, dm.vertices.view());
  mesh m;
  m.vertices = dm.vertices.to_host();
  m.indices = dm.indices.to_host();
  const double reference = build_binned_sah(triangle_boxes(m)).sah_cost();
  bvh_builder plain(ctx(), options_for(30, bvh_quality::none));
  plain.build_triangles(dm.vertices.view(), dm.indices.view());
  bvh_builder optimized(ctx(), options_for(30, bvh_quality::treelet));
  optimized.build_triangles(dm.vertices.view(), dm.indices.view());
  check_structure(optimized, boxes_of(m));
  const double lbvh = plain.statistics().sah_cost, treelet = optimized.statistics().sah_cost;
  std::printf("[ sah      ] binned %.2f  lbvh %.2f (%.3fx)  treelet %.2f (%.3fx)\n", reference, lbvh,
              lbvh / reference, treelet, treelet / reference);
  EXPECT_LT(treelet, lbvh);
  EXPECT_LE(treelet, 1.10 * reference);
  // The quality configuration (the defaults before the warp-per-treelet path) as well.
  bvh_build_options o = options_for(30, bvh_quality::treelet);
  o.treelet_leaves = 7, o.treelet_rounds = 2, o.treelet_min_primitives = 16;
  bvh_builder quality(ctx(), o);
  quality.build_triangles(dm.vertices.view(), dm.indices.view());
  check_structure(quality, boxes_of(m));
  const double best = quality.statistics().sah_cost;
  std::printf("[ sah      ] treelet 7 leaves 2 rounds %.2f (%.3fx)\n", best, best / reference);
  EXPECT_LT(best, lbvh);
  EXPECT_LE(best, 1.10 * reference);
}

// Every treelet configuration (leaves 3..7, rounds, thresholds down to 3 primitives, so that
// treelets reach the leaves) gives a valid tree that is never worse than the plain LBVH, on
// random triangles (overlapping, hostile to Morton order) and on clustered duplicates.
TEST_P(BvhTest, TreeletVariantsGiveValidTreesNoWorseThanLbvh) {
  for (std::size_t n : {3, 4, 8, 33, 1025, 4097}) {
    mesh m = random_triangles(n, 91 + std::uint32_t(n));
    if (n > 8)  // a cluster of coincident triangles inside the random ones
      for (std::size_t t = 1; t < n / 3; ++t)
        for (int k = 0; k < 3; ++k) m.indices[3 * t + k] = m.indices[k];
    const device_mesh dm = canopy::upload(ctx(), m);
    bvh_builder plain(ctx(), options_for(30, bvh_quality::none));
    plain.build_triangles(dm.vertices.view(), dm.indices.view());
    const double lbvh = plain.statistics().sah_cost;
    for (int leaves : {3, 4, 5, 6, 7}) {
      for (int rounds : {1, 3}) {
        for (int min_prims : {3, 16}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " leaves=" + std::to_string(leaves) + " rounds=" +
                       std::to_string(rounds) + " min=" + std::to_string(min_prims));
          bvh_build_options o = options_for(30, bvh_quality::treelet);
          o.treelet_leaves = leaves, o.treelet_rounds = rounds, o.treelet_min_primitives = min_prims;
          bvh_builder b(ctx(), o);
          b.build_triangles(dm.vertices.view(), dm.indices.view());
          check_structure(b, boxes_of(m));
          EXPECT_LE(b.statistics().sah_cost, lbvh * (1 + 1e-5));
        }
      }
    }
  }
}

TEST_P(BvhTest, BinnedSahReferenceIsAValidTree) {
  for (std::size_t n : {1, 2, 33, 5000}) {
    const mesh m = random_triangles(n, 3);
    const std::vector<aabb> boxes = triangle_boxes(m);
    const host_bvh ref = build_binned_sah(boxes);
    ASSERT_EQ(ref.nodes.size(), 2 * n - 1);
    std::vector<int> seen(n, 0);
    for (const bvh_node& x : ref.nodes) {
      if (is_leaf(x)) {
        const std::uint32_t p = ref.primitive_indices[x.left_or_first];
        ++seen[p];
        EXPECT_TRUE(contains(x.box, boxes[p]));
      } else {
        EXPECT_TRUE(contains(x.box, ref.nodes[x.left_or_first].box));
        EXPECT_TRUE(contains(x.box, ref.nodes[x.right_or_count].box));
      }
    }
    for (int c : seen) EXPECT_EQ(c, 1);
    // Rays through the reference tree (host traversal) agree with brute force too.
    for (const ray& r : random_rays(200, 8)) {
      const hit h = bvh_trace_closest(ref.view(), host_span<const vec3>(m.vertices.data(), m.vertices.size()),
                                      host_span<const std::uint32_t>(m.indices.data(), m.indices.size()), r);
      EXPECT_EQ(h.primitive, brute_closest(m, r).primitive);
    }
  }
}

TEST_P(BvhTest, RebuildsOfTheSameSizeTakeNoNewMemoryAndRecordStages) {
  const wave_sphere s = make_wave_sphere(5000);
  device_mesh dm = make_wave_sphere_mesh(ctx(), s);
  bvh_builder b(ctx());
  stage_timer timer(ctx());
  timer.begin_frame();
  b.build_triangles(dm.vertices.view(), dm.indices.view(), &timer);
  timer.end_frame();
  const memory_statistics before = ctx().resource().statistics();
  for (int frame = 1; frame < 4; ++frame) {
    animate_wave_sphere(ctx(), s, 0.1f * frame, dm.vertices.view());
    timer.begin_frame();
    b.build_triangles(dm.vertices.view(), dm.indices.view(), &timer);
    b.refit_triangles(dm.vertices.view(), dm.indices.view(), &timer);
    timer.end_frame();
  }
  const memory_statistics after = ctx().resource().statistics();
  EXPECT_EQ(after.upstream_allocations, before.upstream_allocations);
  const frame_timings& t = timer.wait_latest();
  for (const char* stage : {"morton", "sort", "hierarchy", "bounds", "optimize", "refit"}) {
    bool found = false;
    for (const stage_time& st : t.stages) found |= st.name == stage;
    EXPECT_TRUE(found) << "stage " << stage << " not recorded";
  }
  check_structure(b, boxes_of(mesh{dm.vertices.to_host(), dm.indices.to_host()}));
}

// bvh_node_boxes against a host reference: every node's depth from a walk of the downloaded tree,
// and its box as the union of the boxes of the triangles below it, computed here from the mesh
// (not from the tree's boxes). Each written (depth, box) must be one of the reference nodes in the
// depth range, no node written twice.
TEST_P(BvhTest, NodeBoxesByDepth) {
  const mesh m = random_triangles(1025, 4);
  const std::vector<aabb> triangle_boxes = boxes_of(m);
  const device_mesh dm = canopy::upload(ctx(), m);
  bvh_builder b(ctx());
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  const host_tree t = download(b);
  ASSERT_EQ(t.nodes.size(), 2 * triangle_boxes.size() - 1);
  std::vector<std::uint32_t> depth(t.nodes.size(), 0);
  std::vector<aabb> reference(t.nodes.size(), empty_aabb());
  // Depth-first order, then children before parents for the unions.
  std::vector<std::uint32_t> order, stack{0};
  while (!stack.empty()) {
    const std::uint32_t x = stack.back();
    stack.pop_back();
    order.push_back(x);
    const bvh_node& node = t.nodes[x];
    if (is_leaf(node)) {
      for (std::uint32_t k = 0; k < leaf_count(node); ++k)
        reference[x] = merge(reference[x], triangle_boxes[t.prims[node.left_or_first + k]]);
    } else {
      for (std::uint32_t c : {node.left_or_first, node.right_or_count}) depth[c] = depth[x] + 1, stack.push_back(c);
    }
  }
  ASSERT_EQ(order.size(), t.nodes.size());
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (!is_leaf(t.nodes[*it]))
      reference[*it] = merge(reference[t.nodes[*it].left_or_first], reference[t.nodes[*it].right_or_count]);
  const auto key = [](std::uint32_t d, const aabb& x) {
    return std::array<float, 7>{float(d), x.lo.x, x.lo.y, x.lo.z, x.hi.x, x.hi.y, x.hi.z};
  };
  for (const auto& range : {std::pair<std::uint32_t, std::uint32_t>{0, 0}, {2, 5}, {0, 1000}}) {
    const std::uint32_t lo = range.first, hi = range.second;
    std::multiset<std::array<float, 7>> expected;
    for (std::size_t x = 0; x < t.nodes.size(); ++x)
      if (depth[x] >= lo && depth[x] <= hi) expected.insert(key(depth[x], reference[x]));
    for (std::size_t capacity : {expected.size(), expected.size() / 2}) {
      buffer<aabb> boxes(ctx(), capacity);
      buffer<std::uint32_t> depths(ctx(), capacity), count(ctx(), 1);
      bvh_node_boxes(ctx(), b.view(), lo, hi, boxes.view(), depths.view(), count.view());
      EXPECT_EQ(count.to_host()[0], expected.size());
      const std::vector<aabb> got_boxes = boxes.to_host();
      const std::vector<std::uint32_t> got_depths = depths.to_host();
      std::multiset<std::array<float, 7>> unmatched = expected;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < capacity; ++i) {
        const auto found = unmatched.find(key(got_depths[i], got_boxes[i]));
        if (found != unmatched.end()) {
          unmatched.erase(found);
        } else if (bad++ < 3) {
          ADD_FAILURE() << "depths [" << lo << ", " << hi << "], capacity " << capacity << ": entry " << i
                        << " (depth " << got_depths[i] << ") is no node of that depth with that box";
        }
      }
      EXPECT_EQ(bad, 0u);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Overlaps and kNN

TEST_P(BvhTest, OverlapPairsMatchBruteForce) {
  for (std::size_t n : {0, 1, 2, 33, 1025}) {
    std::mt19937 rng(std::uint32_t(n) + 1);
    std::uniform_real_distribution<float> pos(0.0f, 10.0f), size(0.0f, 1.0f);
    std::vector<aabb> boxes(n);
    for (aabb& b : boxes) {
      const vec3 lo{pos(rng), pos(rng), pos(rng)};
      boxes[&b - boxes.data()] = aabb{lo, lo + vec3{size(rng), size(rng), size(rng)}};
    }
    if (n > 5) boxes[3] = boxes[4];              // identical boxes
    if (n > 7) boxes[6].hi.x = boxes[6].lo.x;    // flat box
    buffer<aabb> db = upload(boxes);
    bvh_builder b(ctx());
    b.build_boxes(db.view());
    check_structure(b, boxes);
    for (bool self : {false, true}) {
      buffer<overlap_pair> out;
      const std::size_t count = overlap_pairs(ctx(), b.view(), db.view(), out, self);
      std::set<std::pair<std::uint32_t, std::uint32_t>> got, expected;
      for (const overlap_pair& p : out.to_host()) got.insert({p.query, p.primitive});
      for (std::uint32_t i = 0; i < n; ++i)
        for (std::uint32_t j = self ? i + 1 : 0; j < n; ++j)
          if (overlaps(boxes[i], boxes[j])) expected.insert({i, j});
      EXPECT_EQ(count, expected.size());
      EXPECT_EQ(out.size(), expected.size());
      EXPECT_EQ(got, expected) << "n=" << n << " self=" << self;
    }
  }
}

// overlap_pairs once scanned its per-query counts in 32 bits: past 2^32 pairs the total wrapped,
// `out` came out too short and the fill pass wrote past its end. 2^32 pairs take 32 GiB, so the
// scan step is tested on its own, with counts a query can really have (up to 2^32 - 1) whose sum
// passes 2^32 many times, over more than two tiles of the CUDA scan (4096 8-byte values a tile).
TEST_P(BvhTest, OverlapOffsetsStayExactPastTwoToThe32) {
  const std::uint64_t most_per_query = 0xffffffffull;
  std::vector<std::uint64_t> counts(2 * 4096 + 3);
  std::mt19937 rng(32);
  for (std::uint64_t& c : counts) c = rng() % 3 == 0 ? most_per_query : std::uint64_t(rng());
  counts.back() = 0;  // the slot that receives the total
  std::vector<std::uint64_t> expected(counts.size());
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) expected[i] = running, running += counts[i];
  ASSERT_GT(running, std::uint64_t(1) << 40) << "the sums must pass 2^32 for the test to mean anything";
  buffer<std::uint64_t> d = upload(counts);
  EXPECT_EQ(detail::overlap_offsets_in_place(ctx(), d.view()), running);
  const std::vector<std::uint64_t> got = d.to_host();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i] && bad++ < 3) ADD_FAILURE() << "offset " << i << ": " << got[i] << " != " << expected[i];
  EXPECT_EQ(bad, 0u);
}

TEST(BvhOverlapOutput, LengthRefusesTotalsWhoseBytesSizeTCannotHold) {
  EXPECT_EQ(detail::overlap_output_length(0), 0u);
  EXPECT_EQ(detail::overlap_output_length(std::uint64_t(1) << 32), std::size_t(std::uint64_t(1) << 32));
  const std::uint64_t most = std::numeric_limits<std::size_t>::max() / sizeof(overlap_pair);
  EXPECT_EQ(detail::overlap_output_length(most), std::size_t(most));
  expect_error<invalid_argument>([&] { detail::overlap_output_length(most + 1); },
                                 {"canopy::overlap_pairs", "'out'", "do not fit in size_t"});
  expect_error<invalid_argument>([&] { detail::overlap_output_length(~std::uint64_t(0)); },
                                 {"canopy::overlap_pairs", "'out'"});
}

TEST_P(BvhTest, KnnMatchesBruteForce) {
  for (std::size_t n : {1, 2, 31, 2049}) {
    std::mt19937 rng(std::uint32_t(n) * 3 + 1);
    std::uniform_real_distribution<float> pos(-1.0f, 1.0f);
    std::vector<vec3> points(n), queries(257);
    for (vec3& p : points) p = vec3{pos(rng), pos(rng), pos(rng)};
    // Duplicates and a grid-snapped cluster: equal distances, decided by index.
    for (std::size_t i = 0; i + 1 < n && i < n / 4; i += 2) points[i + 1] = points[i];
    for (std::size_t i = n / 2; i < n && i < n / 2 + 64; ++i) points[i] = vec3{float(i % 4), float(i % 3), 0.0f} * 0.125f;
    if (n > 20) points[17] = vec3{std::numeric_limits<float>::quiet_NaN(), 0, 0};  // excluded
    for (vec3& q : queries) q = vec3{pos(rng), pos(rng), pos(rng)} * 1.2f;
    queries[0] = points[0];
    buffer<vec3> dp = upload(points), dq = upload(queries);
    bvh_builder b(ctx());
    b.build_points(dp.view());
    for (int k : {1, 7, 32}) {
      buffer<std::uint32_t> oi(ctx(), queries.size() * k);
      buffer<float> od(ctx(), queries.size() * k);
      knn(ctx(), b.view(), dp.view(), dq.view(), k, oi.view(), od.view());
      const std::vector<std::uint32_t> gi = oi.to_host();
      const std::vector<float> gd = od.to_host();
      for (std::size_t q = 0; q < queries.size(); ++q) {
        std::vector<std::pair<float, std::uint32_t>> all;
        for (std::uint32_t i = 0; i < n; ++i)
          if (is_finite(points[i])) all.push_back({distance_squared(points[i], queries[q]), i});
        std::sort(all.begin(), all.end());
        for (int j = 0; j < k; ++j) {
          const std::uint32_t want_i = j < int(all.size()) ? all[j].second : no_hit;
          const float want_d = j < int(all.size()) ? all[j].first : std::numeric_limits<float>::infinity();
          ASSERT_EQ(gi[q * k + j], want_i) << "n=" << n << " k=" << k << " query " << q << " rank " << j;
          ASSERT_EQ(gd[q * k + j], want_d);
        }
      }
    }
  }
}

CANOPY_INSTANTIATE_BACKENDS(BvhTest);

// ---------------------------------------------------------------------------------------------
// The two backends agree (GPU only)

TEST(CudaBvh, PlainLbvhIsIdenticalOnBothBackendsAndOptimizedTreesAgree) {
  std::string why;
  if (!cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  context gpu(backend_request::cuda);
  context& cpu = canopy_test::host_context();
  const wave_sphere s = make_wave_sphere(200000);
  device_mesh hm = make_wave_sphere_mesh(cpu, s);
  animate_wave_sphere(cpu, s, 0.3f, hm.vertices.view());
  mesh m{hm.vertices.to_host(), hm.indices.to_host()};
  device_mesh gm = canopy::upload(gpu, m);
  for (int bits : {30, 63}) {
    for (bvh_quality q : {bvh_quality::none, bvh_quality::treelet}) {
      bvh_builder hb(cpu, options_for(bits, q)), gb(gpu, options_for(bits, q));
      hb.build_triangles(hm.vertices.view(), hm.indices.view());
      gb.build_triangles(gm.vertices.view(), gm.indices.view());
      const host_tree ht = download(hb), gt = download(gb);
      EXPECT_EQ(ht.prims, gt.prims) << "sorted order differs, bits " << bits;
      if (q == bvh_quality::none) {
        ASSERT_EQ(ht.nodes.size(), gt.nodes.size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < ht.nodes.size(); ++i) {
          const bvh_node &x = ht.nodes[i], &y = gt.nodes[i];
          differ += !(x.box.lo.x == y.box.lo.x && x.box.lo.y == y.box.lo.y && x.box.lo.z == y.box.lo.z &&
                      x.box.hi.x == y.box.hi.x && x.box.hi.y == y.box.hi.y && x.box.hi.z == y.box.hi.z &&
                      x.left_or_first == y.left_or_first && x.right_or_count == y.right_or_count);
        }
        EXPECT_EQ(differ, 0u) << "nodes differ between backends, bits " << bits;
        EXPECT_EQ(ht.parents, gt.parents);
      }
      check_structure(gb, boxes_of(m));
      const double hs = hb.statistics().sah_cost, gs = gb.statistics().sah_cost;
      EXPECT_NEAR(gs, hs, 1e-3 * hs) << "bits " << bits;
      // Rays: same hits on both backends.
      const std::vector<ray> rays = random_rays(20000, 5);
      buffer<ray> hr(cpu, 0), gr(gpu, 0);
      hr.assign(rays);
      gr.assign(rays);
      buffer<hit> hh(cpu, rays.size()), gh(gpu, rays.size());
      trace_closest(cpu, hb.view(), hm.vertices.view(), hm.indices.view(), hr.view(), hh.view());
      trace_closest(gpu, gb.view(), gm.vertices.view(), gm.indices.view(), gr.view(), gh.view());
      const std::vector<hit> a = hh.to_host(), c = gh.to_host();
      std::size_t differ = 0;
      for (std::size_t i = 0; i < a.size(); ++i) differ += a[i].primitive != c[i].primitive;
      EXPECT_EQ(differ, 0u) << "bits " << bits;
    }
  }
}

TEST(CudaBvh, LargeSceneStructureAndRays) {
  std::string why;
  if (!cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  context gpu(backend_request::cuda);
  const wave_sphere s = make_wave_sphere(std::size_t(1) << 20);
  device_mesh dm = make_wave_sphere_mesh(gpu, s);
  bvh_builder b(gpu);
  for (int frame = 0; frame < 3; ++frame) {
    animate_wave_sphere(gpu, s, 0.25f * frame, dm.vertices.view());
    b.build_triangles(dm.vertices.view(), dm.indices.view());
  }
  mesh m{dm.vertices.to_host(), dm.indices.to_host()};
  check_structure(b, boxes_of(m));
  std::vector<ray> rays = random_rays(300, 19);
  buffer<ray> dr(gpu, 0);
  dr.assign(rays);
  buffer<hit> dh(gpu, rays.size());
  trace_closest(gpu, b.view(), dm.vertices.view(), dm.indices.view(), dr.view(), dh.view());
  const std::vector<hit> hits = dh.to_host();
  for (std::size_t i = 0; i < rays.size(); ++i) {
    const hit ref = brute_closest(m, rays[i]);
    EXPECT_EQ(hits[i].primitive, ref.primitive) << "ray " << i;
  }
}

// The CUDA quality step (a warp per treelet) and the host one (a thread per treelet) make the
// same trees, node for node, over option variants and awkward sizes.
TEST(CudaBvh, TreeletTreesAreIdenticalOnBothBackends) {
  std::string why;
  if (!cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  context gpu(backend_request::cuda);
  context& cpu = canopy_test::host_context();
  for (std::size_t n : {3, 31, 33, 1025, 65537}) {
    const mesh m = random_triangles(n, 5 + std::uint32_t(n));
    const device_mesh hm = canopy::upload(cpu, m), gm = canopy::upload(gpu, m);
    for (const auto& v : std::vector<std::array<int, 3>>{{7, 2, 16}, {7, 3, 3}, {5, 1, 64}, {3, 2, 3}, {6, 1, 4}}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " leaves=" + std::to_string(v[0]) + " rounds=" +
                   std::to_string(v[1]) + " min=" + std::to_string(v[2]));
      bvh_build_options o = options_for(63, bvh_quality::treelet);
      o.treelet_leaves = v[0], o.treelet_rounds = v[1], o.treelet_min_primitives = v[2];
      bvh_builder hb(cpu, o), gb(gpu, o);
      hb.build_triangles(hm.vertices.view(), hm.indices.view());
      gb.build_triangles(gm.vertices.view(), gm.indices.view());
      const host_tree ht = download(hb), gt = download(gb);
      ASSERT_EQ(ht.nodes.size(), gt.nodes.size());
      EXPECT_EQ(ht.prims, gt.prims);
      EXPECT_EQ(ht.parents, gt.parents);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < ht.nodes.size(); ++i)
        differ += std::memcmp(&ht.nodes[i], &gt.nodes[i], sizeof(bvh_node)) != 0;
      EXPECT_EQ(differ, 0u);
      check_structure(gb, boxes_of(m));
    }
  }
}
