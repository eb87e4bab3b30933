// canopy/app/camera.hpp — a GLM camera with orbit and fly controls, and the matching primary rays.
//
// Orbit (default): left drag rotates about the target, right drag pans, wheel zooms.
// Fly: hold the right button and use WASD/QE to move, mouse to look; F toggles the mode.
// Input comes from ImGui's IO (so it works the same windowed and, with no input, headless) and is
// ignored while ImGui wants the mouse or keyboard.
//
// Conventions: right-handed, y up, looking down -z in view space; perspective with a vertical
// field of view; depth range [near, far] mapped by glm::perspective (GL clip space).
#pragma once

#include <canopy/core/config.hpp>

#include <glm/glm.hpp>

#include <limits>

namespace canopy::app {

//! View-space depth (distance along the view axis) of a window-space depth d in [0, 1] written by
//! the rasteriser with glm::perspective(near_plane, far_plane) (GL clip space, [0, 1] window z);
//! +inf for d >= 1 (the cleared background). CANOPY_HD: kernels that read a depth buffer use it.
CANOPY_HD inline float linear_depth(float window_depth, float near_plane, float far_plane) {
  if (window_depth >= 1.0f) return std::numeric_limits<float>::infinity();
  const float ndc = 2.0f * window_depth - 1.0f;
  return 2.0f * near_plane * far_plane / (far_plane + near_plane - ndc * (far_plane - near_plane));
}

//! What a ray-casting kernel needs to generate the same rays the rasteriser samples: the ray of
//! pixel (x, y) (x right, y down, pixel centres at +0.5) has direction
//! forward + (2 (x + 0.5) / W - 1) * tan_half_fov * aspect * right + (1 - 2 (y + 0.5) / H) * tan_half_fov * up.
//! Its t is then in units of the view-space depth (distance along forward), like the raster depth.
struct camera_rays {
  float origin[3];
  float forward[3];
  float right[3];
  float up[3];
  float tan_half_fov;  //!< tan(vertical fov / 2)
  float aspect;        //!< width / height
  int width, height;   //!< pixels
  float near_depth, far_depth;  //!< the rasteriser's clip planes, in view-space depth (= t of these rays)
};

class camera {
 public:
  enum class mode { orbit, fly };

  //! Places the camera to see a sphere of `radius` around `center` from a pleasant angle.
  void frame(const glm::vec3& center, float radius);
  //! Applies this frame's mouse/keyboard input (no-op when ImGui captures it). dt in seconds.
  void update_from_input(double dt);
  //! Turns about the target by `radians` (the viewers' auto-rotate; deterministic headless).
  void orbit(float yaw_radians, float pitch_radians);

  glm::mat4 view() const;
  glm::mat4 projection(float aspect) const;
  glm::vec3 position() const;
  camera_rays rays(int width, int height) const;

  float near_plane() const noexcept { return near_; }
  float far_plane() const noexcept { return far_; }
  float fov_y_degrees() const noexcept { return fov_y_deg_; }
  void set_fov_y_degrees(float deg) { fov_y_deg_ = deg; }
  mode current_mode() const noexcept { return mode_; }
  void set_mode(mode m) { mode_ = m; }

  //! View-space depth of a window-space depth written with projection(); +inf for d = 1 (the
  //! cleared background). See the free linear_depth().
  float linear_depth(float window_depth) const { return app::linear_depth(window_depth, near_, far_); }

 private:
  glm::vec3 target_{0.0f};
  float distance_ = 3.0f;
  float yaw_ = 0.6f;     // radians about +y
  float pitch_ = 0.35f;  // radians above the horizon
  float fov_y_deg_ = 45.0f;
  float near_ = 0.01f, far_ = 100.0f;
  float speed_ = 1.0f;   // fly speed, scene radii per second
  mode mode_ = mode::orbit;
};

}  // namespace canopy::app
