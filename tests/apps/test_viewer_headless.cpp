// Headless runs of canopy-viewer, checked from the files they write.
//
// Each backend's suite runs the viewer twice (a few frames, a small scene and image):
//   A: treelet restructuring on, boxes of depths 0..6 drawn, split layout, screenshot, timings,
//      depth images of both views;
//   B: plain LBVH, boxes hidden, refit mode, screenshot and timings.
// and checks: the screenshots exist and are not one colour; box-palette pixels are present in A
// and absent in B; the ray-cast depth agrees with the raster depth (same camera, same rays) on at
// least 99% of the pixels either covers; every stage appears in every frame of the timings with a
// positive time. The Cuda suite does the same on the CUDA backend, through CUDA-GL interop.
#include <gtest/gtest.h>

#include <canopy/app/palette.hpp>
#include <canopy/core/context.hpp>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#include <stb/stb_image.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Running the viewer

struct run_result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

run_result run_viewer(const std::string& args) {
  const std::string command = std::string(CANOPY_VIEWER_PATH) + " " + args + " 2>&1";
  run_result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string output_dir() {
  ::mkdir(CANOPY_TEST_OUTPUT_DIR, 0755);
  return CANOPY_TEST_OUTPUT_DIR;
}

// ---------------------------------------------------------------------------------------------
// Reading what it wrote

struct image {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;  // 3 bytes per pixel, rows top first
};

image read_png(const std::string& path) {
  image im;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &im.width, &im.height, &channels, 3);
  if (!data) return image{};
  im.rgb.assign(data, data + std::size_t(im.width) * im.height * 3);
  stbi_image_free(data);
  return im;
}

bool is_box_colour(const unsigned char* p) {
  for (const auto& c : canopy::app::box_palette)
    if (p[0] == c[0] && p[1] == c[1] && p[2] == c[2]) return true;
  return false;
}

std::size_t count_box_pixels(const image& im) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < im.rgb.size(); i += 3) n += is_box_colour(&im.rgb[i]) ? 1 : 0;
  return n;
}

std::size_t count_distinct_colours(const image& im) {
  std::set<unsigned> colours;
  for (std::size_t i = 0; i < im.rgb.size(); i += 3)
    colours.insert(unsigned(im.rgb[i]) | unsigned(im.rgb[i + 1]) << 8 | unsigned(im.rgb[i + 2]) << 16);
  return colours.size();
}

// PFM, one channel, little-endian (negative scale), rows bottom first in the file.
std::vector<float> read_pfm(const std::string& path, int& width, int& height) {
  std::ifstream in(path, std::ios::binary);
  std::string magic;
  float scale = 0;
  if (!(in >> magic >> width >> height >> scale) || magic != "Pf" || scale >= 0 || width <= 0 || height <= 0)
    return {};
  in.get();
  std::vector<float> v(std::size_t(width) * height);
  for (int y = height - 1; y >= 0; --y)
    in.read(reinterpret_cast<char*>(&v[std::size_t(y) * width]), std::streamsize(width) * 4);
  return in ? v : std::vector<float>{};
}

// A small JSON reader, enough for the timings file: objects, arrays, strings, numbers, null.
struct json {
  enum kind_t { null_v, number_v, string_v, array_v, object_v } kind = null_v;
  double number = 0;
  std::string text;
  std::vector<json> items;
  std::vector<std::pair<std::string, json>> members;
  const json* get(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

struct json_parser {
  const std::string& s;
  std::size_t i = 0;
  bool ok = true;
  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  std::string parse_string() {
    std::string out;
    if (!eat('"')) {
      ok = false;
      return out;
    }
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i++];
    }
    ok = ok && i < s.size();
    ++i;
    return out;
  }
  json parse() {
    json v;
    skip();
    if (i >= s.size()) {
      ok = false;
    } else if (s[i] == '{') {
      v.kind = json::object_v;
      ++i;
      if (!eat('}')) {
        do {
          std::string key = parse_string();
          if (!eat(':')) ok = false;
          v.members.emplace_back(key, parse());
        } while (ok && eat(','));
        if (!eat('}')) ok = false;
      }
    } else if (s[i] == '[') {
      v.kind = json::array_v;
      ++i;
      if (!eat(']')) {
        do v.items.push_back(parse());
        while (ok && eat(','));
        if (!eat(']')) ok = false;
      }
    } else if (s[i] == '"') {
      v.kind = json::string_v;
      v.text = parse_string();
    } else if (s.compare(i, 4, "null") == 0) {
      i += 4;
    } else {
      v.kind = json::number_v;
      char* end = nullptr;
      v.number = std::strtod(s.c_str() + i, &end);
      if (end == s.c_str() + i) ok = false;
      i = std::size_t(end - s.c_str());
    }
    return v;
  }
};

