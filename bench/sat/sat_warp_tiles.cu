// canopy-sat-warp-tiles: a measuring prototype (not the library's kernel; CUDA builds only, not run
// by CTest) of a single-pass SAT for RGBA8 -> u32 in which every WARP is a tile: 32 rows x 128 px
// (16 KB of image, 64 KB of table), loaded into the warp's own shared memory with cp.async, then
//   - the tile's row sums (lane = row) and column sums (lane = 4 columns) are published as tagged
//     64-bit descriptor words {value, epoch x 4 + status}, the same protocol as the library's
//     look_back_protocol::tagged (docs/sat.md, "Tagged descriptor words"), a new epoch per build;
//   - the warp looks back to the left (row carries), up (column carries: in-strip prefixes of the
//     column sums) and up the tile column (corner: the totals of the row carries), as the library's
//     kernel does with 3 warps of a block;
//   - it walks the 32 rows, storing each 2 KB table row through a 2 KB swizzled stage (512
//     contiguous bytes per store instruction).
// No block-wide barrier anywhere: 12 warps per SM (3 blocks of 4, bound by shared memory) each
// claim tiles in anti-diagonal order (canopy::detail::sat::diagonal_tile) from one counter, so a
// warp waits only on tiles claimed before it, by running warps (no deadlock at any occupancy).
// The question it answers: is the library's ceiling the block (8 warps bound by barriers, 2 tiles in
// flight per SM) rather than the look-back? Variants (template parameters): look-back windows,
// the column look-back first, 16-row tiles, stores without the stage, fewer warps per SM. (Both
// look-backs in one loop, with each kind of inclusive word published after the loop or as soon as
// a lane had it, were measured at cd5e13b and dropped: docs/sat.md.) The descriptor words, the
// look-backs and the store stage are the library's (sat_kernels.cuh).
// Session 12 split a tile's work in two (tile_front: load, sums, look-backs; tile_output: the
// rows) and added warp-specialised kernels, one block per SM: "owner" warps take a free tile slot
// in shared memory and run the front half, "output" warps take whichever slot is ready and run the
// back half, so the table's stores need not stop while tiles wait on look-backs (satws); owner
// pairs split the front half, the column look-back beside the row and corner ones (satwp). Also:
// 64-row tiles (fewer anti-diagonals), output warps scanning two rows at once, many output warps,
// and diagnostics with every look-back skipped (tables wrong by design, not checked), in
// anti-diagonal or raster order: the ceiling of each structure without look-backs.
// Session 13 added, all measured and none taken (docs/sat.md, "Descriptor traffic, store pacing and
// SM-specialised tiles"): --pace (output warps' stores paced by a per-warp token bucket), a
// no-look-back diagnostic that also publishes no descriptor words (their traffic alone),
// --desc-hint (descriptor words stored with an L2 evict_last / evict_first policy), column words
// laid out so each store instruction writes 256 contiguous bytes, and SM-specialised tiles
// (satsplit: fronts on their own SMs, back halves on the others), --width to time one size.
// Session 14 added, all measured and none taken (docs/sat.md, "Aggregates ahead and resolver SMs"):
// satahead (front warps publish every tile's aggregates a lag ahead of the owners, from a first
// read of the image; owners only look back, --lag; LateSlot: owners take a tile slot only after
// their look-backs) and satres (the look-backs on a few resolver SMs that store nothing,
// --resolvers; owners read finished carries).
// Every table is checked exactly against a CPU reference (odd heights, 1080p, 4K, 8K; widths are
// multiples of 128, the only case this prototype handles), timed (canopy_bench::median_ms_on_stream:
// 25 held-stream CUDA-event runs after 3 warm-ups, counter memset included) against a
// device-to-device copy of a table-sized buffer, and one extra build of each size sums clock64 per
// phase: where a warp's tile time goes (in the warp-specialised kernels: owners' phases 0-4,
// output warps' phase 5). Results: docs/sat.md, "Other decompositions (session 11)" and
// "Warp-specialised tiles (session 12)". Exits 1 if any checked table is wrong. --small runs the
// odd sizes only (for compute-sanitizer); --variants picks variants; the usage line (printed with
// any refused argument) lists the options.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include <canopy/structures/detail/sat_functors.cuh>
#include <canopy/structures/detail/sat_kernels.cuh>

#include "common/bench_common.hpp"

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

namespace ks = canopy::detail::sat;
using ks::tagged_word;

struct params {
  const uint32_t* img; int w, h; uint4* table;
  tagged_word *roww, *colw, *cornw;  // [tile][4][32 x row groups], [tile][4][128] (column 4 lane + k at 32 k + lane: each store instruction 256 contiguous bytes), [tile][4]
  unsigned* counter; unsigned epoch; int TW, TH;
  unsigned long long* stamps;  // [0] load, [1] aggregates, [2] row lb, [3] col lb, [4] corner, [5] output, [6] tiles
  // Store pacing (output warps of the warp-specialised kernels; 0 = off): each output warp starts a
  // 2 KB table row no sooner than pace SM cycles after its previous one, with up to pace_burst
  // cycles of unused time carried forward (token bucket per warp). Session 13: do look-back steps
  // stay near the idle L2 round trip when the SMs' stores stay under the write bandwidth?
  long long pace, pace_burst;
  int front_blocks;  // satsplit: blocks 0..front_blocks-1 run front halves, the others back halves
  int desc_hint;     // descriptor words stored with an L2 policy: 0 none, 1 evict_last, 2 evict_first
  int lag;  // satahead: how many tiles (claim order) the fronts may run ahead of the owners' claims
};

// A tagged descriptor word (ks::store_tagged's encoding), with the L2 policy q.desc_hint asks for.
__device__ __forceinline__ void publish(const params& q, tagged_word* p, unsigned status, uint32_t v) {
  if (q.desc_hint == 0) return ks::store_tagged(p, q.epoch, status, v);
  const tagged_word w = ks::make_tagged(q.epoch, status, v);
  const uint64_t pol = q.desc_hint == 1 ? policy_evict_last() : policy_evict_first();
  asm volatile("st.relaxed.gpu.global.L2::cache_hint.u64 [%0], %1, %2;" ::"l"(p), "l"(w), "l"(pol) : "memory");
}

constexpr int kWarps = 4;
template <int TR> struct warp_smem_t { uint4 img[TR][32]; uint4 stage[128]; uint4 cum[TR > 32 ? TR : 32]; };

__device__ __forceinline__ void stamp(const params& q, int i, long long& tk) {
  if (q.stamps && (threadIdx.x & 31) == 0) atomicAdd(q.stamps + i, clock64() - tk), tk = clock64();
}

// Addresses of the descriptor words a lane's look-backs read: element e of predecessor k of tile
// (ti, tj) up its tile column (e = pixel * 4 + channel) or along its tile row (e = h * 4 + channel),
// and the 4 corner words of predecessor k up the tile column.
__device__ __forceinline__ tagged_word* col_word_at(const params& q, int ti, int tj, int k, int e, int lane) {
  return q.colw + (size_t(ti - 1 - k) * q.TW + tj) * 512 + (e & 3) * 128 + 32 * (e >> 2) + lane;
}
__device__ __forceinline__ tagged_word* corner_words_at(const params& q, int ti, int tj, int k) {
  return q.cornw + (size_t(ti - 1 - k) * q.TW + tj) * 4;
}
template <int H>
__device__ __forceinline__ tagged_word* row_word_at(const params& q, int ti, int tj, int k, int e, int lane) {
  return q.roww + (size_t(ti) * q.TW + tj - 1 - k) * (4 * 32 * H) + (e & 3) * 32 * H + 32 * (e >> 2) + lane;
}

// A lane's starting column values for tile_output: corner + column carry of its pixel k, channel c.
__device__ __forceinline__ void starting_columns(const uint32_t (&corner)[4], const uint32_t (&ccar)[16], uint32_t (&run)[4][4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int c = 0; c < 4; ++c) run[k][c] = corner[c] + ccar[k * 4 + c];
}

// Cumulative row carries (warp scan of the row carries L, lane = row, rows lane + 32 h) into
// cum_out[0..32 H); ctot = their totals per channel (a tile's corner aggregate).
template <int H>
__device__ __forceinline__ void cumulative_row_carries(const uint32_t (&L)[4 * H], int lane, uint4* cum_out, uint32_t (&ctot)[4]) {
#pragma unroll
  for (int c = 0; c < 4; ++c) ctot[c] = 0;
#pragma unroll
  for (int h = 0; h < H; ++h) {
    uint32_t cum[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t x = warp_inclusive_scan(L[h * 4 + c], canopy::plus<uint32_t>{});
      cum[c] = x + ctot[c];
      ctot[c] += __shfl_sync(~0u, x, 31);
    }
    cum_out[32 * h + lane] = make_uint4(cum[0], cum[1], cum[2], cum[3]);
  }
}

