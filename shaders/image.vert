#version 450 core
// A full-viewport triangle; no vertex buffer.
uniform bool flip_y;
out vec2 uv;
void main() {
  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
  uv = flip_y ? vec2(p.x, 1.0 - p.y) : p;
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
