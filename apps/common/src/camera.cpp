#include <canopy/app/camera.hpp>

#include <glm/gtc/matrix_transform.hpp>
#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace canopy::app {

namespace {
glm::vec3 direction(float yaw, float pitch) {
  // Points from the target to the camera.
  return {std::cos(pitch) * std::sin(yaw), std::sin(pitch), std::cos(pitch) * std::cos(yaw)};
}
}  // namespace

void camera::frame(const glm::vec3& center, float radius) {
  target_ = center;
  const float r = std::max(radius, 1e-3f);
  distance_ = r / std::sin(glm::radians(fov_y_deg_) * 0.5f) * 1.1f;
  // A near plane far from the eye keeps depth precision for the raster/ray-cast comparison.
  near_ = std::max(distance_ - 4.0f * r, distance_ * 0.02f);
  far_ = distance_ + 4.0f * r;
  speed_ = r;
}

void camera::orbit(float yaw_radians, float pitch_radians) {
  yaw_ += yaw_radians;
  pitch_ = std::clamp(pitch_ + pitch_radians, -1.5f, 1.5f);
}

glm::vec3 camera::position() const { return target_ + distance_ * direction(yaw_, pitch_); }

glm::mat4 camera::view() const { return glm::lookAt(position(), target_, glm::vec3(0, 1, 0)); }

glm::mat4 camera::projection(float aspect) const {
  return glm::perspective(glm::radians(fov_y_deg_), aspect, near_, far_);
}

void camera::update_from_input(double dt) {
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsKeyPressed('F') && !io.WantCaptureKeyboard)
    mode_ = mode_ == mode::orbit ? mode::fly : mode::orbit;
  if (io.WantCaptureMouse) return;
  const float dx = io.MouseDelta.x, dy = io.MouseDelta.y;
  const bool valid = std::isfinite(dx) && std::isfinite(dy) && std::abs(dx) < 1e4f;
  if (mode_ == mode::orbit) {
    if (valid && io.MouseDown[0]) orbit(-dx * 0.008f, dy * 0.008f);
    if (valid && io.MouseDown[1]) {
      const glm::mat4 v = view();
      const glm::vec3 right(v[0][0], v[1][0], v[2][0]), up(v[0][1], v[1][1], v[2][1]);
      const float scale = distance_ * 0.0015f;
      target_ += (-dx * right + dy * up) * scale;
    }
    if (io.MouseWheel != 0.0f) distance_ *= std::pow(0.9f, io.MouseWheel);
  } else {
    // Fly: the camera position stays, the target moves with it.
    if (valid && io.MouseDown[1]) {
      const glm::vec3 eye = position();
      yaw_ -= dx * 0.005f;
      pitch_ = std::clamp(pitch_ - dy * 0.005f, -1.5f, 1.5f);
      target_ = eye - distance_ * direction(yaw_, pitch_);
    }
    if (!io.WantCaptureKeyboard) {
      const glm::vec3 fwd = -direction(yaw_, pitch_);
      const glm::vec3 right = glm::normalize(glm::cross(fwd, glm::vec3(0, 1, 0)));
      glm::vec3 move(0.0f);
      if (ImGui::IsKeyDown('W')) move += fwd;
      if (ImGui::IsKeyDown('S')) move -= fwd;
      if (ImGui::IsKeyDown('D')) move += right;
      if (ImGui::IsKeyDown('A')) move -= right;
      if (ImGui::IsKeyDown('E')) move += glm::vec3(0, 1, 0);
      if (ImGui::IsKeyDown('Q')) move -= glm::vec3(0, 1, 0);
      target_ += move * float(speed_ * dt);
    }
  }
}

camera_rays camera::rays(int width, int height) const {
  const glm::mat4 v = view();
  // Rows of the view matrix's rotation are the camera's axes in world space.
  const glm::vec3 right(v[0][0], v[1][0], v[2][0]), up(v[0][1], v[1][1], v[2][1]), back(v[0][2], v[1][2], v[2][2]);
  const glm::vec3 eye = position();
  camera_rays r{};
  for (int i = 0; i < 3; ++i) {
    r.origin[i] = eye[i];
    r.forward[i] = -back[i];
    r.right[i] = right[i];
    r.up[i] = up[i];
  }
  r.tan_half_fov = std::tan(glm::radians(fov_y_deg_) * 0.5f);
  r.aspect = float(width) / float(height);
  r.width = width;
  r.height = height;
  r.near_depth = near_;
  r.far_depth = far_;
  return r;
}

}  // namespace canopy::app
