#version 450 core
// Triangles from a tightly packed vec3 buffer; the fragment shader derives the face normal.
layout(location = 0) in vec3 position;
uniform mat4 view_proj;
uniform mat4 view;
out vec3 view_position;
void main() {
  view_position = (view * vec4(position, 1.0)).xyz;
  gl_Position = view_proj * vec4(position, 1.0);
}
