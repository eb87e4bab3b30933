// canopy/structures/detail/dof_functors.cuh — the per-pixel and per-tile functors of SAT depth of
// field, written once for canopy::for_each on both backends. Used by dof.cu.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/structures/dof.hpp>
#include <canopy/structures/sat.hpp>

#include <cstddef>
#include <cstdint>

namespace canopy::detail::dof {

constexpr int tile = 16;

CANOPY_HD inline float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }

//! Gather radius (pixels) from a signed CoC diameter.
CANOPY_HD inline float radius_of(float coc, int max_radius) {
  const float r = 0.5f * (coc < 0.f ? -coc : coc);
  return r < float(max_radius) ? r : float(max_radius);
}

//! Stage 1 + 2: CoC and the two premultiplied u16 RGBW layers, two pixels a call.
struct coc_and_layers {
  const std::uint32_t* colour;
  const float* depth;
  float* coc;
  std::uint16_t* far_layer;
  std::uint16_t* near_layer;
  thin_lens lens;
  int width, max_radius;
  bool near_field, far_weighting;
  std::size_t n;        // pixels
  bool pairs_aligned;   // colour and depth 8-byte aligned
  //! Pixels 2k and 2k + 1 (the last pair may be one pixel). On the GPU, with aligned inputs, one
  //! 8-byte load of each input, one 8-byte store of the CoC and one 16-byte store a layer. (The
  //! layers are 256-byte aligned buffers, so 16 bytes at pixel 2k are aligned.)
  CANOPY_HD void operator()(std::size_t k) const {
    const std::size_t i = 2 * k;
#if defined(__CUDA_ARCH__)
    if (pairs_aligned && i + 1 < n) {
      const uint2 p = *reinterpret_cast<const uint2*>(colour + i);
      const float2 d = *reinterpret_cast<const float2*>(depth + i);
      const float c0 = coc_diameter_px(lens, d.x, width), c1 = coc_diameter_px(lens, d.y, width);
      *reinterpret_cast<float2*>(coc + i) = make_float2(c0, c1);
      const layer_weights w0 = weights(c0), w1 = weights(c1);
      layer_pixel a = pixel(p.x, w0.far), b = pixel(p.y, w1.far);
      *reinterpret_cast<uint4*>(far_layer + 4 * i) = make_uint4(a.lo, a.hi, b.lo, b.hi);
      if (!near_field) return;  // no near table is built from it: leave the layer alone
      a = pixel(p.x, w0.near);
      b = pixel(p.y, w1.near);
      *reinterpret_cast<uint4*>(near_layer + 4 * i) = make_uint4(a.lo, a.hi, b.lo, b.hi);
      return;
    }
#endif
    one(i);
    if (i + 1 < n) one(i + 1);
  }

  struct layer_weights {
    unsigned far, near;
  };
  //! A pixel goes to the near layer only when near pixels are separated (near_field); otherwise
  //! every pixel, in front of the focus plane or behind it, goes to the one (far) table. Its
  //! weight is its blur weight with far_weighting (in-focus pixels weigh 0), else 255:
  //!   near_field  far_weighting  far table                  near table
  //!   on          on             behind: blur_w, front: 0   front: blur_w
  //!   on          off            behind: 255, front: 0      front: 255
  //!   off         on             blur_w                     (not built)
  //!   off         off            255 (the classic table)    (not built)
  CANOPY_HD layer_weights weights(float c) const {
    const float r = radius_of(c, max_radius);
    const unsigned blur_w = unsigned(255.f * clamp01(r - 0.5f) + 0.5f);
    const bool is_near = c < 0.f && near_field;
    const unsigned w = far_weighting ? blur_w : 255u;
    return {is_near ? 0u : w, is_near ? w : 0u};
  }

