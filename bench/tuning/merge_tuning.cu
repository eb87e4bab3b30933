// canopy-merge-tuning — merge sort variants (split search, store path, register bounds, block
// shapes) against cub::DeviceMergeSort::SortKeys on the same u32 inputs, in one process, and where
// the time goes (docs/performance/merge_sort.md):
//   - each variant's median time and CUB / canopy ratio; its output is compared with CUB's (a
//     mismatch makes the exit status 1);
//   - per-kernel times of canopy's sort (events recorded between its launches) and of CUB's (its
//     launches captured into a CUDA graph, then replayed one kernel at a time between events; the
//     replay's output is checked against CUB's too);
//   - the last merge pass in isolation: the partition kernel with 2/4/8-way searches and through
//     sample indexes of steps 128/256/512 (all checked against the binary search's splits), the merge
//     kernel variants, the same pass with the merge left out (load pieces, store tile: data
//     movement and barriers only, output not meaningful) and a device-to-device copy (--last-pass);
//   - the tile sort alone: merge_block_sort_kernel shapes and code paths (merge_tile_code bits,
//     register bounds) with their registers, local memory and resident blocks per SM, each output
//     checked (every tile sorted, the hash sum of the keys unchanged);
//   - --profile-once: one launch of the tile sorts worth profiling and of CUB's sort (for ncu);
//   - --bank-model (host only, no GPU): the tile sort's shared-memory instructions and bank
//     wavefronts per key, replayed lane by lane on random keys.
// CUDA only (except --bank-model).
//
//   canopy-merge-tuning [--sizes 24,26,28] [--runs 15] [--no-breakdown] [--no-tiles] [--no-full]
//                       [--last-pass] [--profile-once] [--bank-model]
#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/merge_sort.hpp>

#include <cub/device/device_merge_sort.cuh>

#include "common/bench_common.hpp"
#include "common/bench_data.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using K = std::uint32_t;
using canopy::detail::merge_no_value;
using canopy::detail::merge_shape;

//! The user comparator of bench/primitives/bench_merge.cu: ascending u32, a functor neither side
//! can specialise on.
struct user_less_u32 {
  __host__ __device__ bool operator()(const K& a, const K& b) const { return a < b; }
};

int g_runs = 15;
bool g_failed = false;

//! Whether the device arrays a and b differ anywhere (bench_data.cuh).
bool differ(canopy::context& ctx, const K* a, const K* b, std::size_t n) {
  return canopy_bench::first_difference(ctx, a, b, n) != n;
}

//! Median over g_runs of f() timed with events; prep() runs untimed before each (input restore).
template <class P, class F>
double median_ms(canopy::context& ctx, P&& prep, F&& f) {
  // 3 warm-up runs: pool growth, module load.
  return canopy_bench::median_ms_on_stream(ctx.stream(), 3, g_runs, prep, f);
}

//! Per-launch medians of a launch sequence: launch(record) must call record() after each launch.
template <class P, class L>
std::vector<double> per_launch_ms(canopy::context& ctx, P&& prep, L&& launch) {
  std::vector<cudaEvent_t> ev(128);
  for (auto& e : ev) CANOPY_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<std::vector<double>> t;
  for (int r = 0; r < g_runs + 2; ++r) {
    prep();
    std::size_t i = 0;
    CANOPY_CUDA_CHECK(cudaEventRecord(ev[i++], ctx.stream()));
    launch([&] {
      if (i < ev.size()) CANOPY_CUDA_CHECK(cudaEventRecord(ev[i++], ctx.stream()));
    });
    CANOPY_CUDA_CHECK(cudaEventSynchronize(ev[i - 1]));
    if (r < 2) continue;  // warm-up
    t.resize(i - 1);
    for (std::size_t j = 0; j + 1 < i; ++j) {
      float ms = 0;
      CANOPY_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[j], ev[j + 1]));
      t[j].push_back(ms);
    }
  }
  for (auto& e : ev) CANOPY_CUDA_CHECK(cudaEventDestroy(e));
  std::vector<double> m;
  for (auto& v : t) m.push_back(canopy_bench::median(v));
  return m;
}

struct sort_case {
  canopy::context& ctx;
  int lg;
  std::size_t n;
  canopy::buffer<K>& pristine;
  canopy::buffer<K>& keys;
  canopy::buffer<K>& ref;  // CUB's result
  double cub_ms;
  double copy_ms;

  void restore() {
    CANOPY_CUDA_CHECK(
        cudaMemcpyAsync(keys.data(), pristine.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, ctx.stream()));
  }

