#version 450 core
flat in uint box_depth;
uniform vec3 palette[8];  // canopy::app::box_palette, by depth % 8
uniform float alpha;
out vec4 colour;
void main() { colour = vec4(palette[box_depth % 8u], alpha); }
