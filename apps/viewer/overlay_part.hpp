// canopy-viewer, overlay part: the control panel (scene, primitive count, build/refit, depths,
// pause, layout, backend) and the timing panel.
#pragma once

#include "settings.hpp"

#include <canopy/app/timings.hpp>
#include <canopy/structures/bvh.hpp>

#include <string>

namespace viewer {

//! What the panel asks the frame loop to do.
struct overlay_requests {
  bool reload_scene = false;      //!< scene kind or triangle count changed
  bool refresh_statistics = false;
  bool vsync_changed = false;
};

//! Structure facts shown in the panel; refreshed now and then because statistics() synchronises.
struct shown_statistics {
  canopy::bvh_statistics stats;
  std::uint64_t frame = 0;  //!< frame they were taken at
  bool valid = false;
};

class overlay_part {
 public:
  //! `backend` and `renderer` are shown as they are.
  overlay_part(std::string backend, std::string renderer) : backend_(std::move(backend)), renderer_(std::move(renderer)) {}
  overlay_requests draw(settings& s, std::size_t triangles, const shown_statistics& stats,
                        const canopy::app::timing_history& history, bool last_was_build);

 private:
  std::string backend_, renderer_;
  int triangles_log2_ = -1;  // slider state, log2 of the requested count
};

}  // namespace viewer
