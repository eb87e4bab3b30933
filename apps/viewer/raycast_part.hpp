// canopy-viewer, ray-cast part: one primary ray per pixel through the BVH, shaded like the raster
// view, written to a buffer in the context's space and copied into a GL texture (CUDA-GL interop
// on the CUDA backend, glTextureSubImage2D on the host).
#pragma once

#include <canopy/app/camera.hpp>
#include <canopy/app/interop.hpp>
#include <canopy/app/renderers.hpp>
#include <canopy/app/scene.hpp>
#include <canopy/core/buffer.hpp>
#include <canopy/structures/bvh.hpp>

#include <cstdint>
#include <vector>

namespace viewer {

class raycast_part {
 public:
  explicit raycast_part(canopy::context& ctx);

  //! Traces rays.width x rays.height pixels of the scene through `bvh` (built over the scene's
  //! current vertices). Stream-ordered; no allocation unless the size grew.
  void trace(const canopy::bvh_view& bvh, const canopy::app::animated_scene& scene,
             const canopy::app::camera_rays& rays);
  //! Sizes the texture for a trace of width x height pixels: before an interop_mapping that holds
  //! it maps it (a new size is refused while held). upload() sizes it otherwise.
  void prepare(int width, int height) { image_.resize(width, height); }
  //! Adds the texture to `maps`, so that upload() maps nothing of its own. After prepare().
  void hold_in(canopy::app::interop_mapping& maps) { maps.add(image_); }
  //! Copies the last traced pixels into the texture. Stream-ordered.
  void upload();
  //! Draws the texture into the viewport (x, y, w, h) of the bound framebuffer.
  void draw(int x, int y, int w, int h);
  //! View-space depth per pixel (+inf on a miss), rows top first. Synchronises.
  std::vector<float> depth_to_host() const { return depth_.to_host(); }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }

 private:
  canopy::context* ctx_;
  int width_ = 0, height_ = 0;
  canopy::buffer<std::uint32_t> pixels_;
  canopy::buffer<float> depth_;
  canopy::app::shared_image image_;
  canopy::app::image_renderer renderer_;
};

}  // namespace viewer
