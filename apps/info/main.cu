// canopy-info: runs one for_each on the chosen backend, checks its result, and prints the backend
// and device it used.
//
//   canopy-info [--backend auto|host|cuda] [--n N]
#include <canopy/core/buffer.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/timer.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

struct square_plus_index {
  canopy::span<std::uint64_t> out;
  CANOPY_HD void operator()(std::size_t i) const { out[i] = std::uint64_t(i) * i + 7; }
};

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--backend auto|host|cuda] [--n N]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  std::optional<canopy::backend_request> request;
  std::size_t n = std::size_t(1) << 24;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) {
      request = canopy::parse_backend_request(argv[++i], "--backend");
    } else if (!std::strcmp(argv[i], "--n") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (!end || *end || v == 0) {
        std::fprintf(stderr, "canopy-info: --n needs a positive integer, got '%s'\n", argv[i]);
        return 2;
      }
      n = v;
    } else {
      return usage(argv[0]);
    }
  }

  canopy::context ctx(canopy::context_options{request});
  std::printf("canopy-info: %s\n", ctx.description().c_str());

  canopy::buffer<std::uint64_t> values(ctx, n);
  canopy::stage_timer timer(ctx);
  for (int frame = 0; frame < 3; ++frame) {
    timer.begin_frame();
    {
      auto stage = timer.scope("for_each");
      canopy::for_each(ctx, n, square_plus_index{values.view()});
    }
    timer.end_frame();
  }
  const auto& t = timer.wait_latest();
  const std::vector<std::uint64_t> host = values.to_host();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += host[i] != std::uint64_t(i) * i + 7;
  const double gbps = double(n) * sizeof(std::uint64_t) / (t.stage_ms("for_each") * 1e6);
  std::printf("canopy-info: for_each over %zu elements: %.3f ms (%.1f GB/s written), %s\n", n,
              t.stage_ms("for_each"), gbps, wrong ? "WRONG RESULTS" : "results checked");
  return wrong ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "canopy-info: %s\n", e.what());
  return 1;
}
