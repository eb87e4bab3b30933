// Procedural scenes and camera rays: sizes, topology, animation, and agreement of the backends.
#include "common/backends.hpp"

#include <canopy/structures/scene.hpp>

#include <cmath>
#include <set>

using canopy_test::BackendTest;
using namespace canopy;

class SceneTest : public BackendTest {};

TEST_P(SceneTest, WaveSphereSizesAndTopology) {
  for (std::size_t want : {4, 5, 1000, 33333}) {
    const wave_sphere s = make_wave_sphere(want);
    EXPECT_GE(s.triangle_count(), want);
    EXPECT_LT(s.triangle_count(), want + 2 * std::size_t(s.rings) + 6);  // segments grow one at a time
    device_mesh d = make_wave_sphere_mesh(ctx(), s);
    const std::vector<vec3> v = d.vertices.to_host();
    const std::vector<std::uint32_t> idx = d.indices.to_host();
    ASSERT_EQ(v.size(), s.vertex_count());
    ASSERT_EQ(idx.size(), 3 * s.triangle_count());
    for (std::uint32_t i : idx) ASSERT_LT(i, v.size());
    // Every edge is shared by exactly two triangles (directed once each way), except the zero-length
    // edges along the two pole rings, whose vertices all sit at the pole.
    std::set<std::pair<std::uint32_t, std::uint32_t>> directed;
    std::size_t duplicates = 0;
    for (std::size_t t = 0; t < idx.size(); t += 3)
      for (int k = 0; k < 3; ++k) duplicates += !directed.insert({idx[t + k], idx[t + (k + 1) % 3]}).second;
    EXPECT_EQ(duplicates, 0u);
    auto ring_of = [&](std::uint32_t i) { return i / s.segments; };
    for (const auto& e : directed) {
      const bool pole_edge = ring_of(e.first) == ring_of(e.second) && (ring_of(e.first) == 0 || ring_of(e.first) == s.rings);
      if (!pole_edge) {
        EXPECT_TRUE(directed.count({e.second, e.first})) << "open edge " << e.first << "-" << e.second;
      }
    }
    for (const vec3& p : v) {
      const float r = std::sqrt(length_squared(p));
      EXPECT_NEAR(r, s.radius, s.radius * s.amplitude * 1.0001f);
    }
  }
}

TEST_P(SceneTest, AnimationDeformsAndIsAFunctionOfTime) {
  const wave_sphere s = make_wave_sphere(2000);
  device_mesh d = make_wave_sphere_mesh(ctx(), s);
  const std::vector<vec3> t0 = d.vertices.to_host();
  animate_wave_sphere(ctx(), s, 1.25f, d.vertices.view());
  const std::vector<vec3> t1 = d.vertices.to_host();
  std::size_t moved = 0;
  for (std::size_t i = 0; i < t0.size(); ++i) moved += std::fabs(t0[i].x - t1[i].x) + std::fabs(t0[i].y - t1[i].y) > 1e-4f;
  EXPECT_GT(moved, t0.size() / 2);
  animate_wave_sphere(ctx(), s, 0.0f, d.vertices.view());
  const std::vector<vec3> back = d.vertices.to_host();
  for (std::size_t i = 0; i < t0.size(); ++i) {
    EXPECT_EQ(back[i].x, t0[i].x);
    EXPECT_EQ(back[i].z, t0[i].z);
  }
  // The same function on the host.
  for (std::size_t i = 0; i < t1.size(); i += 97) {
    const vec3 p = wave_sphere_vertex(s, std::uint32_t(i / s.segments), std::uint32_t(i % s.segments), 1.25f);
    EXPECT_NEAR(p.x, t1[i].x, 1e-5f);
    EXPECT_NEAR(p.y, t1[i].y, 1e-5f);
  }
}

TEST_P(SceneTest, PrimaryRaysCoverTheFrustum) {
  pinhole_camera cam{{0, 0, 5}, {0, 0, 0}};
  for (auto [w, h] : {std::pair<std::uint32_t, std::uint32_t>{1, 1}, {33, 17}}) {
    buffer<ray> rays(ctx(), std::size_t(w) * h);
    make_primary_rays(ctx(), cam, w, h, rays.view());
    const std::vector<ray> r = rays.to_host();
    for (const ray& x : r) {
      EXPECT_NEAR(length_squared(x.direction), 1.0f, 1e-5f);
      EXPECT_LT(x.direction.z, 0.0f);
      EXPECT_EQ(x.origin.z, 5.0f);
    }
    if (w > 1) {
      EXPECT_LT(r[0].direction.x, 0.0f);         // top-left pixel looks left and up
      EXPECT_GT(r[0].direction.y, 0.0f);
      EXPECT_GT(r.back().direction.x, 0.0f);
      EXPECT_LT(r.back().direction.y, 0.0f);
    }
  }
  buffer<ray> wrong(ctx(), 5);
  EXPECT_THROW(make_primary_rays(ctx(), cam, 2, 2, wrong.view()), invalid_argument);
  EXPECT_THROW(make_primary_rays(ctx(), pinhole_camera{{0, 0, 0}, {0, 0, 0}}, 1, 1, wrong.view().first(1)),
               invalid_argument);
}

CANOPY_INSTANTIATE_BACKENDS(SceneTest);

TEST(CudaScene, BackendsGenerateTheSameMesh) {
  std::string why;
  if (!cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  context gpu(backend_request::cuda);
  context& cpu = canopy_test::host_context();
  const wave_sphere s = make_wave_sphere(100000);
  device_mesh g = make_wave_sphere_mesh(gpu, s), h = make_wave_sphere_mesh(cpu, s);
  animate_wave_sphere(gpu, s, 2.0f, g.vertices.view());
  animate_wave_sphere(cpu, s, 2.0f, h.vertices.view());
  EXPECT_EQ(g.indices.to_host(), h.indices.to_host());
  const std::vector<vec3> a = g.vertices.to_host(), b = h.vertices.to_host();
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i].x, b[i].x, 1e-5f) << i;
    ASSERT_NEAR(a[i].y, b[i].y, 1e-5f) << i;
    ASSERT_NEAR(a[i].z, b[i].z, 1e-5f) << i;
  }
}
