// canopy-sat-lookahead: the measuring harness (CUDA builds only, sm_90, not run by CTest) of the
// library's region kernel for RGBA8 -> u32 (canopy/structures/detail/sat_region_kernels.cuh;
// docs/sat.md, "Sums read ahead from L2", session 20, and "The region kernel in the library",
// session 21). It launches the kernel's measuring form (sat_region_kernel<true>: stamps and modes)
// over configurations K:Gy:RH0:RH[:D[:NS]] that the library fixes at 7:Gy:16:56:1:3:
//   - K walkers (and summers) a block, Gy region rows a chunk (fewer where Gx x Gy would pass the
//     SMs), RH0 rows a region in chunk 0 and RH in later ones, D staging rows a walker, NS carry
//     slots (3 or 4).
// Session 20's prototype had more options (pf, an L2 prefetch of the next chunk's rows; ahead, the
// next chunk's first rows loaded before this one is published; xg, the exchange read by loads from
// L2; sh 0, tensor stores without the evict_first hint; ll, evict_last on the summers' loads; bl 0,
// the last walker refilling every band). None of them was kept (docs/sat.md has the numbers); the
// prototype with them is in git history (77c0a2f).
// Modes: "exact"; "nostore" (everything but the table stores; not checked), "empty" (set-up only).
// Tables are checked exactly against a CPU reference (random and all-255 images); timings are
// medians against a device-to-device copy of a table-sized buffer in the same run.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sat_region_walk.cuh"

using namespace sat_proto;
using namespace sat_proto::region_walk;
#define CK SAT_PROTO_CHECK

namespace lookahead {

using params = canopy::detail::sat_region::lookahead_params;
constexpr auto kernel = canopy::detail::sat_region::sat_region_kernel<true>;

struct config {
  int K, Gy, RH0, RH, D, NS;
};

std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{0, 0, 0, 0, 1, 3};
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d", &c.K, &c.Gy, &c.RH0, &c.RH, &c.D, &c.NS) < 4 || c.K > max_walkers ||
        c.K < 1 || c.Gy < 1 || c.RH0 < 1 || c.RH < 1 || c.RH0 > max_region_rows || c.RH > max_region_rows || c.D < 1 || c.D > 3 ||
        c.NS < 3 || c.NS > max_slots) {
      std::printf("%s: bad configuration '%s' (K:Gy:RH0:RH[:D[:NS]], K 1 to 7, RH0 and RH <= 257, D 1 to 3, NS 3 or 4)\n", program,
                  one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

std::string name_of(const config& c) {
  return std::to_string(c.K) + ":" + std::to_string(c.Gy) + ":" + std::to_string(c.RH0) + ":" + std::to_string(c.RH) + ":" +
         std::to_string(c.D) + ":" + std::to_string(c.NS);
}

struct runner : region_exchange {
  int W, H;
  runner(int W_, int H_) : region_exchange(stamp_chunks, stamp_count, exchange_slots), W(W_), H(H_) {}
  bool plan(const config& c, const std::uint32_t* img, uint4* tab, params& p, CUtensorMap& tm, std::size_t& smem, std::string& why) {
    p = params{};
    if (!begin_plan(p, img, tab, W, H, RW, c.Gy, why)) return false;
    p.K = c.K;
    p.D = c.D;
    p.NS = c.NS;
    if (!plan_chunks(p, c.RH0, c.RH, why)) return false;
    smem = lookahead_layout(p.RHmax, p.RHs, c.K, c.D, p.Gx, p.Gy, c.NS).launch_bytes();
    if (!fits(p.Gx, p.NC, reinterpret_cast<const void*>(kernel), (2 * c.K + 2) * 32, smem, why)) return false;
    return table_tensor_map("canopy-sat-lookahead", tab, W, H, tm, why);
  }
  void launch(const CUtensorMap& tm, params p, std::size_t smem, int mode, bool stamped = false) {
    next_build(p, mode, stamped);
    CUtensorMap t = tm;
    void* args[] = {&t, &p};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(p.Gx * p.Gy), dim3((2 * p.K + 2) * 32), args, smem,
                                   nullptr));
  }
};

}  // namespace lookahead

int main(int argc, char** argv) {
  using namespace lookahead;
  return run_prototype(
      argc, argv, "canopy-sat-lookahead", "K:Gy:RH0:RH[:D[:NS]]", "7:8:16:56,7:8:16:48:1:4", "7:4:16:56,7:4:16:48:1:4",
      "4:2:3:5:2:3,3:3:2:7:1:4,6:8:4:9:3:4,6:1:9:13:2:3,7:2:3:21:1:4,1:3:3:2:1:3,5:1:30:17:1:4,7:1:9:60:1:3,2:2:5:40:1:4,4:3:6:19:1:3,"
      "3:2:3:9:2:4,7:8:16:56:1:3",
      {{256, 1}, {256, 33}, {1024, 100}, {512, 47}, {2048, 300}, {768, 1000}, {3840, 2160}, {7680, 4320}}, parse_configs,
      [](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
        run_region_configs<runner, params>(ti, timed, configs, all_ok, "K:Gy:RH0:RH:D:NS", name_of, [](runner& run, const params& p) {
          const int B = p.Gx * p.Gy;
          print_stamp_report(stamp_table(run.stamps, B, stamp_count, stamp_chunks), B, p.Gx, p.NC, stamp_count, "sums start",
                             "walker 0's buffer");
        });
      });
}
