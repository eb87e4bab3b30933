// Summed-area tables: argument checks, dispatch to the host functors or the CUDA kernels, and the
// explicit instantiations of every supported (image, table) pair.
#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/overlap.hpp>
#include <canopy/core/detail/resident_launch.cuh>
#include <canopy/core/for_each.hpp>
#include <canopy/structures/detail/sat_functors.cuh>
#include <canopy/structures/detail/sat_kernels.cuh>
#include <canopy/structures/detail/sat_region_f32_kernels.cuh>
#include <canopy/structures/detail/sat_region_kernels.cuh>
#include <canopy/structures/detail/sat_scratch.cuh>
#include <canopy/structures/sat.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace canopy {

namespace detail::sat {
testing_hooks& testing() {
  static testing_hooks hooks;
  return hooks;
}
}  // namespace detail::sat

const char* to_string(sat_algorithm a) noexcept {
  switch (a) {
    case sat_algorithm::automatic: return "automatic";
    case sat_algorithm::single_pass: return "single_pass";
    case sat_algorithm::two_pass: return "two_pass";
  }
  return "?";
}

namespace {

constexpr const char* kBuild = "canopy::build_sat";

// Rows, then columns, with for_each; the host backend's algorithm (also correct on CUDA, slow).
template <class In, class Table>
void build_rows_then_columns_for_each(context& ctx, const In* image, Table* table, int width, int height,
                                      int channels, const Table* offset) {
  for_each(ctx, std::size_t(height), detail::sat::row_prefix<In, Table>{image, table, offset, width, channels});
  const std::size_t row_elements = std::size_t(width) * std::size_t(channels);
  const std::size_t group = ctx.is_cuda() ? 1 : 256;
  for_each(ctx, (row_elements + group - 1) / group,
           detail::sat::column_prefix<Table>{table, row_elements, height, group});
}

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
//! The single-pass variant launched per (image, table, channels); the alternatives are measured in
//! canopy-sat-phases (docs/sat.md, "Look-back protocol, polling and occupancy").
//! Persistent prefetching blocks where a lane's row segment is exactly one 16-byte unit (RGBA8,
//! RG16, R32F, R32U: each cp.async of a warp reads 512 contiguous bytes) and rows are whole units.
//! RGBA32F (4 units a lane) ran slower persistent with the prefetch (H100: 64% against 73% one tile
//! per block at 4K), and runs persistent with deferred stores instead (below) where the tagged
//! words apply, as do 2-unit segments (RGBA16, RG32F, RG32U); one tile per block from the counter
//! otherwise (R8, unaligned rows, build_sat()'s temporary scratch). Lean polling in the look-backs
//! (only the lanes still waiting re-read a flag).
//! Look-back protocol: tagged descriptor words (no flags, no fences) for 4-byte tables whose scratch
//! summed_area_table keeps (an epoch per build, so nothing but the counter is cleared); flags
//! otherwise: 8-byte tables, and build_sat()'s temporary scratch, where tagged words would need the
//! whole descriptor region cleared per build (H100, canopy-sat-phases: the clear cost 4% at 8K
//! RGBA8 and took back all of the gain there; docs/sat.md, "Tagged descriptor words").
//! Deferred stores with tagged words (sat_single_pass_kernel's Deferred flag): each tile's table
//! values wait in shared memory and are stored during the next tile's look-backs, which needs
//! persistent blocks. Taken for 16-byte pixels (RGBA32F, RGBA32U): persistent blocks that load
//! their tiles straight from global memory, 73.5% -> 77% of copy at 4K, 78% at 8K as before
//! (H100). Taken for 8-byte pixels of 4-byte channels or 4-channel u16 (RGBA16, RG32F, RG32U, two
//! 16-byte units a lane): depth of field's two RGBA16 -> u32 tables at 4K, 0.192 -> 0.171 ms
//! (H200, session 26). Not taken: R8 the same way (1-1.5 points slower), and the prefetching
//! kernel (RGBA8 in canopy-sat-phases: the same at 4K, about 2 points more at 8K, but its 80 KB of
//! dynamic shared memory beside 19 KB static would not fit sm_86's 99 KB a block). docs/sat.md,
//! "Deferred stores".
//! Needs a 16-byte aligned table with rows of whole 16-byte units, and two blocks per SM
//! (dispatch_single_pass).
template <class In, class Table, int C, detail::sat::look_back_protocol Protocol, bool Quads = false>
struct single_pass_choice {
  static constexpr int units = detail::sat::prefetch_units<In, C>();  //!< 16-byte units in a lane's row segment
  static constexpr bool prefetch = units == 1;
  static constexpr bool deferred =
      Protocol == detail::sat::look_back_protocol::tagged && !prefetch && (units == 4 || units == 2);
  static constexpr bool persistent = prefetch || deferred;
  static_assert(!deferred || sizeof(Table) == 4, "tagged words hold 4-byte values");
  static constexpr auto order = detail::sat::tile_order::diagonal;
  static constexpr auto poll = detail::sat::look_back_poll::lean;
  //! The persistent mode's kernel and its dynamic shared memory.
  static constexpr auto persistent_kernel() {
    return detail::sat::sat_single_pass_kernel<In, Table, C, prefetch, false, order, poll, Protocol, deferred, 0, Quads>;
  }
  static constexpr std::size_t persistent_bytes() {
    return std::size_t(detail::sat::persistent_dynamic_bytes<In, Table, C, prefetch, deferred>());
  }
};

//! Blocks of the persistent kernel that fit on the device at once; 0 where the device
//! cannot launch cooperatively (the one-tile-per-block mode runs instead). The prefetching kernel
//! asks for the largest shared-memory carveout, so that this count is what runs (core's
//! resident_launch.cuh); the deferred-store kernel without the prefetch keeps the default, which
//! leaves L1 60 KB instead of 28 KB beside two blocks: its image loads (64 KB a tile for RGBA32F)
//! are in flight in L1, and with 28 KB it ran at 72-73% of copy instead of 77-78% (H100,
//! canopy-sat-phases, docs/sat.md). A launch that does not fit is refused and falls back.
template <class In, class Table, int C, detail::sat::look_back_protocol Protocol, bool Quads>
std::size_t resident_persistent_blocks(const context& ctx) {
  namespace k = detail::sat;
  using choice = single_pass_choice<In, Table, C, Protocol, Quads>;
  const int per_sm = detail::resident_blocks_per_sm<choice::persistent_kernel()>(
      ctx, k::block_threads, choice::persistent_bytes(), detail::residency_needs{0, true, choice::prefetch});
  return std::size_t(per_sm) * std::size_t(std::max(ctx.device().multiprocessors, 1));
}

//! Launches the persistent mode as a cooperative grid: the runtime either makes all `blocks`
//! resident at once, which the static tile order needs (a tile waits on tiles of every other block),
//! or refuses the launch, e.g. where an MPS SM limit leaves too few SMs. Returns
//! false, having launched nothing, on that refusal (cudaErrorCooperativeLaunchTooLarge, cleared):
//! the caller then runs the one-tile-per-block mode, which cannot deadlock at any occupancy.
template <class In, class Table, int C, detail::sat::look_back_protocol Protocol, bool Quads>
bool launch_persistent(context& ctx, const In* image, Table* table, int width, int height, Table* offset, int tiles_x,
                       unsigned tiles, std::size_t blocks, const detail::sat::tile_descriptors<Table>& d) {
  namespace k = detail::sat;
  using choice = single_pass_choice<In, Table, C, Protocol, Quads>;
  ++k::testing().persistent_attempts;
  if (detail::launch_cooperative(choice::persistent_kernel(), unsigned(blocks), k::block_threads,
                                 choice::persistent_bytes(), ctx.stream(),
                                 "launch of canopy::detail::sat::sat_single_pass_kernel", image, table, width, height,
                                 offset, tiles_x, tiles, d)) {
    if constexpr (choice::deferred) ++k::testing().deferred_launches;
    return true;
  }
  ++k::testing().cooperative_refusals;
  return false;
}

//! Launches the single pass with descriptors `d` (counter and flags, or tagged words, cleared or
//! of an older epoch). Quads: an R8 image as RGBA8 quads (launch_tiles).
template <class In, class Table, int C, detail::sat::look_back_protocol Protocol, bool Quads>
void dispatch_single_pass(context& ctx, const In* image, Table* table, int width, int height, Table* offset,
                          int tiles_x, std::size_t tiles, const detail::sat::tile_descriptors<Table>& d) {
  namespace k = detail::sat;
  using choice = single_pass_choice<In, Table, C, Protocol, Quads>;
  if constexpr (choice::persistent) {
    const std::size_t resident = resident_persistent_blocks<In, Table, C, Protocol, Quads>(ctx);
    const bool prefetch_fits = !choice::prefetch || k::whole_unit_rows(image, std::size_t(width) * C * sizeof(In));
    const bool deferred_fits = !choice::deferred || k::whole_unit_rows(table, std::size_t(width) * C * sizeof(Table));
    // Without the prefetch the persistent mode is worth it only at two blocks per SM (one tile per
    // block runs two).
    const bool enough = choice::prefetch ? resident > 0
                                         : resident >= 2 * std::size_t(std::max(ctx.device().multiprocessors, 1));
    if (enough && prefetch_fits && deferred_fits) {
      const std::size_t surplus = std::size_t(std::max(k::testing().persistent_grid_surplus.load(), 0));
      const std::size_t blocks = std::min(tiles, resident + surplus);
      if (launch_persistent<In, Table, C, Protocol, Quads>(ctx, image, table, width, height, offset, tiles_x,
                                                           unsigned(tiles), blocks, d))
        return;
    }
  }
  // Tagged words: only this mode reads the tile counter, so only it clears it (the persistent
  // blocks take their tiles in a static order; the memset it saves was 0.5-0.9 us a build on the
  // H100, 1-2 points at 1080p, docs/sat.md, session 13). The flag protocol's memset has cleared it
  // with the flags.
  if constexpr (Protocol == detail::sat::look_back_protocol::tagged)
    CANOPY_CUDA_CHECK(cudaMemsetAsync(d.counter, 0, sizeof(unsigned), ctx.stream()));
  if constexpr (sat_has_offset_v<Table>) {
    detail::sat::sat_offset_kernel<In, Table><<<1, 256, 0, ctx.stream()>>>(image, offset, width, height, C);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::sat::sat_offset_kernel");
  }
  k::sat_single_pass_kernel<In, Table, C, false, false, choice::order, choice::poll, Protocol, false, 0, Quads>
      <<<unsigned(tiles), k::block_threads, 0, ctx.stream()>>>(image, table, width, height, offset, tiles_x,
                                                               unsigned(tiles), d);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::sat::sat_single_pass_kernel");
}

//! What both region kernels (RGBA8 -> u32, RGBA32F -> f32) need of a build before their own plan:
//! region columns `region_px` wide, so widths that are a multiple of region_px and at most
//! region_px x the SMs; Gy = min(8, SMs / Gx) region rows a chunk; the kernel's measured size rule,
//! pays(gx, gy, sms) (unless a test forces the kernel); a 16-byte aligned image and table; sm_90
//! code and 227 KB of shared memory a block (resident_blocks_per_sm asks for PTX 9.0 and a
//! cooperative launch). False where any of that fails.
template <auto Kernel, class Pays>
bool region_grid(context& ctx, const void* image, const void* table, int width, int region_px, int threads, Pays pays,
                 int& gx, int& gy, int& resident) {
  namespace r = detail::sat_region;
  auto& hooks = detail::sat::testing();
  const int choice = hooks.region_kernel_choice.load();
  if (choice == detail::sat::testing_hooks::region_never) return false;
  const int sms = ctx.device().multiprocessors;
  if (width % region_px != 0 || width / region_px > sms) return false;
  gx = width / region_px;
  gy = std::max(1, std::min(8, sms / gx));
  if (choice == detail::sat::testing_hooks::region_by_size && !pays(gx, gy, sms)) return false;
  if (reinterpret_cast<std::uintptr_t>(image) % 16 != 0 || reinterpret_cast<std::uintptr_t>(table) % 16 != 0) return false;
  const int per_sm =
      detail::resident_blocks_per_sm<Kernel>(ctx, threads, r::region_smem_limit, detail::residency_needs{90, true, true});
  resident = per_sm * sms;
  return per_sm >= 1;
}

//! The plan's region rows: 56 where they fit in shared memory, fewer for wide images (whose
//! exchange row sums, (Gx - 1) x rows x a sum, need more of it); a test or benchmark hook may ask
//! for other rows, slots and staging rows. Returns the launch's dynamic shared memory, 0 where no
//! plan fits.
template <class Params, class Layout>
std::size_t region_plan(Params& p, std::initializer_list<int> region_rows) {
  namespace r = detail::sat_region;
  auto& hooks = detail::sat::testing();
  if (hooks.region_slots.load() > 0) p.NS = hooks.region_slots.load();
  if (hooks.region_stage_rows.load() > 0) p.D = hooks.region_stage_rows.load();
  const int forced = hooks.region_rows.load();
  for (const int rows : region_rows) {
    if (!r::plan_chunks(p, 16, forced > 0 ? forced : rows)) return 0;
    const std::size_t bytes = Layout(p.RHmax, p.RHs, p.K, p.D, p.Gx, p.Gy, p.NS).launch_bytes();
    if (bytes <= r::region_smem_limit) return bytes;
    if (forced > 0) return 0;
  }
  return 0;
}

//! What both region kernels' parameters start from: the image's size, the region grid, `walkers`
//! walkers, one staging row a walker and three carry slots (region_plan may change the last two).
template <class Params>
void region_params_start(Params& p, int width, int height, int gx, int gy, int walkers) {
  p.W = width;
  p.H = height;
  p.Gx = gx;
  p.Gy = gy;
  p.K = walkers;
  p.D = 1;
  p.NS = 3;
}
//! Points p's exchange at `bytes` (laid out as X) and sets the build's barrier target.
template <class Params>
void region_params_exchange(Params& p, unsigned char* bytes, const detail::sat_region::exchange_layout& X, unsigned target) {
  p.rowsum = reinterpret_cast<decltype(p.rowsum)>(bytes + X.rowsum);
  p.colsum = reinterpret_cast<decltype(p.colsum)>(bytes + X.colsum);
  p.total = reinterpret_cast<decltype(p.total)>(bytes + X.total);
  p.cnt = reinterpret_cast<unsigned*>(bytes + X.cnt);
  p.target = target;
}

//! The region kernels' exchange and counters, then `launch(bytes, layout, target)`, which launches
//! the kernel cooperatively and says whether the runtime took it. The exchange is kept by
//! summed_area_table (counters cleared only when the grid or the chunk count changes, the memory is
//! fresh or the count would wrap), temporary otherwise and under stream capture (a replayed graph
//! would reuse the captured target). The test hook's surplus blocks make the runtime refuse the
//! launch (they would hold regions past the image), so a surplus grid is launched only where it
//! cannot be resident at once. False, with the kept counters as they were, where it was not launched.
template <class Launch>
bool region_launch(context& ctx, detail::sat_kept_scratch* kept, int blocks, int chunks, int resident,
                   const detail::sat_region::exchange_layout& X, Launch launch) {
  auto& hooks = detail::sat::testing();
  const int surplus = std::max(hooks.region_grid_surplus.load(), 0);
  const std::size_t grid = std::size_t(blocks) + std::size_t(surplus);
  if (surplus == 0 ? grid > std::size_t(resident) : grid <= std::size_t(resident)) return false;
  const bool keep = kept != nullptr && !ctx.stream_capturing();
  buffer<unsigned char> temporary(ctx, keep ? 0 : X.bytes);
  unsigned char* bytes = temporary.data();
  unsigned builds = 1;
  if (keep) {
    const bool fresh = X.bytes > kept->region.capacity();
    kept->region.resize_discard(X.bytes);
    bytes = kept->region.data();
    const bool clear = fresh || kept->region_blocks != blocks || kept->region_chunks != chunks ||
                       kept->region_builds >= UINT_MAX / unsigned(blocks) - 1;
    if (clear) {
      CANOPY_CUDA_CHECK(cudaMemsetAsync(bytes + X.cnt, 0, std::size_t(chunks) * 4, ctx.stream()));
      kept->region_builds = 0;
      kept->region_blocks = blocks;
      kept->region_chunks = chunks;
    }
    builds = kept->region_builds + 1;
  } else {
    CANOPY_CUDA_CHECK(cudaMemsetAsync(bytes + X.cnt, 0, std::size_t(chunks) * 4, ctx.stream()));
  }
  if (!launch(unsigned(grid), bytes, builds * unsigned(blocks))) {
    ++hooks.cooperative_refusals;
    return false;
  }
  if (keep) kept->region_builds = builds;
  ++hooks.region_launches;
  return true;
}

//! The region kernel (detail/sat_region_kernels.cuh) for RGBA8 -> u32: 256-px region columns
//! (region_grid), a driver that encodes the table's tensor map and a cooperative launch that the
//! runtime accepts. Returns false, having launched nothing, where any of that fails: the tile kernel
//! then builds the table. H100 (docs/sat.md): 80-82% of copy at 4K and 89% at 8K, against 60% and
//! 66% for the tile kernel.
//! Plan, as measured in canopy-sat-lookahead: K = 7 walkers (8-row bands of 56-row regions), 16-row
//! regions in chunk 0 (a short fill), three carry slots, one staging row a walker; Gy = 8 region
//! rows a chunk where the SMs allow (4K: 15 x 8 = 120 blocks), fewer for wider images (8K: 30 x 4).
bool launch_region(context& ctx, const std::uint8_t* image, std::uint32_t* table, int width, int height,
                   detail::sat_kept_scratch* kept) {
  namespace r = detail::sat_region;
  constexpr int walkers = 7;  // K: walkers, and as many summers; two carriers
  constexpr int threads = (2 * walkers + 2) * 32;
  int gx = 0, gy = 0, resident = 0;
  // Where it pays (H100, sat-bench --size, docs/sat.md): with fewer blocks than 2/3 of the SMs
  // (1536 px and narrower; 2560 px was level) or regions shorter than 40 rows (3840 x 256, 7680 x
  // 128) the tile kernel was as fast or faster.
  const auto pays = [&](int gx, int gy, int sms) { return 3 * gx * gy >= 2 * sms && height >= 40 * gy; };
  if (!region_grid<r::sat_region_kernel<false>>(ctx, image, table, width, r::RW, threads, pays, gx, gy, resident))
    return false;
  r::lookahead_params p{};
  p.img = reinterpret_cast<const std::uint32_t*>(image);
  p.tab = reinterpret_cast<uint4*>(table);
  region_params_start(p, width, height, gx, gy, walkers);
  const std::size_t smem = region_plan<r::lookahead_params, r::lookahead_layout>(p, {56, 48, 40, 32});
  CUtensorMap map;
  if (smem == 0 || !r::encode_table_map(p.tab, p.W, p.H, map)) return false;
  const int blocks = p.Gx * p.Gy;
  const r::exchange_layout X(blocks, p.NC, p.RHs);
  return region_launch(ctx, kept, blocks, p.NC, resident, X, [&](unsigned grid, unsigned char* bytes, unsigned target) {
    region_params_exchange(p, bytes, X, target);  // p.mode and p.stamps stay 0: the library's form ignores them
    return detail::launch_cooperative(r::sat_region_kernel<false>, grid, threads, smem, ctx.stream(),
                                      "launch of canopy::detail::sat_region::sat_region_kernel", map, p);
  });
}

//! The region kernel for RGBA32F -> f32 (detail/sat_region_f32_kernels.cuh): 128-px region columns,
//! otherwise as launch_region, with 28-row regions after chunk 0 (16 in it; fewer where 28 do not
//! fit: both image buffers hold 2 KB rows), 7 walkers, three carry slots, one staging row: the best
//! of the plans measured (16 to 56 rows, 2 to 4 slots, 1 or 2 staging rows). The kernel computes
//! the offsets itself and block 0 stores them.
bool launch_region_f32(context& ctx, const float* image, float* table, int width, int height, float* offset,
                       detail::sat_kept_scratch* kept) {
  namespace r = detail::sat_region;
  constexpr int walkers = 7;
  constexpr int threads = (2 * walkers + 2) * 32;
  int gx = 0, gy = 0, resident = 0;
  // Where it pays (H100, sat-bench --size, docs/sat.md): faster than the tile kernel at 7680 x 4320
  // (60 x 2 blocks: 80.6% of copy against 78.4%) and 4096 x 4096 (32 x 4: 81.2% against 78.2%);
  // slower at 3840 x 2160 (30 x 4, 8.3 Mpx), 1920 x 1080, 6144 x 3456 (48 x 2 = 96 blocks) and
  // 15360 x 2160 (120 region columns). So: 2^24 pixels and more, at least 90% of the SMs' worth of
  // blocks, at most 64 region columns.
  const auto pays = [&](int gx, int gy, int sms) {
    return std::size_t(width) * std::size_t(height) >= (std::size_t(1) << 24) && 10 * gx * gy >= 9 * sms && gx <= 64;
  };
  if (!region_grid<r::sat_region_f32_kernel>(ctx, image, table, width, r::RWF, threads, pays, gx, gy, resident))
    return false;
  r::f32_params p{};
  p.img = reinterpret_cast<const float4*>(image);
  p.offset = offset;
  region_params_start(p, width, height, gx, gy, walkers);
  const std::size_t smem = region_plan<r::f32_params, r::f32_layout>(p, {28, 24, 16});
  CUtensorMap map, image_map;  // the image's 16-byte pixels have the table's geometry
  if (smem == 0 || !r::encode_table_map(table, p.W, p.H, map, r::RWF) ||
      !r::encode_table_map(const_cast<float*>(image), p.W, p.H, image_map, r::RWF))
    return false;
  const int blocks = p.Gx * p.Gy;
  const r::exchange_layout X(blocks, p.NC, p.RHs, 16, r::RWF);
  return region_launch(ctx, kept, blocks, p.NC, resident, X, [&](unsigned grid, unsigned char* bytes, unsigned target) {
    region_params_exchange(p, bytes, X, target);
    return detail::launch_cooperative(r::sat_region_f32_kernel, grid, threads, smem, ctx.stream(),
                                      "launch of canopy::detail::sat_region::sat_region_f32_kernel", map, image_map, p);
  });
}

//! The tile kernel's single pass (everything but the region kernels). Quads: `image` is an R8
//! image read as RGBA8 quads, `width` counted in quads, and the table written is the R8 image's
//! (sat_single_pass_kernel's Quads).
template <class In, class Table, int C, bool Quads = false>
void launch_tiles(context& ctx, const In* image, Table* table, int width, int height, Table* offset,
                  detail::sat_kept_scratch* kept) {
  namespace k = detail::sat;
  const int tiles_x = (width + k::tile_cols - 1) / k::tile_cols;
  const int tiles_y = (height + k::tile_rows - 1) / k::tile_rows;
  const std::size_t tiles = std::size_t(tiles_x) * std::size_t(tiles_y);
  if constexpr (sizeof(Table) == 4) {
    // Under stream capture a replayed graph would reuse the captured epoch: the flag protocol's
    // temporary scratch (cleared by a captured memset) replays correctly.
    if (kept != nullptr && !ctx.stream_capturing()) {
      // Tagged words in the kept buffer. It only ever holds zeros and words of this owner's earlier
      // epochs (which read as empty): it is cleared whole when it is (re)allocated, since memory
      // from the pool may hold anything, and before the epoch wraps.
      const auto layout = k::scratch_layout::of<Table, C, true>(tiles);
      const bool grow = layout.total_bytes > kept->bytes.capacity();
      kept->bytes.resize_discard(layout.total_bytes);
      if (detail::advance_epoch(kept->epoch, grow))  // core/detail/kept_epoch.hpp
        CANOPY_CUDA_CHECK(cudaMemsetAsync(kept->bytes.data(), 0, kept->bytes.capacity(), ctx.stream()));
      // The tile counter is cleared by dispatch_single_pass, and only where a mode reads it.
      k::tile_descriptors<Table> d = k::carve_descriptors<Table, C>(kept->bytes.data(), layout);
      d.epoch = kept->epoch;
      dispatch_single_pass<In, Table, C, k::look_back_protocol::tagged, Quads>(ctx, image, table, width, height,
                                                                                offset, tiles_x, tiles, d);
      return;
    }
  }
  // Counter, flags and descriptor values in one temporary buffer (detail/sat_scratch.cuh); one
  // memset resets the counter and flags.
  const auto layout = k::scratch_layout::of<Table, C>(tiles);
  buffer<unsigned char> scratch(ctx, layout.total_bytes);
  CANOPY_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, layout.zeroed_bytes, ctx.stream()));
  const k::tile_descriptors<Table> d = k::carve_descriptors<Table, C>(scratch.data(), layout);
  dispatch_single_pass<In, Table, C, k::look_back_protocol::flags, Quads>(ctx, image, table, width, height, offset,
                                                                          tiles_x, tiles, d);
}

