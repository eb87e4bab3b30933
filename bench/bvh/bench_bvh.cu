// canopy-bench-bvh: per-frame BVH build, refit, tree quality and ray throughput.
//
//   canopy-bench-bvh [--backend cuda|host|auto] [--scenes bunny,1m,10m] [--host-scenes bunny,1m]
//                    [--repeat N] [--width W --height H] [--json out.json] [--smoke] [--help]
//
// For every scene: build ms per stage (median of --repeat frames, each a full rebuild of the
// animated mesh), refit ms, SAH cost of the LBVH with and without the treelet step next to the
// host binned-SAH cost of the same triangles, and closest-hit Mrays/s for 1920x1080 primary rays
// and one diffuse bounce. Rows for the host backend follow for --host-scenes. Results are checked
// in the same run: every tree's structure (via statistics), and a sample of primary rays against
// brute force over all triangles. Exit status: 0 when every check passed, 1 on a failed check or
// an error, 2 on a bad command line.
#include "common/bench_common.hpp"

#include <canopy/core/context.hpp>
#include <canopy/core/timer.hpp>
#include <canopy/structures/binned_sah.hpp>
#include <canopy/structures/bvh.hpp>
#include <canopy/structures/bvh_queries.hpp>
#include <canopy/structures/obj_loader.hpp>
#include <canopy/structures/scene.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace canopy;

namespace {

const char* const usage =
    "usage: canopy-bench-bvh [--backend cuda|host|auto] [--scenes bunny,1m,10m] [--host-scenes bunny,1m]\n"
    "                        [--repeat N] [--width W --height H] [--json out.json] [--smoke] [--help]\n";

struct settings {
  bool help = false;
  std::string backend = "auto";
  std::vector<std::string> scenes{"bunny", "1m", "10m"};
  std::vector<std::string> host_scenes{"bunny", "1m"};
  int repeat = 20;
  std::uint32_t width = 1920, height = 1080;
  std::string json;
  bool smoke = false;
};

// Throws canopy_bench::bad_flag for a malformed command line.
settings parse(int argc, char** argv) {
  settings s;
  canopy_bench::command_line cl(argc, argv, "canopy-bench-bvh");
  while (cl.next()) {
    if (cl.is("--help") || cl.is("-h")) {
      s.help = true;
      return s;
    } else if (cl.is("--backend")) s.backend = cl.value();
    else if (cl.is("--scenes")) s.scenes = canopy_bench::split_list(cl.value());
    else if (cl.is("--host-scenes")) s.host_scenes = canopy_bench::split_list(cl.value());
    else if (cl.is("--repeat")) s.repeat = cl.int_value(1);
    else if (cl.is("--width")) s.width = std::uint32_t(cl.int_value(1, 16384));
    else if (cl.is("--height")) s.height = std::uint32_t(cl.int_value(1, 16384));
    else if (cl.is("--json")) s.json = cl.value();
    else if (cl.is("--smoke")) s.smoke = true;
    else cl.refuse_unknown();
  }
  parse_backend_request(s.backend, "--backend");  // refused here, with the other flags
  if (s.smoke) {
    s.scenes = {"bunny"};
    s.host_scenes = {};
    s.repeat = 2;
    s.width = 64;
    s.height = 36;
  }
  return s;
}

// A scene on a context: mesh buffers plus, for procedural scenes, the animation.
struct bench_scene {
  std::string name;
  device_mesh mesh;
  bool animated = false;
  wave_sphere sphere;
  canopy::mesh host_copy;  // for the reference builder and brute force
};

bench_scene make_scene(context& ctx, const std::string& name) {
  bench_scene s;
  s.name = name;
  if (name == "bunny") {
    s.host_copy = load_obj(asset_path("bunny.obj"));
    s.mesh = canopy::upload(ctx, s.host_copy);
    return s;
  }
  std::size_t n = 0;
  if (name == "1m") n = 1000000;
  else if (name == "10m") n = 10000000;
  else throw error("canopy-bench-bvh: unknown scene '" + name + "' (bunny, 1m, 10m)");
  s.animated = true;
  s.sphere = make_wave_sphere(n);
  s.mesh = make_wave_sphere_mesh(ctx, s.sphere);
  s.host_copy.vertices = s.mesh.vertices.to_host();
  s.host_copy.indices = s.mesh.indices.to_host();
  return s;
}

struct variant {
  int leaves = 0, rounds = 0, gamma = 0;
  double build_ms = 0, optimize_ms = 0, sah = 0;
};

struct row {
  std::vector<variant> variants;
  std::string scene, backend;
  std::size_t triangles = 0;
  std::map<std::string, double> stage_ms;
  double build_ms = 0, build_plain_ms = 0, refit_ms = 0;
  double sah = 0, sah_plain = 0, sah_binned = 0;
  double primary_mrays = 0, diffuse_mrays = 0, primary_hit_fraction = 0, diffuse_rays = 0;
  std::size_t max_depth = 0;
  bool checked = true;
  std::string check_note;
};

// Times fn() over `repeat` frames with the context's stage timer; returns per-stage medians and
// the frame median under "total".
template <class F>
std::map<std::string, double> time_frames(context& ctx, int repeat, F&& fn) {
  stage_timer timer(ctx, 2);
  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < repeat; ++r) {
    timer.begin_frame();
    fn(timer, r);
    timer.end_frame();
    const frame_timings& t = timer.wait_latest();
    samples["total"].push_back(t.frame_ms);
    for (const stage_time& st : t.stages) samples[st.name].push_back(t.stage_ms(st.name));
  }
  std::map<std::string, double> out;
  for (auto& [k, v] : samples) out[k] = canopy_bench::median(v);
  return out;
}

