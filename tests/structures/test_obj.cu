// The OBJ loader: small files against hand-counted contents, broken files, and the bunny asset.
#include "common/backends.hpp"

#include <canopy/structures/bvh.hpp>
#include <canopy/structures/obj_loader.hpp>

#include <cstdio>
#include <fstream>
#include <string>

using namespace canopy;

using canopy_test::expect_error;

TEST(Obj, TrianglesQuadsAndNegativeIndices) {
  const std::string text =
      "# a triangle, a quad and a triangle with relative indices\n"
      "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\n"
      "vn 0 0 1\n"
      "f 1 2 3\n"
      "f 1//1 2//1 3//1 4//1\n"
      "f -1 -2 -3\n";
  const mesh m = parse_obj(text, "small.obj");
  ASSERT_EQ(m.vertices.size(), 5u);
  ASSERT_EQ(m.triangle_count(), 4u);
  EXPECT_EQ(m.vertices[4].z, 1.0f);
  for (std::uint32_t i : m.indices) EXPECT_LT(i, 5u);
  // The relative face -1 -2 -3 is vertices 5, 4, 3 (0-based 4, 3, 2).
  EXPECT_EQ(m.indices[9], 4u);
  EXPECT_EQ(m.indices[10], 3u);
  EXPECT_EQ(m.indices[11], 2u);
}

TEST(Obj, BrokenFilesGiveClearErrors) {
  expect_error<canopy::error>([] { load_obj("/nonexistent/dir/missing.obj"); }, {"canopy::load_obj", "missing.obj"});
  expect_error<canopy::error>([] { parse_obj("v 0 0 0\nv 1 0 0\n", "no_faces.obj"); }, {"no_faces.obj: no triangles"});
  // A face referring past the vertex list.
  expect_error<canopy::error>([] { parse_obj("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 9\n", "bad_index.obj"); },
                              {"bad_index.obj"});
  expect_error<canopy::error>([] { parse_obj("", "empty.obj"); }, {"empty.obj"});
}

TEST(Obj, BunnyAssetLoadsAndBuilds) {
  const mesh m = load_obj(asset_path("bunny.obj"));
  EXPECT_EQ(m.vertices.size(), 1839u);
  EXPECT_EQ(m.triangle_count(), 3674u);
  for (const vec3& v : m.vertices) EXPECT_TRUE(is_finite(v));
  canopy::context ctx(canopy::backend_request::host);
  canopy::device_mesh dm = canopy::upload(ctx, m);
  canopy::bvh_builder b(ctx);
  b.build_triangles(dm.vertices.view(), dm.indices.view());
  const bvh_statistics s = b.statistics();
  EXPECT_EQ(s.leaf_count, 3674u);
  EXPECT_EQ(s.invalid_primitives, 0u);
  EXPECT_GT(s.sah_cost, 1.0);
}
