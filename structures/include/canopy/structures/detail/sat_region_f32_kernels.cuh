// canopy/structures/detail/sat_region_f32_kernels.cuh — the SAT's region kernel for RGBA32F -> f32
// tables on sm_90 (docs/sat.md, "The region kernel for RGBA32F"). structures/src/sat.cu launches it.
//
// The same plan as the RGBA8 kernel (sat_region_kernels.cuh: regions, chunks, summers, carriers,
// walkers, the exchange and its grid barriers without clearing), with what 16-byte pixels change:
//   - regions are 128 px wide (4 px a lane; Gx = width / 128), so that a region row of the image
//     and of the table is 2 KB, as an RGBA8 region's image row is 1 KB and its table row 4 KB;
//   - the walkers read their rows of the image straight from global memory (the second read of each
//     row, from L2, since the summers read it about one chunk before), two rows ahead, with an L2
//     evict_first hint: the image buffers of the RGBA8 kernel would not hold 56 rows of 2 KB;
//   - every sum is a float4 of the pixels minus the table's offsets (the mean of sample_mean's
//     grid, which every block computes itself, in one fixed order, and block 0 stores).
#pragma once

#include <canopy/structures/detail/sat_kernels.cuh>
#include <canopy/structures/detail/sat_region_kernels.cuh>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail::sat_region {

constexpr int RWF = 128;  //!< RGBA32F region width: 4 px a lane

//! Where lane l keeps its pixel i (of 4 consecutive ones, 16 bytes each) in a shared 128-px row of
//! 16-byte pixels: the tensor map's 128-byte swizzle (16 rows of 128 bytes, 8 px each, unit q of row
//! j at q ^ (j & 7)) on a 1024-byte aligned row; 8 consecutive lanes' units fall in different banks.
__host__ __device__ inline int swz4(int lane, int i) {
  const int j = lane >> 1;
  return 8 * j + ((4 * (lane & 1) + i) ^ (j & 7));
}