//! Whether an R8 -> u32 build runs as RGBA8 quads (launch_single_pass). It needs rows of whole
//! 16-byte units (width a multiple of 16) and a 16-byte aligned image and table, so that the
//! quads take the prefetching persistent tile kernel. The size rule is measured (H200, session
//! 25, docs/sat.md "R8 tables as RGBA8 quads"): quads built the kept table 7% slower at 1920 x
//! 1080 (2.1 M pixels) and 5-35% faster at 2560 x 1440 (3.7 M) and every larger size measured;
//! build_sat()'s temporary-scratch builds were faster as quads everywhere. So: at least 3 M pixels.
bool quads_pay(const void* image, const void* table, int width, int height) {
  const int choice = detail::sat::testing().quad_choice.load();
  if (choice == detail::sat::testing_hooks::region_never) return false;
  // The quads' rows (width bytes) and the table's (4 width bytes) as whole aligned 16-byte units.
  if (!detail::sat::whole_unit_rows(image, std::size_t(width)) ||
      !detail::sat::whole_unit_rows(table, 4 * std::size_t(width)))
    return false;
  return choice == detail::sat::testing_hooks::region_always || std::size_t(width) * std::size_t(height) >= 3000000;
}

template <class In, class Table, int C>
void launch_single_pass(context& ctx, const In* image, Table* table, int width, int height, Table* offset,
                        detail::sat_kept_scratch* kept) {
  if constexpr (std::is_same_v<In, std::uint8_t> && std::is_same_v<Table, std::uint32_t> && C == 4)
    if (launch_region(ctx, image, table, width, height, kept)) return;
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Table, float> && C == 4)
    if (launch_region_f32(ctx, image, table, width, height, offset, kept)) return;
  if constexpr (std::is_same_v<In, std::uint8_t> && std::is_same_v<Table, std::uint32_t> && C == 1) {
    if (quads_pay(image, table, width, height)) {
      ++detail::sat::testing().quad_launches;
      launch_tiles<In, Table, 4, true>(ctx, image, table, width / 4, height, offset, kept);
      return;
    }
  }
  launch_tiles<In, Table, C>(ctx, image, table, width, height, offset, kept);
}

