// canopy/structures/detail/sat_kernels.cuh — CUDA kernels of summed-area tables: the single-pass
// tiled kernel (2D decoupled look-back), the two-pass baseline's row kernel and the offset kernel.
// Compiled only by nvcc with the CUDA backend; included by structures/src/sat.cu.
//
// [SECTION] Tile geometry and descriptors
// [SECTION] Row-segment loads and stores
// [SECTION] Single-pass kernel
// [SECTION] Two-pass row kernel, offset kernel
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/bulk_copy.cuh>
#include <canopy/core/detail/scan_tile_state.cuh>  // load_l2
#include <canopy/structures/detail/sat_functors.cuh>

#include <cstdint>

namespace canopy::detail::sat {

// ---------------------------------------------------------------------------------------------
// [SECTION] Tile geometry and descriptors
//
// A tile is 32 rows x 128 columns; a block of 8 warps takes one. Warp w owns rows 4w..4w+3 and
// lane l owns columns 4l..4l+3 of each, so one thread holds 16 pixels (16 * channels values of the
// table type in registers) and a warp reads one 128-pixel row segment at a time (coalesced).
//
// Descriptors (per tile, in global memory): see the single-pass kernel and look_back_protocol.
// Status values (flags, and the status of tagged words): 0 = nothing yet, 1 = aggregate
// published, 2 = inclusive prefix published.
constexpr int tile_rows = 32;
constexpr int tile_cols = 128;
constexpr int block_threads = 256;
constexpr int rows_per_warp = 4;
constexpr int pixels_per_thread = 4;
constexpr unsigned flag_aggregate = 1;
constexpr unsigned flag_inclusive = 2;
constexpr int col_groups = tile_cols / 32;  // column descriptors: one flag per 32 columns

// ---------------------------------------------------------------------------------------------
// [SECTION] Row-segment loads and stores
//
// A thread's segment is 4 pixels x C channels, contiguous in memory. Whole segments are moved with
// the widest aligned vector (16, 8 or 4 bytes) that divides their size; partial segments at the
// right border and misaligned images fall back to scalar accesses.

template <int Bytes>
struct vector_word;
template <> struct vector_word<16> { using type = uint4; };
template <> struct vector_word<8> { using type = uint2; };
template <> struct vector_word<4> { using type = unsigned; };

template <int Bytes>
constexpr int vector_granule() {
  return Bytes % 16 == 0 ? 16 : Bytes % 8 == 0 ? 8 : Bytes % 4 == 0 ? 4 : 0;
}

template <class T, int N>
__device__ __forceinline__ void load_segment(const T* p, int count, T (&v)[N]) {
  constexpr int bytes = int(sizeof(T)) * N;
  constexpr int g = vector_granule<bytes>();
  if constexpr (g != 0) {
    if (count == N && (reinterpret_cast<std::uintptr_t>(p) % g) == 0) {
      using W = typename vector_word<g>::type;
      union {
        W w[bytes / g];
        T e[N];
      } u;
#pragma unroll
      for (int k = 0; k < bytes / g; ++k) u.w[k] = __ldcs(reinterpret_cast<const W*>(p) + k);
#pragma unroll
      for (int k = 0; k < N; ++k) v[k] = u.e[k];
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = k < count ? p[k] : T(0);
}

template <class T, int N>
__device__ __forceinline__ void store_segment(T* p, int count, const T (&v)[N]) {
  constexpr int bytes = int(sizeof(T)) * N;
  constexpr int g = vector_granule<bytes>();
  if constexpr (g != 0) {
    if (count == N && (reinterpret_cast<std::uintptr_t>(p) % g) == 0) {
      using W = typename vector_word<g>::type;
      union {
        W w[bytes / g];
        T e[N];
      } u;
#pragma unroll
      for (int k = 0; k < N; ++k) u.e[k] = v[k];
#pragma unroll
      for (int k = 0; k < bytes / g; ++k) __stcs(reinterpret_cast<W*>(p) + k, u.w[k]);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (k < count) p[k] = v[k];
}

//! One 16-byte unit of the image for the deferred-store kernel's coalesced loads: read through the
//! non-coherent path without allocating in L1 (`ld.global.nc.L1::no_allocate`). The image is read
//! once and never written during a build (build_sat refuses a table or offsets that overlap it).
//! Measured on the H200 (session 27, calls 5-6, RGBA32F, same runs): 68.6-68.7% of copy at 4K
//! against 66.5-66.6% with `__ldcs`, and the tile kernel at 8K 68.7-69.4% against 66.0-67.3%;
//! `__ldcg` was faster at 8K but slower at 4K (64.4-64.9%), an L2 evict_first hint and other table
//! stores did not beat it.
__device__ __forceinline__ uint4 load_unit_skipping_l1(const uint4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
#else
  return __ldcs(p);
#endif
}

//! Slot of lane l's 16-byte unit k among the 32 * Units units of one warp row segment, XOR-swizzled
//! so that a warp's accesses are free of bank conflicts both when lane l touches units
//! l * Units + k of the segment (its own pixels) and when lane l touches unit i * 32 + l (512
//! contiguous bytes per instruction).
template <int Units>
__device__ __forceinline__ int stage_slot(int l, int k) {
  constexpr int shift = Units == 1 ? 3 : Units == 2 ? 2 : Units == 4 ? 1 : 0;  // 8 units: k ^ (l & 7)
  constexpr bool pow2 = (Units & (Units - 1)) == 0;
  return l * Units + (pow2 ? (k ^ ((l >> shift) & (Units - 1))) : k);
}

//! Lane `lane`'s row segment (N values of T, a whole number of 16-byte units) into a warp row
//! `stage` of 32 x units 16-byte units, in stage_slot order.
template <class T, int N>
__device__ __forceinline__ void stage_segment(uint4* stage, const T (&v)[N], int lane) {
  constexpr int bytes = int(sizeof(T)) * N;
  static_assert(bytes % 16 == 0 && bytes <= 128, "16-byte units, at most 8 per lane");
  constexpr int units = bytes / 16;
  union {
    uint4 w[units];
    T e[N];
  } u;
#pragma unroll
  for (int k = 0; k < N; ++k) u.e[k] = v[k];
#pragma unroll
  for (int k = 0; k < units; ++k) stage[stage_slot<units>(lane, k)] = u.w[k];
}

//! The first `valid` 16-byte units of a staged warp row (32 x Units units, stage_slot order) to
//! `g`: each store instruction of the warp writes 512 contiguous bytes.
template <int Units>
__device__ __forceinline__ void store_staged_row(uint4* g, const uint4* stage, int valid, int lane) {
#pragma unroll
  for (int i = 0; i < Units; ++i) {
    const int unit = i * 32 + lane;
    if (unit < valid) {
      const uint4 w = stage[stage_slot<Units>(unit / Units, unit % Units)];
      __stcs(g + unit, w);
    }
  }
}

//! Stores one row segment of a warp, lane l holding the 4 pixels 4l..4l+3, so that each store
//! instruction of the warp covers 512 contiguous bytes (lane-owned segments of 32 to 128 bytes
//! would put every instruction over up to 16 lines, each written a fraction at a time). The lanes'
//! 16-byte units go through `stage` (32 * N values, 16-byte aligned, this warp's only) with an XOR
//! swizzle that keeps both the writes (stride N * sizeof(T)) and the reads free of bank conflicts.
//! Preconditions (warp-uniform): the whole segment lies in the row, `row` is 16-byte aligned.
template <class T, int N>
__device__ __forceinline__ void store_row_staged(T* row, const T (&v)[N], T* stage, int lane) {
  constexpr int units = int(sizeof(T)) * N / 16;
  uint4* s = reinterpret_cast<uint4*>(stage);
  stage_segment(s, v, lane);
  __syncwarp();
  store_staged_row<units>(reinterpret_cast<uint4*>(row), s, 32 * units, lane);
  __syncwarp();
}

//! Float tables' offsets inside a kernel, from sample_mean's 16 x 16 grid (sat_functors.cuh):
//! thread tid (< 256) reads sample tid, and each warp's sum of channel c goes to sums[warp][c]
//! (lane 0), in double. offset_of_samples adds the 8 warps' sums in one fixed order, so every block
//! that computes them gets the same offsets (the persistent tile kernel and the RGBA32F region
//! kernel; sat_offset_kernel is the one-block form).
template <class In, int C>
__device__ __forceinline__ void warp_sample_sums(const In* image, int width, int height, int tid, double (*sums)[C]) {
  const int sx = int((std::int64_t(2 * (tid % 16) + 1) * width) / 32);
  const int sy = int((std::int64_t(2 * (tid / 16) + 1) * height) / 32);
#pragma unroll
  for (int c = 0; c < C; ++c) {
    double s = double(image[element(sx, sy, c, width, C)]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((tid & 31) == 0) sums[tid >> 5][c] = s;
  }
}
template <class Table, int C>
__device__ __forceinline__ Table offset_of_samples(const double (*sums)[C], int c) {
  double s = 0;
#pragma unroll
  for (int w = 0; w < 8; ++w) s += sums[w][c];
  return Table(s / 256.0);
}

//! Device-scope fence between descriptor values and their flags: values, fence, flag on the writer
//! side; flag, fence, values on the reader side. fence.acq_rel.gpu is all this protocol needs
//! (__threadfence() is the stronger fence.sc.gpu; the two measured the same on an H200).
__device__ __forceinline__ void gpu_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

//! Publishes `value` in `flag` after the calling warp's descriptor stores (every lane of the warp
//! calls it): every lane fences its own stores, then lane 0 stores the flag.
//! (Release / acquire flags instead, st.release.gpu and ld.acquire.gpu polls, measured slower on an
//! H100: st.release.gpu compiles to the same MEMBAR.ALL.GPU as this fence, and every acquire poll
//! adds a CCTL.IVALL; docs/sat.md.)
__device__ __forceinline__ void publish_flag(unsigned* flag, unsigned value, int lane) {
  gpu_fence();
  __syncwarp();
  if (lane == 0) atomicExch(flag, value);
}

//! The same by one thread alone (it did all the stores the flag covers).
__device__ __forceinline__ void publish_flag_single(unsigned* flag, unsigned value) {
  gpu_fence();
  atomicExch(flag, value);
}


//! Which lanes of a look-back re-read their flag while the warp waits (the Poll template parameter).
//! all: every lane of the window, every round (32 flags a round: up to 32 L2 sectors for the column
//!   and corner look-backs, whose predecessors are a tile row apart).
//! lean: only lanes whose flag was still 0 and that lie before the nearest inclusive prefix seen;
//!   a flag once seen as an aggregate is used as such (its value never changes), so a waiting
//!   warp usually re-reads one flag instead of 32.
enum class look_back_poll { all, lean };

//! How descriptor values and their status travel between tiles (the Protocol template parameter).
//! flags: a flag word per descriptor (one per tile row set, per 32 columns, per corner) and separate
//!   aggregate and inclusive value slots; writer: values, fence.acq_rel.gpu, flag; reader: flag,
//!   fence, values (two L2 round trips per look-back step, a fence on either side).
//! tagged: 4-byte tables only. Every descriptor value is one 64-bit word {value bits (low half),
//!   tag (high half)}, written with one st.relaxed.gpu.u64 and read with one ld.relaxed.gpu.u64; no
//!   flags, no fences (see tagged_word below for the argument).
enum class look_back_protocol { flags, tagged };

// Tagged descriptor words. tag = (epoch << 2) | status, status 1 = aggregate, 2 = inclusive; a word
// whose tag carries another epoch, or status 0, is empty. Why a reader that sees a status has the
// value published with it, with no fence on either side:
//  - a word is written by one aligned 64-bit relaxed store and read by one aligned 64-bit relaxed
//    load, both .gpu scope (morally strong with each other): in the PTX memory model such accesses
//    are single-copy atomic, so a load returns the whole of one store (or of the clear), never
//    the tag of one and the value of another. The value is read in the same access as its status;
//    nothing else is read on the strength of it, so no ordering between locations is needed (the
//    reason the flag protocol needs its fences).
//  - each word is its own element of an independent scan (one channel of one row, of one column,
//    or of a tile's corner): a word seen as an aggregate holds that tile's aggregate, one seen as
//    inclusive holds that tile's inclusive prefix, whatever the other channels' or lanes' words
//    show. The writer overwrites a word from aggregate to inclusive in place (same thread, same
//    address, so a reader can see either, both correct), and the look-backs decide per word
//    (per channel), so channels in mixed states are no problem: every channel's carry is the
//    sum of its own aggregates up to its own nearest inclusive prefix.
//  - stale words: the scratch is cleared before a build with epoch 0, or, where one owner keeps
//    the scratch across builds, each build uses a new epoch (the scratch then only holds zeros and
//    words of earlier epochs of the same owner, which read as empty) and the owner clears it on
//    allocation and before the 30-bit epoch wraps.
using tagged_word = unsigned long long;

//! The tagged word {v, epoch x 4 + status}.
template <class Table>
__host__ __device__ __forceinline__ tagged_word make_tagged(unsigned epoch, unsigned status, Table v) {
  static_assert(sizeof(Table) == 4, "tagged descriptors hold 4-byte values");
  return (tagged_word((epoch << 2) | status) << 32) | tagged_word(reinterpret_cast<const unsigned&>(v));
}

template <class Table>
__device__ __forceinline__ void store_tagged(tagged_word* p, unsigned epoch, unsigned status, Table v) {
  const tagged_word w = make_tagged(epoch, status, v);
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(w) : "memory");
}

__device__ __forceinline__ tagged_word load_tagged(const tagged_word* p) {
  tagged_word w;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}

//! Status of a tagged word in this build's epoch: 0 (empty), flag_aggregate or flag_inclusive.
__device__ __forceinline__ unsigned tagged_status(tagged_word w, unsigned epoch) {
  const unsigned tag = unsigned(w >> 32);
  return (tag >> 2) == epoch ? (tag & 3u) : 0u;
}

template <class Table>
__device__ __forceinline__ Table tagged_value(tagged_word w) {
  const unsigned bits = unsigned(w);
  return reinterpret_cast<const Table&>(bits);
}

//! Look-back of one lane over its own C scans (one word per channel per predecessor), tagged
//! words. Predecessor k (k = 0 the nearest, k < count) has channel c's word at word_at(k, c); the
//! farthest one (k = count - 1, the first tile of the row or column) always holds an inclusive
//! prefix. Reads Window predecessors at once (Window * C independent loads), then per channel
//! adds every aggregate up to its nearest inclusive prefix; a channel that met an empty word
//! stops there, and the lane moves on by the smallest such stop over the channels still open
//! (channels already closed read nothing more). Only the words still needed are read again.
template <int Window, int C, class Table, class WordAt>
__device__ __forceinline__ void lane_look_back_tagged(int count, unsigned epoch, WordAt word_at, Table (&carry)[C]) {
  constexpr unsigned all = (1u << C) - 1u;
  unsigned done = count > 0 ? 0u : all;
  int k = 0;
  while (done != all) {
    tagged_word w[Window][C];
#pragma unroll
    for (int j = 0; j < Window; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) w[j][c] = (!((done >> c) & 1u) && k + j < count) ? load_tagged(word_at(k + j, c)) : 0;
    int advance = Window;
    unsigned closed = 0;
    int close_at[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      close_at[c] = -1;
      if ((done >> c) & 1u) continue;
      int stop = Window;  // first empty word of this channel in the window
#pragma unroll
      for (int j = Window - 1; j >= 0; --j) {
        // Past the first tile (cannot happen: it is inclusive) counts as an inclusive prefix of 0.
        const unsigned st = k + j < count ? tagged_status(w[j][c], epoch) : flag_inclusive;
        if (st == 0) {
          stop = j;
          close_at[c] = -1;
        } else if (st == flag_inclusive) {
          close_at[c] = j;
          stop = Window;
        }
      }
      // close_at: the nearest inclusive word before any empty one (-1: none).
      if (close_at[c] >= 0) closed |= 1u << c;
      else advance = stop < advance ? stop : advance;
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if ((done >> c) & 1u) continue;
      const int last = ((closed >> c) & 1u) ? close_at[c] : advance - 1;
#pragma unroll
      for (int j = 0; j < Window; ++j)
        if (j <= last && k + j < count) carry[c] += tagged_value<Table>(w[j][c]);
    }
    done |= closed;
    k += advance;
  }
}

//! Warp-wide look-back over a single C-word descriptor per predecessor (the corner chain), tagged
//! words: lane j reads predecessor base + j's C words (words_of(k) points at channel 0, channels
//! contiguous), 32 predecessors per window. Per channel: the nearest inclusive word of the window
//! and the empty words before it decide whether the window is complete; the channel's carry gets
//! the sum (warp butterfly) of its words up to that inclusive one. Lean polling: only the lanes
//! whose word is still empty and lies before the channel's nearest inclusive one read it again.
//! Probe: the first read takes the nearest predecessor alone (lane 0), the others only once it is
//! not inclusive (persistent blocks: 8K RGBA8 65.0% -> 66.2% of copy; one tile per block lost 1.2
//! points with it, docs/sat.md).
template <bool Probe, int C, class Table, class WordsOf>
__device__ __forceinline__ void warp_look_back_tagged(int count, unsigned epoch, WordsOf words_of, Table (&carry)[C]) {
  const int lane = int(threadIdx.x) & 31;
  constexpr unsigned all = (1u << C) - 1u;
  unsigned done = 0;  // channels closed by an inclusive prefix (warp-uniform)
  for (int base = 0; base < count; base += 32) {
    const int k = base + lane;
    tagged_word w[C];
    unsigned st[C];
    int first[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      w[c] = 0;
      st[c] = k < count ? 0u : flag_inclusive;  // past the first tile: an inclusive prefix of 0
      first[c] = Probe && base == 0 ? 0 : 32;
    }
    for (;;) {
      bool ready = true;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if ((done >> c) & 1u) continue;
        if (st[c] == 0 && lane <= first[c]) {
          w[c] = load_tagged(words_of(k) + c);
          st[c] = tagged_status(w[c], epoch);
        }
      }
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if ((done >> c) & 1u) continue;
        const unsigned inclusive = __ballot_sync(0xffffffffu, st[c] == flag_inclusive);
        const unsigned empty = __ballot_sync(0xffffffffu, st[c] == 0);
        first[c] = inclusive ? __ffs(int(inclusive)) - 1 : 32;
        const unsigned needed = first[c] >= 31 ? 0xffffffffu : ((2u << first[c]) - 1u);
        if (empty & needed) ready = false;
      }
      if (ready) break;
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if ((done >> c) & 1u) continue;
      Table v = lane <= first[c] ? tagged_value<Table>(w[c]) : Table(0);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      carry[c] += v;
      if (first[c] < 32) done |= 1u << c;
    }
    if (done == all) return;
  }
}

//! Decoupled look-back over up to 32 predecessors at a time, by one warp. Predecessor k (k = 0 is
//! the nearest) has flag flags[tile_of(k)]; `count` predecessors exist. Adds, for every predecessor
//! up to and including the nearest one with an inclusive prefix, value(k) (the inclusive prefix for
//! that one, aggregates before it) into `carry` through add(k, flag). The flags of a window are read
//! by all lanes at once and the values of a window are independent loads, so a look-back costs a
//! couple of L2 round trips instead of one per predecessor.
template <look_back_poll Poll = look_back_poll::all, class TileOf, class Add>
__device__ __forceinline__ void look_back(const unsigned* flags, int count, TileOf tile_of, Add add) {
  const int lane = int(threadIdx.x) & 31;
  for (int base = 0; base < count; base += 32) {
    const int k = base + lane;
    unsigned f = flag_inclusive;  // lanes past the first tile act as an inclusive prefix of nothing
    bool poll = k < count;
    int first_inclusive;
    for (;;) {
      if (poll) f = *reinterpret_cast<const volatile unsigned*>(flags + tile_of(k));
      const unsigned inclusive = __ballot_sync(0xffffffffu, f == flag_inclusive);
      const unsigned empty = __ballot_sync(0xffffffffu, f == 0);
      first_inclusive = inclusive ? __ffs(int(inclusive)) - 1 : 32;
      const unsigned needed = first_inclusive >= 31 ? 0xffffffffu : ((2u << first_inclusive) - 1u);
      if ((empty & needed) == 0) break;
      if constexpr (Poll == look_back_poll::lean) poll = f == 0 && lane <= first_inclusive;
    }
    __syncwarp();
    gpu_fence();
    const int last = min(first_inclusive, min(31, count - 1 - base));
#pragma unroll 4
    for (int j = 0; j <= last; ++j) add(base + j, __shfl_sync(0xffffffffu, f, j));
    if (first_inclusive < 32) return;
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] Single-pass kernel
//
// In the tile: row prefixes (in-thread over 4 pixels, then a warp scan), column prefixes (in-thread
// over 4 rows, then across warps through shared memory). The three carries a tile needs come from
// three look-backs that run at once, in different warps, because every aggregate is published as
// soon as the tile's own data gives it (no look-back waits for this tile's other look-backs):
//   S(x, y) = local(x, y)            in-tile 2D prefix
//           + row_carry_prefix(y)    sum over the tile's rows y0..y of the pixels left of x0
//           + col_carry(x)           sum over the rows above y0 of the pixels x0..x
//           + corner                 sum over the rows above y0 of the pixels left of x0
// Row look-back (warp 0, lane = tile row): aggregates = the tile's row sums.
// Column look-back (warps 4..7, one per 32 columns, each with its own flag): aggregates = the
//   tile's bottom row of local(x, y), i.e. column sums of in-tile row prefixes; no row carries.
// Corner look-back (warp 1, up the tile column): aggregate of a tile = the total of its row
//   carries (published by warp 0 right after its row look-back), inclusive = corner + that total.
// The corner chain still waits for row look-backs, but of the tiles above, and it runs beside this
// tile's own row and column look-backs. Tiles are processed in anti-diagonal order (tile_at,
// diagonal_tile): every tile a look-back reads (left, above, above-left) comes earlier in that
// order, so a tile only waits on tiles started before it; block b of G takes tiles b, b + G, ...
// of the order (see sat_single_pass_kernel for why static and what it requires). Shared arrays are indexed [p * C + c][lane] for pixel p of a lane's segment (32
// consecutive words per warp access); column x of the tile is (p, lane) = (x % 4, x / 4).
// Output rows leave through store_row_staged (whole 512-byte runs per store instruction).
template <class Table>
struct tile_descriptors {
  unsigned* counter;          // next tile in processing order, one-tile-per-block mode; 1 word
  unsigned* row_flag;         // [tiles]
  unsigned* col_flag;         // [tiles][4], one per group of 32 columns
  unsigned* corner_flag;      // [tiles]
  Table* row_aggregate;       // [tiles][32][channels]
  Table* row_inclusive;       // [tiles][32][channels]
  Table* col_aggregate;       // [tiles][128][channels]
  Table* col_inclusive;       // [tiles][128][channels]
  Table* corner_aggregate;    // [tiles][channels]
  Table* corner_inclusive;    // [tiles][channels]
  // look_back_protocol::tagged (4-byte tables; the flags and value slots above are then unused):
  // one tagged word per value, channel-major so that the lanes of a warp read contiguous words.
  tagged_word* row_word = nullptr;     // [tiles][channels][32]
  tagged_word* col_word = nullptr;     // [tiles][channels][128]
  tagged_word* corner_word = nullptr;  // [tiles][channels]
  unsigned epoch = 0;                  // tagged: this build's epoch (0 after a clear)
  // Measuring builds only (the Measure template flag; null otherwise): per tile, phase_stamps
  // values, see stamp_* below.
  unsigned long long* stamps = nullptr;
};

//! Phase stamps of a measuring build, per tile: globaltimer (ns) at the tile's start and end, and
//! clock64 at: start, image in registers (after the prefetch wait or the loads), first barrier,
//! row look-back done (warp 0), corner look-back done (warp 1), column look-back done (warp 4),
//! second barrier, stores issued; and when warp 0 / warp 4 have published their aggregates (values,
//! fence, flag: how long a publication waits, e.g. for the warp's earlier table stores).
enum phase_stamp : int {
  stamp_global_start = 0,
  stamp_start,
  stamp_loaded,
  stamp_barrier1,
  stamp_rows_done,
  stamp_corner_done,
  stamp_cols_done,
  stamp_barrier2,
  stamp_stored,
  stamp_rows_published,
  stamp_cols_published,
  stamp_global_end,
  phase_stamps
};

//! Processing order of the tiles (the order of the counter, and of b, b + G, ... in the persistent
//! mode). Diagonal (diagonal_tile): a tile's look-backs wait on tiles a few diagonals back, mostly
//! done or nearly so. Raster (row by row): the row look-back waits on the left neighbour, which runs
//! at the same time on another block, a serial chain along the tile row (kept for comparison in
//! canopy-sat-phases).
enum class tile_order { raster, diagonal };

template <tile_order Order>
__device__ __forceinline__ tile_position tile_at(unsigned order, int tiles_x, int tiles_y) {
  if constexpr (Order == tile_order::diagonal) return diagonal_tile(order, tiles_x, tiles_y);
  else return {int(order / unsigned(tiles_x)), int(order % unsigned(tiles_x))};
}

//! Shared memory of the single-pass kernel besides the prefetched image tile (dynamic).
template <class Table, int C>
struct tile_shared {
  unsigned tile;  // one-tile-per-block mode: the tile (in processing order) claimed from the counter
  // Column sums per warp, then their exclusive prefixes over warps, then each warp's store stage.
  alignas(16) Table warp_col[block_threads / 32][pixels_per_thread * C][32];
  Table row_sum[tile_rows][C];        // row sums of the tile
  Table carry_prefix[tile_rows][C];   // inclusive prefix of the row carries
  Table col_carry[pixels_per_thread * C][32];
  Table corner[C];
  Table carry_total[C];               // total of the row carries (corner aggregate)
  double sample_sum[block_threads / 32][C];  // float tables: per-warp sums of the offset samples
};

//! 16-byte units of one thread's row segment (4 pixels x C values of T); 0 when a segment is not a
//! whole number of units.
template <class T, int C>
constexpr int segment_units() {
  return (int(sizeof(T)) * pixels_per_thread * C) % 16 == 0 ? int(sizeof(T)) * pixels_per_thread * C / 16 : 0;
}

//! Whether rows of `row_bytes` starting at `p` are 16-byte aligned whole 16-byte units: what the
//! prefetch and the coalesced loads need of the image, and the deferred stores of the table.
__host__ __device__ inline bool whole_unit_rows(const void* p, std::size_t row_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && row_bytes % 16 == 0;
}

//! 16-byte units of tile column tj's part of a row of `width` pixels of C values of T (rows of
//! whole units: every unit lies wholly inside or outside the image).
template <class T, int C>
__device__ __forceinline__ int tile_row_units(int width, int tj) {
  const int valid_px = width - tj * tile_cols < tile_cols ? width - tj * tile_cols : tile_cols;
  return valid_px * C * int(sizeof(T)) / 16;
}

//! Units of an image segment; 0: those images are loaded straight from global memory, no prefetch.
template <class In, int C>
constexpr int prefetch_units() {
  return segment_units<In, C>();
}

//! Dynamic shared memory of the prefetching kernel: one tile of the image, rows_per_warp x units
//! 16-byte units per thread (16 KB for RGBA8, 64 KB for RGBA32F).
template <class In, int C>
constexpr int prefetch_bytes() {
  return rows_per_warp * prefetch_units<In, C>() * block_threads * 16;
}

//! Shared memory of the deferred stores (the Deferred kernel flag): one whole tile of table values,
//! 64 KB for a 4-channel 4-byte table.
template <class Table, int C>
constexpr int deferred_stage_bytes() {
  return tile_rows * tile_cols * C * int(sizeof(Table));
}

//! Dynamic shared memory of the persistent kernel: the prefetched image tile (Prefetch), then the
//! stage of the previous tile's table values (Deferred).
template <class In, class Table, int C, bool Prefetch, bool Deferred>
constexpr int persistent_dynamic_bytes() {
  return (Prefetch ? prefetch_bytes<In, C>() : 0) + (Deferred ? deferred_stage_bytes<Table, C>() : 0);
}

//! Index (in 16-byte units) in the prefetch stage of unit k of lane `lane`'s segment in row r of
//! warp `warp`. One unit per lane: [r][thread], a lane's own slot (main's layout since the
//! prefetch round). Several: one region of 32 * Units units per warp row, stage_slot inside.
template <int Units>
__device__ __forceinline__ int prefetch_slot(int warp, int r, int lane, int k) {
  if constexpr (Units == 1) return r * block_threads + warp * 32 + lane;
  else return (warp * rows_per_warp + r) * Units * 32 + stage_slot<Units>(lane, k);
}

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, unsigned src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
#else
  *reinterpret_cast<uint4*>(smem) = src_bytes ? *reinterpret_cast<const uint4*>(gmem) : make_uint4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

//! Starts the copy of this warp's rows of tile `at` of the image into `stage` (prefetch_slot).
//! Each cp.async instruction of a warp reads 512 contiguous bytes: unit i * 32 + lane of the warp's
//! row segment, i < Units (with one unit per lane that is the lane's own). With several units per
//! lane the slots written belong to other lanes: the caller separates these copies from the warp's
//! reads of the stage by __syncwarp on both sides.
//! Needs rows of a whole number of 16-byte units and a 16-byte aligned image: every unit is then
//! wholly inside or wholly outside the image; units outside are zero-filled without a read.
template <class In, int C>
__device__ __forceinline__ void prefetch_tile(const In* image, int width, int height, tile_position at, uint4* stage,
                                              int tid) {
  constexpr int units = prefetch_units<In, C>();
  const int lane = tid & 31, warp = tid >> 5;
  const int ti = at.ti, tj = at.tj;
  const std::size_t row_bytes = std::size_t(width) * C * sizeof(In);
  const std::size_t xb = std::size_t(tj * tile_cols) * C * sizeof(In);  // the tile's first byte in a row
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const int y = ti * tile_rows + warp * rows_per_warp + r;
    const char* row = reinterpret_cast<const char*>(image) + std::size_t(y < height ? y : 0) * row_bytes;
#pragma unroll
    for (int i = 0; i < units; ++i) {
      const int u = i * 32 + lane;
      const std::size_t at_byte = xb + std::size_t(16 * u);
      const bool inside = y < height && at_byte < row_bytes;
      cp_async_16(stage + prefetch_slot<units>(warp, r, u / units, u % units), inside ? row + at_byte : row,
                  inside ? 16u : 0u);
    }
  }
  cp_async_commit();
}

//! Deferred stores: rows [row_begin, row_end) of the staged tile (ti, tj) from `stage` (32 x
//! OutUnits 16-byte units a tile row, stage_slot order) to the table; each warp instruction writes
//! 512 contiguous bytes of a row. The table is 16-byte aligned with rows of whole units.
template <class Table, int C, int OutUnits>
__device__ __forceinline__ void store_staged_rows(Table* table, int width, int height, const uint4* stage, int ti,
                                                  int tj, int row_begin, int row_end) {
  const int lane = int(threadIdx.x) & 31;
  const int valid_units = tile_row_units<Table, C>(width, tj);
  for (int ty = row_begin; ty < row_end; ++ty) {
    const int y = ti * tile_rows + ty;
    if (y >= height) break;
    uint4* g = reinterpret_cast<uint4*>(table + (std::size_t(y) * std::size_t(width) + std::size_t(tj) * tile_cols) * C);
    store_staged_row<OutUnits>(g, stage + ty * 32 * OutUnits, valid_units, lane);
  }
}

//! The rows_per_warp row segments of warp `warp` in tile (ti, tj) of an image whose rows are whole
//! 16-byte units (whole_unit_rows), Units units a lane: each load instruction of the warp reads 512
//! contiguous bytes of a row (lane l: units l, l + 32, ...), and the units reach their owners
//! through `scratch` (this warp's, 32 x Units units; separated from the warp's other uses of it by
//! __syncwarp on both sides). Pixels outside the image read as zeros.
template <class In, int C, int Units, int Segment>
__device__ __forceinline__ void load_rows_coalesced(const In* image, int width, int height, int ti, int tj, int warp,
                                                    int lane, uint4* scratch, In (&raw)[rows_per_warp][Segment]) {
  const int valid_units = tile_row_units<In, C>(width, tj);
  uint4 ld[rows_per_warp][Units];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const int y = ti * tile_rows + warp * rows_per_warp + r;
    const uint4* src = reinterpret_cast<const uint4*>(
        image + (std::size_t(y < height ? y : 0) * std::size_t(width) + std::size_t(tj) * tile_cols) * C);
#pragma unroll
    for (int i = 0; i < Units; ++i) {
      const int u = i * 32 + lane;
      ld[r][i] = (y < height && u < valid_units) ? load_unit_skipping_l1(src + u) : make_uint4(0, 0, 0, 0);
    }
  }
  __syncwarp();  // the warp's earlier reads of scratch, by other lanes
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
#pragma unroll
    for (int i = 0; i < Units; ++i) {
      const int u = i * 32 + lane;
      scratch[stage_slot<Units>(u / Units, u % Units)] = ld[r][i];
    }
    __syncwarp();
    union {
      uint4 w[Units];
      In e[Segment];
    } x;
#pragma unroll
    for (int k = 0; k < Units; ++k) x.w[k] = scratch[stage_slot<Units>(lane, k)];
#pragma unroll
    for (int i = 0; i < Segment; ++i) raw[r][i] = x.e[i];
    __syncwarp();
  }
}

//! The single-pass kernel, in three modes.
//! Prefetch (persistent): G blocks (no more than fit on the device at once, and no more than there
//! are tiles); block b takes tiles b, b + G, b + 2G, ... of the processing order (tile_at). The
//! image segment of the block's next tile (tile_at(order + G)) is copied into shared memory
//! (cp.async) while the current one is scanned, waits on its look-backs and is stored, so loads are
//! in flight through the whole tile. The order is static
//! because a tile claimed ahead of time (to know what to prefetch) but not yet started holds back
//! every later tile that looks back over it: claiming the next tile from the counter at the start
//! of the current one made the kernel 5 to 50 times slower (measured). Progress needs every block
//! to be resident at once (a tile waits on smaller tiles of any block): the library launches this
//! mode cooperatively and falls back to one tile per block when the runtime refuses (sat.cu).
//! Deferred without Prefetch (persistent): the same static order and residency, loads straight from
//! global memory at the start of each tile (512 contiguous bytes per warp instruction where a
//! segment is several 16-byte units), table values through the deferred-store stage (see
//! Deferred below).
//! Otherwise: one block per tile, the tile taken in processing order from the counter, so every tile
//! waited on has started: no deadlock at any occupancy; loads straight from global memory.
//! All modes rely on every tile a look-back reads coming earlier in the processing order, which
//! holds for both orders of tile_at on any grid.
//! Measure: write phase stamps to d.stamps (canopy-sat-phases only; compiled out otherwise).
//! Order: tile_order::diagonal (the library's) or raster (canopy-sat-phases' comparison).
//! Poll: which lanes of a waiting look-back re-read their flags (look_back_poll; flags only).
//! Protocol: flags, or tagged words (4-byte tables; d.row_word etc. and d.epoch).
//! Deferred: a tile's table values are stored during the next tile's look-backs (tagged words).
//! Diag: canopy-sat-phases' diagnostics (wrong tables): 1 no look-backs, 2 no table stores.
//! Quads: the image is an R8 image read as RGBA8 (In u8, C 4, `width` in quads of 4 pixels), and
//! the table written is the R8 image's: each quad's four channel sums S_c(X, y) (c = pixel 4X + c)
//! become T(4X + c, y) = sum over c' <= c of S_c'(X, y) + sum over c' > c of S_c'(X - 1, y) just
//! before the store. The layout is the same: T(x, y) sits where S_(x % 4)(x / 4, y) would.
template <class In, class Table, int C, bool Prefetch, bool Measure = false, tile_order Order = tile_order::diagonal,
          look_back_poll Poll = look_back_poll::all, look_back_protocol Protocol = look_back_protocol::flags,
          bool Deferred = false, int Diag = 0, bool Quads = false>
__global__ void __launch_bounds__(block_threads, sizeof(Table) == 4 ? 2 : 1)
    sat_single_pass_kernel(const In* __restrict__ image, Table* __restrict__ table, int width, int height,
                           Table* __restrict__ offset, int tiles_x, unsigned tiles, tile_descriptors<Table> d) {
  constexpr int segment = pixels_per_thread * C;
  constexpr int Rows = rows_per_warp;
  constexpr int TR = tile_rows;
  constexpr int units = prefetch_units<In, C>();
  static_assert(TR <= 32, "warp 0 holds one tile row per lane");
  static_assert(!Prefetch || units > 0, "prefetch needs whole 16-byte units per segment");
  constexpr bool tagged = Protocol == look_back_protocol::tagged;
  static_assert(!tagged || sizeof(Table) == 4, "tagged descriptors hold 4-byte values");
  // Predecessors a lane reads at once in the tagged row / column look-backs (measured, docs/sat.md,
  // session 7): two in the row look-backs of persistent blocks, which often pass over tiles to the
  // left still in flight; one otherwise, where the nearest predecessor is nearly always done and a
  // second read is wasted L2 traffic (RGBA32F 8K kept 74% -> 78% of copy, RGBA8 8K 65% -> 66%).
  // Persistent blocks (block b of G takes tiles b, b + G, ... of the order): the prefetching mode,
  // and the deferred-store mode with or without the prefetch.
  constexpr bool Persistent = Prefetch || Deferred;
  // Diagnostics of canopy-sat-phases only, WRONG TABLES (tagged words): Diag & 1 skips the
  // look-backs (every carry taken as zero), Diag & 2 skips the table stores.
  constexpr bool no_look_back = (Diag & 1) != 0, no_stores = (Diag & 2) != 0;
  static_assert(Diag == 0 || tagged, "diagnostics with tagged words only");
  constexpr int row_window = Persistent ? 2 : 1, col_window = 1;
  // Deferred stores: a tile's table values go to a shared-memory stage after its look-backs, and
  // warps 2 and 3 (which run no look-back) store them to global memory during the next tile's
  // look-backs, so that the block's stores overlap its waits instead of following them (measured
  // against storing each warp's rows at the next tile, right after its image loads are issued: the
  // same for RGBA32F, 2 points less for RGBA8 at 8K; docs/sat.md). Tagged words only; the table
  // must be 16-byte aligned and its rows whole 16-byte units (width * C * sizeof(Table) % 16 == 0;
  // the dispatch checks both).
  constexpr int out_units = segment_units<Table, C>();
  static_assert(!Deferred || (tagged && out_units > 0 && out_units <= 8),
                "deferred stores: tagged words, whole 16-byte units");
  static_assert(!Quads || (std::is_same_v<In, std::uint8_t> && C == 4 && !std::is_floating_point_v<Table>),
                "quads: an R8 image read as RGBA8, integer tables");
  extern __shared__ uint4 s_prefetch[];
  uint4* const s_out = s_prefetch + (Prefetch ? prefetch_bytes<In, C>() / 16 : 0);  // Deferred only
  int prev_ti = -1, prev_tj = 0;  // Deferred: the tile whose values are in s_out (block-uniform)
  __shared__ tile_shared<Table, C> sh;
  auto& s_warp_col = sh.warp_col;
  auto& s_row_sum = sh.row_sum;
  auto& s_carry_prefix = sh.carry_prefix;
  auto& s_col_carry = sh.col_carry;
  auto& s_corner = sh.corner;
  auto& s_carry_total = sh.carry_total;

  const int tid = int(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  if (!Persistent && tid == 0) sh.tile = atomicAdd(d.counter, 1u);
  // Float tables, persistent blocks: every block computes the offsets itself (the mean of the
  // 16 x 16 sample grid of sample_mean, one sample per thread, summed in double in one fixed order,
  // so every block gets the same values) instead of waiting for a separate one-block kernel; block 0
  // stores them. One tile per block: sat_offset_kernel ran before (256 reads per block would cost
  // about as much as the tile's own image).
  if constexpr (Persistent && sat_has_offset_v<Table>) warp_sample_sums<In, C>(image, width, height, tid, sh.sample_sum);
  __syncthreads();
  // Persistent: block b of G takes tiles b, b + G, ...; otherwise the one tile it claimed.
  // `order` counts tiles in processing order (tile_at); descriptors and stamps are indexed by the
  // tile's raster index ti * tiles_x + tj.
  const int tiles_y = int(tiles / unsigned(tiles_x));
  unsigned order = Persistent ? blockIdx.x : sh.tile;
  if constexpr (Prefetch)
    if (order < tiles) prefetch_tile<In, C>(image, width, height, tile_at<Order>(order, tiles_x, tiles_y), s_prefetch, tid);

  Table off[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if constexpr (Persistent && sat_has_offset_v<Table>) {
      off[c] = offset_of_samples<Table, C>(sh.sample_sum, c);
      if (blockIdx.x == 0 && tid == 0) offset[c] = off[c];
    } else {
      off[c] = sat_has_offset_v<Table> ? offset[c] : Table(0);
    }
  }

  while (order < tiles) {
    const tile_position at = tile_at<Order>(order, tiles_x, tiles_y);
    const int ti = at.ti, tj = at.tj;
    const unsigned tile = unsigned(ti * tiles_x + tj);
    const unsigned next = Persistent ? order + gridDim.x : tiles;
    if constexpr (Measure)
      if (tid == 0) {
        d.stamps[std::size_t(tile) * phase_stamps + stamp_global_start] = global_timer_ns();
        d.stamps[std::size_t(tile) * phase_stamps + stamp_start] = clock64();
      }
    auto stamp = [&](int k) {
      if constexpr (Measure) d.stamps[std::size_t(tile) * phase_stamps + k] = clock64();
    };
    const int x0 = tj * tile_cols + lane * pixels_per_thread;
    const int count = width - x0 >= pixels_per_thread ? pixels_per_thread : (width - x0 > 0 ? width - x0 : 0);
    Table v[Rows][pixels_per_thread][C];
    {
      In raw[Rows][segment];
      if constexpr (Prefetch) {
        cp_async_wait_all();
        if constexpr (units > 1) __syncwarp();  // the other lanes' copies into this lane's slots
#pragma unroll
        for (int r = 0; r < Rows; ++r) {
          union {
            uint4 w[units > 0 ? units : 1];
            In e[segment];
          } u;
#pragma unroll
          for (int k = 0; k < units; ++k) u.w[k] = s_prefetch[prefetch_slot<units>(warp, r, lane, k)];
#pragma unroll
          for (int i = 0; i < segment; ++i) raw[r][i] = u.e[i];
        }
      } else {
        bool loaded = false;
        if constexpr (Deferred && units > 1) {
          // Segments of several 16-byte units (RGBA32F: 4): 512 contiguous bytes per load
          // instruction, the units passed to their owners through this warp's column-sum array,
          // free until the scan below (its previous tile's column_base reads are behind the helper's
          // first __syncwarp). Per-lane segment loads would read every 32-byte sector in two halves
          // from two instructions, half of them again from L2 when L1 (28 KB beside the largest
          // shared-memory carveout) has lost it.
          static_assert(sizeof(sh.warp_col[0]) >= std::size_t(32 * units * 16), "a warp row of units fits");
          if (whole_unit_rows(image, std::size_t(width) * C * sizeof(In))) {
            load_rows_coalesced<In, C, units>(image, width, height, ti, tj, warp, lane,
                                              reinterpret_cast<uint4*>(&s_warp_col[warp][0][0]), raw);
            loaded = true;
          }
        }
        if (!loaded) {
#pragma unroll
          for (int r = 0; r < Rows; ++r) {
            const int y = ti * TR + warp * Rows + r;
            const int n = y < height ? count * C : 0;
            load_segment<In, segment>(image + (std::size_t(y < height ? y : 0) * std::size_t(width) +
                                               std::size_t(x0 < width ? x0 : 0)) * C,
                                      n, raw[r]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        const int y = ti * TR + warp * Rows + r;
#pragma unroll
        for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const bool inside = p < count && y < height;
            const Table t = inside ? Table(raw[r][p * C + c]) - off[c] : Table(0);
            v[r][p][c] = p == 0 ? t : v[r][p - 1][c] + t;
          }
      }
    }
    if (tid == 0) stamp(stamp_loaded);
    // The thread's units have been read (v depends on them): refill them with the next tile.
    if constexpr (Prefetch) {
      if constexpr (units > 1) __syncwarp();  // every lane has read the slots the copies overwrite
      if (next < tiles)
        prefetch_tile<In, C>(image, width, height, tile_at<Order>(next, tiles_x, tiles_y), s_prefetch, tid);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      Table incl[C];
#pragma unroll
      for (int c = 0; c < C; ++c) incl[c] = v[r][pixels_per_thread - 1][c];
#pragma unroll
      for (int dlt = 1; dlt < 32; dlt <<= 1) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const Table t = __shfl_up_sync(0xffffffffu, incl[c], dlt);
          if (lane >= dlt) incl[c] += t;
        }
      }
#pragma unroll
      for (int c = 0; c < C; ++c) {
        Table excl = __shfl_up_sync(0xffffffffu, incl[c], 1);
        if (lane == 0) excl = Table(0);
#pragma unroll
        for (int p = 0; p < pixels_per_thread; ++p) v[r][p][c] += excl;
        const Table total = __shfl_sync(0xffffffffu, incl[c], 31);
        if (lane == 0) s_row_sum[warp * Rows + r][c] = total;
      }
    }
#pragma unroll
    for (int r = 1; r < Rows; ++r)
#pragma unroll
      for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c) v[r][p][c] += v[r - 1][p][c];
#pragma unroll
    for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
      for (int c = 0; c < C; ++c) s_warp_col[warp][p * C + c][lane] = v[Rows - 1][p][c];
    __syncthreads();
    if (tid == 0) stamp(stamp_barrier1);

    if (warp == 0) {
      // Row carries; lane = row of the tile (lanes past the tile's rows carry zeros).
      const bool has_row = lane < TR;
      const int row = has_row ? lane : 0;
      const std::size_t row_base = std::size_t(tile) * TR * C + std::size_t(row) * C;
      Table sum[C], carry[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        sum[c] = has_row ? s_row_sum[row][c] : Table(0);
        carry[c] = Table(0);
      }
      if constexpr (tagged) {
        tagged_word* mine = d.row_word + std::size_t(tile) * C * 32 + row;  // channel c at mine[32 c]
        if (has_row)
#pragma unroll
          for (int c = 0; c < C; ++c) store_tagged(mine + 32 * c, d.epoch, tj == 0 ? flag_inclusive : flag_aggregate, sum[c]);
        if (lane == 0) stamp(stamp_rows_published);
        if (!no_look_back && tj > 0 && has_row) {
          const unsigned row_start = unsigned(ti * tiles_x);
          lane_look_back_tagged<row_window, C>(
              tj, d.epoch,
              [&](int k, int c) {
                return d.row_word + (std::size_t(row_start + unsigned(tj - 1 - k)) * C + std::size_t(c)) * 32 + row;
              },
              carry);
#pragma unroll
          for (int c = 0; c < C; ++c) store_tagged(mine + 32 * c, d.epoch, flag_inclusive, carry[c] + sum[c]);
        }
      } else {
        if (has_row)
#pragma unroll
          for (int c = 0; c < C; ++c) (tj == 0 ? d.row_inclusive : d.row_aggregate)[row_base + c] = sum[c];
        publish_flag(d.row_flag + tile, tj == 0 ? flag_inclusive : flag_aggregate, lane);
        if (lane == 0) stamp(stamp_rows_published);
        if (tj > 0) {
          const unsigned row_start = unsigned(ti * tiles_x);
          look_back<Poll>(
              d.row_flag, tj, [&](int k) { return row_start + unsigned(tj - 1 - k); },
              [&](int k, unsigned f) {
                const Table* src = (f == flag_inclusive ? d.row_inclusive : d.row_aggregate) +
                                   std::size_t(row_start + unsigned(tj - 1 - k)) * TR * C + std::size_t(row) * C;
                if (has_row)
#pragma unroll
                  for (int c = 0; c < C; ++c) carry[c] += load_l2(src + c);
              });
          if (has_row)
#pragma unroll
            for (int c = 0; c < C; ++c) d.row_inclusive[row_base + c] = carry[c] + sum[c];
          publish_flag(d.row_flag + tile, flag_inclusive, lane);
        }
      }
#pragma unroll
      for (int dlt = 1; dlt < 32; dlt <<= 1) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const Table t = __shfl_up_sync(0xffffffffu, carry[c], dlt);
          if (lane >= dlt) carry[c] += t;
        }
      }
      if (has_row)
#pragma unroll
        for (int c = 0; c < C; ++c) s_carry_prefix[row][c] = carry[c];
      // Corner aggregate for the tiles below: the total of this tile's row carries.
      if (lane == TR - 1) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          s_carry_total[c] = carry[c];
          if constexpr (tagged)
            store_tagged(d.corner_word + std::size_t(tile) * C + c, d.epoch, ti == 0 ? flag_inclusive : flag_aggregate,
                         carry[c]);
          else
            (ti == 0 ? d.corner_inclusive : d.corner_aggregate)[std::size_t(tile) * C + c] = carry[c];
        }
        if constexpr (!tagged) publish_flag_single(d.corner_flag + tile, ti == 0 ? flag_inclusive : flag_aggregate);
      }
      if (lane == 0) stamp(stamp_rows_done);
    } else if (warp == 1) {
      // Corner: the row-carry totals of the tiles above in this tile column (zero in tile column 0).
      Table corner[C];
#pragma unroll
      for (int c = 0; c < C; ++c) corner[c] = Table(0);
      if constexpr (tagged) {
        if (!no_look_back && ti > 0 && tj > 0)
          warp_look_back_tagged<Persistent, C>(
              ti, d.epoch, [&](int k) { return d.corner_word + std::size_t(unsigned((ti - 1 - k) * tiles_x + tj)) * C; },
              corner);
      } else if (ti > 0 && tj > 0) {
        look_back<Poll>(
            d.corner_flag, ti, [&](int k) { return unsigned((ti - 1 - k) * tiles_x + tj); },
            [&](int k, unsigned f) {
              const Table* src = (f == flag_inclusive ? d.corner_inclusive : d.corner_aggregate) +
                                 std::size_t(unsigned((ti - 1 - k) * tiles_x + tj)) * C;
#pragma unroll
              for (int c = 0; c < C; ++c) corner[c] += load_l2(src + c);
            });
      }
      if (lane == 0) {
#pragma unroll
        for (int c = 0; c < C; ++c) s_corner[c] = corner[c];
        stamp(stamp_corner_done);
      }
    } else if (warp >= block_threads / 32 - col_groups) {
      // Column carries: warp g owns tile columns 32g..32g+31; lane = column within the group.
      const int g = warp - (block_threads / 32 - col_groups);
      const int x = g * 32 + lane;
      const int xp = x & 3, xl = x >> 2;
      const std::size_t col_base = std::size_t(tile) * tile_cols * C + std::size_t(x) * C;
      Table col_sum[C], carry[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        Table acc = Table(0);
#pragma unroll
        for (int w = 0; w < block_threads / 32; ++w) {
          const Table t = s_warp_col[w][xp * C + c][xl];
          s_warp_col[w][xp * C + c][xl] = acc;
          acc += t;
        }
        col_sum[c] = acc;
        carry[c] = Table(0);
        if constexpr (tagged)
          store_tagged(d.col_word + (std::size_t(tile) * C + c) * tile_cols + x, d.epoch,
                       ti == 0 ? flag_inclusive : flag_aggregate, acc);
        else
          (ti == 0 ? d.col_inclusive : d.col_aggregate)[col_base + c] = acc;
      }
      if constexpr (tagged) {
        if (g == 0 && lane == 0) stamp(stamp_cols_published);
        if (!no_look_back && ti > 0) {
          lane_look_back_tagged<col_window, C>(
              ti, d.epoch,
              [&](int k, int c) {
                return d.col_word + (std::size_t(unsigned((ti - 1 - k) * tiles_x + tj)) * C + std::size_t(c)) * tile_cols + x;
              },
              carry);
#pragma unroll
          for (int c = 0; c < C; ++c)
            store_tagged(d.col_word + (std::size_t(tile) * C + c) * tile_cols + x, d.epoch, flag_inclusive,
                         carry[c] + col_sum[c]);
        }
      } else {
        const unsigned my_flag = tile * col_groups + unsigned(g);
        publish_flag(d.col_flag + my_flag, ti == 0 ? flag_inclusive : flag_aggregate, lane);
        if (g == 0 && lane == 0) stamp(stamp_cols_published);
        if (ti > 0) {
          look_back<Poll>(
              d.col_flag, ti,
              [&](int k) { return unsigned((ti - 1 - k) * tiles_x + tj) * col_groups + unsigned(g); },
              [&](int k, unsigned f) {
                const Table* src = (f == flag_inclusive ? d.col_inclusive : d.col_aggregate) +
                                   std::size_t(unsigned((ti - 1 - k) * tiles_x + tj)) * tile_cols * C +
                                   std::size_t(x) * C;
#pragma unroll
                for (int c = 0; c < C; ++c) carry[c] += load_l2(src + c);
              });
#pragma unroll
          for (int c = 0; c < C; ++c) d.col_inclusive[col_base + c] = carry[c] + col_sum[c];
          publish_flag(d.col_flag + my_flag, flag_inclusive, lane);
        }
      }
#pragma unroll
      for (int c = 0; c < C; ++c) s_col_carry[xp * C + c][xl] = carry[c];
      if (g == 0 && lane == 0) stamp(stamp_cols_done);
    } else if (Deferred) {
      // Warps 2 and 3 (no look-back of their own): the previous tile's staged values, warp 2 + j
      // rows 16j..16j+15, while the other warps run this tile's look-backs.
      if constexpr (Deferred && !no_stores)
        if (prev_ti >= 0)
          store_staged_rows<Table, C, out_units>(table, width, height, s_out, prev_ti, prev_tj,
                                                 (warp - 2) * (tile_rows / 2), (warp - 1) * (tile_rows / 2));
    }
    __syncthreads();
    if (tid == 0) stamp(stamp_barrier2);
    if (warp == 1 && lane == 0 && ti > 0) {
      if constexpr (tagged) {
#pragma unroll
        for (int c = 0; c < C; ++c)
          store_tagged(d.corner_word + std::size_t(tile) * C + c, d.epoch, flag_inclusive, s_corner[c] + s_carry_total[c]);
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) d.corner_inclusive[std::size_t(tile) * C + c] = s_corner[c] + s_carry_total[c];
        publish_flag_single(d.corner_flag + tile, flag_inclusive);
      }
    }

    Table column_base[segment];
