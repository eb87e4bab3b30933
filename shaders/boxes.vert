#version 450 core
// One instance per box, 24 vertices: the 12 edges of the box as a line list.
layout(location = 0) in vec3 lo;     // per instance
layout(location = 1) in vec3 hi;     // per instance
layout(location = 2) in uint depth;  // per instance
uniform mat4 view_proj;
flat out uint box_depth;
// Corner c of a box: x from bit 0, y from bit 1, z from bit 2. Edges along x, then y, then z.
const int edge_corners[24] = int[24](0, 1, 2, 3, 4, 5, 6, 7,
                                     0, 2, 1, 3, 4, 6, 5, 7,
                                     0, 4, 1, 5, 2, 6, 3, 7);
void main() {
  box_depth = depth;
  // Empty boxes (excluded primitives: lo = +inf, hi = -inf) are sent outside the clip volume.
  if (any(greaterThan(lo, hi)) || any(isinf(lo)) || any(isinf(hi))) {
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0);
    return;
  }
  int c = edge_corners[gl_VertexID];
  vec3 p = vec3((c & 1) != 0 ? hi.x : lo.x, (c & 2) != 0 ? hi.y : lo.y, (c & 4) != 0 ? hi.z : lo.z);
  gl_Position = view_proj * vec4(p, 1.0);
}
