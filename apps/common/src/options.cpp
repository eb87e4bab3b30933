#include <canopy/app/options.hpp>

#include <canopy/core/error.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace canopy::app {

long long parse_positive(const std::string& text, const char* flag) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  require(!text.empty() && end && *end == '\0' && errno == 0 && v > 0, "canopy app", flag,
          "needs a positive integer, got '" + text + "'");
  return v;
}

float parse_float(const std::string& text, const char* flag) {
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  require(!text.empty() && end && *end == '\0' && std::isfinite(v), "canopy app", flag,
          "needs a number, got '" + text + "'");
  return v;
}

app_options parse_options(int argc, char** argv, const std::string& usage, const extra_flag_handler& extra) {
  app_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const next_arg next = [&, flag]() -> std::string {
      require(i + 1 < argc, "canopy app", flag.c_str(), "needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::printf("%s\ncommon flags:\n"
                  "  --headless            render through EGL, no window\n"
                  "  --frames N            frames to run (headless default 60)\n"
                  "  --screenshot out.png  write the last frame's view\n"
                  "  --timings out.json    write per-frame, per-stage milliseconds\n"
                  "  --backend host|cuda|auto\n"
                  "  --width W --height H  framebuffer size (default 1280 x 720)\n"
                  "  --no-ui               do not draw the overlay\n",
                  usage.c_str());
      std::exit(0);
    } else if (flag == "--headless") {
      o.headless = true;
    } else if (flag == "--frames") {
      o.frames = int(parse_positive(next(), "--frames"));
    } else if (flag == "--screenshot") {
      o.screenshot = next();
    } else if (flag == "--timings") {
      o.timings = next();
    } else if (flag == "--backend") {
      o.backend = parse_backend_request(next(), "--backend");
    } else if (flag == "--width") {
      o.width = int(parse_positive(next(), "--width"));
    } else if (flag == "--height") {
      o.height = int(parse_positive(next(), "--height"));
    } else if (flag == "--no-ui") {
      o.ui = false;
    } else if (!(extra && extra(flag, next))) {
      require(false, "canopy app", flag.c_str(), "unknown flag (try --help)");
    }
  }
  require(o.width <= 16384 && o.height <= 16384, "canopy app", "--width/--height", "at most 16384");
  if (o.headless && o.frames == 0) o.frames = 60;
  return o;
}

}  // namespace canopy::app
