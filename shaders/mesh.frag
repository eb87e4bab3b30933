#version 450 core
// Flat, two-sided headlight shading; the same formula as the ray-cast kernels (renderers.hpp).
in vec3 view_position;
uniform vec3 albedo;
out vec4 colour;
void main() {
  vec3 n = normalize(cross(dFdx(view_position), dFdy(view_position)));
  vec3 d = normalize(-view_position);
  colour = vec4(albedo * (0.25 + 0.75 * abs(dot(n, d))), 1.0);
}
