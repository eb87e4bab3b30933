// Uses the installed canopy: creates a context, runs for_each on the host backend, and checks it.
#include <canopy/core/buffer.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/structures/morton.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  canopy::backend_request request = canopy::backend_request::automatic;
  if (argc == 3 && !std::strcmp(argv[1], "--backend")) request = canopy::parse_backend_request(argv[2]);
  canopy::context ctx(request);
  canopy::buffer<std::uint32_t> codes(ctx, 1000);
  canopy::span<std::uint32_t> out = codes.view();
  canopy::for_each(ctx, out.size(), [out](std::size_t i) {
    out[i] = canopy::morton_encode_30(std::uint32_t(i % 10), std::uint32_t(i / 10 % 10), std::uint32_t(i / 100));
  });
  const auto host = codes.to_host();
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (host[i] != canopy::morton_encode_30(std::uint32_t(i % 10), std::uint32_t(i / 10 % 10), std::uint32_t(i / 100))) {
      std::printf("canopy_consumer: wrong code at %zu\n", i);
      return 1;
    }
  }
  std::printf("canopy_consumer: ok (%s)\n", ctx.description().c_str());
  return 0;
}