template <class In, class Table, int C>
void launch_two_pass(context& ctx, const In* image, Table* table, int width, int height, Table* offset) {
  if constexpr (sat_has_offset_v<Table>) {
    detail::sat::sat_offset_kernel<In, Table><<<1, 256, 0, ctx.stream()>>>(image, offset, width, height, C);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::sat::sat_offset_kernel");
  }
  constexpr int rows_per_block = 8;
  detail::sat::sat_row_kernel<In, Table, C>
      <<<unsigned((height + rows_per_block - 1) / rows_per_block), 32 * rows_per_block, 0, ctx.stream()>>>(
          image, table, width, height, offset);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::sat::sat_row_kernel");
  const std::size_t row_elements = std::size_t(width) * C;
  for_each(ctx, row_elements, detail::sat::column_prefix<Table>{table, row_elements, height, 1});
}

template <class In, class Table, int C>
void build_cuda(context& ctx, const In* image, Table* table, int width, int height, Table* offset,
                sat_algorithm algorithm, detail::sat_kept_scratch* kept) {
  if (algorithm == sat_algorithm::two_pass) launch_two_pass<In, Table, C>(ctx, image, table, width, height, offset);
  else launch_single_pass<In, Table, C>(ctx, image, table, width, height, offset, kept);
}
#endif

}  // namespace