//! A 16-byte image unit, read-only for the kernel's lifetime, with an L2 cache policy.
__device__ __forceinline__ float4 load_image_unit(const float4* a, std::uint64_t pol) {
  float4 v;
  asm("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(a), "l"(pol));
  return v;
}

//! The RGBA32F region kernel's parameters (the chunk plan as plan_chunks makes it).
struct f32_params {
  const float4* img;
  float* offset;               //!< the table's 4 offsets (block 0 stores them)
  int W, H, Gx, Gy, NC;
  float4* rowsum;              //!< region row sums (exchange slots x Gy x Gx x RHs)
  float4* colsum;              //!< region column sums (exchange slots x Gy x Gx x RWF)
  float4* total;               //!< region totals (exchange slots x Gy x Gx)
  unsigned* cnt;               //!< grid barrier of each chunk
  unsigned target;             //!< what releases this build's barriers (as the RGBA8 kernel's)
  int K, D, NS;
  int RH0, RH, RHL, RHmax, RHs;
};

//! Shared-memory layout of the RGBA32F region kernel (byte offsets from a 1024-byte aligned base).
struct f32_layout {
  std::size_t stage, img, bandcol, tinit, rl, xrow, xcol, xtot, wtot, samples, mbar, bytes;
  __host__ __device__ f32_layout(int RHmax, int RHs, int K, int D, int Gx, int Gy, int NS) {
    std::size_t o = 0;
    stage = o;  // [K][D][RWF] float4, 2 KB rows (1024-byte aligned for the 128-byte swizzle)
    o += std::size_t(K) * D * RWF * 16;
    img = o;  // [2][RHmax][RWF] float4: the image rows of two chunks (swz4, as the tensor loads leave them)
    o += 2 * std::size_t(RHmax) * RWF * 16;
    bandcol = o;  // [NS][K][RWF] float4: each band's column sums (swz4)
    o += std::size_t(NS) * K * RWF * 16;
    tinit = o;  // [NS][RWF] float4: the table row above the region (swz4)
    o += std::size_t(NS) * RWF * 16;
    rl = o;  // [NS][RHmax] float4: each row's carry
    o += std::size_t(NS) * RHmax * 16;
    xrow = o;  // the exchange's copies: row sums of the regions to the left [Gx - 1][RHs]
    o += std::size_t(Gx - 1) * RHs * 16;
    xcol = o;  // column sums of the region column [Gy][RWF]
    o += std::size_t(Gy) * RWF * 16;
    xtot = o;  // every total [Gy][Gx]
    o += std::size_t(Gy) * Gx * 16;
    wtot = o;  // [K] float4: band totals
    o += std::size_t(K) * 16;
    samples = o;  // [8][4] double: the offsets' samples a warp
    o += 8 * 4 * 8;
    mbar = o;  // ready[max_slots], freed[max_slots], exchange, load[2][max_walkers]; then done[2] (u32 counters)
    o += std::size_t(2 * max_slots + 1 + 2 * max_walkers) * 8 + 8;
    bytes = o;
  }
  __host__ __device__ std::size_t launch_bytes() const { return bytes + 1024; }
};

//! Rows a summer lane holds at once (pixels lane + 32 i of each, i < 4: every load instruction of
//! the warp reads 512 contiguous bytes; 16 float4 registers).
constexpr int f32_summer_rows = 4;

//! The RGBA32F region kernel: (2 K + 2) warps a block, Gx x Gy blocks launched cooperatively,
//! dynamic shared memory f32_layout::launch_bytes(); `tmap` is the table as encode_table_map(...,
//! RWF) makes it, `imap` the image the same way.
__global__ void __launch_bounds__(16 * 32, 1)
    sat_region_f32_kernel(const __grid_constant__ CUtensorMap tmap, const __grid_constant__ CUtensorMap imap, f32_params p) {
#if CANOPY_HAS_BULK_COPY
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);
  const int K = p.K;
  const int NS = p.NS;
  const f32_layout L(p.RHmax, p.RHs, K, p.D, p.Gx, p.Gy, NS);
  float4* stage = reinterpret_cast<float4*>(smem + L.stage);
  float4* bandcol = reinterpret_cast<float4*>(smem + L.bandcol);
  float4* tinit = reinterpret_cast<float4*>(smem + L.tinit);
  float4* rl_s = reinterpret_cast<float4*>(smem + L.rl);
  float4* wtot = reinterpret_cast<float4*>(smem + L.wtot);
  auto samples = reinterpret_cast<double(*)[4]>(smem + L.samples);
  unsigned long long* ready = reinterpret_cast<unsigned long long*>(smem + L.mbar);  // [max_slots]
  unsigned long long* freed = ready + max_slots;                                     // [max_slots]
  unsigned long long* xbar = freed + max_slots;                                      // the exchange's copies
  unsigned long long* loadbar = xbar + 1;                                            // [2][max_walkers]
  unsigned* done = reinterpret_cast<unsigned*>(loadbar + 2 * max_walkers);          // [2]: walkers done with a buffer
  float4* img_s = reinterpret_cast<float4*>(smem + L.img);
  const float4* xrow = reinterpret_cast<const float4*>(smem + L.xrow);
  const float4* xcol = reinterpret_cast<const float4*>(smem + L.xcol);
  const float4* xtot = reinterpret_cast<const float4*>(smem + L.xtot);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int blk = blockIdx.x, I = blk / p.Gx, J = blk % p.Gx, x0 = J * RWF;

  if (threadIdx.x < 256) sat::warp_sample_sums<float, 4>(reinterpret_cast<const float*>(p.img), p.W, p.H, threadIdx.x, samples);
  if (threadIdx.x == 0) init_region_barriers(K, loadbar, done, ready, freed, xbar);
  __syncthreads();
  const float4 off = make_float4(sat::offset_of_samples<float, 4>(samples, 0), sat::offset_of_samples<float, 4>(samples, 1),
                                 sat::offset_of_samples<float, 4>(samples, 2), sat::offset_of_samples<float, 4>(samples, 3));
  if (blk == 0 && threadIdx.x == 0) {
    p.offset[0] = off.x;
    p.offset[1] = off.y;
    p.offset[2] = off.z;
    p.offset[3] = off.w;
  }

  // Band k of region row I in chunk c: its rows [r0, r1), the region's first at image row `top`.
  auto band_of = [&](int c, int k, int& top, int& r0, int& r1) {
    int rh, n;
    region_rows(p, c, I, rh, top, n);
    band_rows(k, K, rh, n, r0, r1);
  };
  // Tensor loads of band k's rows of chunk c into buffer c & 1, on loadbar[c & 1][k], a row a lane
  // of the calling warp (as the RGBA8 kernel's bulk copies; the tensor map's swizzle puts lane l's
  // pixels at swz4).
  auto load_band = [&](int c, int k) {
    const int b = c & 1;
    int top, r0, r1;
    band_of(c, k, top, r0, r1);
    unsigned long long* m = &loadbar[b * max_walkers + k];
    float4* buf = img_s + std::size_t(b) * p.RHmax * RWF;
    const std::uint64_t pol = l2_evict_first_policy();  // the summers have read the rows already (most often)
    if (lane == 0) mbar_expect_tx(m, unsigned(std::max(0, r1 - r0)) * RWF * 16);
    __syncwarp();
    for (int r = r0 + lane; r < r1; r += 32) {
      fence_proxy_async();  // the walkers' reads of the buffer, then the loads' writes
      tensor_load(&imap, buf + std::size_t(r) * RWF, 0, x0 / 8, top + r, m, pol);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(m);
  };

  if (w < K) {
    // ---------------------------------------------------------------- summers (warp k: band k)
    const int k = w;
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % exchange_slots;
      int top, r0, r1;
      band_of(c, k, top, r0, r1);
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);  // the walkers left slot s (chunk c - NS)
      const std::size_t base = (std::size_t(xs) * p.Gy + I) * p.Gx + J;
      float4 col[4], tot = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int i = 0; i < 4; ++i) col[i] = tot;
      for (int rb = r0; rb < r1; rb += f32_summer_rows) {
        float4 v[f32_summer_rows][4];
#pragma unroll
        for (int q = 0; q < f32_summer_rows; ++q) {
          const float4* row = p.img + std::size_t(top + rb + q) * p.W + x0 + lane;
#pragma unroll
          for (int i = 0; i < 4; ++i) v[q][i] = rb + q < r1 ? __ldg(row + 32 * i) : off;  // off - off: a row of zeros
        }
        float4 rs[f32_summer_rows];
#pragma unroll
        for (int q = 0; q < f32_summer_rows; ++q) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            v[q][i] = sub4(v[q][i], off);
            col[i] = add4(col[i], v[q][i]);
          }
          rs[q] = add4(add4(v[q][0], v[q][1]), add4(v[q][2], v[q][3]));
        }