  //! A layer pixel as two words: R, G, B of `p` times `w`, then `w` (each at most 255 x 255, so
  //! u16 holds it), R in the low half of `lo`.
  struct layer_pixel {
    std::uint32_t lo, hi;
  };
  CANOPY_HD static layer_pixel pixel(std::uint32_t p, unsigned w) {
    return {(p & 0xffu) * w | (((p >> 8) & 0xffu) * w) << 16, ((p >> 16) & 0xffu) * w | w << 16};
  }
  CANOPY_HD static void store(std::uint16_t* dst, layer_pixel v) {
    const std::uint16_t h[4] = {std::uint16_t(v.lo), std::uint16_t(v.lo >> 16), std::uint16_t(v.hi),
                                std::uint16_t(v.hi >> 16)};
    for (int k = 0; k < 4; ++k) dst[k] = h[k];
  }

  //! One pixel, element by element (the host backend, unaligned inputs, an odd last pixel).
  CANOPY_HD void one(std::size_t i) const {
    const float c = coc_diameter_px(lens, depth[i], width);
    coc[i] = c;
    const layer_weights w = weights(c);
    const std::uint32_t p = colour[i];
    store(far_layer + 4 * i, pixel(p, w.far));
    if (near_field) store(near_layer + 4 * i, pixel(p, w.near));
  }
};

//! Stage 3a, in two steps. First, for each row of tiles ty and pixel column x, the largest
//! near-field radius over the tile row's 16 pixels of that column (0 where none): one call per
//! (ty, x), so a warp reads 32 neighbouring pixels of a row at a time. (One call per tile that read
//! all 256 of its pixels left too few threads to hide the loads: 32,400 at 4K.)
struct near_column_max {
  const float* coc;
  float* columns;  // tiles_y rows of width
  int width, height, max_radius;
  CANOPY_HD void operator()(std::size_t i) const {
    const int x = int(i % std::size_t(width)), ty = int(i / std::size_t(width));
    float m = 0.f;
    for (int y = ty * tile; y < ty * tile + tile && y < height; ++y) {
      const float c = coc[std::size_t(y) * std::size_t(width) + std::size_t(x)];
      if (c < 0.f) {
        const float r = radius_of(c, max_radius);
        m = r > m ? r : m;
      }
    }
    columns[i] = m;
  }
};

//! Stage 3a, second step: a tile's largest near-field radius from its 16 columns (0 when none
//! reaches 0.5).
struct near_tile_max {
  const float* columns;
  float* tiles;
  int width, tiles_x;
  CANOPY_HD void operator()(std::size_t t) const {
    const int tx = int(t % std::size_t(tiles_x)), ty = int(t / std::size_t(tiles_x));
    const float* row = columns + std::size_t(ty) * std::size_t(width);
    float m = 0.f;
    for (int x = tx * tile; x < tx * tile + tile && x < width; ++x) m = row[x] > m ? row[x] : m;
    tiles[t] = m >= 0.5f ? m : 0.f;
  }
};

//! Stage 3b: a tile's near reach = the largest radius of any tile whose blur can reach it
//! (Chebyshev pixel distance between the tiles' closest pixels <= that radius).
struct near_tile_dilate {
  const float* tiles;
  float* dilated;
  int tiles_x, tiles_y, reach;  // reach = ceil(max_radius / tile) tiles
  CANOPY_HD void operator()(std::size_t t) const {
    const int tx = int(t % std::size_t(tiles_x)), ty = int(t / std::size_t(tiles_x));
    float m = 0.f;
    for (int dy = -reach; dy <= reach; ++dy)
      for (int dx = -reach; dx <= reach; ++dx) {
        const int x = tx + dx, y = ty + dy;
        if (x < 0 || y < 0 || x >= tiles_x || y >= tiles_y) continue;
        const int ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
        const int cheb = ax > ay ? ax : ay;
        const float gap = cheb == 0 ? 0.f : float((cheb - 1) * tile + 1);
        const float r = tiles[std::size_t(y) * std::size_t(tiles_x) + std::size_t(x)];
        if (r >= gap && r > m) m = r;
      }
    dilated[t] = m;
  }
};

//! Weighted sums of the four channels over the kernel of radius r around (x, y), and its area.
//! Exact in u32 wrap-around arithmetic: every true sum is below 129^2 * 65025 < 2^32.
struct kernel_sum {
  std::uint32_t s[4];
  std::uint32_t area;
};

