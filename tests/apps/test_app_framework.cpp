// The app framework's pieces that need no GL context: the camera's rays and depth against GLM's
// projection, command-line parsing, and the timing records.
#include <gtest/gtest.h>

#include <canopy/app/camera.hpp>
#include <canopy/app/options.hpp>
#include <canopy/app/timings.hpp>
#include <canopy/core/error.hpp>

#include <glm/glm.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using canopy::app::camera;

// The ray of a continuous pixel position (px right, py down, in pixels), as the viewer's kernel
// builds it from camera_rays (camera.hpp documents the formula).
glm::vec3 ray_point(const canopy::app::camera_rays& r, float px, float py, float t) {
  const float sx = (2.0f * px / float(r.width) - 1.0f) * r.tan_half_fov * r.aspect;
  const float sy = (1.0f - 2.0f * py / float(r.height)) * r.tan_half_fov;
  glm::vec3 p;
  for (int i = 0; i < 3; ++i) p[i] = r.origin[i] + t * (r.forward[i] + sx * r.right[i] + sy * r.up[i]);
  return p;
}

TEST(AppCamera, RaysAndLinearDepthMatchTheRasterProjection) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int sizes[][2] = {{1, 1}, {2, 3}, {31, 33}, {640, 720}, {1023, 17}};
  for (const auto& size : sizes) {
    camera cam;
    cam.frame(glm::vec3(u(rng), u(rng), u(rng)) * 10.0f, 0.5f + 3.0f * std::fabs(u(rng)));
    cam.orbit(3.0f * u(rng), 1.2f * u(rng));
    const int w = size[0], h = size[1];
    const float aspect = float(w) / float(h);
    const glm::mat4 view = cam.view(), proj = cam.projection(aspect);
    const canopy::app::camera_rays rays = cam.rays(w, h);
    int checked = 0;
    for (int k = 0; k < 200; ++k) {
      // A random point in the view volume: random NDC, depth between near and far.
      const glm::vec4 ndc_guess(u(rng) * 0.95f, u(rng) * 0.95f, u(rng) * 0.98f, 1.0f);
      glm::vec4 world = glm::inverse(proj * view) * ndc_guess;
      world /= world.w;
      const glm::vec4 clip = proj * view * world;
      const glm::vec3 ndc = glm::vec3(clip) / clip.w;
      const float window_depth = 0.5f * ndc.z + 0.5f;
      const float view_depth = -(view * world).z;
      // Depth: the raster's window depth maps back to the view-space depth.
      EXPECT_NEAR(cam.linear_depth(window_depth), view_depth, 2e-3f * view_depth) << w << "x" << h;
      // Rays: the pixel position GL rasterises the point at, at t = view depth, is the point.
      const float px = (0.5f * ndc.x + 0.5f) * float(w), py = (0.5f - 0.5f * ndc.y) * float(h);
      const glm::vec3 p = ray_point(rays, px, py, view_depth);
      const float scale = glm::length(glm::vec3(world) - cam.position());
      EXPECT_LT(glm::length(p - glm::vec3(world)), 1e-3f * scale) << w << "x" << h << " point " << k;
      ++checked;
    }
    EXPECT_EQ(checked, 200);
    EXPECT_NEAR(rays.near_depth, cam.near_plane(), 0.0f);
    EXPECT_NEAR(rays.far_depth, cam.far_plane(), 0.0f);
    EXPECT_TRUE(std::isinf(cam.linear_depth(1.0f)));
  }
}

TEST(AppCamera, FrameKeepsTheSceneBetweenTheClipPlanes) {
  for (float radius : {1e-3f, 0.5f, 1.0f, 37.0f, 4096.0f}) {
    camera cam;
    cam.frame(glm::vec3(1.0f, -2.0f, 3.0f), radius);
    const float d = glm::length(cam.position() - glm::vec3(1.0f, -2.0f, 3.0f));
    EXPECT_LT(cam.near_plane(), d - radius) << radius;
    EXPECT_GT(cam.far_plane(), d + radius) << radius;
    EXPECT_GT(cam.near_plane(), 0.0f);
  }
}

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (std::string& a : args) v.push_back(a.data());
  return v;
}