// Sums of RGBA8 tiles, channels R, B and G, A as 16-bit pairs: the column sums of a lane's 4 px over
// `rows` rows of img (32 rows of 255 fit 16 bits), and the sum of one 128-px row (rotated reads:
// no bank conflicts; at most 32640 a channel).
__device__ __forceinline__ void column_sums(const uint4 (*img)[32], int rows, int lane, uint32_t (&cRB)[4], uint32_t (&cGA)[4]) {
  for (int r = 0; r < rows; ++r) {
    const uint4 v = img[r][lane];
    const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) { cRB[k] += w4[k] & 0x00FF00FFu; cGA[k] += (w4[k] >> 8) & 0x00FF00FFu; }
  }
}
__device__ __forceinline__ void row_sum(const uint4 (&row)[32], int lane, uint32_t& sRB, uint32_t& sGA) {
  sRB = 0; sGA = 0;
#pragma unroll 8
  for (int j = 0; j < 32; ++j) {
    const uint4 v = row[(j + lane) & 31];
    const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) { sRB += w4[k] & 0x00FF00FFu; sGA += (w4[k] >> 8) & 0x00FF00FFu; }
  }
}
// A tile's column aggregate: the in-strip inclusive prefix of the column sums, cagg[px][channel].
__device__ __forceinline__ void column_aggregates(const uint32_t (&cRB)[4], const uint32_t (&cGA)[4], int lane, uint32_t (&cagg)[4][4]) {
  uint32_t a[4] = {0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    a[0] += cRB[k] & 0xFFFFu; a[1] += cGA[k] & 0xFFFFu; a[2] += cRB[k] >> 16; a[3] += cGA[k] >> 16;
#pragma unroll
    for (int c = 0; c < 4; ++c) cagg[k][c] = a[c];
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint32_t ex = warp_inclusive_scan(a[c], canopy::plus<uint32_t>{}) - a[c];
#pragma unroll
    for (int k = 0; k < 4; ++k) cagg[k][c] += ex;
  }
}

// Starts the cp.async copy of tile (ti, tj)'s image rows first, first + step, ... < rows into img
// (16 bytes a lane a row, 512 contiguous bytes a warp instruction) and commits the group.
template <int TR>
__device__ __forceinline__ void copy_tile_async(const params& q, int ti, int tj, int rows, uint4 (*img)[32], uint64_t pol,
                                                int first = 0, int step = 1) {
  const int lane = threadIdx.x & 31;
  const size_t stride = size_t(q.w) / 4;  // uint4 per image row
  const uint4* src = reinterpret_cast<const uint4*>(q.img + size_t(ti) * TR * q.w + size_t(tj) * 128) + lane;
  for (int r = first; r < rows; r += step) copy16_async(&img[r][lane], src + size_t(r) * stride, pol);
  canopy::detail::sat::cp_async_commit();
}

// One warp's front half of a tile: copy the image into img, publish the row and column sums, look
// back left (rows), up (columns) and up the tile column (corner), publish the inclusive words.
// Leaves the cumulative row carries in cum_out[0..TR) and, per lane, the column carries of its 4 px
// (ccar[k * 4 + c]) and the corner. RW, CW: predecessors read per round (rows, columns).
// Part: 0 all of it; 1 the rows and the corner, 2 the columns, for two warps sharing a tile (each
// copies every other image row; sync() must then be a barrier of both warps).
// Diag (diagnostic, the table is wrong): 1 takes every carry as zero (no look-backs); 2 also
// publishes no descriptor words (what the words' own traffic costs); Diag >= 16 publishes them
// into a ring of Diag tiles' words (tile index mod Diag) instead: their cost if they stay in L2.
template <int RW, int CW, bool ColumnsFirst, int TR, int Part = 0, int Diag = 0, class Sync>
__device__ __forceinline__ void tile_front(const params& q, int ti, int tj, int rows, uint4 (*img)[32], uint4* cum_out,
                                           uint32_t (&ccar)[16], uint32_t (&corner)[4], uint64_t pol, long long& tk, Sync sync) {
  const int lane = threadIdx.x & 31;
  const unsigned tile = Diag >= 16 ? (unsigned(ti) * q.TW + tj) % unsigned(Diag) : unsigned(ti) * q.TW + tj;
  copy_tile_async<TR>(q, ti, tj, rows, img, pol, Part == 2 ? 1 : 0, Part == 0 ? 1 : 2);
  async_wait<0>();
  sync();
  if (Part != 2 && q.stamps && lane == 0) atomicAdd(q.stamps + 6, 1ull);
  if (Part != 2) stamp(q, 0, tk);
  // column sums (own 4 px, packed pairs) and row sums (lane r sums row r, rotated reads)
  uint32_t cRB[4] = {0, 0, 0, 0}, cGA[4] = {0, 0, 0, 0};
  column_sums(img, Part == 1 ? 0 : rows, lane, cRB, cGA);
  constexpr int H = TR > 32 ? TR / 32 : 1;  // rows a lane owns in the row look-back: lane + 32 h
  uint32_t rs[H][4];
#pragma unroll
  for (int h = 0; h < H; ++h) {
    const int row = lane + 32 * h;
#pragma unroll
    for (int c = 0; c < 4; ++c) rs[h][c] = 0;
    if (Part != 2 && row < rows) {
      uint32_t sRB, sGA;
      row_sum(img[row], lane, sRB, sGA);
      rs[h][0] = sRB & 0xFFFFu; rs[h][1] = sGA & 0xFFFFu; rs[h][2] = sRB >> 16; rs[h][3] = sGA >> 16;
    }
  }
  // column aggregate = in-strip inclusive prefix of the column sums
  uint32_t cagg[4][4];  // [px][c]
  column_aggregates(cRB, cGA, lane, cagg);
  const bool right = tj + 1 < q.TW, below = ti + 1 < q.TH;
  constexpr int RowWords = 4 * 32 * H;  // [c][row], rows padded to 32 a group
  tagged_word* rw = q.roww + size_t(tile) * RowWords;
  tagged_word* cw = q.colw + size_t(tile) * 512;
  tagged_word* kw = q.cornw + size_t(tile) * 4;
  constexpr bool NoLookBack = Diag != 0, Publish = Diag != 2;
  if (Publish && Part != 2 && right)
    for (int h = 0; h < H; ++h)
      for (int c = 0; c < 4; ++c)
        publish(q, rw + c * 32 * H + 32 * h + lane, tj == 0 ? ks::flag_inclusive : ks::flag_aggregate, rs[h][c]);
  if (Publish && Part != 1 && below)
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        publish(q, cw + c * 128 + 32 * k + lane, ti == 0 ? ks::flag_inclusive : ks::flag_aggregate, cagg[k][c]);
  if (Part != 2) stamp(q, 1, tk);
  else tk = clock64();
  // Column look-back (16 elements a lane: 4 columns x 4 channels), then the column inclusive.
#pragma unroll
  for (int e = 0; e < 16; ++e) ccar[e] = 0;
  auto column_look_back = [&] {
    if (ti == 0 || NoLookBack) return;
    ks::lane_look_back_tagged<CW, 16>(
        ti, q.epoch, [&](int k, int e) { return col_word_at(q, ti, tj, k, e, lane); }, ccar);
    if (below)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int k = 0; k < 4; ++k) publish(q, cw + c * 128 + 32 * k + lane, ks::flag_inclusive, cagg[k][c] + ccar[k * 4 + c]);
  };
  if (Part == 2 || (Part == 0 && ColumnsFirst)) column_look_back();
  if (Part == 2) {
    stamp(q, 3, tk);
  } else {
    // Row look-back: lane = row (rows lane + 32 h), 4 channels: element e = h * 4 + c.
    uint32_t L[4 * H];
#pragma unroll
    for (int e = 0; e < 4 * H; ++e) L[e] = 0;
    if (tj > 0 && !NoLookBack) {
      ks::lane_look_back_tagged<RW, 4 * H>(
          tj, q.epoch,
          [&](int k, int e) { return row_word_at<H>(q, ti, tj, k, e, lane); }, L);
      if (right)
        for (int h = 0; h < H; ++h)
          for (int c = 0; c < 4; ++c) publish(q, rw + c * 32 * H + 32 * h + lane, ks::flag_inclusive, L[h * 4 + c] + rs[h][c]);
    }
    stamp(q, 2, tk);
    // corner aggregate = total of the row carries; cumulative row carries for the output
    uint32_t ctot[4];
    cumulative_row_carries<H>(L, lane, cum_out, ctot);
    if (!ColumnsFirst && Part == 0) column_look_back();
    if (Part == 0) stamp(q, 3, tk);
    // Corner: aggregate = the total of the row carries, looked back up the tile column (the first
    // row's and column's tiles are inclusive at once: corner 0, or no rectangle to the left).
#pragma unroll
    for (int c = 0; c < 4; ++c) corner[c] = 0;
    const bool corner_look_back = ti > 0 && tj > 0;
    if (Publish && below && lane == 0)
      for (int c = 0; c < 4; ++c)
        publish(q, kw + c, corner_look_back ? ks::flag_aggregate : ks::flag_inclusive, ctot[c]);
    if (corner_look_back && !NoLookBack) {
      ks::warp_look_back_tagged<true, 4>(ti, q.epoch, [&](int k) { return corner_words_at(q, ti, tj, k); }, corner);
      if (below && lane == 0)
        for (int c = 0; c < 4; ++c) publish(q, kw + c, ks::flag_inclusive, corner[c] + ctot[c]);
    }
    __syncwarp();
    stamp(q, 4, tk);
  }
}