bool read_json(const std::string& path, json& out) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  json_parser p{text};
  out = p.parse();
  p.skip();
  return p.ok && p.i == text.size() && out.kind == json::object_v;
}

// ---------------------------------------------------------------------------------------------
// The checks, shared by both backends

constexpr int kFrames = 3;
constexpr int kWidth = 192, kHeight = 108;

struct viewer_runs {
  std::string dir, prefix;
  run_result boxes, no_boxes;
};

viewer_runs run_both(const std::string& backend) {
  viewer_runs r;
  r.dir = output_dir();
  r.prefix = r.dir + "/" + backend;
  const std::string common = "--headless --backend " + backend + " --frames " + std::to_string(kFrames) +
                             " --width " + std::to_string(kWidth) + " --height " + std::to_string(kHeight) +
                             " --triangles 3000 --no-ui --layout split --raycast-divisor 1";
  std::remove((r.prefix + "-boxes.png").c_str());
  std::remove((r.prefix + "-boxes.json").c_str());
  std::remove((r.prefix + "-depth-raster.pfm").c_str());
  std::remove((r.prefix + "-depth-raycast.pfm").c_str());
  std::remove((r.prefix + "-plain.png").c_str());
  std::remove((r.prefix + "-plain.json").c_str());
  r.boxes = run_viewer(common + " --treelet --boxes 0:6 --screenshot " + r.prefix + "-boxes.png --timings " + r.prefix +
                       "-boxes.json --depth-dump " + r.prefix + "-depth");
  r.no_boxes = run_viewer(common + " --no-boxes --refit --screenshot " + r.prefix + "-plain.png --timings " +
                          r.prefix + "-plain.json");
  return r;
}

void check_screenshots(const viewer_runs& r) {
  ASSERT_EQ(r.boxes.exit_code, 0) << r.boxes.output;
  ASSERT_EQ(r.no_boxes.exit_code, 0) << r.no_boxes.output;
  const image with = read_png(r.prefix + "-boxes.png");
  const image without = read_png(r.prefix + "-plain.png");
  ASSERT_EQ(with.width, kWidth) << "screenshot with boxes missing or wrong size";
  ASSERT_EQ(with.height, kHeight);
  ASSERT_EQ(without.width, kWidth) << "screenshot without boxes missing or wrong size";
  ASSERT_EQ(without.height, kHeight);
  // Background, shaded mesh (many grey levels) and boxes: far more than one colour.
  EXPECT_GT(count_distinct_colours(with), 16u);
  EXPECT_GT(count_distinct_colours(without), 16u);
  // Depths 0..6 are up to 127 boxes around the whole scene: their edges cover many pixels.
  const std::size_t box_pixels = count_box_pixels(with);
  EXPECT_GT(box_pixels, std::size_t(kWidth + kHeight)) << "too few pixels in the box colours";
  EXPECT_EQ(count_box_pixels(without), 0u) << "box colours present with boxes hidden";
}

void check_depth_agreement(const viewer_runs& r) {
  ASSERT_EQ(r.boxes.exit_code, 0) << r.boxes.output;
  int rw = 0, rh = 0, cw = 0, ch = 0;
  const std::vector<float> raster = read_pfm(r.prefix + "-depth-raster.pfm", rw, rh);
  const std::vector<float> cast = read_pfm(r.prefix + "-depth-raycast.pfm", cw, ch);
  ASSERT_FALSE(raster.empty()) << "raster depth image missing";
  ASSERT_FALSE(cast.empty()) << "ray-cast depth image missing";
  ASSERT_EQ(rw, cw);
  ASSERT_EQ(rh, ch);
  ASSERT_EQ(rw, kWidth / 2);
  ASSERT_EQ(rh, kHeight);
  std::size_t covered = 0, agree = 0, max_report = 5;
  for (std::size_t i = 0; i < raster.size(); ++i) {
    const bool a = std::isfinite(raster[i]), b = std::isfinite(cast[i]);
    if (!a && !b) continue;
    ++covered;
    // 32-bit float depth buffer over [near, far]: relative error far below 1e-3 of the depth.
    if (a && b && std::fabs(raster[i] - cast[i]) <= 2e-3f * std::fmax(raster[i], cast[i])) {
      ++agree;
    } else if (max_report) {
      --max_report;
      std::printf("  pixel (%zu, %zu): raster %g, ray-cast %g\n", i % std::size_t(rw), i / std::size_t(rw),
                  double(raster[i]), double(cast[i]));
    }
  }
  // The scene fills a good part of the view.
  EXPECT_GT(covered, raster.size() / 10) << "scene covers too little of the image";
  EXPECT_GE(double(agree), 0.99 * double(covered)) << agree << " of " << covered << " covered pixels agree";
}