hit brute_closest(const mesh& m, const ray& r) {
  return closest_hit_brute_force(host_span(m.vertices.data(), m.vertices.size()),
                                 host_span(m.indices.data(), m.indices.size()), r);
}

row run_scene(context& ctx, const settings& cfg, const std::string& name) {
  row out;
  out.scene = name;
  out.backend = to_string(ctx.backend_kind());
  bench_scene s = make_scene(ctx, name);
  out.triangles = s.mesh.triangle_count();
  const int repeat = ctx.is_cuda() ? cfg.repeat : std::max(1, std::min(cfg.repeat, 5));
  const span<const vec3> vertices = s.mesh.vertices.view();
  const span<const std::uint32_t> indices = s.mesh.indices.view();

  bvh_builder plain(ctx, [] { bvh_build_options o; o.quality = bvh_quality::none; return o; }());
  plain.build_triangles(vertices, indices);  // warm-up: first-frame allocations
  out.build_plain_ms = time_frames(ctx, repeat, [&](stage_timer& t, int) { plain.build_triangles(vertices, indices, &t); })["total"];
  out.sah_plain = plain.statistics().sah_cost;
  plain.clear();

  // The quality step's trade-off: build ms and SAH per treelet configuration (leaves, rounds, gamma).
  if (!cfg.smoke) {
    for (const auto& v : std::vector<std::array<int, 3>>{{7, 3, 16}, {7, 2, 16}, {7, 2, 32}, {7, 1, 16}, {6, 2, 16}, {5, 2, 16}, {5, 1, 16}, {7, 1, 64}, {5, 1, 64}, {3, 2, 16}}) {
      bvh_build_options o;
      o.treelet_leaves = v[0];
      o.treelet_rounds = v[1];
      o.treelet_min_primitives = v[2];
      bvh_builder b(ctx, o);
      b.build_triangles(vertices, indices);
      const auto t = time_frames(ctx, std::max(1, repeat / 2), [&](stage_timer& tm, int) { b.build_triangles(vertices, indices, &tm); });
      variant var;
      var.leaves = v[0], var.rounds = v[1], var.gamma = v[2];
      var.build_ms = t.at("total");
      var.optimize_ms = t.count("optimize") ? t.at("optimize") : 0.0;
      var.sah = b.statistics().sah_cost;
      out.variants.push_back(var);
    }
  }

  bvh_builder builder(ctx);
  builder.build_triangles(vertices, indices);
  const auto build = time_frames(ctx, repeat, [&](stage_timer& t, int r) {
    if (s.animated) animate_wave_sphere(ctx, s.sphere, 0.016f * float(r), s.mesh.vertices.view());  // outside the stages
    builder.build_triangles(vertices, indices, &t);
  });
  for (const auto& [k, v] : build)
    if (k != "total") out.stage_ms[k] = v;
  // The frame also holds the (untimed) animation; the build is the sum of its stages.
  for (const auto& [k, v] : out.stage_ms) out.build_ms += v;
  const bvh_statistics st = builder.statistics();
  out.sah = st.sah_cost;
  out.max_depth = st.max_depth;
  if (st.leaf_count != out.triangles || st.invalid_primitives != 0) {
    out.checked = false;
    out.check_note += "leaf count or invalid primitives wrong; ";
  }

  // Refit after deforming (procedural scenes) or of the same vertices (bunny).
  if (s.animated) animate_wave_sphere(ctx, s.sphere, 0.05f, s.mesh.vertices.view());
  out.refit_ms = time_frames(ctx, repeat, [&](stage_timer& t, int) { builder.refit_triangles(vertices, indices, &t); })["refit"];
  // Rays against the rebuilt tree of the time-0 mesh (the host copy).
  if (s.animated) animate_wave_sphere(ctx, s.sphere, 0.0f, s.mesh.vertices.view());
  builder.build_triangles(vertices, indices);

  // Quality reference: host binned SAH over the same triangles.
  out.sah_binned = build_binned_sah(triangle_boxes(s.host_copy)).sah_cost();

  // Primary rays from a camera that frames the scene.
  const aabb box = bounds(s.host_copy);
  const vec3 c = centroid(box), e = extent(box);
  const float size = std::sqrt(length_squared(e));
  pinhole_camera cam;
  cam.target = c;
  // Close enough that the object overfills the image vertically (most primary rays hit).
  const float half = 0.5f * std::max(e.x, std::max(e.y, e.z));
  const vec3 dir{0.35f, 0.25f, 1.0f};
  cam.eye = c + dir * (0.85f * half / std::sin(20.0f * 3.14159265f / 180.0f) / std::sqrt(length_squared(dir)));
  cam.fov_y_degrees = 40.0f;
  const std::size_t n_rays = std::size_t(cfg.width) * cfg.height;
  buffer<ray> primary(ctx, n_rays), bounce(ctx, n_rays);
  buffer<hit> hits(ctx, n_rays), bounce_hits(ctx, n_rays);
  make_primary_rays(ctx, cam, cfg.width, cfg.height, primary.view());
  trace_closest(ctx, builder.view(), vertices, indices, primary.view(), hits.view());  // warm-up
  const double t_primary = time_frames(ctx, repeat, [&](stage_timer& t, int) {
    auto sc = t.scope("trace");
    trace_closest(ctx, builder.view(), vertices, indices, primary.view(), hits.view());
  })["trace"];
  out.primary_mrays = double(n_rays) / (t_primary * 1e-3) * 1e-6;
  const std::vector<hit> h = hits.to_host();
  std::size_t hit_count = 0;
  for (const hit& x : h) hit_count += x.primitive != no_hit;
  out.primary_hit_fraction = double(hit_count) / double(n_rays);
  make_diffuse_rays(ctx, primary.view(), hits.view(), vertices, indices, size, 1234u, bounce.view());
  const double t_bounce = time_frames(ctx, repeat, [&](stage_timer& t, int) {
    auto sc = t.scope("trace");
    trace_closest(ctx, builder.view(), vertices, indices, bounce.view(), bounce_hits.view());
  })["trace"];
  // Misses of the primary pass make inert rays (tmax < 0); only live bounce rays are counted.
  out.diffuse_rays = double(hit_count);
  out.diffuse_mrays = double(hit_count) / (t_bounce * 1e-3) * 1e-6;

  // Check a sample of primary rays against brute force over every triangle.
  const std::vector<ray> rays = primary.to_host();
  const std::size_t samples = std::min<std::size_t>(n_rays, cfg.smoke ? 64 : 48);
  std::vector<int> bad(samples, 0);
  tbb::parallel_for(std::size_t(0), samples, [&](std::size_t k) {
    const std::size_t i = (k * 7919u * 131u + k) % n_rays;
    const hit ref = brute_closest(s.host_copy, rays[i]);
    bad[k] = ref.primitive != h[i].primitive;
  });
  const int mismatches = std::count(bad.begin(), bad.end(), 1);
  if (mismatches) {
    out.checked = false;
    out.check_note += std::to_string(mismatches) + " of " + std::to_string(samples) + " sampled rays differ from brute force; ";
  }
  return out;
}