// One warp's back half of a tile: walk its rows from img, adding the cumulative row carries cum[r]
// to the running column values run (corner + column carries on entry), and store each 2 KB table
// row through the 2 KB stage (or straight from registers: Direct).
// Rows: 1, or 2 rows scanned at once (two independent shuffle chains in flight).
template <bool Direct, int TR, int Rows = 1>
__device__ __forceinline__ void tile_output(const params& q, int ti, int tj, int rows, const uint4 (*img)[32], const uint4* cum,
                                            uint32_t (&run)[4][4], uint4* stage, uint64_t pol, long long& tk,
                                            long long* pace_next = nullptr) {
  const int lane = threadIdx.x & 31;
  uint4* dst = q.table + size_t(ti * TR) * q.w + tj * 128;
  for (int r0 = 0; r0 < rows; r0 += Rows) {
    uint32_t pRB[Rows][4], pGA[Rows][4], xRB[Rows], xGA[Rows];
#pragma unroll
    for (int i = 0; i < Rows; ++i) row_scan_rgba8(img[min(r0 + i, rows - 1)][lane], lane, pRB[i], pGA[i], xRB[i], xGA[i]);
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
      const int r = r0 + i;
      if (Rows > 1 && r >= rows) break;
      const uint4 cr = cum[r];
      uint4* d = dst + size_t(r) * q.w;
      uint32_t out[16];  // 4 pixels x 4 channels
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t rb = xRB[i] + pRB[i][k], ga = xGA[i] + pGA[i][k];
        run[k][0] += rb & 0xFFFFu; run[k][1] += ga & 0xFFFFu; run[k][2] += rb >> 16; run[k][3] += ga >> 16;
        out[4 * k + 0] = run[k][0] + cr.x; out[4 * k + 1] = run[k][1] + cr.y;
        out[4 * k + 2] = run[k][2] + cr.z; out[4 * k + 3] = run[k][3] + cr.w;
        if (Direct) store_policy(d + 4 * lane + k, make_uint4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]), pol);
      }
      if (!Direct) {
        ks::stage_segment(stage, out, lane);
        if (pace_next && q.pace) {  // lane 0 keeps the warp's schedule
          if (lane == 0) {
            long long now = clock64();
            long long& nx = *pace_next;
            if (nx < now - q.pace_burst) nx = now - q.pace_burst;
            while (now < nx) now = clock64();
            nx += q.pace;
          }
        }
        __syncwarp();
        ks::store_staged_row<4>(d, stage, 128, lane);
        __syncwarp();
      }
    }
  }
  stamp(q, 5, tk);
}

// Raster (diagnostic, only without look-backs): tiles in row-major order instead of anti-diagonals.
template <bool Raster = false>
__device__ __forceinline__ bool claim_tile(const params& q, int TR, int& ti, int& tj, int& rows, int which = 0, unsigned* claimed = nullptr) {
  unsigned t = 0;
  if ((threadIdx.x & 31) == 0) t = atomicAdd(q.counter + which, 1u);
  t = __shfl_sync(~0u, t, 0);
  if (claimed) *claimed = t;
  if (t >= unsigned(q.TW) * unsigned(q.TH)) return false;
  if (Raster) {
    ti = int(t / unsigned(q.TW)); tj = int(t % unsigned(q.TW));
  } else {
    const ks::tile_position p = ks::diagonal_tile(t, q.TW, q.TH);
    ti = p.ti; tj = p.tj;
  }
  rows = min(TR, q.h - ti * TR);
  return true;
}

// Every warp a tile, front and back half in turn.
template <int RW, int CW, bool Direct, bool ColumnsFirst, int TR = 32>
__global__ void __launch_bounds__(kWarps * 32) satw(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  warp_smem_t<TR>& S = reinterpret_cast<warp_smem_t<TR>*>(smem_raw)[threadIdx.x >> 5];
  const uint64_t pol = policy_evict_first();
  int ti, tj, rows;
  while (claim_tile(q, TR, ti, tj, rows)) {
    long long tk = clock64();
    uint32_t ccar[16], corner[4];
    tile_front<RW, CW, ColumnsFirst, TR>(q, ti, tj, rows, S.img, S.cum, ccar, corner, pol, tk, [] { __syncwarp(); });
    uint32_t run[4][4];
    starting_columns(corner, ccar, run);
    tile_output<Direct, TR>(q, ti, tj, rows, S.img, S.cum, run, S.stage, pol, tk);
  }
}

// Warp-specialised tiles: one block per SM; Owners warps take a free tile slot each (claim, load,
// sums, look-backs, carries into the slot), Outputs warps take whichever slot is ready and walk its
// rows, then free it. The table's write stream then does not stop while tiles wait on their
// look-backs (an L2 round trip takes about 1.5 us at the median once the stores saturate,
// canopy-sat-l2-latency), and
// more tiles are in flight than warps wait on them. Owners wait only on earlier tiles and on
// output warps, which wait on nothing but ready slots: no deadlock.
template <int TR>
struct ws_slot {
  uint4 img[TR][32];
  uint4 cum[TR];
  uint32_t run[16][32];  // [k * 4 + c][lane]: corner + column carry of the lane's pixel k, channel c
  int ti, tj, rows, state;  // state: 0 free, 1 ready, 2 being stored, 3 being filled
};
template <int Slots, int Outputs, int TR>
struct ws_smem {
  ws_slot<TR> slot[Slots];
  uint4 stage[Outputs][128];
  int owners_done;
};

