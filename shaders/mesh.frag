#version 450 core
// Flat, two-sided headlight shading; the same formula as the ray-cast kernels (renderers.hpp).
// With DEPTH_COPY, output 1 is the window depth, for render targets with a depth copy (gl.hpp). A
// second output costs even where it is discarded (viewer raster 1.21 -> 1.38 ms at 4K on an
// H200), hence the variant.
in vec3 view_position;
uniform vec3 albedo;
layout(location = 0) out vec4 colour;
#ifdef DEPTH_COPY
layout(location = 1) out float window_depth;
#endif
void main() {
  vec3 n = normalize(cross(dFdx(view_position), dFdy(view_position)));
  vec3 d = normalize(-view_position);
  colour = vec4(albedo * (0.25 + 0.75 * abs(dot(n, d))), 1.0);
#ifdef DEPTH_COPY
  window_depth = gl_FragCoord.z;
#endif
}