canopy::app::app_options parse(std::vector<std::string> args, const canopy::app::extra_flag_handler& extra = {}) {
  args.insert(args.begin(), "app");
  std::vector<char*> argv = argv_of(args);
  return canopy::app::parse_options(int(argv.size()), argv.data(), "usage", extra);
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const canopy::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(AppOptions, CommonFlags) {
  const auto o = parse({"--headless", "--screenshot", "a.png", "--timings", "t.json", "--width", "33", "--height",
                        "1", "--backend", "host", "--no-ui"});
  EXPECT_TRUE(o.headless);
  EXPECT_EQ(o.frames, 60);  // headless default
  EXPECT_EQ(o.screenshot, "a.png");
  EXPECT_EQ(o.timings, "t.json");
  EXPECT_EQ(o.width, 33);
  EXPECT_EQ(o.height, 1);
  ASSERT_TRUE(o.backend.has_value());
  EXPECT_EQ(*o.backend, canopy::backend_request::host);
  EXPECT_FALSE(o.ui);
  const auto w = parse({"--frames", "7"});
  EXPECT_FALSE(w.headless);
  EXPECT_EQ(w.frames, 7);
  EXPECT_EQ(parse({}).frames, 0);  // windowed: until closed
}

TEST(AppOptions, AppFlagsGoToTheApp) {
  std::string seen;
  const auto o = parse({"--scene", "bunnies", "--headless"}, [&](const std::string& flag, const canopy::app::next_arg& next) {
    if (flag != "--scene") return false;
    seen = next();
    return true;
  });
  EXPECT_EQ(seen, "bunnies");
  EXPECT_TRUE(o.headless);
}

TEST(AppOptions, BadValuesAreRefusedByName) {
  EXPECT_NE(refusal({"--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(refusal({"--frames", "0"}).find("--frames"), std::string::npos);
  EXPECT_NE(refusal({"--frames", "12x"}).find("--frames"), std::string::npos);
  EXPECT_NE(refusal({"--width", "-5"}).find("--width"), std::string::npos);
  EXPECT_NE(refusal({"--height"}).find("--height"), std::string::npos);  // no value
  EXPECT_NE(refusal({"--width", "20000"}).find("--width"), std::string::npos);
  EXPECT_NE(refusal({"--backend", "gpu"}).find("--backend"), std::string::npos);
}

TEST(AppTimings, RecordsSumRepeatedStagesInFirstSeenOrder) {
  canopy::frame_timings t;
  t.frame = 9;
  t.frame_ms = 5.0;
  t.stages = {{"a", 1.0}, {"b", 2.0}, {"a", 0.5}, {"c", 0.25}};
  const canopy::app::frame_record r = canopy::app::make_record(t, 6.0);
  EXPECT_EQ(r.frame, 9u);
  EXPECT_EQ(r.wall_ms, 6.0);
  EXPECT_EQ(r.stream_ms, 5.0);
  ASSERT_EQ(r.stages.size(), 3u);
  EXPECT_EQ(r.stages[0].first, "a");
  EXPECT_EQ(r.stages[0].second, 1.5);
  EXPECT_EQ(r.stages[1].first, "b");
  EXPECT_EQ(r.stages[2].first, "c");
}

TEST(AppTimings, HistoryMeansStagesOverTheFramesThatRanThem) {
  canopy::app::timing_history h(3);
  for (int f = 0; f < 5; ++f) {
    canopy::app::frame_record r;
    r.frame = std::uint64_t(f);
    r.wall_ms = double(f);
    r.stages.emplace_back("every", 2.0 * f);
    if (f % 2 == 0) r.stages.emplace_back("even", 10.0 + f);
    h.push(r);
  }
  // Capacity 3 keeps frames 2, 3, 4.
  EXPECT_EQ(h.size(), 3u);
  EXPECT_DOUBLE_EQ(h.mean("wall"), 3.0);
  EXPECT_DOUBLE_EQ(h.mean("every"), 6.0);
  EXPECT_DOUBLE_EQ(h.mean("even"), 13.0);  // frames 2 and 4 only
  EXPECT_DOUBLE_EQ(h.mean("absent"), 0.0);
  const std::vector<float> s = h.series("even");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1], 0.0f);  // plotted as 0 where absent
}

TEST(AppTimings, LogWritesEveryFrameAndStage) {
  canopy::app::timing_log log;
  for (int f = 0; f < 4; ++f) {
    canopy::app::frame_record r;
    r.frame = std::uint64_t(f);
    r.wall_ms = 1.0 + f;
    r.stages = {{"build \"quoted\"", 0.5}, {"draw", 0.25 * (f + 1)}};
    log.add(r);
  }
  log.set_info("scene", "x");
  const std::string path = ::testing::TempDir() + "canopy_timings_test.json";
  log.write_json(path, "app", "host", "dev", "gl");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::size_t frames = 0;
  for (std::size_t p = 0; (p = text.find("{\"frame\": ", p)) != std::string::npos; ++p) ++frames;
  EXPECT_EQ(frames, 4u);
  EXPECT_NE(text.find("\"build \\\"quoted\\\"\": 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("\"fps\": 400"), std::string::npos) << text;  // mean wall 2.5 ms
  EXPECT_NE(text.find("\"draw\": {\"mean_ms\": 0.625, \"min_ms\": 0.25, \"max_ms\": 1}"), std::string::npos) << text;
  std::remove(path.c_str());
  EXPECT_THROW(log.write_json("/nonexistent-dir/x.json", "app", "host", "dev", "gl"), canopy::error);
}

}  // namespace