__device__ __forceinline__ int ld_acquire_cta(const int* p) {
  int v;
  asm volatile("ld.acquire.cta.shared.b32 %0, [%1];" : "=r"(v) : "r"(unsigned(__cvta_generic_to_shared(p))) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_cta(int* p, int v) {
  asm volatile("st.release.cta.shared.b32 [%0], %1;" ::"r"(unsigned(__cvta_generic_to_shared(p))), "r"(v) : "memory");
}

// Takes a slot in state `from` (lane i looks at slot i; the search starts at `start`, so warps
// spread out), moving it to state `to`. Returns the slot, or -1 if none was in that state.
// Ordering (why a slot's contents need no block barrier): the warp handing a slot over writes it,
// runs __syncwarp (orders its lanes' accesses before lane 0's next ones) and lane 0 stores the new
// state with st.release.cta. Here lane 0's atomicCAS reads that state, the fence.cta after it
// (__threadfence_block) makes the pair a release/acquire synchronisation, and the __syncwarp
// orders every lane's following accesses after lane 0's. The same holds both ways: filled -> ready
// (owner writes, output warp reads) and stored -> free (output warp reads, owner's next cp.async
// writes). compute-sanitizer's racecheck does not model this and reports the slot accesses.
template <int Slots, class Slot>
__device__ __forceinline__ int take_slot(Slot* slot, int from, int to, int start) {
  static_assert(Slots <= 32, "one lane per slot");
  const int lane = threadIdx.x & 31;
  const unsigned hit = __ballot_sync(~0u, lane < Slots && ld_acquire_cta(&slot[lane < Slots ? lane : 0].state) == from);
  if (!hit) return -1;
  const unsigned later = hit & (~0u << (start % Slots));
  const int i = __ffs(int(later ? later : hit)) - 1;
  int got = 0;
  if (lane == 0) got = atomicCAS(&slot[i].state, from, to) == from;
  got = __shfl_sync(~0u, got, 0);
  __threadfence_block();
  __syncwarp();
  return got ? i : -1;
}

// Clears the slots' states and the owners' count (all threads of the block).
template <class Smem, int Slots>
__device__ __forceinline__ void ws_init(Smem& S) {
  if (threadIdx.x < Slots) S.slot[threadIdx.x].state = 0;
  if (threadIdx.x == 0) S.owners_done = 0;
  __syncthreads();
}

// An owner warp that has claimed its last tile counts itself done (after its last hand-over, so
// the output warps, which stop once every owner has, see every slot it filled).
template <class Smem>
__device__ __forceinline__ void ws_owner_done(Smem& S) {
  if ((threadIdx.x & 31) == 0) {
    __threadfence_block();
    atomicAdd(&S.owners_done, 1);
  }
}

// An owner hands a finished front half over: waits for the slot's image copy where this warp
// started one (no-op otherwise), writes the lanes' starting column values (corner + column
// carries) and the tile's place, then the slot's state to ready (release, after the warp's writes
// and copies).
template <int TR>
__device__ __forceinline__ void ws_hand_over(ws_slot<TR>& sl, int ti, int tj, int rows, const uint32_t (&corner)[4],
                                             const uint32_t (&ccar)[16]) {
  const int lane = threadIdx.x & 31;
  async_wait<0>();
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int c = 0; c < 4; ++c) sl.run[k * 4 + c][lane] = corner[c] + ccar[k * 4 + c];
  if (lane == 0) sl.ti = ti, sl.tj = tj, sl.rows = rows;
  __syncwarp();
  if (lane == 0) st_release_cta(&sl.state, 1);
}

// Output warp o: takes ready slots and stores their tables until every one of the `owners`
// finishing warps has counted itself done and no slot is ready.
template <int Slots, int TR, int OutRows, class Smem>
__device__ __forceinline__ void ws_output_loop(const params& q, Smem& S, int o, int owners, uint64_t pol) {
  const int lane = threadIdx.x & 31;
  long long tk = 0, pace_next = 0;
  for (;;) {
    const int done = lane == 0 ? ld_acquire_cta(&S.owners_done) : 0;
    const bool all_done = __shfl_sync(~0u, done, 0) == owners;
    const int i = take_slot<Slots>(S.slot, 1, 2, o * 2);
    if (i < 0) {
      // owners_done was read before the search, so every slot they filled was seen ready
      if (all_done) break;
      __nanosleep(64);
      continue;
    }
    ws_slot<TR>& sl = S.slot[i];
    uint32_t run[4][4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int c = 0; c < 4; ++c) run[k][c] = sl.run[k * 4 + c][lane];
    tk = clock64();
    tile_output<false, TR, OutRows>(q, sl.ti, sl.tj, sl.rows, sl.img, sl.cum, run, S.stage[o], pol, tk, &pace_next);
    __syncwarp();
    if (lane == 0) st_release_cta(&sl.state, 0);
  }
}

// NoLookBack (diagnostic, bits): 1 skips the look-backs, 2 also takes the tiles in raster order,
// 4 also publishes no descriptor words; 8 publishes them into a ring of 256 tiles' words.
template <int Owners, int Outputs, int Slots, int TR, int OutRows = 1, int NoLookBack = 0>
__global__ void __launch_bounds__((Owners + Outputs) * 32, 1) satws(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  using smem_t = ws_smem<Slots, Outputs, TR>;
  smem_t& S = *reinterpret_cast<smem_t*>(smem_raw);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint64_t pol = policy_evict_first();
  ws_init<smem_t, Slots>(S);
  long long tk = clock64();
  if (warp < Owners) {
    for (;;) {
      int i;
      while ((i = take_slot<Slots>(S.slot, 0, 3, warp)) < 0) __nanosleep(64);
      ws_slot<TR>& sl = S.slot[i];
      int ti, tj, rows;
      if (!claim_tile<(NoLookBack & 2) != 0>(q, TR, ti, tj, rows)) {
        if (lane == 0) st_release_cta(&sl.state, 0);
        break;
      }
      tk = clock64();
      uint32_t ccar[16], corner[4];
      tile_front<1, 1, false, TR, 0, (NoLookBack & 4) ? 2 : (NoLookBack & 8) ? 256 : NoLookBack ? 1 : 0>(q, ti, tj, rows, sl.img, sl.cum, ccar, corner, pol, tk, [] { __syncwarp(); });
      ws_hand_over(sl, ti, tj, rows, corner, ccar);
    }
    ws_owner_done(S);
    return;
  }
  ws_output_loop<Slots, TR, OutRows>(q, S, warp - Owners, Owners, pol);
}


// The same with two owner warps a tile: one runs the row and corner look-backs, the other the
// column look-back, at the same time (named barrier per pair).
template <int Pairs, int Outputs, int Slots, int TR, int OutRows = 1>
__global__ void __launch_bounds__((2 * Pairs + Outputs) * 32, 1) satwp(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  using smem_t = ws_smem<Slots, Outputs, TR>;
  smem_t& S = *reinterpret_cast<smem_t*>(smem_raw);
  __shared__ int pair_slot[Pairs], pair_tile[Pairs][3];
  __shared__ uint32_t pair_corner[Pairs][4];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint64_t pol = policy_evict_first();
  ws_init<smem_t, Slots>(S);
  long long tk = clock64();
  if (warp < 2 * Pairs) {
    const int pr = warp >> 1, part = 1 + (warp & 1);
    auto pair_sync = [pr] { asm volatile("bar.sync %0, 64;" ::"r"(pr + 1) : "memory"); };
    for (;;) {
      if (part == 1) {
        int i;
        while ((i = take_slot<Slots>(S.slot, 0, 3, pr)) < 0) __nanosleep(64);
        int ti = -1, tj = 0, rows = 0;
        if (!claim_tile(q, TR, ti, tj, rows) && lane == 0) st_release_cta(&S.slot[i].state, 0);
        if (lane == 0) pair_slot[pr] = i, pair_tile[pr][0] = ti, pair_tile[pr][1] = tj, pair_tile[pr][2] = rows;
      }
      pair_sync();
      const int i = pair_slot[pr], ti = pair_tile[pr][0], tj = pair_tile[pr][1], rows = pair_tile[pr][2];
      if (ti < 0) break;
      ws_slot<TR>& sl = S.slot[i];
      tk = clock64();
      uint32_t ccar[16], corner[4];
      if (part == 1) {
        tile_front<1, 1, false, TR, 1>(q, ti, tj, rows, sl.img, sl.cum, ccar, corner, pol, tk, pair_sync);
        if (lane == 0)
          for (int c = 0; c < 4; ++c) pair_corner[pr][c] = corner[c];
        pair_sync();
      } else {
        tile_front<1, 1, false, TR, 2>(q, ti, tj, rows, sl.img, sl.cum, ccar, corner, pol, tk, pair_sync);
        pair_sync();
#pragma unroll
        for (int c = 0; c < 4; ++c) corner[c] = pair_corner[pr][c];
        ws_hand_over(sl, ti, tj, rows, corner, ccar);
      }
    }
    if (part == 2) ws_owner_done(S);
    return;
  }
  ws_output_loop<Slots, TR, OutRows>(q, S, warp - 2 * Pairs, Pairs, pol);
}

// A back half's carries, read-only: the same three look-backs as tile_front over the words the
// fronts published (the fronts ran ahead, so each nearly always stops at its first predecessor).
// Leaves the cumulative row carries in cum_out[0..TR), the column carries of the lane's 4 px and
// the corner, as tile_front does.
template <int TR>
__device__ __forceinline__ void tile_carries(const params& q, int ti, int tj, uint4* cum_out, uint32_t (&ccar)[16], uint32_t (&corner)[4]) {
  const int lane = threadIdx.x & 31;
  constexpr int H = TR > 32 ? TR / 32 : 1;
#pragma unroll
  for (int e = 0; e < 16; ++e) ccar[e] = 0;
  if (ti > 0)
    ks::lane_look_back_tagged<1, 16>(
        ti, q.epoch, [&](int k, int e) { return col_word_at(q, ti, tj, k, e, lane); }, ccar);
  uint32_t L[4 * H];
#pragma unroll
  for (int e = 0; e < 4 * H; ++e) L[e] = 0;
  if (tj > 0)
    ks::lane_look_back_tagged<1, 4 * H>(
        tj, q.epoch, [&](int k, int e) { return row_word_at<H>(q, ti, tj, k, e, lane); }, L);
  uint32_t ctot[4];
  cumulative_row_carries<H>(L, lane, cum_out, ctot);
#pragma unroll
  for (int c = 0; c < 4; ++c) corner[c] = 0;
  if (ti > 0 && tj > 0)
    ks::warp_look_back_tagged<true, 4>(ti, q.epoch, [&](int k) { return corner_words_at(q, ti, tj, k); }, corner);
  __syncwarp();
}

// SM-specialised tiles (session 13): the look-back chains run on SMs that store no table. Blocks
// 0..front_blocks-1 (one per SM) run only front halves (tile_front: image load with an L2
// evict_last policy, sums, look-backs, descriptor words); the other blocks run only back halves:
// claim the next tile from a second counter (same anti-diagonal order), load its image again
// (meant to hit L2), read the carries from the published words (tile_carries) and store the table.
// An L2 round trip from an SM whose own stores are quiet stays near 350-500 cycles even when every
// other SM saturates the write stream (canopy-sat-l2-latency), against about 3000 on a storing SM.
// Fronts wait only on earlier fronts and back halves only on fronts: no deadlock, as long as every
// block is resident (one block per SM, grid = SMs).
template <int FWarps, int OWarps, int TR = 32>
__global__ void __launch_bounds__(32 * (FWarps > OWarps ? FWarps : OWarps), 1) satsplit(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x >> 5;
  warp_smem_t<TR>& S = reinterpret_cast<warp_smem_t<TR>*>(smem_raw)[warp];
  int ti, tj, rows;
  long long tk = clock64();
  if (int(blockIdx.x) < q.front_blocks) {
    if (warp >= FWarps) return;
    const uint64_t pol = policy_evict_last();
    while (claim_tile(q, TR, ti, tj, rows, 0)) {
      tk = clock64();
      uint32_t ccar[16], corner[4];
      tile_front<1, 1, false, TR>(q, ti, tj, rows, S.img, S.cum, ccar, corner, pol, tk, [] { __syncwarp(); });
    }
    return;
  }
  if (warp >= OWarps) return;
  const int lane = threadIdx.x & 31;
  const uint64_t pol = policy_evict_first();
  unsigned t;
  while (claim_tile(q, TR, ti, tj, rows, 1, &t)) {
    // Wait, with a back-off and without touching the descriptor words, until the fronts have
    // claimed two anti-diagonals past this tile (spinning look-backs of ~1500 back-half warps on
    // the words slow the fronts' own look-backs).
    {
      const unsigned need = t + 2u * unsigned(min(q.TW, q.TH));
      unsigned seen = 0;
      if (lane == 0)
        while ((seen = ld_relaxed_gpu(q.counter)) < need && seen < unsigned(q.TW) * unsigned(q.TH)) __nanosleep(400);
      __syncwarp();
    }
    copy_tile_async<TR>(q, ti, tj, rows, S.img, pol);
    tk = clock64();
    uint32_t ccar[16], corner[4];
    tile_carries<TR>(q, ti, tj, S.cum, ccar, corner);
    stamp(q, 7, tk);
    async_wait<0>();
    __syncwarp();
    uint32_t run[4][4];
    starting_columns(corner, ccar, run);
    tile_output<false, TR>(q, ti, tj, rows, S.img, S.cum, run, S.stage, pol, tk);
    __syncwarp();
  }
}

// Aggregates ahead (session 14): "front" warps compute every tile's aggregates a bounded lag
// ahead of the owners, from a first read of the image (cp.async into the front's own 16 KB, L2
// evict_last), so that an owner's row and column look-backs never wait for a predecessor's
// aggregate, only walk to its nearest inclusive word. A front publishes the 32 row sums (row
// words) and the in-strip prefix of the column sums (column words), as aggregates (inclusive on
// the first tile column / row). Owners (one per tile slot, as in satws) no longer sum anything:
// they start the image copy into the slot (the second read, meant to come from L2, evict_first),
// read their own aggregate words back, run the row look-back, publish the corner aggregate (the
// total of the row carries), run the column and corner look-backs, publish the inclusive words,
// and hand the slot over to the output warps (ws_output_loop, unchanged). A front claims tile f
// (claim order, its own counter) only once the owners have claimed more than f - lag tiles.
// Deadlock-free with every block resident: fronts wait only on owner claims; owners on fronts of
// tiles they or their predecessors hold (which the lag always admits) and on earlier owners.
__device__ __forceinline__ void tile_aggregates(const params& q, int ti, int tj, int rows, uint4 (*img)[32], uint64_t pol) {
  const int lane = threadIdx.x & 31;
  // the whole 16 KB in flight at once (one round trip), into the front's own shared memory
  copy_tile_async<32>(q, ti, tj, rows, img, pol);
  async_wait<0>();
  __syncwarp();
  uint32_t cRB[4] = {0, 0, 0, 0}, cGA[4] = {0, 0, 0, 0}, myRB = 0, myGA = 0;
  column_sums(img, rows, lane, cRB, cGA);
  if (lane < rows) row_sum(img[lane], lane, myRB, myGA);
  __syncwarp();  // the reads of img before the next tile's copy into it
  const uint32_t rs[4] = {myRB & 0xFFFFu, myGA & 0xFFFFu, myRB >> 16, myGA >> 16};
  uint32_t cagg[4][4];  // [px][c]: in-strip inclusive prefix of the column sums
  column_aggregates(cRB, cGA, lane, cagg);
  const bool right = tj + 1 < q.TW, below = ti + 1 < q.TH;
  const size_t tile = size_t(ti) * q.TW + tj;
  tagged_word* rw = q.roww + tile * 128;
  tagged_word* cw = q.colw + tile * 512;
  if (right)
#pragma unroll
    for (int c = 0; c < 4; ++c) publish(q, rw + c * 32 + lane, tj == 0 ? ks::flag_inclusive : ks::flag_aggregate, rs[c]);
  if (below)
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int k = 0; k < 4; ++k) publish(q, cw + c * 128 + 32 * k + lane, ti == 0 ? ks::flag_inclusive : ks::flag_aggregate, cagg[k][c]);
}

