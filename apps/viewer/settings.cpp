#include "settings.hpp"

#include <canopy/core/error.hpp>

namespace viewer {

const char* settings::usage() {
  return "canopy-viewer: a BVH rebuilt every frame over an animated scene, its boxes, a ray-cast view\n"
         "viewer flags:\n"
         "  --scene wave-sphere|bunnies   scene (default wave-sphere)\n"
         "  --triangles N                 at least N triangles (default 1M on CUDA, 64K on the host)\n"
         "  --refit                       refit instead of rebuilding every frame\n"
         "  --rebuild-every N             with --refit, rebuild every N frames\n"
         "  --treelet | --no-treelet      treelet restructuring after the LBVH (default on; --no-treelet: plain LBVH)\n"
         "  --boxes MIN:MAX | --no-boxes  node depths drawn (default 0:7)\n"
         "  --layout split|raster|raycast how the ray-cast image is shown (default split)\n"
"  --raycast-divisor N           ray-cast at 1/N resolution (1, 2 or 4; default 1 on CUDA, 2 on the host)\n"
         "  --spin R                      camera orbit, radians per second (default 0.15)\n"
         "  --paused                      do not animate the scene\n"
         "  --depth-dump PREFIX           at the end write PREFIX-raster.pfm and PREFIX-raycast.pfm\n"
         "                                (view-space depth of both images; +inf where empty)";
}

bool settings::parse(const std::string& flag, const canopy::app::next_arg& next) {
  using canopy::app::parse_positive;
  if (flag == "--scene") {
    scene = canopy::app::parse_scene_kind(next(), "--scene");
  } else if (flag == "--triangles") {
    triangles = std::size_t(parse_positive(next(), "--triangles"));
  } else if (flag == "--refit") {
    refit = true;
  } else if (flag == "--rebuild-every") {
    rebuild_every = int(parse_positive(next(), "--rebuild-every"));
  } else if (flag == "--no-treelet") {
    treelet = false;
  } else if (flag == "--treelet") {
    treelet = true;
  } else if (flag == "--no-boxes") {
    show_boxes = false;
  } else if (flag == "--boxes") {
    const std::string v = next();
    const auto colon = v.find(':');
    canopy::require(colon != std::string::npos, "canopy-viewer", "--boxes", "expects MIN:MAX, got '" + v + "'");
    const std::string lo = v.substr(0, colon), hi = v.substr(colon + 1);
    min_depth = lo == "0" ? 0 : int(parse_positive(lo, "--boxes"));
    max_depth = hi == "0" ? 0 : int(parse_positive(hi, "--boxes"));
    canopy::require(min_depth <= max_depth, "canopy-viewer", "--boxes", "MIN must not exceed MAX");
    show_boxes = true;
  } else if (flag == "--layout") {
    const std::string v = next();
    if (v == "split") view = layout::split;
    else if (v == "raster") view = layout::raster;
    else if (v == "raycast") view = layout::raycast;
    else canopy::require(false, "canopy-viewer", "--layout", "'" + v + "' is not split, raster or raycast");
  } else if (flag == "--raycast-divisor") {
    raycast_divisor = int(parse_positive(next(), "--raycast-divisor"));
    canopy::require(raycast_divisor == 1 || raycast_divisor == 2 || raycast_divisor == 4, "canopy-viewer",
                    "--raycast-divisor", "must be 1, 2 or 4");
  } else if (flag == "--spin") {
    spin = canopy::app::parse_float(next(), "--spin");
  } else if (flag == "--paused") {
    paused = true;
  } else if (flag == "--depth-dump") {
    depth_dump = next();
  } else {
    return false;
  }
  return true;
}

}  // namespace viewer