#pragma unroll
        for (int o = 16; o; o >>= 1)  // the rows' butterflies interleave
#pragma unroll
          for (int q = 0; q < f32_summer_rows; ++q)
            rs[q] = add4(rs[q], make_float4(__shfl_xor_sync(~0u, rs[q].x, o), __shfl_xor_sync(~0u, rs[q].y, o),
                                            __shfl_xor_sync(~0u, rs[q].z, o), __shfl_xor_sync(~0u, rs[q].w, o)));
#pragma unroll
        for (int q = 0; q < f32_summer_rows; ++q)
          if (rb + q < r1) {
            if (lane == 0) p.rowsum[base * p.RHs + rb + q] = rs[q];
            tot = add4(tot, rs[q]);
          }
      }
      float4* bc = bandcol + (std::size_t(s) * K + k) * RWF;
#pragma unroll
      for (int i = 0; i < 4; ++i) bc[swz4((32 * i + lane) >> 2, lane & 3)] = col[i];  // pixel 32 i + lane
      if (lane == 0) wtot[k] = tot;
      named_barrier(1, K * 32);
      const float4* bcs = bandcol + std::size_t(s) * K * RWF;
      for (int x = threadIdx.x; x < RWF; x += K * 32) {  // the region's column sums: its bands' sums
        const int at = swz4(x >> 2, x & 3);
        float4 a = bcs[at];
        for (int kk = 1; kk < K; ++kk) a = add4(a, bcs[std::size_t(kk) * RWF + at]);
        p.colsum[base * RWF + x] = a;
      }
      if (threadIdx.x == 0) {
        float4 t = wtot[0];
        for (int kk = 1; kk < K; ++kk) t = add4(t, wtot[kk]);
        p.total[base] = t;
      }
      named_barrier(1, K * 32);
      if (threadIdx.x == 0) red_release_gpu(&p.cnt[c]);
      mbar_arrive(&ready[s]);
    }
  } else if (w < K + 2) {
    // ---------------------------------------------------------------- carriers
    const bool rows = w == K;  // warp K: row carries; warp K + 1: Tinit
    float4 coltop[4];          // (Tinit warp) columns above the chunk
    float4 leftabove = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int i = 0; i < 4; ++i) coltop[i] = leftabove;
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % exchange_slots;
      int rh, top, n;
      region_rows(p, c, I, rh, top, n);
      const std::size_t slotbase = std::size_t(xs) * p.Gy * p.Gx;
      if (rows && lane == 0) {
        while (ld_acquire_gpu(&p.cnt[c]) < p.target) {
        }
        request_exchange(p, slotbase, I, J, RWF, smem + L.xrow, smem + L.xcol, smem + L.xtot, xbar);
      }
      mbarrier_wait(xbar, unsigned(c) & 1u);
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);
      if (rows) {  // Rl[r]: rows 0..r of the region, left of it
        row_carries(n, lane, rl_s + std::size_t(s) * p.RHmax, [&](int r) {
          float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
          for (int j = 0; j < J; ++j) sum = add4(sum, xrow[j * p.RHs + r]);
          return sum;
        });
      } else {  // Tinit[x]: the table row above the region
        table_row_above_of<4>(
            p.Gy, I, J, lane, coltop, leftabove, tinit + std::size_t(s) * RWF, [](int l, int i) { return swz4(l, i); },
            [&](int i, int j) { return xtot[i * p.Gx + j]; },
            [&](int ii, float4(&q)[4]) {
              const float4* cs = xcol + std::size_t(ii) * RWF + 4 * lane;
#pragma unroll
              for (int i = 0; i < 4; ++i) q[i] = cs[i];
            });
      }
      named_barrier(2, 64);  // both carriers are done with the exchange's bytes
      mbar_arrive(&ready[s]);
    }
  } else {
    // ---------------------------------------------------------------- walkers
    const int k = w - K - 2;
    const std::uint64_t pol = l2_evict_first_policy();  // the table's stores
    float4* my_stage = stage + std::size_t(k) * p.D * RWF;
    int sidx = 0;
    for (int c = 0; c < std::min(2, p.NC); ++c) load_band(c, k);
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, b = c & 1;
      int rh, top, n, r0, r1;
      region_rows(p, c, I, rh, top, n);
      band_rows(k, K, rh, n, r0, r1);
      mbarrier_wait(&loadbar[b * max_walkers + k], unsigned(c >> 1) & 1u);
      mbarrier_wait(&ready[s], unsigned(c / NS) & 1u);
      if (r0 < r1) {
        // The band's table row above it (without the row carries): Tinit + the region's columns
        // above the band, prefixed over x.
        float4 S[4];
        {
          float4 a[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) a[i] = make_float4(0.f, 0.f, 0.f, 0.f);
          for (int kk = 0; kk < k; ++kk) {
            const float4* bc = bandcol + (std::size_t(s) * K + kk) * RWF;
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = add4(a[i], bc[swz4(lane, i)]);
          }
#pragma unroll
          for (int i = 1; i < 4; ++i) a[i] = add4(a[i], a[i - 1]);
          const float4 ex = warp_exclusive_sum4(a[3]);
          const float4* ti = tinit + std::size_t(s) * RWF;
#pragma unroll
          for (int i = 0; i < 4; ++i) S[i] = add4(add4(a[i], ex), ti[swz4(lane, i)]);
        }
        const float4* buf = img_s + std::size_t(b) * p.RHmax * RWF;
        const float4* rl = rl_s + std::size_t(s) * p.RHmax;
        for (int r = r0; r < r1; ++r) {
          float4 v[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) v[i] = buf[std::size_t(r) * RWF + swz4(lane, i)];
          v[0] = sub4(v[0], off);
#pragma unroll
          for (int i = 1; i < 4; ++i) v[i] = add4(v[i - 1], sub4(v[i], off));  // in-lane prefixes
          const float4 e = warp_exclusive_sum4(v[3]);
          const float4 carry = rl[r];
          float4* st = my_stage + std::size_t(sidx) * RWF;
          if (lane == 0) bulk_wait_read(p.D - 1);
          __syncwarp();
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            S[i] = add4(S[i], add4(v[i], e));
            st[swz4(lane, i)] = add4(S[i], carry);
          }
          fence_proxy_async();
          __syncwarp();
          if (lane == 0) tensor_store(&tmap, st, 0, x0 / 8, top + r, pol);
          if (++sidx == p.D) sidx = 0;
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&freed[s]);  // slot s may take chunk c + NS
      refill_buffer(p, c, rh, k, K, lane, &done[b], load_band);
    }
    if (lane == 0) bulk_wait_all();
  }
#else
  (void)tmap;
  (void)imap;
  (void)p;
#endif
}

}  // namespace canopy::detail::sat_region

#endif
