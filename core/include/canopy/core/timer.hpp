// canopy/core/timer.hpp — per-frame, per-stage timing that never stalls the pipeline.
//
//   canopy::stage_timer timer(ctx);
//   timer.begin_frame();
//   { auto s = timer.scope("sort");  ...enqueue work... }
//   timer.end_frame();
//   if (auto* t = timer.latest()) overlay(t->stages);   // a frame or more old on CUDA
//
// On CUDA each stage is a pair of events recorded on the context's stream; a frame's results are
// read (cudaEventQuery, non-blocking) once all its events have completed, so what latest() shows
// lags by the frames in flight. On the host stages are timed with std::chrono::steady_clock.
// A frame slot is reused after `frames_in_flight` frames; only if its events have still not
// completed by then does the timer wait for them.
#pragma once

#include <canopy/core/context.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace canopy {

//! Milliseconds of one named stage in one frame.
struct stage_time {
  std::string name;
  double ms = 0;
};

//! Timings of one completed frame.
struct frame_timings {
  std::uint64_t frame = 0;          //!< frame number, counting from 0
  double frame_ms = 0;              //!< begin_frame() to end_frame() on the stream / host clock
  std::vector<stage_time> stages;   //!< in the order the stages began
  //! Milliseconds of the named stage, summed over its occurrences; 0 if absent.
  double stage_ms(const std::string& name) const;
};

class stage_timer {
 public:
  explicit stage_timer(context& ctx, std::size_t frames_in_flight = 4);
  ~stage_timer();
  stage_timer(const stage_timer&) = delete;
  stage_timer& operator=(const stage_timer&) = delete;

  void begin_frame();
  void end_frame();
  //! Starts a stage; returns its index for end(). Stages may nest or overlap.
  std::size_t begin(const std::string& name);
  void end(std::size_t stage);

  //! RAII stage: begins on construction, ends on destruction.
  class scoped_stage {
   public:
    scoped_stage(stage_timer& t, const std::string& name) : timer_(&t), index_(t.begin(name)) {}
    ~scoped_stage() { if (timer_) timer_->end(index_); }
    scoped_stage(scoped_stage&& o) noexcept : timer_(o.timer_), index_(o.index_) { o.timer_ = nullptr; }
    scoped_stage(const scoped_stage&) = delete;
    scoped_stage& operator=(const scoped_stage&) = delete;
    scoped_stage& operator=(scoped_stage&&) = delete;

   private:
    stage_timer* timer_;
    std::size_t index_;
  };
  scoped_stage scope(const std::string& name) { return scoped_stage(*this, name); }

  //! The newest frame whose timings are complete, or nullptr if none is yet. Never blocks.
  const frame_timings* latest();
  //! Waits for the last ended frame and returns its timings (for benchmarks and tests).
  const frame_timings& wait_latest();
  //! Frames ended so far.
  std::uint64_t frames_ended() const noexcept { return next_frame_; }

 private:
  struct stage_record;
  struct frame_slot;
  void collect(bool wait);
  void try_collect(frame_slot& slot, bool wait);
  void start_record(stage_record& r, const std::string& name);
  void stop_record(stage_record& r);
  double elapsed_ms(const stage_record& r) const;

  context& ctx_;
  std::vector<frame_slot*> slots_;
  std::uint64_t next_frame_ = 0;   // frame number the next begin_frame() starts
  frame_slot* open_ = nullptr;     // frame between begin_frame() and end_frame()
  frame_timings latest_;
  bool have_latest_ = false;
};

}  // namespace canopy