// A front warp's loop (satahead's fronts, satres's producers): claim tiles from counter 1 in
// claim order, each only once the owners have claimed more than tile - lag, and publish their
// aggregates. Stamps: [7] the wait for the lag, [1] the tile's aggregates.
__device__ __forceinline__ void front_loop(const params& q, uint4 (*img)[32]) {
  const int lane = threadIdx.x & 31;
  const unsigned tiles = unsigned(q.TW) * unsigned(q.TH);
  const uint64_t pol = policy_evict_last();
  for (;;) {
    unsigned f = 0;
    if (lane == 0) f = atomicAdd(q.counter + 1, 1u);
    f = __shfl_sync(~0u, f, 0);
    if (f >= tiles) break;
    long long tk = clock64();
    if (lane == 0)
      while (f >= ld_relaxed_gpu(q.counter) + unsigned(q.lag)) __nanosleep(100);
    __syncwarp();
    stamp(q, 7, tk);
    const ks::tile_position p = ks::diagonal_tile(f, q.TW, q.TH);
    tile_aggregates(q, p.ti, p.tj, min(32, q.h - p.ti * 32), img, pol);
    stamp(q, 1, tk);
  }
}

// The value of word p (w: a first read of it) once it holds at least status `need` this build:
// flag_aggregate for a front's words (nearly always there already), flag_inclusive for a carry.
__device__ __forceinline__ uint32_t value_once(const params& q, const tagged_word* p, tagged_word w, unsigned need) {
  while (ks::tagged_status(w, q.epoch) < need) {
    __nanosleep(32);
    w = ks::load_tagged(p);
  }
  return ks::tagged_value<uint32_t>(w);
}

// An owner's carries with every aggregate published ahead: the row, column and corner look-backs
// (windows RW, CW predecessors a round), each followed by its inclusive words (own aggregate read
// back from the front's words). Leaves what tile_front leaves: cum_out, ccar, corner.
template <int RW, int CW, bool ColumnsFirst>
__device__ __forceinline__ void tile_carries_ahead(const params& q, int ti, int tj, uint4* cum_out, uint32_t (&ccar)[16], uint32_t (&corner)[4], long long& tk) {
  const int lane = threadIdx.x & 31;
  const bool right = tj + 1 < q.TW, below = ti + 1 < q.TH;
  const size_t tile = size_t(ti) * q.TW + tj;
  tagged_word* rw = q.roww + tile * 128;
  tagged_word* cw = q.colw + tile * 512;
  tagged_word* kw = q.cornw + tile * 4;
  // own aggregates, read now, waited for only when the inclusive words need them
  tagged_word own_r[4], own_c[16];
  const bool pub_r = right && tj > 0, pub_c = below && ti > 0;
#pragma unroll
  for (int c = 0; c < 4; ++c) own_r[c] = pub_r ? ks::load_tagged(rw + c * 32 + lane) : 0;
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int k = 0; k < 4; ++k) own_c[k * 4 + c] = pub_c ? ks::load_tagged(cw + c * 128 + 32 * k + lane) : 0;
  unsigned row_reads = 0, col_reads = 0;  // words lane 0 read in the look-backs (stamps [9], [8])
  uint32_t L[4] = {0, 0, 0, 0};
  auto rows_look_back = [&] {
    if (tj == 0) return;
    ks::lane_look_back_tagged<RW, 4>(tj, q.epoch, [&](int k, int e) { ++row_reads; return row_word_at<1>(q, ti, tj, k, e, lane); }, L);
    if (pub_r)
#pragma unroll
      for (int c = 0; c < 4; ++c) publish(q, rw + c * 32 + lane, ks::flag_inclusive, L[c] + value_once(q, rw + c * 32 + lane, own_r[c], ks::flag_aggregate));
  };
  auto columns_look_back = [&] {
#pragma unroll
    for (int e = 0; e < 16; ++e) ccar[e] = 0;
    if (ti == 0) return;
    ks::lane_look_back_tagged<CW, 16>(ti, q.epoch, [&](int k, int e) { ++col_reads; return col_word_at(q, ti, tj, k, e, lane); }, ccar);
    if (pub_c)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          tagged_word* p = cw + c * 128 + 32 * k + lane;
          publish(q, p, ks::flag_inclusive, ccar[k * 4 + c] + value_once(q, p, own_c[k * 4 + c], ks::flag_aggregate));
        }
  };
  if (ColumnsFirst) {
    columns_look_back();
    stamp(q, 3, tk);
    rows_look_back();
    stamp(q, 2, tk);
  } else {
    rows_look_back();
    stamp(q, 2, tk);
    columns_look_back();
    stamp(q, 3, tk);
  }
  if (q.stamps && lane == 0) atomicAdd(q.stamps + 8, (unsigned long long)col_reads), atomicAdd(q.stamps + 9, (unsigned long long)row_reads);
  uint32_t ctot[4];
  cumulative_row_carries<1>(L, lane, cum_out, ctot);
#pragma unroll
  for (int c = 0; c < 4; ++c) corner[c] = 0;
  // corner aggregate = the total of the row carries (published once the row look-back has them)
  if (below && lane == 0)
    for (int c = 0; c < 4; ++c) publish(q, kw + c, ti > 0 && tj > 0 ? ks::flag_aggregate : ks::flag_inclusive, ctot[c]);
  if (ti > 0 && tj > 0) {
    ks::warp_look_back_tagged<true, 4>(ti, q.epoch, [&](int k) { return corner_words_at(q, ti, tj, k); }, corner);
    if (below && lane == 0)
      for (int c = 0; c < 4; ++c) publish(q, kw + c, ks::flag_inclusive, corner[c] + ctot[c]);
  }
  __syncwarp();
  stamp(q, 4, tk);
}

// Shared memory of satahead and satres: ws's slots and stages, each front warp's image copy, and
// (LateSlot) each owner's cumulative row carries until it has a slot.
template <int Fronts, int Slots, int Outputs, int OwnerScratch = 0>
struct ahead_smem {
  ws_smem<Slots, Outputs, 32> ws;
  uint4 front_img[Fronts][32][32];  // each front warp's copy of its tile's image
  uint4 owner_cum[OwnerScratch > 0 ? OwnerScratch : 1][32];  // LateSlot: cumulative row carries until a slot is free
};
// Fronts + owners + output warps, one block per SM. Stamps: [1] a front's tile (copy, sums,
// words), [7] its wait for the lag; [2]-[4] the owners' look-backs, [8]-[9] the words they read,
// [11] (LateSlot) their wait for a slot; [5] output.
// LateSlot: an owner resolves its carries first (cumulative row carries in its own 512 bytes) and
// takes a tile slot only then, for the image copy and the hand-over: a slot is held for one
// round trip instead of the whole look-back, so more owners fit than slots.
template <int Fronts, int Owners, int Outputs, int Slots, int RW = 1, int CW = 1, bool ColumnsFirst = false, bool LateSlot = false>
__global__ void __launch_bounds__((Fronts + Owners + Outputs) * 32, 1) satahead(params q) {
  constexpr int TR = 32;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  using smem_t = ws_smem<Slots, Outputs, TR>;
  using all_t = ahead_smem<Fronts, Slots, Outputs, LateSlot ? Owners : 0>;
  all_t& A = *reinterpret_cast<all_t*>(smem_raw);
  smem_t& S = A.ws;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  ws_init<smem_t, Slots>(S);
  long long tk = clock64();
  if (warp < Fronts) return front_loop(q, A.front_img[warp]);
  if (warp < Fronts + Owners) {
    const uint64_t pol = policy_evict_first();
    for (;;) {
      int i = -1;
      if (!LateSlot)
        while ((i = take_slot<Slots>(S.slot, 0, 3, warp)) < 0) __nanosleep(64);
      int ti, tj, rows;
      if (!claim_tile(q, TR, ti, tj, rows)) {
        if (!LateSlot && lane == 0) st_release_cta(&S.slot[i].state, 0);
        break;
      }
      if (q.stamps && lane == 0) atomicAdd(q.stamps + 6, 1ull);
      tk = clock64();
      if (!LateSlot) copy_tile_async<TR>(q, ti, tj, rows, S.slot[i].img, pol);
      uint32_t ccar[16], corner[4];
      uint4* cum = LateSlot ? A.owner_cum[warp - Fronts] : S.slot[i].cum;
      tile_carries_ahead<RW, CW, ColumnsFirst>(q, ti, tj, cum, ccar, corner, tk);
      if (LateSlot) {
        while ((i = take_slot<Slots>(S.slot, 0, 3, warp)) < 0) __nanosleep(64);
        copy_tile_async<TR>(q, ti, tj, rows, S.slot[i].img, pol);
        S.slot[i].cum[lane] = cum[lane];
        stamp(q, 11, tk);
      }
      ws_slot<TR>& sl = S.slot[i];
      ws_hand_over(sl, ti, tj, rows, corner, ccar);
    }
    ws_owner_done(S);
    return;
  }
  ws_output_loop<Slots, TR, 1>(q, S, warp - Fronts - Owners, Owners, policy_evict_first());
}