  template <class Shape>
  double run(const char* label) {
    const double ms = median_ms(ctx, [&] { restore(); }, [&] {
      canopy::detail::merge_sort_cuda<K, merge_no_value, false, Shape>(ctx, keys.data(), nullptr, n, user_less_u32{});
    });
    const std::size_t at = canopy_bench::first_difference(ctx, keys.data(), ref.data(), n);
    std::printf("merge_sort_u32 n=2^%d %-44s %8.4f ms  CUB %8.4f ms  CUB/canopy %.3f  %s\n", lg, label, ms, cub_ms,
                cub_ms / ms, at != n ? "MISMATCH" : "ok");
    if (at != n) {
      std::printf("  keys differ from CUB's from index %zu\n", at);
      g_failed = true;
    }
    return ms;
  }

  //! canopy's per-kernel split (events between launches, which also stops PDL overlap).
  template <class Shape>
  void breakdown(const char* label) {
    const auto t = per_launch_ms(ctx, [&] { restore(); }, [&](auto record) {
      canopy::detail::merge_sort_cuda<K, merge_no_value, false, Shape>(ctx, keys.data(), nullptr, n, user_less_u32{},
                                                                       [&](int) { record(); });
    });
    const bool bad = differ(ctx, keys.data(), ref.data(), n);
    double part = 0, merge = 0;
    std::string passes;
    for (std::size_t i = 1; i + 1 < t.size(); i += 2) {
      part += t[i];
      merge += t[i + 1];
      char b[64];
      std::snprintf(b, sizeof b, " %.3f+%.3f", t[i], t[i + 1]);
      passes += b;
    }
    const std::size_t np = (t.size() - 1) / 2;
    std::printf("canopy split n=2^%d %s: tile sort %.4f ms, %zu passes: partitions %.4f ms, merges %.4f ms (%.4f per "
                "pass, %.0f%% of copy); sum %.4f ms; %s\n  per pass (partition+merge):%s\n",
                lg, label, t[0], np, part, merge, np ? merge / np : 0.0, np ? 100.0 * copy_ms / (merge / np) : 0.0,
                t[0] + part + merge, bad ? "MISMATCH" : "ok", passes.c_str());
    if (bad) g_failed = true;
  }
};

//! CUB's per-kernel split: its launches captured into a graph, then each kernel node launched on
//! its own between events (same order, same arguments).
void cub_breakdown(canopy::context& ctx, sort_case& c, void* temp, std::size_t bytes) {
  cudaStream_t s = ctx.stream();
  cudaGraph_t g;
  CANOPY_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(temp, bytes, c.keys.data(), std::int64_t(c.n), user_less_u32{}, s));
  CANOPY_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  std::size_t count = 1;
  cudaGraphNode_t node;
  CANOPY_CUDA_CHECK(cudaGraphGetRootNodes(g, &node, &count));
  std::vector<cudaKernelNodeParams> kernels;
  std::vector<std::string> names;
  bool chain = count == 1;
  while (chain) {
    cudaGraphNodeType type;
    CANOPY_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams p;
      CANOPY_CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &p));
      if (p.extra) {
        chain = false;
        break;
      }
      kernels.push_back(p);
      const char* name = nullptr;
      if (cudaFuncGetName(&name, p.func) != cudaSuccess || !name) name = "?";
      names.push_back(name);
    } else {
      std::printf("  (CUB graph holds a node of type %d, not replayed)\n", int(type));
    }
    cudaGraphNode_t next[4];
    cudaGraphEdgeData edges[4];
    std::size_t nn = 4;
    CANOPY_CUDA_CHECK(cudaGraphNodeGetDependentNodes(node, next, edges, &nn));
    if (nn == 0) break;
    if (nn != 1) chain = false;
    node = next[0];
  }
  if (!chain || kernels.empty()) {
    std::printf("cub split n=2^%d: the captured graph is no chain of plain kernel nodes; skipped\n", c.lg);
    CANOPY_CUDA_CHECK(cudaGraphDestroy(g));
    return;
  }
  const auto t = per_launch_ms(ctx, [&] { c.restore(); }, [&](auto record) {
    for (auto& p : kernels) {
      CANOPY_CUDA_CHECK(cudaLaunchKernel(p.func, p.gridDim, p.blockDim, p.kernelParams, p.sharedMemBytes, s));
      record();
    }
  });
  const bool bad = differ(ctx, c.keys.data(), c.ref.data(), c.n);
  double sort = 0, part = 0, merge = 0;
  int np = 0;
  std::string passes;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& nm = names[i];
    if (nm.find("BlockSort") != std::string::npos) sort += t[i];
    else if (nm.find("Partition") != std::string::npos) part += t[i];
    else if (nm.find("Merge") != std::string::npos) {
      merge += t[i];
      ++np;
    }
    char b[32];
    std::snprintf(b, sizeof b, " %.3f", t[i]);
    passes += b;
  }
  std::printf("cub split n=2^%d: %zu kernels (first: %.60s; block %u x grid %u); block sort %.4f ms, %d passes: "
              "partitions %.4f ms, merges %.4f ms (%.4f per pass, %.0f%% of copy); sum %.4f ms; replay %s\n"
              "  per kernel:%s\n",
              c.lg, kernels.size(), names[0].c_str(), kernels[0].blockDim.x, kernels[0].gridDim.x, sort, np, part,
              merge, np ? merge / np : 0.0, np ? 100.0 * c.copy_ms / (merge / np) : 0.0, sort + part + merge,
              bad ? "MISMATCH" : "ok", passes.c_str());
  if (kernels.size() > 2)
    std::printf("  CUB merge kernel: block %u x grid %u, smem %u\n", kernels[2].blockDim.x, kernels[2].gridDim.x,
                kernels[2].sharedMemBytes);
  if (bad) g_failed = true;
  CANOPY_CUDA_CHECK(cudaGraphDestroy(g));
}

