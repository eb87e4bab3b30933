#version 450 core
layout(binding = 0) uniform sampler2D image;
in vec2 uv;
out vec4 colour;
void main() { colour = vec4(texture(image, uv).rgb, 1.0); }