std::string json_row(const row& r) {
  using canopy_bench::json_escape;
  const auto num = canopy_bench::json_number;
  std::ostringstream o;
  o << "    {\"scene\": \"" << json_escape(r.scene) << "\", \"backend\": \"" << json_escape(r.backend)
    << "\", \"triangles\": " << r.triangles << ",\n     \"build_ms\": {";
  bool first = true;
  for (const auto& [k, v] : r.stage_ms) o << (first ? "" : ", ") << "\"" << json_escape(k) << "\": " << num(v), first = false;
  o << ", \"total\": " << num(r.build_ms) << "},\n     \"build_ms_without_optimize_step\": " << num(r.build_plain_ms)
    << ", \"refit_ms\": " << num(r.refit_ms) << ",\n     \"sah_cost\": " << num(r.sah) << ", \"sah_cost_lbvh_plain\": "
    << num(r.sah_plain) << ", \"sah_cost_binned_sah_host\": " << num(r.sah_binned)
    << ", \"sah_ratio_to_binned\": " << num(r.sah / r.sah_binned) << ", \"max_depth\": " << r.max_depth
    << ",\n     \"primary_mrays_per_s\": " << num(r.primary_mrays) << ", \"primary_hit_fraction\": "
    << num(r.primary_hit_fraction) << ", \"diffuse_mrays_per_s\": " << num(r.diffuse_mrays)
    << ", \"diffuse_rays\": " << num(r.diffuse_rays) << ", \"checked\": " << (r.checked ? "true" : "false")
    << (r.check_note.empty() ? "" : ", \"check_note\": \"" + json_escape(r.check_note) + "\"");
  o << ",\n     \"treelet_variants\": [";
  for (std::size_t i = 0; i < r.variants.size(); ++i) {
    const variant& v = r.variants[i];
    o << (i ? ", " : "") << "{\"leaves\": " << v.leaves << ", \"rounds\": " << v.rounds << ", \"min_primitives\": " << v.gamma
      << ", \"build_ms\": " << num(v.build_ms) << ", \"optimize_ms\": " << num(v.optimize_ms) << ", \"sah_cost\": "
      << num(v.sah) << ", \"sah_ratio_to_binned\": " << num(v.sah / r.sah_binned) << "}";
  }
  o << "]}";
  return o.str();
}