__global__ void take_samples(const K* in, std::size_t n, int log2_step, K* samples) {
  for (std::size_t q = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; (q << log2_step) < n;
       q += std::size_t(gridDim.x) * blockDim.x)
    samples[q] = in[q << log2_step];
}

//! merge_pass_kernel with the merge left out: the same loads of the two pieces into shared memory,
//! a blocked read-back, and the same store; output = the pieces unmerged (timing only).
template <int Threads, int Items, bool WarpStore>
__global__ void __launch_bounds__(Threads) pass_without_merge(const K* in, K* out, std::size_t n, std::size_t width,
                                                              const std::size_t* splits) {
  constexpr int tile = Threads * Items;
  __shared__ K s[tile];
  const std::size_t p0 = std::size_t(blockIdx.x) * tile;
  const std::size_t p1 = p0 + tile < n ? p0 + tile : n;
  const std::size_t pair_start = p0 / (2 * width) * (2 * width);
  const std::size_t pair_end = pair_start + 2 * width < n ? pair_start + 2 * width : n;
  const std::size_t a_end = pair_start + width < n ? pair_start + width : n;
  const std::size_t a0 = splits[blockIdx.x];
  const std::size_t a1 = p1 == pair_end ? a_end : splits[blockIdx.x + 1];
  const int count = int(p1 - p0);
  const std::size_t b0 = a_end + (p0 - pair_start) - (a0 - pair_start);
  const int a_len = int(a1 - a0);
  const std::size_t last = n - 1;
  K tmp[Items];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int j = threadIdx.x + i * Threads;
    if (j < count) tmp[i] = j < a_len ? in[a0 + j] : in[b0 + (j - a_len) < last ? b0 + (j - a_len) : last];
  }
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int j = threadIdx.x + i * Threads;
    if (j < count) s[j] = tmp[i];
  }
  __syncthreads();
  K k[Items];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int j = int(threadIdx.x) * Items + i;
    k[i] = s[j < count ? j : 0];
  }
  if constexpr (WarpStore) {
    canopy::detail::store_blocked_by_warp<K, Threads, Items>(out + p0, count, s, k);
  } else {
    const canopy::detail::group_sync<Threads, Threads> sync(threadIdx.x);
    canopy::detail::store_blocked<K, Threads, Items>(out + p0, count, s, threadIdx.x, k, sync);
  }
}

//! Order-independent hash of a key (the tile-sort check compares the sum over a tile sort's output
//! with the sum over its input: a lost or duplicated key changes it).
__device__ __forceinline__ unsigned long long key_hash(K k) {
  std::uint64_t z = std::uint64_t(k) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 32);
}

//! sums[0] += key_hash of every key; sums[1] += adjacent pairs inside one tile that are out of order.
__global__ void tile_check(const K* k, std::size_t n, std::size_t tile, unsigned long long* sums) {
  unsigned long long h = 0, bad = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    h += key_hash(k[i]);
    if ((i + 1) % tile != 0 && i + 1 < n && user_less_u32{}(k[i + 1], k[i])) ++bad;
  }
  atomicAdd(&sums[0], h);
  if (bad) atomicAdd(&sums[1], bad);
}

//! The tile sort alone: merge_block_sort_kernel variants on the case's input (n keys, the last tile
//! partial unless n is a multiple of the tile), each checked (every tile sorted, the keys' hash sum
//! unchanged), with its registers, local memory and resident blocks per SM.
struct tile_sweep {
  sort_case& c;
  canopy::buffer<K> out;
  canopy::buffer<K> samples;
  canopy::buffer<unsigned long long> sums;
  unsigned long long input_hash = 0;

  explicit tile_sweep(sort_case& cs)
      : c(cs), out(cs.ctx, cs.n), samples(cs.ctx, (cs.n >> 8) + 1), sums(cs.ctx, 2) {
    sums.fill_bytes(0);
    tile_check<<<1024, 256, 0, c.ctx.stream()>>>(c.pristine.data(), c.n, c.n, sums.data());
    CANOPY_CUDA_CHECK(cudaGetLastError());
    input_hash = sums.to_host()[0];
  }

