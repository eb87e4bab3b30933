// canopy/app/timings.hpp — per-frame, per-stage times: a rolling history for the overlay, a log
// for the headless --timings JSON, and the overlay panel itself.
//
// Sources of a frame's times:
//   - canopy::stage_timer (compute stages; CUDA events or host clock), read with latest(), which
//     never blocks, so the overlay lags the frame being drawn by the frames in flight;
//   - gpu_timer (GL work, e.g. "raster"), also read late;
//   - the host's wall clock between two frames ("frame", from which FPS follows).
#pragma once

#include <canopy/core/timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace canopy::app {

class gpu_timer;

//! One frame's times, in milliseconds.
struct frame_record {
  std::uint64_t frame = 0;
  double wall_ms = 0;                            //!< host time from this frame's start to the next's
  double stream_ms = 0;                          //!< stage_timer's begin_frame() to end_frame()
  std::vector<std::pair<std::string, double>> stages;  //!< unique names, first-seen order, summed
};

//! Builds a record from a stage_timer frame (occurrences of one name are summed) plus extra stages.
frame_record make_record(const frame_timings& t, double wall_ms);

//! The last `capacity` records, oldest first, for plots and running means.
class timing_history {
 public:
  explicit timing_history(std::size_t capacity = 300) : capacity_(capacity) {}
  void push(frame_record r);
  std::size_t size() const noexcept { return records_.size(); }
  const frame_record* newest() const { return records_.empty() ? nullptr : &records_.back(); }
  //! Stage names seen in the history, first-seen order.
  const std::vector<std::string>& stage_names() const noexcept { return names_; }
  //! Values of a stage (0 where absent) or of "wall" / "stream", oldest first.
  std::vector<float> series(const std::string& name) const;
  //! Mean of a stage over the frames of the history that ran it, or of "wall" / "stream" over all;
  //! 0 if none.
  double mean(const std::string& name) const;
  void clear() { records_.clear(); names_.clear(); }

 private:
  std::size_t capacity_;
  std::vector<frame_record> records_;  // ring kept in order by erasing the front (capacity small)
  std::vector<std::string> names_;
};

//! Every frame of a headless run, written as JSON:
//!   {"app", "backend", "device", "renderer", "info": {...}, "frames": [{"frame", "wall_ms",
//!    "stream_ms", "stages": {name: ms}}], "summary": {"frames", "mean_wall_ms", "fps",
//!    "stages": {name: {"mean_ms", "min_ms", "max_ms"}}}}
class timing_log {
 public:
  void add(frame_record r) { records_.push_back(std::move(r)); }
  //! Facts written under "info" (scene, primitive count, settings), in insertion order.
  void set_info(const std::string& key, const std::string& value) { info_.emplace_back(key, value); }
  const std::vector<frame_record>& records() const noexcept { return records_; }
  //! Throws canopy::error naming the path if it cannot be written.
  void write_json(const std::string& path, const std::string& app, const std::string& backend,
                  const std::string& device, const std::string& renderer) const;

 private:
  std::vector<frame_record> records_;
  std::vector<std::pair<std::string, std::string>> info_;
};

//! Turns each frame's times into a frame_record: call begin_frame() at the top of the frame loop and
//! end_frame() after present(). Interactive runs take what has completed (never waiting), so a
//! record lags its frame by the frames in flight; headless runs wait, so that every frame is
//! recorded. A frame's host wall time (headless: including that wait) is kept until its
//! stage_timer results arrive, which must be within 16 frames.
class frame_recorder {
 public:
  void begin_frame() { start_ = std::chrono::steady_clock::now(); }
  //! Records the newest completed frame, if not recorded yet, into `history` and, when `log` is
  //! given, into the log. `raster` adds a "raster (GL)" stage once its measurement completed.
  void end_frame(std::uint64_t frame, bool wait, stage_timer& timer, gpu_timer& raster, timing_history& history,
                 timing_log* log);

 private:
  std::chrono::steady_clock::time_point start_{};
  std::array<double, 16> wall_ms_{};
  std::uint64_t last_recorded_ = ~std::uint64_t(0);
};

//! ImGui panel: FPS, frame ms, a table of stages (latest and mean ms) and a rolling plot of the
//! frame time with the selected stage. `facts` are extra lines (label, value) shown above.
void draw_timing_panel(const timing_history& history, const std::vector<std::pair<std::string, std::string>>& facts,
                       const char* title = "timings");

}  // namespace canopy::app
