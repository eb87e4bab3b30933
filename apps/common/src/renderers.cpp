#include <canopy/app/renderers.hpp>

#include <canopy/app/palette.hpp>

#include <glm/gtc/type_ptr.hpp>

namespace canopy::app {

namespace {
gl_vertex_array make_vertex_array() {
  GLuint id = 0;
  glCreateVertexArrays(1, &id);
  return gl_vertex_array(id);
}
}  // namespace

mesh_renderer::mesh_renderer(bool depth_copy)
    : program_(load_program("mesh.vert", "mesh.frag", depth_copy ? "#define DEPTH_COPY\n" : "")),
      vao_(make_vertex_array()) {
  view_proj_ = uniform(program_, "view_proj");
  view_ = uniform(program_, "view");
  albedo_ = uniform(program_, "albedo");
  glEnableVertexArrayAttrib(vao_.get(), 0);
  glVertexArrayAttribFormat(vao_.get(), 0, 3, GL_FLOAT, GL_FALSE, 0);
  glVertexArrayAttribBinding(vao_.get(), 0, 0);
  gl_check("canopy::app::mesh_renderer");
}

void mesh_renderer::draw(GLuint vertices, GLuint indices, std::size_t triangle_count, const glm::mat4& view,
                         const glm::mat4& projection) {
  if (triangle_count == 0) return;
  const glm::mat4 vp = projection * view;
  glProgramUniformMatrix4fv(program_.get(), view_proj_, 1, GL_FALSE, glm::value_ptr(vp));
  glProgramUniformMatrix4fv(program_.get(), view_, 1, GL_FALSE, glm::value_ptr(view));
  glProgramUniform3fv(program_.get(), albedo_, 1, mesh_colour);
  glVertexArrayVertexBuffer(vao_.get(), 0, vertices, 0, 12);
  glVertexArrayElementBuffer(vao_.get(), indices);
  glUseProgram(program_.get());
  glBindVertexArray(vao_.get());
  glEnable(GL_DEPTH_TEST);
  glDepthMask(GL_TRUE);
  glDepthFunc(GL_LESS);
  glDrawElements(GL_TRIANGLES, GLsizei(triangle_count * 3), GL_UNSIGNED_INT, nullptr);
  glBindVertexArray(0);
}

box_renderer::box_renderer() : program_(load_program("boxes.vert", "boxes.frag")), vao_(make_vertex_array()) {
  view_proj_ = uniform(program_, "view_proj");
  palette_ = uniform(program_, "palette");
  alpha_ = uniform(program_, "alpha");
  float palette[box_palette_size * 3];
  for (int i = 0; i < box_palette_size * 3; ++i) palette[i] = float(box_palette[i / 3][i % 3]) / 255.0f;
  glProgramUniform3fv(program_.get(), palette_, box_palette_size, palette);
  const GLuint vao = vao_.get();
  glEnableVertexArrayAttrib(vao, 0);
  glEnableVertexArrayAttrib(vao, 1);
  glEnableVertexArrayAttrib(vao, 2);
  glVertexArrayAttribFormat(vao, 0, 3, GL_FLOAT, GL_FALSE, 0);
  glVertexArrayAttribFormat(vao, 1, 3, GL_FLOAT, GL_FALSE, 12);
  glVertexArrayAttribIFormat(vao, 2, 1, GL_UNSIGNED_INT, 0);
  glVertexArrayAttribBinding(vao, 0, 0);
  glVertexArrayAttribBinding(vao, 1, 0);
  glVertexArrayAttribBinding(vao, 2, 1);
  glVertexArrayBindingDivisor(vao, 0, 1);
  glVertexArrayBindingDivisor(vao, 1, 1);
  gl_check("canopy::app::box_renderer");
}

void box_renderer::draw(GLuint boxes, GLuint depths, GLuint indirect, const glm::mat4& view_projection,
                        float line_alpha) {
  glProgramUniformMatrix4fv(program_.get(), view_proj_, 1, GL_FALSE, glm::value_ptr(view_projection));
  glProgramUniform1f(program_.get(), alpha_, line_alpha);
  glVertexArrayVertexBuffer(vao_.get(), 0, boxes, 0, GLsizei(box_stride));
  glVertexArrayVertexBuffer(vao_.get(), 1, depths, 0, 4);
  glUseProgram(program_.get());
  glBindVertexArray(vao_.get());
  glEnable(GL_DEPTH_TEST);
  glDepthMask(GL_FALSE);
  glDepthFunc(GL_LEQUAL);
  if (line_alpha < 1.0f) {
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  }
  glBindBuffer(GL_DRAW_INDIRECT_BUFFER, indirect);
  glDrawArraysIndirect(GL_LINES, nullptr);
  glBindBuffer(GL_DRAW_INDIRECT_BUFFER, 0);
  glDisable(GL_BLEND);
  glDepthMask(GL_TRUE);
  glBindVertexArray(0);
}

image_renderer::image_renderer() : program_(load_program("image.vert", "image.frag")), vao_(make_vertex_array()) {
  flip_ = uniform(program_, "flip_y");
  gl_check("canopy::app::image_renderer");
}

void image_renderer::draw(GLuint texture, int x, int y, int w, int h, bool flip_y) {
  glViewport(x, y, w, h);
  glProgramUniform1i(program_.get(), flip_, flip_y ? 1 : 0);
  glUseProgram(program_.get());
  glBindVertexArray(vao_.get());
  glBindTextureUnit(0, texture);
  glDisable(GL_DEPTH_TEST);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  glBindVertexArray(0);
}

}  // namespace canopy::app