namespace detail {
template <class In, class Table>
void build_sat_kept(context& ctx, span<const In> image, int width, int height, int channels, span<Table> table,
                    span<Table> offset, const sat_options& options, sat_kept_scratch* kept) {
  static_assert(sat_supported_v<In, Table>, "canopy::build_sat: unsupported image/table type pair");
  require(width >= 0, kBuild, "width", "must be >= 0, got " + std::to_string(width));
  require(height >= 0, kBuild, "height", "must be >= 0, got " + std::to_string(height));
  require(channels >= 1 && channels <= 4, kBuild, "channels", "must be 1..4, got " + std::to_string(channels));
  const std::size_t n = checked_mul(checked_mul(std::size_t(width), std::size_t(height), kBuild, "width"),
                                    std::size_t(channels), kBuild, "channels");
  require(n < (std::size_t(1) << 31), kBuild, "width", "width * height * channels must be below 2^31");
  require(image.size() == n, kBuild, "image",
          "has " + std::to_string(image.size()) + " elements, width * height * channels = " + std::to_string(n));
  require(table.size() == n, kBuild, "table",
          "has " + std::to_string(table.size()) + " elements, width * height * channels = " + std::to_string(n));
  const std::size_t offsets = sat_has_offset_v<Table> ? std::size_t(channels) : 0;
  require(offset.size() == offsets, kBuild, "offset",
          "has " + std::to_string(offset.size()) + " elements, expected " + std::to_string(offsets) +
              (offsets ? " (one per channel)" : " (integer tables have no offsets)"));
  check_span(image, ctx.space(), kBuild, "image");
  check_span(table, ctx.space(), kBuild, "table");
  check_span(offset, ctx.space(), kBuild, "offset");
  // The GPU kernels write table rows while other blocks still read the image (and read the image
  // through the non-coherent path), so no build works in place.
  require(!detail::overlaps(image, table), kBuild, "table", "overlaps image: the table needs memory of its own");
  require(!detail::overlaps(image, offset), kBuild, "offset", "overlaps image: the offsets need memory of their own");
  require(!detail::overlaps(table, offset), kBuild, "offset", "overlaps table: the offsets need memory of their own");
  if (n == 0) return;

  const Table* off = sat_has_offset_v<Table> ? offset.data() : nullptr;
  if (!ctx.is_cuda()) {
    if constexpr (sat_has_offset_v<Table>)
      for_each(ctx, std::size_t(channels),
               detail::sat::sample_mean<In, Table>{image.data(), offset.data(), width, height, channels});
    build_rows_then_columns_for_each(ctx, image.data(), table.data(), width, height, channels, off);
    return;
  }
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
  // Float tables: the persistent single-pass mode computes the offsets inside its kernel; the
  // one-tile-per-block mode and the two-pass baseline launch sat_offset_kernel first. off_out is
  // null for integer tables.
  Table* const off_out = sat_has_offset_v<Table> ? offset.data() : nullptr;
  switch (channels) {
    case 1: build_cuda<In, Table, 1>(ctx, image.data(), table.data(), width, height, off_out, options.algorithm, kept); break;
    case 2: build_cuda<In, Table, 2>(ctx, image.data(), table.data(), width, height, off_out, options.algorithm, kept); break;
    case 3: build_cuda<In, Table, 3>(ctx, image.data(), table.data(), width, height, off_out, options.algorithm, kept); break;
    default: build_cuda<In, Table, 4>(ctx, image.data(), table.data(), width, height, off_out, options.algorithm, kept); break;
  }
#else
  (void)kept;
  detail::throw_cuda_from_host_compiler(kBuild);
#endif
}
}  // namespace detail

