// canopy/structures/dof.hpp — depth of field from summed-area tables.
//
//   canopy::depth_of_field dof(ctx);
//   canopy::dof_options o;  o.lens.focus_distance_m = 4;  o.lens.f_number = 1.8f;
//   dof.apply(colour_rgba8, linear_depth_m, width, height, out_rgba8, o, &timer);
//
// Pipeline (each stage one for_each over pixels or tiles, then two table builds):
//   1. CoC: the thin-lens circle of confusion of every pixel from its linear depth; signed, in
//      pixels (negative in front of the focus plane). Gather radius r = min(|CoC| / 2, max_radius).
//   2. Layers: two premultiplied RGBW images of u16 (colour * w, w), w an 8-bit weight, the CoC
//      weight 255 * clamp(r - 0.5, 0, 1) (far_weighting) or 255:
//      far  layer: the pixels behind the focus plane, and those in front of it too unless
//                  near_field separates them;
//      near layer: with near_field, the pixels in front of the focus plane.
//      With CoC weights in-focus pixels weigh 0, so a blurred neighbour never gathers their sharp
//      colour (no in-focus halo). docs/sat.md tabulates the four flag combinations.
//   3. Near-field reach: the largest near radius per 16 x 16 tile, dilated over the tiles it can
//      reach, so that in-focus pixels next to a blurred foreground object gather it too (soft
//      silhouettes instead of a hard cut-out).
//   4. Two exact u32 summed-area tables of the layers (u16 x 4 -> u32 x 4, single pass on CUDA).
//      Integer tables make every gather exact: no float drift across a 4K image.
//   5. Gather: far pixels average the far layer over their own kernel; then the near layer,
//      gathered over the dilated near radius, is composited on top with coverage
//      alpha = min(1, 2 * sum(w) / (255 * area)).
//      The kernel is a box (classic, square bokeh) or a 12-sided stepped polygon made of five
//      boxes, H + V + S - (H and S) - (V and S), whose corners lie on the circle of radius r:
//      rounder bokeh for 20 table reads instead of 4.
// Pixels with r < 0.5 that no near-field blur reaches come out bit-identical to the input.
// See docs/sat.md for the reasoning and measured error/timing.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/timer.hpp>
#include <canopy/structures/sat.hpp>

#include <cmath>
#include <cstdint>

namespace canopy {

//! A thin lens focused at a distance. Units: millimetres for the lens and sensor, metres for
//! distances in the scene.
struct thin_lens {
  float focal_length_mm = 50.0f;   //!< > 0
  float f_number = 2.8f;           //!< > 0; aperture diameter = focal length / f_number
  float focus_distance_m = 5.0f;   //!< > focal length
  float sensor_width_mm = 36.0f;   //!< > 0; maps the image width (a 35 mm full-frame sensor)
};

//! Signed circle-of-confusion diameter, in pixels of an image `image_width` pixels wide, of a point
//! at linear depth `depth_m`: A f (z - z_f) / (z (z_f - f)) on the sensor, scaled to pixels.
//! Negative in front of the focus plane. Depths <= 0 or not finite count as infinitely far.
CANOPY_HD inline float coc_diameter_px(const thin_lens& lens, float depth_m, int image_width) {
  const float f = lens.focal_length_mm * 1e-3f;
  const float aperture = f / lens.f_number;
  const float zf = lens.focus_distance_m;
  const float scale = float(image_width) / (lens.sensor_width_mm * 1e-3f);
  const bool far = !(depth_m > 0.0f) || !(depth_m < 3.0e38f);
  const float c = far ? aperture * f / (zf - f) : aperture * f * (depth_m - zf) / (depth_m * (zf - f));
  return c * scale;
}

//! Shape of the gather kernel.
enum class dof_kernel : std::uint8_t {
  box,      //!< 4 table reads per layer; square bokeh
  polygon,  //!< 20 table reads per layer; 12-sided, corners on the circle
};

//! Options of depth_of_field::apply().
struct dof_options {
  thin_lens lens;
  int max_radius = 32;                   //!< gather radius limit in pixels, 0..64 (u32 tables stay exact up to 64)
  dof_kernel kernel = dof_kernel::polygon;
  bool near_field = true;                //!< separate near layer, composited with coverage (soft foreground
                                         //!< edges); off: pixels in front of the focus plane join the far table
  bool far_weighting = true;             //!< CoC weights in whichever table a pixel is in: in-focus pixels do
                                         //!< not leak into blur. With both flags off this is the classic
                                         //!< single-table SAT DoF.
};

//! SAT depth of field. Keeps its buffers between frames (grow only). The context must outlive it.
class depth_of_field {
 public:
  explicit depth_of_field(context& ctx);

  //! Blurs `colour` (width * height RGBA8 pixels, packed R | G << 8 | B << 16 | A << 24) by the
  //! CoC of `depth` (width * height linear depths in metres) into `out` (width * height RGBA8;
  //! must not alias colour). Alpha is copied. All spans in the context's memory space. On CUDA it
  //! returns without synchronising. With `timer`, stages "dof.coc" (CoC and layers), "dof.near"
  //! (the near field's tiles; only with options.near_field), "dof.sat" and "dof.filter" are
  //! recorded in its open frame.
  //! Temporary memory: kept by the object, 4 + 8 + 8 bytes per pixel for the CoC and the two RGBW
  //! u16 layers, 32 per pixel for the two tables, 4 per 16 pixels of a column (the near field's
  //! column maxima) and 8 per 16 x 16 tile; per call, from the
  //! context's pool, the single-pass descriptors (about 1/13 of a table).
  //! Complexity: O(pixels) work; 8 (box) or 40 (polygon) table reads per blurred pixel.
  void apply(span<const std::uint32_t> colour, span<const float> depth, int width, int height,
             span<std::uint32_t> out, const dof_options& options, stage_timer* timer = nullptr);

  //! Signed CoC diameters (pixels) of the last apply(), width * height floats.
  span<const float> coc() const { return coc_.view(); }
  //! Dilated near-field radius per 16 x 16 tile of the last apply().
  span<const float> near_tiles() const { return near_dilated_.view(); }
  int tiles_x() const noexcept { return tiles_x_; }
  int tiles_y() const noexcept { return tiles_y_; }

 private:
  context* ctx_;
  buffer<float> coc_;
  buffer<std::uint16_t> far_layer_, near_layer_;
  buffer<float> near_columns_, near_tiles_, near_dilated_;
  summed_area_table<std::uint32_t> far_sat_, near_sat_;
  int tiles_x_ = 0, tiles_y_ = 0;
};

}  // namespace canopy