// Carries resolved on quiet SMs (session 14). Three roles, one block per SM:
//   - blocks 0..front_blocks-1 are resolvers: every warp claims tiles in order (counter 2) and runs
//     tile_carries_ahead on them: the three look-backs over the aggregates, the corner aggregate and
//     the inclusive words. They load no image and store no table: the idea was that their L2
//     round trips would be the quiet-SM ones of canopy-sat-l2-latency's single-warp probe (about
//     500 cycles at the median, not about 3000). Measured, they were not: about 6 kcycles a
//     read with 13 warps of look-backs an SM (docs/sat.md, session 14);
//   - on every other SM, producer warps (tile_aggregates, throttled by the lag) publish the
//     aggregates, owners claim a tile (counter 0), start its image copy (the second read, from L2)
//     and read its three carries straight from the predecessors' inclusive words (left: rows, above:
//     columns and corner; one round trip, waiting only if the resolvers are behind), and output
//     warps store the table.
// Owners publish nothing, so no chain runs through a storing SM. Deadlock-free with every block
// resident: producers wait on owner claims, resolvers on producers and earlier resolvers, owners on
// resolvers of earlier tiles.
template <int Fronts, int Owners, int Outputs, int Slots, bool ColumnsFirst = true>
__global__ void __launch_bounds__((Fronts + Owners + Outputs) * 32, 1) satres(params q) {
  constexpr int TR = 32;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  using smem_t = ws_smem<Slots, Outputs, TR>;
  ahead_smem<Fronts, Slots, Outputs>& A = *reinterpret_cast<ahead_smem<Fronts, Slots, Outputs>*>(smem_raw);
  smem_t& S = A.ws;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  ws_init<smem_t, Slots>(S);
  const unsigned tiles = unsigned(q.TW) * unsigned(q.TH);
  long long tk = clock64();
  if (int(blockIdx.x) < q.front_blocks) {  // resolver
    uint4* cum = &S.slot[0].img[0][0] + warp * 32;  // scratch: the slots are unused here
    for (;;) {
      unsigned r = 0;
      if (lane == 0) r = atomicAdd(q.counter + 2, 1u);
      r = __shfl_sync(~0u, r, 0);
      if (r >= tiles) break;
      const ks::tile_position p = ks::diagonal_tile(r, q.TW, q.TH);
      tk = clock64();
      uint32_t ccar[16], corner[4];
      tile_carries_ahead<1, 1, ColumnsFirst>(q, p.ti, p.tj, cum, ccar, corner, tk);
    }
    return;
  }
  if (warp < Fronts) return front_loop(q, A.front_img[warp]);  // producer
  if (warp < Fronts + Owners) {  // owner
    const uint64_t pol = policy_evict_first();
    for (;;) {
      int i;
      while ((i = take_slot<Slots>(S.slot, 0, 3, warp)) < 0) __nanosleep(64);
      ws_slot<TR>& sl = S.slot[i];
      int ti, tj, rows;
      if (!claim_tile(q, TR, ti, tj, rows)) {
        if (lane == 0) st_release_cta(&sl.state, 0);
        break;
      }
      if (q.stamps && lane == 0) atomicAdd(q.stamps + 6, 1ull);
      tk = clock64();
      copy_tile_async<TR>(q, ti, tj, rows, sl.img, pol);
      // the carries: the inclusive words of the tile to the left (rows) and of the tile above
      // (columns, corner), all read at once, then waited for one by one
      const bool left = tj > 0, up = ti > 0;
      auto rw_at = [&](int c) { return row_word_at<1>(q, ti, tj, 0, c, lane); };
      auto cw_at = [&](int e) { return col_word_at(q, ti, tj, 0, e, lane); };
      auto kw_at = [&](int c) { return corner_words_at(q, ti, tj, 0) + c; };
      tagged_word wr[4], wc[16], wk[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) wr[c] = left ? ks::load_tagged(rw_at(c)) : 0;
#pragma unroll
      for (int e = 0; e < 16; ++e) wc[e] = up ? ks::load_tagged(cw_at(e)) : 0;
#pragma unroll
      for (int c = 0; c < 4; ++c) wk[c] = up && left ? ks::load_tagged(kw_at(c)) : 0;
      uint32_t L[4], ccar[16], corner[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) L[c] = left ? value_once(q, rw_at(c), wr[c], ks::flag_inclusive) : 0u;
#pragma unroll
      for (int e = 0; e < 16; ++e) ccar[e] = up ? value_once(q, cw_at(e), wc[e], ks::flag_inclusive) : 0u;
#pragma unroll
      for (int c = 0; c < 4; ++c) corner[c] = up && left ? value_once(q, kw_at(c), wk[c], ks::flag_inclusive) : 0u;
      stamp(q, 10, tk);
      uint32_t ctot[4];
      cumulative_row_carries<1>(L, lane, sl.cum, ctot);
      ws_hand_over(sl, ti, tj, rows, corner, ccar);
    }
    ws_owner_done(S);
    return;
  }
  ws_output_loop<Slots, TR, 1>(q, S, warp - Fronts - Owners, Owners, policy_evict_first());
}

bool all_ok = true;
bool checked = true;  // false: a diagnostic variant whose tables are wrong by design
bool small_only = false;  // --small: the odd sizes only (for compute-sanitizer)
int only_width = 0;       // --width W: the odd sizes and the timed sizes of width W only
double pace_tbps = 0;     // --pace R: output warps' table stores paced to R TB/s over the GPU (0: off)
int pace_burst_rows = 8;  // --pace-burst N: rows of unused time an output warp may carry forward
int split_front = 0;      // satsplit: front blocks (0: not a split kernel)
int desc_hint = 0;        // --desc-hint N: descriptor words' L2 policy (0 none, 1 evict_last, 2 evict_first)
int ahead_lag = 256;      // --lag N: satahead's fronts run at most N tiles (claim order) ahead of the owners
bool ahead_kernel = false;  // the variant running is satahead or satres (their phase stamps differ)
int resolver_blocks = 8;    // --resolvers N: satres's resolver SMs