#pragma unroll
    for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
      for (int c = 0; c < C; ++c)
        column_base[p * C + c] = s_warp_col[warp][p * C + c][lane] + s_col_carry[p * C + c][lane] + s_corner[c];
    // Deferred: the values go to the stage (its previous contents were stored before the second
    // barrier), and warps 2 and 3 store them during the next tile's look-backs (or every warp
    // after the loop). Otherwise s_warp_col[warp] becomes this warp's store stage.
    if constexpr (!Deferred) __syncwarp();
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int ty = warp * Rows + r;
      const int y = ti * TR + ty;
      Table out[segment];
#pragma unroll
      for (int p = 0; p < pixels_per_thread; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c) out[p * C + c] = v[r][p][c] + column_base[p * C + c] + s_carry_prefix[ty][c];
      if constexpr (Quads) {
        // out holds S_c(X, y) for the lane's quads X. S_c(X - 1, y) of its first quad is the lane
        // before's last; for lane 0 it is the tile's left edge, S_c(x0 - 1, y) = the corner plus
        // the row carries' prefix down to row y (every other term of out is zero left of x0).
        // Wrapping adds: exact modulo 2^bits, as every table entry.
        Table left[C];
#pragma unroll
        for (int c = 0; c < C; ++c) {
          left[c] = shfl_up(out[(pixels_per_thread - 1) * C + c], 1);
          if (lane == 0) left[c] = s_corner[c] + s_carry_prefix[ty][c];
        }
#pragma unroll
        for (int p = 0; p < pixels_per_thread; ++p) {
          Table t = left[0] + left[1] + left[2] + left[3];  // the R8 table at the quad's left: T(4X - 1, y)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const Table cur = out[p * C + c];
            t += cur - left[c];  // + pixel 4X + c's column down to row y
            out[p * C + c] = t;
            left[c] = cur;
          }
        }
      }
      if constexpr (Deferred) {
        stage_segment(s_out + ty * 32 * out_units, out, lane);
      } else {
        Table* row = table + (std::size_t(y) * std::size_t(width) + std::size_t(tj * tile_cols)) * C;
        if constexpr ((sizeof(Table) * segment) % 16 == 0) {
          if (y < height && (tj + 1) * tile_cols <= width && reinterpret_cast<std::uintptr_t>(row) % 16 == 0) {
            if constexpr (!no_stores) store_row_staged<Table, segment>(row, out, &s_warp_col[warp][0][0], lane);
            continue;
          }
        }
        if (!no_stores && y < height && count > 0)
          store_segment<Table, segment>(table + (std::size_t(y) * std::size_t(width) + std::size_t(x0)) * C,
                                        count * C, out);
      }
    }
    if constexpr (Deferred) {
      prev_ti = ti;
      prev_tj = tj;
    }
    if constexpr (Measure)
      if (tid == 0) {
        d.stamps[std::size_t(tile) * phase_stamps + stamp_stored] = clock64();
        d.stamps[std::size_t(tile) * phase_stamps + stamp_global_end] = global_timer_ns();
      }
    // Every shared array written in the next iteration before its first barrier is either this
    // warp's own (stage, column sums, prefetch slots) or read by the others only between the two
    // barriers.
    order = next;
  }
  if constexpr (Deferred) {
    __syncthreads();  // every warp's rows of the last tile are in the stage
    if (!no_stores && prev_ti >= 0)
      store_staged_rows<Table, C, out_units>(table, width, height, s_out, prev_ti, prev_tj, warp * rows_per_warp,
                                             (warp + 1) * rows_per_warp);
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] Two-pass row kernel, offset kernel