  template <int Threads, int Items, int MinBlocks, int Code>
  double run(const char* label) {
    auto kernel = canopy::detail::merge_block_sort_kernel<K, merge_no_value, false, Threads, Items, 8, MinBlocks, Code,
                                                          user_less_u32>;
    cudaFuncAttributes attr;
    CANOPY_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    int blocks = 0;
    CANOPY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, Threads, 0));
    constexpr std::size_t tile = std::size_t(Threads) * Items;
    const unsigned grid = unsigned((c.n + tile - 1) / tile);
    cudaStream_t s = c.ctx.stream();
    const double ms = median_ms(c.ctx, [] {}, [&] {
      kernel<<<grid, Threads, 0, s>>>(c.pristine.data(), nullptr, out.data(), nullptr, c.n, samples.data(),
                                      user_less_u32{});
    });
    CANOPY_CUDA_CHECK(cudaGetLastError());
    sums.fill_bytes(0);
    tile_check<<<1024, 256, 0, s>>>(out.data(), c.n, tile, sums.data());
    CANOPY_CUDA_CHECK(cudaGetLastError());
    const auto h = sums.to_host();
    const bool ok = h[0] == input_hash && h[1] == 0;
    if (!ok) g_failed = true;
    std::printf("tile sort n=2^%d %3dx%-2d code %2d minblocks %d %-34s %3d regs %3zu B local %d blocks/SM (%2d warps): "
                "%7.4f ms %.3f ns/key  %s\n",
                c.lg, Threads, Items, Code, MinBlocks, label, attr.numRegs, std::size_t(attr.localSizeBytes), blocks,
                blocks * Threads / 32, ms, ms * 1e6 / double(c.n), ok ? "ok" : "WRONG (unsorted tile or keys lost)");
    return ms;
  }
};

//! Tile-sort variants: the shape's cost (CUB's 256 x 17, 256 x 23, 512 x I) apart from the code's
//! (merge_tile_code bits: 1 full-tile path, 2 warp load/store, 4 group barriers, 8 clamped merge) and
//! the register bound (minblocks).
void tile_variants(sort_case& c) {
  tile_sweep t(c);
  constexpr int F = canopy::detail::tile_code_full, W = canopy::detail::tile_code_warp_io,
                G = canopy::detail::tile_code_group_barriers, M = canopy::detail::tile_code_clamped_merge;
  t.run<512, 23, 0, 0>("shipped (general path)");
  t.run<256, 17, 0, 0>("CUB's shape, general path");
  t.run<256, 23, 0, 0>("general path");
  t.run<512, 23, 0, F>("full");
  t.run<512, 23, 0, F | W>("full, warp io");
  t.run<512, 23, 0, F | G>("full, group barriers");
  t.run<512, 23, 0, F | W | G>("full, warp io, group barriers");
  t.run<512, 23, 0, F | W | M>("full, warp io, clamped merge");
  t.run<512, 23, 0, F | W | G | M>("all");
  t.run<512, 23, 3, F | W>("full, warp io");
  t.run<512, 23, 3, F | W | G>("full, warp io, group barriers");
  t.run<512, 23, 3, F | W | M>("full, warp io, clamped merge");
  t.run<512, 23, 3, F | W | G | M>("all");
  t.run<512, 23, 3, 0>("general path");
  t.run<256, 17, 0, F | W | G>("CUB's shape, full, warp io, group");
  t.run<256, 17, 0, F | W | G | M>("CUB's shape, all");
  t.run<256, 23, 0, F | W | G>("full, warp io, group barriers");
  t.run<256, 23, 5, F | W | G>("full, warp io, group barriers");
  t.run<256, 23, 6, F | W | G>("full, warp io, group barriers");
  t.run<512, 15, 0, F | W | G>("full, warp io, group barriers");
  t.run<512, 17, 0, F | W | G>("full, warp io, group barriers");
  t.run<512, 19, 0, F | W | G>("full, warp io, group barriers");
  t.run<512, 21, 0, F | W | G>("full, warp io, group barriers");
  t.run<512, 23, 0, F | W | G>("full, warp io, group barriers (again)");
  t.run<512, 23, 0, 0>("shipped (again)");
}

//! One launch of each tile sort worth profiling and of CUB's sort (for ncu --kernel-name).
void profile_once(sort_case& c, void* temp, std::size_t bytes) {
  constexpr int F = canopy::detail::tile_code_full, W = canopy::detail::tile_code_warp_io,
                G = canopy::detail::tile_code_group_barriers;
  canopy::buffer<K> out(c.ctx, c.n), samples(c.ctx, (c.n >> 8) + 1);
  cudaStream_t s = c.ctx.stream();
  const auto launch = [&](auto kernel, int threads, int items) {
    const unsigned grid = unsigned((c.n + threads * items - 1) / (threads * items));
    kernel<<<grid, threads, 0, s>>>(c.pristine.data(), nullptr, out.data(), nullptr, c.n, samples.data(),
                                    user_less_u32{});
    CANOPY_CUDA_CHECK(cudaGetLastError());
  };
  using canopy::detail::merge_block_sort_kernel;
  launch(merge_block_sort_kernel<K, merge_no_value, false, 512, 23, 8, 0, 0, user_less_u32>, 512, 23);
  launch(merge_block_sort_kernel<K, merge_no_value, false, 512, 23, 8, 3, F | W | G, user_less_u32>, 512, 23);
  launch(merge_block_sort_kernel<K, merge_no_value, false, 256, 17, 8, 0, 0, user_less_u32>, 256, 17);
  c.restore();
  CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(temp, bytes, c.keys.data(), std::int64_t(c.n), user_less_u32{}, s));
  CANOPY_CUDA_CHECK(cudaStreamSynchronize(s));
}

