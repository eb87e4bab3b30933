// Gather/scatter of fixed-size records: checks, host loops, CUDA launches.
#include <canopy/core/detail/gather_kernels.cuh>
#include <canopy/core/detail/overlap.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/gather.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace canopy {

namespace {

void move_records(context& ctx, span<const std::byte> in, span<std::byte> out, std::size_t record_bytes,
                  span<const std::uint32_t> index, bool scatter, const char* function) {
  check_span(in, ctx.space(), function, "in");
  check_span(out, ctx.space(), function, "out");
  check_span(index, ctx.space(), function, scatter ? "scatter_index" : "gather_index");
  require(record_bytes >= 4 && record_bytes <= 256 && record_bytes % 4 == 0, function, "record_bytes",
          "must be a multiple of 4 in [4, 256], got " + std::to_string(record_bytes));
  require(in.size() % record_bytes == 0, function, "in",
          "size " + std::to_string(in.size()) + " bytes is not a multiple of record_bytes " +
              std::to_string(record_bytes));
  require(out.size() % record_bytes == 0, function, "out",
          "size " + std::to_string(out.size()) + " bytes is not a multiple of record_bytes " +
              std::to_string(record_bytes));
  const std::size_t n = index.size();
  const std::size_t in_records = in.size() / record_bytes, out_records = out.size() / record_bytes;
  const std::string index_name = scatter ? "scatter_index" : "gather_index";
  if (scatter)
    require(in_records == n, function, "in",
            "holds " + std::to_string(in_records) + " records, scatter_index has " + std::to_string(n));
  else
    require(out_records == n, function, "out",
            "holds " + std::to_string(out_records) + " records, gather_index has " + std::to_string(n));
  require(!detail::overlaps(in, out), function, "out", "overlaps in");
  if (n == 0) return;
  const std::size_t limit = scatter ? out_records : in_records;

  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    const auto addr = reinterpret_cast<std::uintptr_t>(in.data()) | reinterpret_cast<std::uintptr_t>(out.data());
    const std::size_t word = (record_bytes % 16 == 0 && addr % 16 == 0) ? 16 : (record_bytes % 8 == 0 && addr % 8 == 0) ? 8 : 4;
    const auto words = std::uint32_t(record_bytes / word);
    const std::size_t total = n * words;
    const std::size_t max_blocks = std::size_t(std::max(ctx.device().multiprocessors, 1)) * 16;
    const auto blocks = unsigned(std::min((total + 255) / 256, max_blocks));
    const device_check check =
        scatter ? device_check::scatter_index_out_of_range : device_check::gather_index_out_of_range;
    unsigned* bad_index = ctx.device_check_flags() + int(check);
    auto launch = [&](auto w) {
      using W = decltype(w);
      const W* src = reinterpret_cast<const W*>(in.data());
      W* dst = reinterpret_cast<W*>(out.data());
      if (scatter)
        detail::move_records_kernel<W, true><<<blocks, 256, 0, ctx.stream()>>>(src, dst, index.data(), n, words, limit, bad_index);
      else
        detail::move_records_kernel<W, false><<<blocks, 256, 0, ctx.stream()>>>(src, dst, index.data(), n, words, limit, bad_index);
      CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::move_records_kernel");
    };
    if (word == 16)
      launch(uint4{});
    else if (word == 8)
      launch(uint2{});
    else
      launch(std::uint32_t{});
#else
    detail::throw_cuda_from_host_compiler(function);
#endif
    return;
  }

  for (std::size_t r = 0; r < n; ++r)
    if (index[r] >= limit)
      require(false, function, index_name.c_str(),
              "entry " + std::to_string(r) + " = " + std::to_string(index[r]) + " is out of range (" +
                  std::to_string(limit) + " records)");
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 4096), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t r = range.begin(); r != range.end(); ++r) {
      const std::size_t src = scatter ? r : index[r], dst = scatter ? index[r] : r;
      std::memcpy(out.data() + dst * record_bytes, in.data() + src * record_bytes, record_bytes);
    }
  });
}

}  // namespace

void gather_records(context& ctx, span<const std::byte> in, span<std::byte> out, std::size_t record_bytes,
                    span<const std::uint32_t> gather_index) {
  move_records(ctx, in, out, record_bytes, gather_index, false, "canopy::gather_records");
}

void scatter_records(context& ctx, span<const std::byte> in, span<std::byte> out, std::size_t record_bytes,
                     span<const std::uint32_t> scatter_index) {
  move_records(ctx, in, out, record_bytes, scatter_index, true, "canopy::scatter_records");
}

}  // namespace canopy
