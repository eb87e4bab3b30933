#include <canopy/app/timings.hpp>

#include <canopy/app/gl.hpp>

#include <canopy/core/error.hpp>

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

namespace canopy::app {

namespace {
std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

frame_record make_record(const frame_timings& t, double wall_ms) {
  frame_record r;
  r.frame = t.frame;
  r.wall_ms = wall_ms;
  r.stream_ms = t.frame_ms;
  for (const stage_time& s : t.stages) {
    auto it = std::find_if(r.stages.begin(), r.stages.end(), [&](const auto& p) { return p.first == s.name; });
    if (it == r.stages.end())
      r.stages.emplace_back(s.name, s.ms);
    else
      it->second += s.ms;
  }
  return r;
}

void timing_history::push(frame_record r) {
  for (const auto& s : r.stages)
    if (std::find(names_.begin(), names_.end(), s.first) == names_.end()) names_.push_back(s.first);
  records_.push_back(std::move(r));
  if (records_.size() > capacity_) records_.erase(records_.begin());
}

std::vector<float> timing_history::series(const std::string& name) const {
  std::vector<float> v;
  v.reserve(records_.size());
  for (const frame_record& r : records_) {
    double ms = 0;
    if (name == "wall") {
      ms = r.wall_ms;
    } else if (name == "stream") {
      ms = r.stream_ms;
    } else {
      for (const auto& s : r.stages)
        if (s.first == name) ms = s.second;
    }
    v.push_back(float(ms));
  }
  return v;
}

double timing_history::mean(const std::string& name) const {
  // Over the frames that ran the stage (a refit run builds only now and then).
  double sum = 0;
  std::size_t count = 0;
  for (const frame_record& r : records_) {
    if (name == "wall" || name == "stream") {
      sum += name == "wall" ? r.wall_ms : r.stream_ms;
      ++count;
      continue;
    }
    for (const auto& s : r.stages)
      if (s.first == name) {
        sum += s.second;
        ++count;
      }
  }
  return count ? sum / double(count) : 0.0;
}

void timing_log::write_json(const std::string& path, const std::string& app, const std::string& backend,
                            const std::string& device, const std::string& renderer) const {
  std::ofstream out(path);
  if (!out) throw error("canopy::app::timing_log::write_json: cannot write '" + path + "'");
  out << "{\n  \"app\": \"" << json_escape(app) << "\",\n  \"backend\": \"" << json_escape(backend)
      << "\",\n  \"device\": \"" << json_escape(device) << "\",\n  \"renderer\": \"" << json_escape(renderer)
      << "\",\n  \"info\": {";
  for (std::size_t i = 0; i < info_.size(); ++i)
    out << (i ? ", " : "") << "\"" << json_escape(info_[i].first) << "\": \"" << json_escape(info_[i].second) << "\"";
  out << "},\n  \"frames\": [\n";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const frame_record& r = records_[i];
    out << "    {\"frame\": " << r.frame << ", \"wall_ms\": " << num(r.wall_ms) << ", \"stream_ms\": "
        << num(r.stream_ms) << ", \"stages\": {";
    for (std::size_t k = 0; k < r.stages.size(); ++k) {
      out << (k ? ", " : "") << "\"" << json_escape(r.stages[k].first) << "\": " << num(r.stages[k].second);
      if (std::find(names.begin(), names.end(), r.stages[k].first) == names.end()) names.push_back(r.stages[k].first);
    }
    out << "}}" << (i + 1 < records_.size() ? "," : "") << "\n";
  }
  double wall = 0;
  for (const frame_record& r : records_) wall += r.wall_ms;
  const double mean_wall = records_.empty() ? 0 : wall / double(records_.size());
  out << "  ],\n  \"summary\": {\"frames\": " << records_.size() << ", \"mean_wall_ms\": " << num(mean_wall)
      << ", \"fps\": " << num(mean_wall > 0 ? 1000.0 / mean_wall : 0) << ", \"stages\": {";
  for (std::size_t k = 0; k < names.size(); ++k) {
    double sum = 0, lo = std::numeric_limits<double>::infinity(), hi = 0;
    std::size_t count = 0;
    for (const frame_record& r : records_)
      for (const auto& s : r.stages)
        if (s.first == names[k]) {
          sum += s.second;
          lo = std::min(lo, s.second);
          hi = std::max(hi, s.second);
          ++count;
        }
    out << (k ? ", " : "") << "\n    \"" << json_escape(names[k]) << "\": {\"mean_ms\": " << num(sum / double(count))
        << ", \"min_ms\": " << num(lo) << ", \"max_ms\": " << num(hi) << "}";
  }
  out << "\n  }}\n}\n";
  if (!out) throw error("canopy::app::timing_log::write_json: failed writing '" + path + "'");
}

void draw_timing_panel(const timing_history& history, const std::vector<std::pair<std::string, std::string>>& facts,
                       const char* title) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x - 10, vp->WorkPos.y + 10), ImGuiCond_FirstUseEver,
                          ImVec2(1, 0));
  ImGui::SetNextWindowSizeConstraints(ImVec2(360, 0), ImVec2(480, 10000));
  ImGui::Begin(title, nullptr, ImGuiWindowFlags_AlwaysAutoResize);
  for (const auto& f : facts) ImGui::Text("%s: %s", f.first.c_str(), f.second.c_str());
  const double wall = history.mean("wall");
  ImGui::Text("frame %.2f ms  (%.0f fps, mean of %zu)", wall, wall > 0 ? 1000.0 / wall : 0.0, history.size());
  if (ImGui::BeginTable("stages", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("stage");
    ImGui::TableSetupColumn("latest ms");
    ImGui::TableSetupColumn("mean ms");
    ImGui::TableHeadersRow();
    const frame_record* newest = history.newest();
    for (const std::string& name : history.stage_names()) {
      double latest = 0;
      if (newest)
        for (const auto& s : newest->stages)
          if (s.first == name) latest = s.second;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", latest);
      ImGui::TableNextColumn();
      ImGui::Text("%8.3f", history.mean(name));
    }
    ImGui::EndTable();
  }
  static int selected = 0;
  std::vector<const char*> items{"frame (wall)", "stream"};
  for (const std::string& n : history.stage_names()) items.push_back(n.c_str());
  selected = std::min(selected, int(items.size()) - 1);
  ImGui::SetNextItemWidth(160);
  ImGui::Combo("plot", &selected, items.data(), int(items.size()));
  const std::string key = selected == 0 ? "wall" : selected == 1 ? "stream" : history.stage_names()[selected - 2];
  const std::vector<float> v = history.series(key);
  float hi = 0;
  for (float x : v) hi = std::max(hi, x);
  char overlay[64];
  std::snprintf(overlay, sizeof overlay, "%s  max %.2f ms", items[std::size_t(selected)], hi);
  ImGui::PlotLines("##plot", v.data(), int(v.size()), 0, overlay, 0.0f, hi * 1.15f + 1e-3f,
                   ImVec2(340, 90));
  ImGui::End();
}

void frame_recorder::end_frame(std::uint64_t frame, bool wait, stage_timer& timer, gpu_timer& raster,
                               timing_history& history, timing_log* log) {
  const frame_timings* done = wait ? &timer.wait_latest() : timer.latest();
  const double raster_ms = wait ? raster.wait_ms() : raster.latest_ms();
  wall_ms_[frame % wall_ms_.size()] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  if (!done || done->frame == last_recorded_) return;
  frame_record r = make_record(*done, wall_ms_[done->frame % wall_ms_.size()]);
  if (raster_ms >= 0) r.stages.emplace_back("raster (GL)", raster_ms);
  last_recorded_ = done->frame;
  if (log) log->add(r);
  history.push(std::move(r));
}

}  // namespace canopy::app