//! The last merge pass alone, on its real input (two sorted runs of the pass's width).
void last_pass(canopy::context& ctx, sort_case& c) {
  constexpr int sort_tile = 512 * 23, threads = 256, items = 23, tile = threads * items;
  const std::size_t n = c.n;
  std::size_t w = sort_tile;
  while (2 * w < n) w *= 2;
  // Input: [0, w) and [w, n) each sorted.
  canopy::buffer<K> runs(ctx, n), out(ctx, n);
  CANOPY_CUDA_CHECK(cudaMemcpyAsync(runs.data(), c.pristine.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, ctx.stream()));
  canopy::merge_sort_keys(ctx, canopy::span<K>(runs.data(), w, ctx.space()), user_less_u32{});
  canopy::merge_sort_keys(ctx, canopy::span<K>(runs.data() + w, n - w, ctx.space()), user_less_u32{});
  const std::size_t tiles = (n + tile - 1) / tile;
  canopy::buffer<std::size_t> splits(ctx, tiles + 1);
  cudaStream_t s = ctx.stream();
  const unsigned pblocks = unsigned((tiles + 1 + 255) / 256);
  const auto none = [] {};
  using canopy::detail::merge_partition_kernel;
  // Sample indexes of the runs for steps 128, 256, 512 (what the tile sort and merge passes write).
  canopy::buffer<K> smp7(ctx, (n >> 7) + 1), smp8(ctx, (n >> 8) + 1), smp9(ctx, (n >> 9) + 1);
  take_samples<<<1024, 256, 0, s>>>(runs.data(), n, 7, smp7.data());
  take_samples<<<1024, 256, 0, s>>>(runs.data(), n, 8, smp8.data());
  take_samples<<<1024, 256, 0, s>>>(runs.data(), n, 9, smp9.data());
  CANOPY_CUDA_CHECK(cudaGetLastError());
  const K* smp = nullptr;
  const auto part = [&](auto kernel) {
    return median_ms(ctx, none, [&] {
      kernel<<<pblocks, 256, 0, s>>>(runs.data(), n, w, std::size_t(tile), tiles, splits.data(), smp, user_less_u32{});
    });
  };
  // Every search must give the binary search's splits.
  bool same = true;
  std::vector<std::size_t> want;
  const auto check = [&] {
    if (want.empty()) want = splits.to_host();
    else if (splits.to_host() != want) same = false;
  };
  const double p2 = part(merge_partition_kernel<K, user_less_u32, 2, 0>);
  check();
  const double p4 = part(merge_partition_kernel<K, user_less_u32, 4, 0>);
  check();
  const double p8 = part(merge_partition_kernel<K, user_less_u32, 8, 0>);
  check();
  smp = smp7.data();
  const double ps7 = part(merge_partition_kernel<K, user_less_u32, 2, 7>);
  check();
  smp = smp8.data();
  const double ps8 = part(merge_partition_kernel<K, user_less_u32, 2, 8>);
  check();
  const double ps8w4 = part(merge_partition_kernel<K, user_less_u32, 4, 8>);
  check();
  smp = smp9.data();
  const double ps9 = part(merge_partition_kernel<K, user_less_u32, 2, 9>);
  check();
  if (!same) g_failed = true;
  std::printf("last pass n=2^%d: partition with sample index: step 128 %.4f, 256 %.4f (4-way in window %.4f), 512 "
              "%.4f ms (vs binary %.4f ms)\n",
              c.lg, ps7, ps8, ps8w4, ps9, p2);
  const auto merge = [&](auto kernel) {
    const double ms = median_ms(ctx, none, [&] {
      kernel<<<unsigned(tiles), threads, 0, s>>>(runs.data(), static_cast<const merge_no_value*>(nullptr), out.data(),
                                                 static_cast<merge_no_value*>(nullptr), n, w, splits.data(),
                                                 static_cast<K*>(nullptr), user_less_u32{});
    });
    return ms;
  };
  using canopy::detail::merge_pass_kernel;
  // Every merge variant's output is checked against CUB's sorted keys (bad: the total over them).
  bool bad = false;
  const auto checked_merge = [&](auto kernel) {
    const double ms = merge(kernel);
    bad = differ(ctx, out.data(), c.ref.data(), n) || bad;
    return ms;
  };
  const double m_base =
      checked_merge(merge_pass_kernel<K, merge_no_value, false, threads, items, false, 0, 0, user_less_u32>);
  const double m_ws = checked_merge(merge_pass_kernel<K, merge_no_value, false, threads, items, true, 0, 0, user_less_u32>);
  const double m_ws5 = checked_merge(merge_pass_kernel<K, merge_no_value, false, threads, items, true, 5, 0, user_less_u32>);
  const double m_ws6 = checked_merge(merge_pass_kernel<K, merge_no_value, false, threads, items, true, 6, 0, user_less_u32>);
  const double m_6 = checked_merge(merge_pass_kernel<K, merge_no_value, false, threads, items, false, 6, 0, user_less_u32>);
  if (bad) g_failed = true;
  const auto nomerge = [&](auto kernel) {
    return median_ms(ctx, none, [&] { kernel<<<unsigned(tiles), threads, 0, s>>>(runs.data(), out.data(), n, w, splits.data()); });
  };
  const double nm = nomerge(pass_without_merge<threads, items, false>);
  const double nm_ws = nomerge(pass_without_merge<threads, items, true>);
  std::printf("last pass n=2^%d width %zu, %zu tiles of %d: copy %.4f ms; partition 2-way %.4f, 4-way %.4f, 8-way "
              "%.4f ms (splits %s); merge: base %.4f (%s), warp store %.4f, +minblocks 5 %.4f, +minblocks 6 %.4f, "
              "minblocks 6 alone %.4f ms; without the merge: %.4f, warp store %.4f ms\n",
              c.lg, w, tiles, tile, c.copy_ms, p2, p4, p8, same ? "agree" : "DIFFER", m_base,
              bad ? "MISMATCH" : "ok", m_ws, m_ws5, m_ws6, m_6, nm, nm_ws);
}

