// bench/primitives/bench_sort_32.cu — radix sort of u32 keys and u32/u32 pairs against
// cub::DeviceRadixSort (std::sort / std::stable_sort on the host backend).
#include "bench_radix.cuh"

namespace canopy_bench {

void register_sort_32(std::vector<variant>& v) {
  v.push_back({"sort_u32_keys", "radix_sort", radix_bytes<std::uint32_t, no_value>,
               [](env& e, std::size_t n, result& r) { run_radix_sort<std::uint32_t, no_value>(e, n, r, 32, ~0ull); }});
  v.push_back({"sort_u32_u32_pairs", "radix_sort", radix_bytes<std::uint32_t, std::uint32_t>,
               [](env& e, std::size_t n, result& r) {
                 run_radix_sort<std::uint32_t, std::uint32_t>(e, n, r, 32, ~0ull);
               }});
}

}  // namespace canopy_bench