template <class K>
void run_variant(const char* name, K kern, int TR, int max_blocks_per_sm, int threads, size_t smem, int outputs_per_sm = 0) {
  if (smem == 0) smem = kWarps * (TR == 64 ? sizeof(warp_smem_t<64>) : TR == 32 ? sizeof(warp_smem_t<32>) : sizeof(warp_smem_t<16>));
  const int sizes[][2] = {{128, 1}, {128, 100}, {256, 33}, {1024, 100}, {640, 47}, {1920, 1080}, {3840, 2160}, {7680, 4320}};
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, kern);
  if (max_blocks_per_sm > 0) per_sm = std::min(per_sm, max_blocks_per_sm);  // fewer tiles in flight
  int clock_khz = 0; cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  // SM cycles per 2 KB row and output warp for pace_tbps over every SM (at the nominal clock)
  const long long pace = pace_tbps > 0 && outputs_per_sm > 0
                             ? std::llround(2048.0 * outputs_per_sm * sms * clock_khz * 1e3 / (pace_tbps * 1e12)) : 0;
  std::printf("%s: %d regs, blocks per SM %d (%d warps)", name, fa.numRegs, per_sm, per_sm * threads / 32);
  if (desc_hint) std::printf(", descriptor words stored %s", desc_hint == 1 ? "L2::evict_last" : "L2::evict_first");
  if (pace) std::printf(", stores paced to %.2f TB/s (%lld cycles a row and output warp at %d MHz, burst %d rows)", pace_tbps, pace, clock_khz / 1000, pace_burst_rows);
  std::printf("\n");
  unsigned long long* stamps; CK(cudaMalloc(&stamps, 128));
  std::vector<std::array<int, 3>> runs;  // width, height, all-255 (checked sizes also run an all-255 image)
  for (auto& s : sizes) {
    runs.push_back({s[0], s[1], 0});
    if (s[0] < 1920) runs.push_back({s[0], s[1], 1});
  }
  for (auto& s : runs) {
    const int w = s[0], h = s[1];
    const bool bright = s[2] != 0;
    if (small_only && w >= 1920) continue;
    if (only_width && w >= 1920 && w != only_width) continue;
    params q{};
    q.pace = pace; q.pace_burst = pace * pace_burst_rows;
    q.front_blocks = split_front;
    q.desc_hint = desc_hint;
    q.lag = ahead_lag;
    q.w = w; q.h = h; q.TW = w / 128; q.TH = (h + TR - 1) / TR;
    const size_t tiles = size_t(q.TW) * q.TH, npx = size_t(w) * h;
    std::vector<uint32_t> img(npx);
    std::mt19937 rng(w * 7 + h);
    for (auto& v : img) v = bright ? 0xFFFFFFFFu : std::uint32_t(rng());
    uint32_t* dimg; CK(cudaMalloc(&dimg, npx * 4)); CK(cudaMemcpy(dimg, img.data(), npx * 4, cudaMemcpyHostToDevice));
    q.img = dimg;
    CK(cudaMalloc(&q.table, npx * 16));
    CK(cudaMalloc(&q.roww, tiles * std::max(TR, 32) * 4 * 8)); CK(cudaMalloc(&q.colw, tiles * 512 * 8)); CK(cudaMalloc(&q.cornw, tiles * 4 * 8));
    CK(cudaMemset(q.roww, 0, tiles * std::max(TR, 32) * 4 * 8)); CK(cudaMemset(q.colw, 0, tiles * 512 * 8)); CK(cudaMemset(q.cornw, 0, tiles * 4 * 8));
    CK(cudaMalloc(&q.counter, 16));  // [0] owners or tiles, [1] fronts or back halves, [2] resolvers
    // the split kernel needs every block (fronts and back halves) whatever the size
    const int grid = split_front ? per_sm * sms
                                 : int(std::min<size_t>(size_t(per_sm) * sms, std::max<size_t>(1, threads > 128 ? tiles : (tiles * 32 + threads - 1) / threads)));
    unsigned epoch = 0;
    auto build = [&] {
      q.epoch = ++epoch;
      cudaMemsetAsync(q.counter, 0, 16);
      kern<<<grid, threads, smem>>>(q);
    };
    build();
    CK(cudaDeviceSynchronize());
    std::vector<uint32_t> got(npx * 4);
    CK(cudaMemcpy(got.data(), q.table, npx * 16, cudaMemcpyDeviceToHost));
    const std::vector<uint32_t> ref = reference_sat_rgba8(img, w, h);
    const size_t bad = checked ? count_mismatches(got, ref, w) : 0;
    std::printf("  %5dx%-5d%s: %s (%zu bad)", w, h, bright ? " all-255" : "", !checked ? "not checked" : bad ? "WRONG" : "exact", bad);
    if (bad) all_ok = false;
    if (w >= 1920) {
      void* cp; CK(cudaMalloc(&cp, npx * 16));
      const double copy = timed_us([&] { cudaMemcpyAsync(cp, q.table, npx * 16, cudaMemcpyDeviceToDevice); });
      const double copy_gbps = 2.0 * npx * 16 / copy * 1e-3;
      const double t = timed_us(build);
      CK(cudaMemcpy(got.data(), q.table, npx * 16, cudaMemcpyDeviceToHost));
      const size_t bad2 = checked ? count_mismatches(got, ref, w) : 0;
      if (bad2) all_ok = false;
      std::printf(" | %.1f us = %.1f%% of copy (%.0f GB/s), grid %d, recheck %s", t, 100.0 * npx * 20 / t * 1e-3 / copy_gbps, copy_gbps, grid, !checked ? "-" : bad2 ? "WRONG" : "exact");
      // one measured build: mean cycles per tile and phase
      CK(cudaMemset(stamps, 0, 128));
      q.stamps = stamps; build(); CK(cudaDeviceSynchronize()); q.stamps = nullptr;
      unsigned long long st[16]; CK(cudaMemcpy(st, stamps, 128, cudaMemcpyDeviceToHost));
      const double n = double(st[6]);
      if (ahead_kernel)
        std::printf("\n      kcycles per tile: front (loads, sums, words) %.2f front's wait for the lag %.2f | %s row look-back %.2f column look-back %.2f corner %.2f | output %.2f (tiles %.0f)",
                    st[1] / n / 1e3, st[7] / n / 1e3, split_front ? "resolvers'" : "owners'", st[2] / n / 1e3, st[3] / n / 1e3, st[4] / n / 1e3, st[5] / n / 1e3, n);
      if (ahead_kernel && split_front) std::printf("\n      owners' wait for their carries %.2f kcycles per tile", st[10] / n / 1e3);
      if (ahead_kernel && st[11]) std::printf("\n      owners' wait for a free slot %.2f kcycles per tile", st[11] / n / 1e3);
      if (ahead_kernel) std::printf("\n      predecessor reads per tile (re-reads of empty words included): row look-back %.2f, column look-back %.2f", st[9] / 4.0 / n, st[8] / 16.0 / n);
      else
        std::printf("\n      kcycles per tile: load %.2f aggregates %.2f row look-back %.2f column look-back %.2f corner %.2f output %.2f (tiles %.0f)", st[0] / n / 1e3, st[1] / n / 1e3, st[2] / n / 1e3,
                    st[3] / n / 1e3, st[4] / n / 1e3, st[5] / n / 1e3, n);
      if (split_front && !ahead_kernel) std::printf(" back halves' carries %.2f", st[7] / n / 1e3);
      cudaFree(cp);
    }
    std::printf("\n");
    cudaFree(dimg); cudaFree(q.table); cudaFree(q.roww); cudaFree(q.colw); cudaFree(q.cornw); cudaFree(q.counter);
  }
  cudaFree(stamps);
}

template <int Owners, int Outputs, int Slots, int TR = 32, int OutRows = 1, int NoLookBack = 0>
void run_ws() {
  char name[200];
  std::snprintf(name, sizeof name, "warp-specialised: %d-row tiles, %d owner warps, %d output warps (%d rows a step), %d tile slots, 1 block per SM%s", TR,
                Owners, Outputs, OutRows, Slots, !NoLookBack ? "" : NoLookBack & 4 ? ", NO LOOK-BACKS, NO DESCRIPTOR WORDS (diagnostic, table not checked)"
                : NoLookBack & 8 ? ", NO LOOK-BACKS, DESCRIPTOR WORDS IN A RING OF 256 TILES (diagnostic, table not checked)"
                : NoLookBack & 2 ? ", NO LOOK-BACKS, RASTER ORDER (diagnostic, table not checked)" : ", NO LOOK-BACKS (diagnostic, table not checked)");
  checked = !NoLookBack;
  run_variant(name, satws<Owners, Outputs, Slots, TR, OutRows, NoLookBack>, TR, 1, (Owners + Outputs) * 32, sizeof(ws_smem<Slots, Outputs, TR>), Outputs);
  checked = true;
}
template <int Fronts, int Owners, int Outputs, int Slots, int RW = 1, int CW = 1, bool ColumnsFirst = false, bool LateSlot = false>
void run_ahead() {
  char name[260];
  std::snprintf(name, sizeof name, "aggregates ahead: %d front warps (lag %d tiles), %d owner warps (look-back windows %d rows, %d columns%s%s), %d output warps, %d tile slots, 1 block per SM",
                Fronts, ahead_lag, Owners, RW, CW, ColumnsFirst ? ", columns first" : "", LateSlot ? ", slot taken after the look-backs" : "", Outputs, Slots);
  ahead_kernel = true;
  run_variant(name, satahead<Fronts, Owners, Outputs, Slots, RW, CW, ColumnsFirst, LateSlot>, 32, 1, (Fronts + Owners + Outputs) * 32,
              sizeof(ahead_smem<Fronts, Slots, Outputs, LateSlot ? Owners : 0>), Outputs);
  ahead_kernel = false;
}
template <int Fronts, int Owners, int Outputs, int Slots, bool ColumnsFirst = true>
void run_res() {
  char name[260];
  std::snprintf(name, sizeof name, "carries resolved on quiet SMs: %d resolver SMs (look-backs only%s); elsewhere %d producer warps (lag %d tiles), %d owner warps, %d output warps, %d tile slots",
                resolver_blocks, ColumnsFirst ? ", columns first" : "", Fronts, ahead_lag, Owners, Outputs, Slots);
  ahead_kernel = true;
  split_front = resolver_blocks;
  run_variant(name, satres<Fronts, Owners, Outputs, Slots, ColumnsFirst>, 32, 1, (Fronts + Owners + Outputs) * 32, sizeof(ahead_smem<Fronts, Slots, Outputs>), Outputs);
  split_front = 0;
  ahead_kernel = false;
}
template <int FWarps, int OWarps, int Front>
void run_split() {
  char name[200];
  std::snprintf(name, sizeof name, "SM-specialised: %d front blocks of %d warps (load, sums, look-backs), the other SMs %d warps of back halves (image again, carries, table)",
                Front, FWarps, OWarps);
  split_front = Front;
  run_variant(name, satsplit<FWarps, OWarps>, 32, 1, 32 * std::max(FWarps, OWarps), std::max(FWarps, OWarps) * sizeof(warp_smem_t<32>));
  split_front = 0;
}
template <int Pairs, int Outputs, int Slots, int TR, int OutRows = 1>
void run_wp() {
  char name[160];
  std::snprintf(name, sizeof name, "warp-specialised, owner pairs: %d-row tiles, %d owner pairs, %d output warps (%d rows a step), %d tile slots, 1 block per SM",
                TR, Pairs, Outputs, OutRows, Slots);
  run_variant(name, satwp<Pairs, Outputs, Slots, TR, OutRows>, TR, 1, (2 * Pairs + Outputs) * 32, sizeof(ws_smem<Slots, Outputs, TR>), Outputs);
}