struct sweep_options {
  bool breakdown = true;
  bool last_pass = false;
  bool tiles = true;
  bool full = true;
  bool profile = false;
  bool bank_model = false;  //!< CPU-only shared-memory bank model of the tile sort, then exit
};

void sweep(canopy::context& ctx, int lg, const sweep_options& o) {
  const std::size_t n = std::size_t(1) << lg;
  canopy::buffer<K> pristine(ctx, n), keys(ctx, n), ref(ctx, n);
  canopy_bench::fill_random(ctx, pristine.view(), 0x5eed0000ull + lg);
  CANOPY_CUDA_CHECK(cudaGetLastError());
  std::size_t bytes = 0;
  CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(nullptr, bytes, ref.data(), std::int64_t(n), user_less_u32{},
                                                   ctx.stream()));
  canopy::buffer<unsigned char> temp(ctx, bytes);
  if (o.profile) {
    sort_case c{ctx, lg, n, pristine, keys, ref, 0.0, 0.0};
    profile_once(c, temp.data(), bytes);
    return;
  }
  const auto restore_ref = [&] {
    CANOPY_CUDA_CHECK(cudaMemcpyAsync(ref.data(), pristine.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, ctx.stream()));
  };
  const double cub_ms = median_ms(ctx, restore_ref, [&] {
    CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(temp.data(), bytes, ref.data(), std::int64_t(n), user_less_u32{},
                                                     ctx.stream()));
  });
  const double copy_ms = median_ms(ctx, [] {}, [&] {
    CANOPY_CUDA_CHECK(cudaMemcpyAsync(keys.data(), pristine.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, ctx.stream()));
  });
  std::printf("n=2^%d: CUB SortKeys %.4f ms (%.2f Gkeys/s); copy of n keys %.4f ms (%.1f GB/s read+write)\n", lg,
              cub_ms, n / (cub_ms * 1e6), copy_ms, 2.0 * n * sizeof(K) / (copy_ms * 1e6));
  sort_case c{ctx, lg, n, pristine, keys, ref, cub_ms, copy_ms};
  if (o.tiles) tile_variants(c);

  using shipped = canopy::detail::merge_sort_tuning<K, merge_no_value, false>::shape;
  // The default of runs 6-7 (commit 906e425): general tile-sort path for every tile.
  using run7 = merge_shape<512, 256, 23, 2, true, 5, 27, 8, 0, 0>;
  constexpr int F = canopy::detail::tile_code_full, W = canopy::detail::tile_code_warp_io,
                G = canopy::detail::tile_code_group_barriers, M = canopy::detail::tile_code_clamped_merge;
  if (o.full) {
    c.run<shipped>("default (merge_sort_tuning)");
    c.run<run7>("run-7 default (general tile sort)");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W, 0>>("tile: full, warp io");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G, 0>>("tile: full, warp io, group");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G | M, 0>>("tile: all");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W, 3>>("tile: full, warp io, minblocks 3");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G, 3>>("tile: full, warp io, group, minblocks 3");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | M, 3>>("tile: full, warp io, clamped, minblocks 3");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G | M, 3>>("tile: all, minblocks 3");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 0, 8, F | W | G, 3>>("tile: full, warp io, group, mb 3, PDL never");
    c.run<merge_shape<512, 256, 23, 2, true, 5, 31, 8, F | W | G, 3>>("tile: full, warp io, group, mb 3, PDL always");
    c.run<merge_shape<256, 256, 23, 2, true, 5, 27, 8, F | W | G, 5>>("tile 256 x 23: full, warp io, group, mb 5");
    c.run<shipped>("default again (drift check)");
    c.run<run7>("run-7 default again (drift check)");
  }
  if (o.breakdown) {
    c.breakdown<run7>("run-7 default");
    c.breakdown<shipped>("default");
    c.breakdown<merge_shape<512, 256, 23, 2, true, 5, 27, 8, F | W | G | M, 3>>("tile: all, minblocks 3");
    cub_breakdown(ctx, c, temp.data(), bytes);
  }
  if (o.last_pass) last_pass(ctx, c);
}

