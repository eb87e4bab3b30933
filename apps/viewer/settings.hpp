// canopy-viewer: what the user chooses (flags and the control panel).
#pragma once

#include <canopy/app/options.hpp>
#include <canopy/app/scene.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace viewer {

//! How the ray-cast image is shown next to the raster view.
enum class layout : std::uint8_t {
  split,    //!< raster left, ray-cast right, same camera
  raster,   //!< raster only (no ray casting)
  raycast,  //!< ray-cast only, full size
};

struct settings {
  canopy::app::scene_kind scene = canopy::app::scene_kind::wave_sphere;
  std::size_t triangles = 0;        //!< 0: by backend (1M on CUDA, 64K on the host)
  bool refit = false;               //!< refit the last build instead of rebuilding
  int rebuild_every = 0;            //!< with refit: rebuild every N frames (0: never)
  bool treelet = true;              //!< treelet restructuring after the LBVH (SAH within 10% of binned SAH; ~0.4 ms more at 1M on an H200)
  bool show_boxes = true;
  int min_depth = 0, max_depth = 7; //!< node depths drawn (root = 0)
  float box_alpha = 1.0f;
  bool paused = false;
  float speed = 1.0f;               //!< animation speed
  float spin = 0.15f;               //!< camera auto-orbit, radians per second (headless too)
  layout view = layout::split;
  int raycast_divisor = 0;          //!< ray-cast at 1/N of the viewport's resolution (1, 2 or 4); 0: 1 on CUDA, 2 on the host
  std::string depth_dump;           //!< prefix: write <prefix>-raster.pfm and <prefix>-raycast.pfm at the end
  bool vsync = false;

  //! Parses a viewer flag (see usage()); returns false for flags that are not the viewer's.
  bool parse(const std::string& flag, const canopy::app::next_arg& next);
  static const char* usage();
};

}  // namespace viewer