void print_row(const row& r) {
  std::printf("%-6s %-5s %9zu tris | build %8.3f ms (", r.scene.c_str(), r.backend.c_str(), r.triangles, r.build_ms);
  for (const char* k : {"morton", "sort", "hierarchy", "bounds", "optimize"}) {
    auto it = r.stage_ms.find(k);
    std::printf("%s %.3f ", k, it == r.stage_ms.end() ? 0.0 : it->second);
  }
  std::printf(") plain %.3f | refit %.3f ms | SAH %.2f plain %.2f binned %.2f (%.3fx) | primary %.1f diffuse %.1f Mrays/s %s\n",
              r.build_plain_ms, r.refit_ms, r.sah, r.sah_plain, r.sah_binned, r.sah / r.sah_binned, r.primary_mrays,
              r.diffuse_mrays, r.checked ? "ok" : ("CHECK FAILED: " + r.check_note).c_str());
  for (const variant& v : r.variants)
    std::printf("         treelet leaves %d rounds %d min %2d: build %8.3f ms (optimize %8.3f) SAH %.2f (%.3fx binned)\n", v.leaves,
                v.rounds, v.gamma, v.build_ms, v.optimize_ms, v.sah, v.sah / r.sah_binned);
}

}  // namespace

int main(int argc, char** argv) {
  settings cfg;
  try {
    cfg = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n%s", e.what(), usage);
    return canopy_bench::exit_bad_command_line;
  }
  if (cfg.help) {
    std::fputs(usage, stdout);
    return 0;
  }
  try {
    std::vector<row> rows;
    std::string device;
    {
      context ctx(parse_backend_request(cfg.backend, "--backend"));
      device = ctx.description();
      std::printf("canopy-bench-bvh on %s\nsort stage: canopy::radix_sort_pairs\n", device.c_str());
      for (const std::string& name : cfg.scenes) {
        rows.push_back(run_scene(ctx, cfg, name));
        print_row(rows.back());
      }
      if (ctx.is_cuda()) {
        context host(backend_request::host);
        for (const std::string& name : cfg.host_scenes) {
          rows.push_back(run_scene(host, cfg, name));
          print_row(rows.back());
        }
      }
    }
    bool ok = true;
    for (const row& r : rows) ok &= r.checked;
    if (!cfg.json.empty()) {
      std::ofstream f(cfg.json);
      f << "{\n  \"primitive\": \"bvh\",\n  \"commit\": \"" << canopy_bench::json_escape(canopy_bench::commit_id())
        << "\",\n  \"device\": \"" << canopy_bench::json_escape(device) << "\",\n  \"sort_stage\": \""
        << "radix_sort_pairs" << "\",\n  \"image\": [" << cfg.width
        << ", " << cfg.height << "],\n  \"repeat\": " << cfg.repeat << ",\n  \"rows\": [\n";
      for (std::size_t i = 0; i < rows.size(); ++i) f << json_row(rows[i]) << (i + 1 < rows.size() ? ",\n" : "\n");
      f << "  ]\n}\n";
      if (!f.flush()) throw error("canopy-bench-bvh: cannot write '" + cfg.json + "'");
      std::printf("wrote %s\n", cfg.json.c_str());
    }
    std::printf("canopy-bench-bvh: %s\n", ok ? "all checks passed" : "CHECKS FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy-bench-bvh: %s\n", e.what());
    return 1;
  }
}
