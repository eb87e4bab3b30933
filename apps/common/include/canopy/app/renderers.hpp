// canopy/app/renderers.hpp — the three things the apps draw.
//
//   mesh_renderer   indexed triangles from a vec3 buffer, flat shaded with a headlight
//   box_renderer    instanced wireframe AABBs (24 line vertices each), coloured by depth from
//                   box_palette; instance count read from an indirect buffer that kernels write,
//                   so drawing needs no count on the host
//   image_renderer  a texture into a viewport rectangle (the ray-cast image)
//
// Each takes GL buffer names, so the data can come from shared_buffer (kernels) or plain GL.
// Shaders: shaders/mesh.*, shaders/boxes.*, shaders/image.* (see gl.hpp: shader_dir()).
#pragma once

#include <canopy/app/gl.hpp>

#include <glm/glm.hpp>

#include <cstddef>

namespace canopy::app {

//! Shading shared by the raster view and ray-cast kernels: the colour of a surface with unit
//! normal n seen along unit view direction d (both in any common space), as RGB in [0, 1]:
//! mesh_colour * (0.25 + 0.75 |dot(n, d)|). Two-sided, so winding does not matter.
struct headlight {
  static constexpr float ambient = 0.25f;
  static constexpr float diffuse = 0.75f;
};

class mesh_renderer {
 public:
  //! With `depth_copy`, also writes the window depth to output 1, for render targets with a depth
  //! copy (render_target::resize(w, h, true)); draw into those only with such a renderer.
  explicit mesh_renderer(bool depth_copy = false);
  //! Draws `triangle_count` triangles: `vertices` holds tightly packed vec3 (12 bytes),
  //! `indices` 3 u32 per triangle.
  void draw(GLuint vertices, GLuint indices, std::size_t triangle_count, const glm::mat4& view,
            const glm::mat4& projection);

 private:
  gl_program program_;
  gl_vertex_array vao_;
  GLint view_proj_ = -1, view_ = -1, albedo_ = -1;
};

class box_renderer {
 public:
  //! Layout of one box instance: canopy::aabb (lo.xyz, hi.xyz: 24 bytes) in `boxes`, and its
  //! depth as u32 in `depths`.
  static constexpr std::size_t box_stride = 24;
  //! Layout of the indirect command kernels fill: {count = 24, instance_count, first = 0,
  //! base_instance = 0}, 16 bytes (GL's DrawArraysIndirectCommand).
  struct indirect_command {
    unsigned count, instance_count, first, base_instance;
  };
  box_renderer();
  //! Draws the instances the indirect command names, depth-tested against the bound depth buffer,
  //! without depth writes. The command's instance_count must not exceed the boxes in the buffers
  //! (the writer clamps it; GL does not check).
  void draw(GLuint boxes, GLuint depths, GLuint indirect, const glm::mat4& view_projection, float line_alpha = 1.0f);

 private:
  gl_program program_;
  gl_vertex_array vao_;
  GLint view_proj_ = -1, palette_ = -1, alpha_ = -1;
};

class image_renderer {
 public:
  image_renderer();
  //! Draws `texture` into the current framebuffer's viewport (x, y, w, h). `flip_y` when the
  //! texture's row 0 is the image's top row (as shared_image fills it).
  void draw(GLuint texture, int x, int y, int w, int h, bool flip_y = true);

 private:
  gl_program program_;
  gl_vertex_array vao_;
  GLint flip_ = -1;
};

}  // namespace canopy::app