//! Baseline row pass: one warp per row, 32 pixels per step, carry kept in registers.
template <class In, class Table, int C>
__global__ void __launch_bounds__(256)
    sat_row_kernel(const In* __restrict__ image, Table* __restrict__ table, int width, int height,
                   const Table* __restrict__ offset) {
  const int lane = int(threadIdx.x) & 31;
  const int y = int(blockIdx.x) * (int(blockDim.x) / 32) + int(threadIdx.x) / 32;
  if (y >= height) return;
  Table off[C], carry[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    off[c] = sat_has_offset_v<Table> ? offset[c] : Table(0);
    carry[c] = Table(0);
  }
  const std::size_t row = std::size_t(y) * std::size_t(width) * C;
  for (int xb = 0; xb < width; xb += 32) {
    const int x = xb + lane;
    Table incl[C];
#pragma unroll
    for (int c = 0; c < C; ++c) incl[c] = x < width ? Table(image[row + std::size_t(x) * C + c]) - off[c] : Table(0);
#pragma unroll
    for (int dlt = 1; dlt < 32; dlt <<= 1)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const Table t = __shfl_up_sync(0xffffffffu, incl[c], dlt);
        if (lane >= dlt) incl[c] += t;
      }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (x < width) table[row + std::size_t(x) * C + c] = carry[c] + incl[c];
      carry[c] += __shfl_sync(0xffffffffu, incl[c], 31);
    }
  }
}

//! Float tables: offsets = means of the 16 x 16 sample grid (see sample_mean), one block of 256.
template <class In, class Table>
__global__ void __launch_bounds__(256)
    sat_offset_kernel(const In* __restrict__ image, Table* __restrict__ offset, int width, int height, int channels) {
  __shared__ double s_sum[256];
  const int i = int(threadIdx.x) % 16, j = int(threadIdx.x) / 16;
  const int x = int((std::int64_t(2 * i + 1) * width) / 32);
  const int y = int((std::int64_t(2 * j + 1) * height) / 32);
  for (int c = 0; c < channels; ++c) {
    s_sum[threadIdx.x] = double(image[element(x, y, c, width, channels)]);
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
      if (int(threadIdx.x) < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) offset[c] = Table(s_sum[0] / 256.0);
    __syncthreads();
  }
}

}  // namespace canopy::detail::sat

#endif  // CANOPY_HAS_CUDA && __CUDACC__
