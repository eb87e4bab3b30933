#include <canopy/app/mesh_view.hpp>

#include <canopy/core/buffer.hpp>
#include <canopy/core/error.hpp>

#include <algorithm>
#include <vector>

namespace canopy::app {

void mesh_view::update(const animated_scene& scene) {
  prepare(scene);
  write(scene);
}

void mesh_view::prepare(const animated_scene& scene) {
  if (scene.topology_version() != topology_) {
    // Indices change only with load(); a copy through the host is fine then.
    std::vector<std::uint32_t> host(scene.indices().size());
    if (!host.empty()) {
      copy(*ctx_, scene.indices(), span<std::uint32_t>(host.data(), host.size(), memory_space::host));
      ctx_->synchronize();
    }
    indices_ = make_buffer(std::max<std::size_t>(host.size(), 1) * 4, host.empty() ? nullptr : host.data());
    triangles_ = scene.triangle_count();
    topology_ = scene.topology_version();
  }
  vertices_.reserve(std::max<std::size_t>(scene.vertex_count(), 1));
}

void mesh_view::write(const animated_scene& scene) {
  const std::size_t n = scene.vertex_count();
  require(n <= vertices_.capacity(), "canopy::app::mesh_view::write", "scene",
          "has more vertices than prepare() made room for");
  span<vec3> gl = vertices_.map();
  copy(*ctx_, scene.vertices(), gl.first(n));
  vertices_.unmap(n);
}

void mesh_view::draw(const glm::mat4& view, const glm::mat4& projection) {
  renderer_.draw(vertices_.gl_name(), indices_.get(), triangles_, view, projection);
}

}  // namespace canopy::app