//   canopy-sat-warp-tiles [--small] [--width W] [--pace R1,R2,...] [--pace-burst rows] [--desc-hint 0|1|2]
//                         [--variants k1,k2,...|all]
// Without --variants: the session-12 set (keys marked * below); "all" runs every variant. --pace
// runs each chosen variant once per value.
int main(int argc, char** argv) {
  struct variant { const char* key; bool standard; void (*run)(); };
  // <RW, CW, Direct, ColumnsFirst, TR>: look-back windows (predecessors read per round) for rows
  // and columns, stores without the stage, the column look-back before the row one, tile rows.
  const variant variants[] = {
      {"ref", true, [] { run_variant("rows then columns, windows 1 (reference)", satw<1, 1, false, false>, 32, 0, kWarps * 32, 0); }},
      {"win", false, [] { run_variant("rows then columns, windows 4 (rows) and 2 (columns)", satw<4, 2, false, false>, 32, 0, kWarps * 32, 0); }},
      {"colfirst", false, [] { run_variant("columns then rows", satw<1, 1, false, true>, 32, 0, kWarps * 32, 0); }},
      {"direct", false, [] { run_variant("stores without the stage (4 x 16 bytes a lane)", satw<4, 2, true, false>, 32, 0, kWarps * 32, 0); }},
      {"r16", false, [] { run_variant("16-row tiles (16 warps per SM)", satw<1, 1, false, false, 16>, 16, 0, kWarps * 32, 0); }},
      // Fewer warps in flight: shallower look-back chains, less latency hidden.
      {"ref8", true, [] { run_variant("reference with 2 blocks per SM (8 warps)", satw<1, 1, false, false>, 32, 2, kWarps * 32, 0); }},
      {"ref4", false, [] { run_variant("reference with 1 block per SM (4 warps)", satw<1, 1, false, false>, 32, 1, kWarps * 32, 0); }},
      // Warp-specialised: owner warps (front halves) and output warps (back halves) share tile slots.
      {"ws", true, [] { run_ws<5, 6, 10>(); }},
      {"ws6", false, [] { run_ws<6, 5, 11>(); }},
      {"ws7", true, [] { run_ws<7, 5, 11>(); }},
      {"ws8", false, [] { run_ws<8, 4, 11>(); }},
      // Many output warps, at a register cap of 93 for every warp.
      {"ws32o16", true, [] { run_ws<6, 16, 9, 32>(); }},
      // 64-row tiles: half the tile rows, about a third fewer anti-diagonals for the carries to cross.
      {"r64", true, [] { run_variant("64-row tiles (4 warps per SM)", satw<1, 1, false, false, 64>, 64, 0, kWarps * 32, 0); }},
      {"ws64", true, [] { run_ws<4, 4, 6, 64>(); }},
      {"ws64b", false, [] { run_ws<5, 3, 6, 64>(); }},
      // Owner pairs: the column look-back beside the row and corner ones.
      {"wp32", true, [] { run_wp<5, 5, 11, 32>(); }},
      {"wp64", true, [] { run_wp<4, 4, 6, 64>(); }},
      {"wp64b", false, [] { run_wp<5, 3, 6, 64>(); }},
      // Output warps scanning two rows at once.
      {"ws64r2", true, [] { run_ws<4, 4, 6, 64, 2>(); }},
      {"wp64r2", true, [] { run_wp<4, 4, 6, 64, 2>(); }},
      {"wp32r2", false, [] { run_wp<5, 5, 11, 32, 2>(); }},
      // SM-specialised: fronts on their own SMs (session 13).
      {"split12", false, [] { run_split<12, 12, 12>(); }},
      {"split16", false, [] { run_split<12, 12, 16>(); }},
      {"split24", false, [] { run_split<12, 12, 24>(); }},
      {"split32", false, [] { run_split<12, 12, 32>(); }},
      {"split48", false, [] { run_split<12, 12, 48>(); }},
      {"split64", false, [] { run_split<12, 12, 64>(); }},
      // Aggregates ahead (session 14): fronts publish every tile's aggregates a lag ahead.
      {"ahead", false, [] { run_ahead<2, 5, 6, 9>(); }},
      {"ahead1", false, [] { run_ahead<1, 5, 6, 9>(); }},
      {"ahead3", false, [] { run_ahead<3, 5, 6, 8>(); }},
      {"ahead-w2", false, [] { run_ahead<2, 5, 6, 9, 2, 2>(); }},
      {"ahead-o4", false, [] { run_ahead<2, 4, 6, 9>(); }},
      {"ahead-o3", false, [] { run_ahead<2, 3, 6, 9>(); }},
      {"ahead-cf", false, [] { run_ahead<2, 5, 6, 9, 1, 1, true>(); }},
      {"ahead-o4-cf", false, [] { run_ahead<2, 4, 6, 9, 1, 1, true>(); }},
      {"ahead-o3-cf", false, [] { run_ahead<2, 3, 6, 9, 1, 1, true>(); }},
      {"ahead-late6", false, [] { run_ahead<2, 6, 6, 8, 1, 1, false, true>(); }},
      {"ahead-late8", false, [] { run_ahead<2, 8, 6, 8, 1, 1, false, true>(); }},
      {"ahead-late10", false, [] { run_ahead<2, 10, 6, 8, 1, 1, false, true>(); }},
      {"ahead-late8-cf", false, [] { run_ahead<2, 8, 6, 8, 1, 1, true, true>(); }},
      {"ahead-late12", false, [] { run_ahead<2, 12, 6, 6, 1, 1, false, true>(); }},
      // Carries resolved on quiet SMs (session 14).
      {"res", false, [] { run_res<3, 4, 6, 8>(); }},
      {"res-o5", false, [] { run_res<3, 5, 6, 8>(); }},
      {"res-f2", false, [] { run_res<2, 4, 6, 9>(); }},
      {"res-rows", false, [] { run_res<3, 4, 6, 8, false>(); }},
      // Diagnostics (tables wrong by design, not checked): every look-back skipped, the ceiling of
      // the structure without them; the same in raster tile order, without descriptor words, or
      // with the words in a ring.
      {"ws32-nolb", true, [] { run_ws<5, 6, 10, 32, 1, 1>(); }},
      {"ws32-nolb-raster", true, [] { run_ws<5, 6, 10, 32, 1, 3>(); }},
      {"ws32-nolb-nopub", false, [] { run_ws<5, 6, 10, 32, 1, 5>(); }},
      {"ws32-nolb-nopub-raster", false, [] { run_ws<5, 6, 10, 32, 1, 7>(); }},
      {"ws64r2-nolb-nopub", false, [] { run_ws<4, 4, 6, 64, 2, 5>(); }},
      {"ws32-nolb-ring", false, [] { run_ws<5, 6, 10, 32, 1, 9>(); }},
      {"ws32o16-nolb", true, [] { run_ws<6, 16, 9, 32, 1, 1>(); }},
      {"ws64r2-nolb", true, [] { run_ws<4, 4, 6, 64, 2, 1>(); }},
  };
  const char* program = "canopy-sat-warp-tiles";
  std::vector<std::string> keys = {"all"};
  for (const variant& v : variants) keys.push_back(v.key);
  std::vector<std::string> only;  // --variants k1,k2: run only these
  std::vector<double> paces = {0.0};
  try {
    canopy_bench::command_line cl(argc, argv, program);
    while (cl.next()) {
      if (cl.is("--small")) small_only = true;
      else if (cl.is("--variants")) only = canopy_bench::parse_name_list(cl.value(), program, "--variants", keys);
      else if (cl.is("--width")) only_width = cl.int_value(128);
      else if (cl.is("--desc-hint")) desc_hint = cl.int_value(0, 2);
      else if (cl.is("--lag")) ahead_lag = cl.int_value(1);
      else if (cl.is("--resolvers")) resolver_blocks = cl.int_value(1, 64);
      else if (cl.is("--pace-burst")) pace_burst_rows = cl.int_value(1);
      else if (cl.is("--pace")) {
        paces.clear();
        for (const std::string& item : canopy_bench::split_list(cl.value())) {
          char* end = nullptr;
          const double r = std::strtod(item.c_str(), &end);
          if (*end != '\0' || !(r >= 0))
            throw canopy_bench::bad_flag(std::string(program) + ": argument '--pace': '" + item + "' is not a rate >= 0 (TB/s, 0: unpaced)");
          paces.push_back(r);
        }
        if (paces.empty()) throw canopy_bench::bad_flag(std::string(program) + ": argument '--pace': no rate given");
      } else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: %s [--small] [--width W] [--pace R1,R2,...] [--pace-burst rows] [--desc-hint 0|1|2] [--lag N] [--resolvers N] [--variants k1,k2,...|all]\n"
                "  --pace: TB/s of table stores over the GPU for the warp-specialised kernels' output warps (0: unpaced)\n  keys (* = run by default):",
                e.what(), program);
    for (const variant& v : variants) std::printf(" %s%s", v.key, v.standard ? "*" : "");
    std::printf("\n");
    return canopy_bench::exit_bad_command_line;
  }
  if (!cuda_device_present(program)) return 77;
  for (const variant& v : variants) {
    const bool want = only.empty() ? v.standard : canopy_bench::listed(only, "all") || canopy_bench::listed(only, v.key);
    if (!want) continue;
    for (const double p : paces) {
      pace_tbps = p;
      std::printf("[%s] ", v.key);
      v.run();
    }
  }
  std::printf("canopy-sat-warp-tiles: %s\n", all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