template <class In, class Table>
void build_sat(context& ctx, span<const In> image, int width, int height, int channels, span<Table> table,
               span<Table> offset, const sat_options& options) {
  detail::build_sat_kept<In, Table>(ctx, image, width, height, channels, table, offset, options, nullptr);
}

template <class Table>
void box_filter(context& ctx, const sat_view<Table>& sat, span<const std::int32_t> radius, span<float> out) {
  constexpr const char* fn = "canopy::box_filter";
  require(sat.width >= 0 && sat.height >= 0, fn, "sat", "negative size");
  const std::size_t pixels = std::size_t(sat.width) * std::size_t(sat.height);
  require(pixels == 0 || (sat.channels >= 1 && sat.channels <= 4), fn, "sat", "channels must be 1..4");
  require(pixels == 0 || sat.table != nullptr, fn, "sat", "null table");
  require(!sat_has_offset_v<Table> || pixels == 0 || sat.offset != nullptr, fn, "sat", "float table without offsets");
  require(radius.size() == pixels, fn, "radius",
          "has " + std::to_string(radius.size()) + " entries, width * height = " + std::to_string(pixels));
  require(out.size() == pixels * std::size_t(sat.channels > 0 ? sat.channels : 0), fn, "out",
          "has " + std::to_string(out.size()) + " entries, width * height * channels = " +
              std::to_string(pixels * std::size_t(sat.channels > 0 ? sat.channels : 0)));
  check_span(radius, ctx.space(), fn, "radius");
  check_span(out, ctx.space(), fn, "out");
  for_each(ctx, pixels, detail::sat::box_filter_pixel<Table>{sat, radius.data(), out.data()});
}