void check_timings(const std::string& path, const run_result& run, const std::vector<std::string>& stages) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  json doc;
  ASSERT_TRUE(read_json(path, doc)) << "timings missing or not valid JSON: " << path;
  const json* frames = doc.get("frames");
  ASSERT_TRUE(frames && frames->kind == json::array_v);
  ASSERT_EQ(frames->items.size(), std::size_t(kFrames));
  for (const json& f : frames->items) {
    const json* wall = f.get("wall_ms");
    ASSERT_TRUE(wall && wall->kind == json::number_v);
    EXPECT_GT(wall->number, 0.0);
    const json* st = f.get("stages");
    ASSERT_TRUE(st && st->kind == json::object_v);
    for (const std::string& name : stages) {
      const json* ms = st->get(name);
      ASSERT_TRUE(ms != nullptr) << "stage '" << name << "' missing from a frame of " << path;
      ASSERT_EQ(ms->kind, json::number_v) << name;
      EXPECT_GT(ms->number, 0.0) << "stage '" << name << "'";
    }
  }
  const json* summary = doc.get("summary");
  ASSERT_TRUE(summary && summary->get("fps") && summary->get("fps")->number > 0);
}

// Outer stages of the viewer, and the builder's own (bvh.hpp) inside "bvh"; run A has treelets on.
const std::vector<std::string> kBuildStages = {"animate", "bvh", "morton", "sort", "hierarchy", "bounds",
                                               "optimize", "boxes", "raycast", "to GL", "raster (GL)"};
// Refit run with boxes hidden: the first frame builds, the later ones refit.
const std::vector<std::string> kRefitStages = {"animate", "bvh", "raycast", "to GL", "raster (GL)"};

// One run pair per backend, shared by that backend's tests.
std::map<std::string, std::unique_ptr<viewer_runs>>& runs() {
  static std::map<std::string, std::unique_ptr<viewer_runs>> r;
  return r;
}
const viewer_runs& runs_for(const char* backend) {
  auto& r = runs()[backend];
  if (!r) r = std::make_unique<viewer_runs>(run_both(backend));
  return *r;
}

// ---------------------------------------------------------------------------------------------
// Host backend (Mesa EGL in CI)

TEST(ViewerHeadless, ScreenshotsShowBoxesOnlyWhenDrawn) { check_screenshots(runs_for("host")); }
TEST(ViewerHeadless, RayCastDepthMatchesRasterDepth) { check_depth_agreement(runs_for("host")); }
TEST(ViewerHeadless, TimingsHoldEveryStage) {
  const viewer_runs& r = runs_for("host");
  check_timings(r.prefix + "-boxes.json", r.boxes, kBuildStages);
  check_timings(r.prefix + "-plain.json", r.no_boxes, kRefitStages);
}
TEST(ViewerHeadless, RefitFramesAreTimedAsRefit) {
  const viewer_runs& r = runs_for("host");
  json doc;
  ASSERT_TRUE(read_json(r.prefix + "-plain.json", doc));
  const json* frames = doc.get("frames");
  ASSERT_TRUE(frames && frames->items.size() == std::size_t(kFrames));
  // Frame 0 builds (morton present), frames 1.. refit (refit present, no morton).
  EXPECT_TRUE(frames->items[0].get("stages")->get("morton"));
  for (std::size_t f = 1; f < frames->items.size(); ++f) {
    EXPECT_TRUE(frames->items[f].get("stages")->get("refit")) << "frame " << f;
    EXPECT_FALSE(frames->items[f].get("stages")->get("morton")) << "frame " << f;
  }
}
TEST(ViewerHeadless, BadFlagsAreRefusedByName) {
  const run_result unknown = run_viewer("--headless --frobnicate");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("--frobnicate"), std::string::npos) << unknown.output;
  const run_result frames = run_viewer("--headless --frames -3");
  EXPECT_NE(frames.exit_code, 0);
  EXPECT_NE(frames.output.find("--frames"), std::string::npos) << frames.output;
  const run_result boxes = run_viewer("--headless --boxes 5:2");
  EXPECT_NE(boxes.exit_code, 0);
  EXPECT_NE(boxes.output.find("--boxes"), std::string::npos) << boxes.output;
}

// ---------------------------------------------------------------------------------------------
// CUDA backend with CUDA-GL interop (NVIDIA EGL device)

class CudaViewerHeadless : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  }
};

TEST_F(CudaViewerHeadless, ScreenshotsShowBoxesOnlyWhenDrawn) { check_screenshots(runs_for("cuda")); }
TEST_F(CudaViewerHeadless, RayCastDepthMatchesRasterDepth) { check_depth_agreement(runs_for("cuda")); }
TEST_F(CudaViewerHeadless, TimingsHoldEveryStage) {
  const viewer_runs& r = runs_for("cuda");
  check_timings(r.prefix + "-boxes.json", r.boxes, kBuildStages);
  check_timings(r.prefix + "-plain.json", r.no_boxes, kRefitStages);
}

}  // namespace