//! Wavefronts of one warp-wide 4-byte shared-memory access by the given word addresses (one per
//! active lane): the largest number of distinct words that fall into one of the 32 banks (lanes
//! reading the same word share it).
int bank_wavefronts(std::vector<int> a) {
  if (a.empty()) return 0;
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  int per_bank[32] = {};
  int most = 0;
  for (int x : a) most = std::max(most, ++per_bank[x & 31]);
  return most;
}

//! Host model of the shared-memory traffic of one tile sort (block_sort_full's rounds on random u32
//! keys; no GPU needed): every warp-wide load and store of the round stores, the merge-path searches
//! and the serial merges, replayed lane by lane with the kernel's addresses, counted as instructions
//! and as bank wavefronts (an access whose lanes hit one bank k times costs k wavefronts; the shared
//! pipe of an SM serves one wavefront per clock). Clamped: serial_merge_clamped (one load per output
//! step for all lanes) instead of serial_merge (the lanes that took from A and those that took from
//! B load in two predicated instructions). The blocked stores (stride I, odd) and the tile's load and
//! store (1 wavefront per instruction) are conflict-free by construction; the model checks the
//! former.
void bank_model(int threads, int items, bool clamped, int tiles) {
  const int T = threads, I = items, n = T * I, warps = T / 32;
  std::mt19937 rng(12345u + unsigned(T * 100 + I));
  double st_wf = 0, st_in = 0, search_wf = 0, search_in = 0, merge_wf = 0, merge_in = 0;
  int rounds = 0, block_rounds = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    std::vector<K> k(n), sm(n);
    for (auto& x : k) x = K(rng());
    for (int t = 0; t < T; ++t) std::stable_sort(k.begin() + t * I, k.begin() + (t + 1) * I);
    rounds = block_rounds = 0;
    for (int group = 2; group <= T; group *= 2) {
      ++rounds;
      block_rounds += group > 32;
      const int width = group / 2 * I;
      sm = k;
      for (int w = 0; w < warps; ++w) {
        for (int i = 0; i < I; ++i) {
          std::vector<int> a;
          for (int l = 0; l < 32; ++l) a.push_back((w * 32 + l) * I + i);
          st_wf += bank_wavefronts(a);
          st_in += 1;
        }
        // Merge path: lane l's probe addresses per step (two loads per step).
        std::vector<std::vector<std::pair<int, int>>> probes(32);
        std::vector<int> split(32);
        for (int l = 0; l < 32; ++l) {
          const int t = w * 32 + l, ps = (t & ~(group - 1)) * I, diag = (t & (group - 1)) * I;
          int lo = std::max(0, diag - width), hi = std::min(diag, width);
          while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            const int pa = ps + mid, pb = ps + width + diag - 1 - mid;
            probes[l].push_back({pa, pb});
            if (user_less_u32{}(sm[pb], sm[pa])) hi = mid;
            else lo = mid + 1;
          }
          split[l] = lo;
        }
        std::size_t steps = 0;
        for (auto& p : probes) steps = std::max(steps, p.size());
        for (std::size_t j = 0; j < steps; ++j) {
          std::vector<int> a, b;
          for (int l = 0; l < 32; ++l)
            if (j < probes[l].size()) {
              a.push_back(probes[l][j].first);
              b.push_back(probes[l][j].second);
            }
          search_wf += bank_wavefronts(a) + bank_wavefronts(b);
          search_in += 2;
        }
        // Serial merge of I outputs per lane.
        int ai[32], bi[32], ae[32], be[32];
        K ka[32], kb[32];
        std::vector<int> a0, b0;
        for (int l = 0; l < 32; ++l) {
          const int t = w * 32 + l, ps = (t & ~(group - 1)) * I, diag = (t & (group - 1)) * I;
          ae[l] = ps + width;
          be[l] = ps + 2 * width;
          ai[l] = ps + split[l];
          bi[l] = ae[l] + diag - split[l];
          const int pa = clamped ? std::min(ai[l], be[l] - 1) : (ai[l] < ae[l] ? ai[l] : be[l] - 1);
          const int pb = std::min(bi[l], be[l] - 1);
          ka[l] = sm[pa];
          kb[l] = sm[pb];
          a0.push_back(pa);
          b0.push_back(pb);
        }
        merge_wf += bank_wavefronts(a0) + bank_wavefronts(b0);
        merge_in += 2;
        for (int i = 0; i < I; ++i) {
          std::vector<int> one, from_a, from_b;
          for (int l = 0; l < 32; ++l) {
            const int t = w * 32 + l;
            const bool take_b = bi[l] < be[l] && (ai[l] >= ae[l] || user_less_u32{}(kb[l], ka[l]));
            k[t * I + i] = take_b ? kb[l] : ka[l];
            if (take_b) ++bi[l];
            else ++ai[l];
            if (i + 1 == I) continue;  // the last step's load is dead
            if (clamped) {
              const int p = std::min(take_b ? bi[l] : ai[l], be[l] - 1);
              one.push_back(p);
              (take_b ? kb[l] : ka[l]) = sm[p];
            } else if (take_b && bi[l] < be[l]) {
              from_b.push_back(bi[l]);
              kb[l] = sm[bi[l]];
            } else if (!take_b && ai[l] < ae[l]) {
              from_a.push_back(ai[l]);
              ka[l] = sm[ai[l]];
            }
          }
          if (i + 1 == I) continue;
          if (clamped) {
            merge_wf += bank_wavefronts(one);
            merge_in += 1;
          } else {
            merge_wf += bank_wavefronts(from_a) + bank_wavefronts(from_b);
            merge_in += 2;
          }
        }
      }
    }
    for (int t = 0; t + 1 < n; ++t)
      if (user_less_u32{}(k[t + 1], k[t])) {
        std::printf("bank model %dx%d: tile not sorted (model error)\n", T, I);
        g_failed = true;
        return;
      }
  }
  const double keys = double(n) * tiles;
  // Per key: wavefronts (the shared pipe's clocks per SM) and shared-memory warp instructions.
  const double wf = (st_wf + search_wf + merge_wf) / keys * 32, in = (st_in + search_in + merge_in) / keys * 32;
  std::printf("bank model %3dx%-2d %-9s %d rounds (%d block-wide): per 32 keys: wavefronts %.1f (stores %.1f, "
              "searches %.1f, merges %.1f), shared instructions %.1f (stores %.1f, searches %.1f, merges %.1f); "
              "wavefronts per instruction: searches %.2f, merges %.2f\n",
              T, I, clamped ? "clamped" : "two-load", rounds, block_rounds, wf, st_wf / keys * 32,
              search_wf / keys * 32, merge_wf / keys * 32, in, st_in / keys * 32, search_in / keys * 32,
              merge_in / keys * 32, search_wf / search_in, merge_wf / merge_in);
}