#define CANOPY_SAT_INSTANTIATE(In, Table)                                                                    \
  template void build_sat<In, Table>(context&, span<const In>, int, int, int, span<Table>, span<Table>, \
                                     const sat_options&);                                                   \
  template void detail::build_sat_kept<In, Table>(context&, span<const In>, int, int, int, span<Table>, span<Table>, \
                                                  const sat_options&, detail::sat_kept_scratch*);
CANOPY_SAT_INSTANTIATE(std::uint8_t, std::uint32_t)
CANOPY_SAT_INSTANTIATE(std::uint8_t, std::uint64_t)
CANOPY_SAT_INSTANTIATE(std::uint16_t, std::uint32_t)
CANOPY_SAT_INSTANTIATE(std::uint16_t, std::uint64_t)
CANOPY_SAT_INSTANTIATE(std::uint32_t, std::uint32_t)
CANOPY_SAT_INSTANTIATE(std::uint32_t, std::uint64_t)
CANOPY_SAT_INSTANTIATE(float, float)
CANOPY_SAT_INSTANTIATE(float, double)
#undef CANOPY_SAT_INSTANTIATE

template void box_filter<std::uint32_t>(context&, const sat_view<std::uint32_t>&, span<const std::int32_t>, span<float>);
template void box_filter<std::uint64_t>(context&, const sat_view<std::uint64_t>&, span<const std::int32_t>, span<float>);
template void box_filter<float>(context&, const sat_view<float>&, span<const std::int32_t>, span<float>);
template void box_filter<double>(context&, const sat_view<double>&, span<const std::int32_t>, span<float>);

}  // namespace canopy
