// canopy/app/options.hpp — the command line every canopy app shares.
//
//   --headless              render through EGL with no window (no display needed)
//   --frames N              headless: frames to run (default 60); windowed: quit after N (0 = never)
//   --screenshot out.png    headless: write the last frame's view (PNG)
//   --timings out.json      write per-frame, per-stage milliseconds (JSON)
//   --backend host|cuda|auto
//   --width W --height H    framebuffer size (default 1280 x 720)
//   --no-ui                 do not draw the ImGui overlay (screenshots of the view alone)
//
// An app adds its own flags with an `extra` callback; anything unknown is an error that names it.
#pragma once

#include <canopy/core/context.hpp>

#include <functional>
#include <optional>
#include <string>

namespace canopy::app {

struct app_options {
  bool headless = false;
  int frames = 0;  //!< 0: run until closed (windowed) or 60 (headless)
  std::string screenshot;
  std::string timings;
  std::optional<backend_request> backend;
  int width = 1280;
  int height = 720;
  bool ui = true;
};

//! Reads the next argument of a flag as text; throws invalid_argument naming the flag if absent.
using next_arg = std::function<std::string()>;

//! Handles one app-specific flag: returns false if `flag` is not the app's.
using extra_flag_handler = std::function<bool(const std::string& flag, const next_arg& next)>;

//! Parses argv. Throws canopy::invalid_argument naming the flag on an unknown flag or a bad value.
//! `--help` prints `usage` and the common flags and exits with 0.
app_options parse_options(int argc, char** argv, const std::string& usage, const extra_flag_handler& extra = {});

//! Parses a positive integer value of `flag` (throws invalid_argument naming it otherwise).
long long parse_positive(const std::string& text, const char* flag);
//! Parses a finite float value of `flag`.
float parse_float(const std::string& text, const char* flag);

}  // namespace canopy::app