CANOPY_HD inline void add_box(const sat_view<std::uint32_t>& v, int x0, int y0, int x1, int y1, int sign,
                              kernel_sum& k) {
  std::uint32_t b[4];
  v.box_sums(x0, y0, x1, y1, b);
  for (int c = 0; c < 4; ++c) k.s[c] = sign > 0 ? k.s[c] + b[c] : k.s[c] - b[c];
  const std::uint32_t a = std::uint32_t(v.box_area(x0, y0, x1, y1));
  k.area = sign > 0 ? k.area + a : k.area - a;
}

CANOPY_HD inline kernel_sum gather(const sat_view<std::uint32_t>& v, int x, int y, int r, dof_kernel shape) {
  kernel_sum k{{0, 0, 0, 0}, 0};
  if (shape == dof_kernel::box || r < 2) {
    add_box(v, x - r, y - r, x + r, y + r, +1, k);
    return k;
  }
  // Union of H = [-a, a] x [-b, b], V = [-b, b] x [-a, a] and S = [-s, s]^2 with (a, b) and (s, s)
  // on the circle: a = r cos 22.5, b = r sin 22.5, s = r cos 45. b < s < a, so
  // |H u V u S| = H + V + S - (H n S) - (V n S).
  const int a = int(0.9239f * float(r) + 0.5f), b = int(0.3827f * float(r) + 0.5f), s = int(0.7071f * float(r) + 0.5f);
  add_box(v, x - a, y - b, x + a, y + b, +1, k);
  add_box(v, x - b, y - a, x + b, y + a, +1, k);
  add_box(v, x - s, y - s, x + s, y + s, +1, k);
  add_box(v, x - s, y - b, x + s, y + b, -1, k);
  add_box(v, x - b, y - s, x + b, y + s, -1, k);
  return k;
}

//! Stage 5: gather and composite; one call per pixel.
struct gather_pixel {
  const std::uint32_t* colour;
  const float* coc;
  const float* near_reach;  // per tile
  std::uint32_t* out;
  sat_view<std::uint32_t> far_sat, near_sat;
  int width, tiles_x, max_radius;
  dof_kernel shape;
  bool near_field;
  CANOPY_HD void operator()(std::size_t i) const {
    const int x = int(i % std::size_t(width)), y = int(i / std::size_t(width));
    const std::uint32_t p = colour[i];
    const float c = coc[i];
    const float r = radius_of(c, max_radius);
    float rgb[3] = {float(p & 0xffu), float((p >> 8) & 0xffu), float((p >> 16) & 0xffu)};
    bool changed = false;
    if (r >= 0.5f && (c > 0.f || !near_field)) {
      const kernel_sum k = gather(far_sat, x, y, int(r + 0.5f), shape);
      if (k.s[3] > 0) {
        for (int j = 0; j < 3; ++j) rgb[j] = float(k.s[j]) / float(k.s[3]);
        changed = true;
      }
    }
    if (near_field) {
      const float reach = near_reach[std::size_t(y / tile) * std::size_t(tiles_x) + std::size_t(x / tile)];
      if (reach >= 0.5f) {
        const kernel_sum k = gather(near_sat, x, y, int(reach + 0.5f), shape);
        if (k.s[3] > 0) {
          const float alpha = clamp01(2.f * float(k.s[3]) / (255.f * float(k.area)));
          for (int j = 0; j < 3; ++j) rgb[j] += alpha * (float(k.s[j]) / float(k.s[3]) - rgb[j]);
          changed = true;
        }
      }
    }
    if (!changed) {
      out[i] = p;
      return;
    }
    std::uint32_t q = p & 0xff000000u;
    for (int j = 0; j < 3; ++j) {
      const float v = rgb[j] + 0.5f;
      const std::uint32_t b = v <= 0.f ? 0u : (v >= 255.f ? 255u : std::uint32_t(v));
      q |= b << (8 * j);
    }
    out[i] = q;
  }
};

}  // namespace canopy::detail::dof
