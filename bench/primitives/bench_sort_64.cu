// bench/primitives/bench_sort_64.cu — radix sort of u64 keys (full and 48-bit: keys below 2^48
// sorted over bits [0, 48), CUB with end_bit = 48) and u64/u32 pairs against cub::DeviceRadixSort.
#include "bench_radix.cuh"

namespace canopy_bench {

void register_sort_64(std::vector<variant>& v) {
  v.push_back({"sort_u64_keys", "radix_sort", radix_bytes<std::uint64_t, no_value>,
               [](env& e, std::size_t n, result& r) { run_radix_sort<std::uint64_t, no_value>(e, n, r, 64, ~0ull); }});
  v.push_back({"sort_u64_48bit_keys", "radix_sort", radix_bytes<std::uint64_t, no_value>,
               [](env& e, std::size_t n, result& r) {
                 run_radix_sort<std::uint64_t, no_value>(e, n, r, 48, (std::uint64_t(1) << 48) - 1);
               }});
  v.push_back({"sort_u64_u32_pairs", "radix_sort", radix_bytes<std::uint64_t, std::uint32_t>,
               [](env& e, std::size_t n, result& r) {
                 run_radix_sort<std::uint64_t, std::uint32_t>(e, n, r, 64, ~0ull);
               }});
}

}  // namespace canopy_bench