void bank_models() {
  const int shapes[][2] = {{512, 23}, {256, 23}, {256, 17}, {512, 15}, {512, 17}, {512, 19}, {512, 21}, {128, 23}};
  for (auto& sh : shapes) {
    bank_model(sh[0], sh[1], false, 8);
    bank_model(sh[0], sh[1], true, 8);
  }
}


}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{24, 26, 28};
  sweep_options o;
  try {
    canopy_bench::command_line cl(argc, argv, "canopy-merge-tuning");
    while (cl.next())
      if (cl.is("--sizes")) sizes = canopy_bench::parse_int_list(cl.value(), "canopy-merge-tuning", "--sizes", 16, 30);
      else if (cl.is("--runs")) g_runs = cl.int_value(1);
      else if (cl.is("--no-breakdown")) o.breakdown = false;
      else if (cl.is("--no-tiles")) o.tiles = false;
      else if (cl.is("--no-full")) o.full = false;
      else if (cl.is("--last-pass")) o.last_pass = true;
      else if (cl.is("--profile-once")) o.profile = true;
      else if (cl.is("--bank-model")) o.bank_model = true;
      else cl.refuse_unknown();
  } catch (const canopy_bench::bad_flag& e) {
    std::fprintf(stderr,
                 "%s\nusage: canopy-merge-tuning [--sizes 24,26,28] [--runs 15] [--no-breakdown] [--no-tiles] "
                 "[--no-full] [--last-pass] [--profile-once] [--bank-model]\n",
                 e.what());
    return canopy_bench::exit_bad_command_line;
  }
  if (o.bank_model) {  // CPU only: no device needed
    bank_models();
    return g_failed ? 1 : 0;
  }
  try {
    canopy::context ctx(canopy::backend_request::cuda);
    std::printf("%s\n", ctx.description().c_str());
    for (int lg : sizes) {
      sweep(ctx, lg, o);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy-merge-tuning: %s\n", e.what());
    return 1;
  }
  if (g_failed) std::fprintf(stderr, "canopy-merge-tuning: a result differed from CUB's (or the split searches disagreed)\n");
  return g_failed ? 1 : 0;
}
