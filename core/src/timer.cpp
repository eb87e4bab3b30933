#include <canopy/core/timer.hpp>

namespace canopy {

double frame_timings::stage_ms(const std::string& name) const {
  double sum = 0;
  for (const auto& s : stages)
    if (s.name == name) sum += s.ms;
  return sum;
}

// One timed interval. On CUDA its two events are created once and reused by later frames.
struct stage_timer::stage_record {
  std::string name;
  std::chrono::steady_clock::time_point host_begin, host_end;
#if CANOPY_HAS_CUDA
  cudaEvent_t begin = nullptr, end = nullptr;
#endif
  bool ended = false;
};

struct stage_timer::frame_slot {
  std::uint64_t frame = 0;
  bool pending = false;  // ended, results not yet collected
  std::size_t used = 0;  // records in use this frame; those beyond are spare
  std::vector<stage_record> stages;
  stage_record whole;    // begin_frame() .. end_frame()
};

stage_timer::stage_timer(context& ctx, std::size_t frames_in_flight) : ctx_(ctx) {
  require(frames_in_flight >= 1, "canopy::stage_timer", "frames_in_flight", "must be at least 1");
  for (std::size_t i = 0; i < frames_in_flight; ++i) slots_.push_back(new frame_slot());
}

stage_timer::~stage_timer() {
  for (frame_slot* slot : slots_) {
#if CANOPY_HAS_CUDA
    auto destroy = [](stage_record& r) {
      if (r.begin) cudaEventDestroy(r.begin);
      if (r.end) cudaEventDestroy(r.end);
    };
    for (auto& r : slot->stages) destroy(r);
    destroy(slot->whole);
#endif
    delete slot;
  }
}

void stage_timer::start_record(stage_record& r, const std::string& name) {
  r.name = name;
  r.ended = false;
#if CANOPY_HAS_CUDA
  if (ctx_.is_cuda()) {
    if (!r.begin) CANOPY_CUDA_CHECK(cudaEventCreate(&r.begin));
    if (!r.end) CANOPY_CUDA_CHECK(cudaEventCreate(&r.end));
    CANOPY_CUDA_CHECK(cudaEventRecord(r.begin, ctx_.stream()));
    return;
  }
#endif
  r.host_begin = std::chrono::steady_clock::now();
}

void stage_timer::stop_record(stage_record& r) {
  require(!r.ended, "canopy::stage_timer::end", "stage", "stage '" + r.name + "' was already ended");
  r.ended = true;
#if CANOPY_HAS_CUDA
  if (ctx_.is_cuda()) {
    CANOPY_CUDA_CHECK(cudaEventRecord(r.end, ctx_.stream()));
    return;
  }
#endif
  r.host_end = std::chrono::steady_clock::now();
}

double stage_timer::elapsed_ms(const stage_record& r) const {
#if CANOPY_HAS_CUDA
  if (ctx_.is_cuda()) {
    float ms = 0;
    CANOPY_CUDA_CHECK(cudaEventElapsedTime(&ms, r.begin, r.end));
    return ms;
  }
#endif
  return std::chrono::duration<double, std::milli>(r.host_end - r.host_begin).count();
}

void stage_timer::begin_frame() {
  require(open_ == nullptr, "canopy::stage_timer::begin_frame", "this", "the previous frame was not ended");
  frame_slot& slot = *slots_[next_frame_ % slots_.size()];
  // Waits only when more frames than slots are in flight.
  if (slot.pending) try_collect(slot, /*wait=*/true);
  slot.frame = next_frame_;
  slot.used = 0;
  open_ = &slot;
  start_record(slot.whole, "frame");
}

std::size_t stage_timer::begin(const std::string& name) {
  require(open_ != nullptr, "canopy::stage_timer::begin", "this", "stage '" + name + "' begun outside a frame");
  frame_slot& slot = *open_;
  if (slot.used == slot.stages.size()) slot.stages.emplace_back();
  const std::size_t index = slot.used++;
  start_record(slot.stages[index], name);
  return index;
}

void stage_timer::end(std::size_t stage) {
  require(open_ != nullptr && stage < open_->used, "canopy::stage_timer::end", "stage",
          "no such stage in the open frame");
  stop_record(open_->stages[stage]);
}

void stage_timer::end_frame() {
  require(open_ != nullptr, "canopy::stage_timer::end_frame", "this", "no frame was begun");
  for (std::size_t i = 0; i < open_->used; ++i)
    require(open_->stages[i].ended, "canopy::stage_timer::end_frame", "this",
            "stage '" + open_->stages[i].name + "' was not ended");
  stop_record(open_->whole);
  open_->pending = true;
  open_ = nullptr;
  ++next_frame_;
  collect(/*wait=*/false);
}

void stage_timer::try_collect(frame_slot& slot, bool wait) {
  if (!slot.pending) return;
#if CANOPY_HAS_CUDA
  if (ctx_.is_cuda()) {
    // The frame's end event is recorded last on the stream, so its completion implies the others'.
    if (wait) {
      CANOPY_CUDA_CHECK(cudaEventSynchronize(slot.whole.end));
    } else {
      const cudaError_t status = cudaEventQuery(slot.whole.end);
      if (status == cudaErrorNotReady) return;
      CANOPY_CUDA_CHECK(status);
    }
  }
#endif
  slot.pending = false;
  if (have_latest_ && slot.frame < latest_.frame) return;
  latest_.frame = slot.frame;
  latest_.frame_ms = elapsed_ms(slot.whole);
  latest_.stages.clear();
  for (std::size_t i = 0; i < slot.used; ++i)
    latest_.stages.push_back({slot.stages[i].name, elapsed_ms(slot.stages[i])});
  have_latest_ = true;
}

void stage_timer::collect(bool wait) {
  // Oldest first, so the newest completed frame ends up in latest_.
  const std::uint64_t n = slots_.size();
  const std::uint64_t first = next_frame_ > n ? next_frame_ - n : 0;
  for (std::uint64_t f = first; f < next_frame_; ++f) try_collect(*slots_[f % n], wait);
}

const frame_timings* stage_timer::latest() {
  collect(/*wait=*/false);
  return have_latest_ ? &latest_ : nullptr;
}

const frame_timings& stage_timer::wait_latest() {
  require(next_frame_ > 0, "canopy::stage_timer::wait_latest", "this", "no frame has ended yet");
  collect(/*wait=*/true);
  return latest_;
}

}  // namespace canopy
