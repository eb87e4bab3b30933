// canopy/app/palette.hpp — the colours the renderers use, shared with the app tests.
//
// Node boxes are coloured by tree depth from box_palette (cycling). Every entry is strongly
// saturated, while the shaded mesh and the ray-cast image are near grey (see mesh_colour), so a
// pixel of exactly a palette colour can only be a box: the headless tests count them.
#pragma once

#include <cstdint>

namespace canopy::app {

//! Number of colours boxes cycle through by depth.
constexpr int box_palette_size = 8;
//! RGB, 0-255, indexed by depth % box_palette_size. Each has max - min channel >= 150.
constexpr std::uint8_t box_palette[box_palette_size][3] = {
    {255, 64, 32}, {255, 176, 0}, {170, 230, 0}, {0, 220, 110},
    {0, 200, 255}, {60, 90, 255}, {190, 60, 255}, {255, 40, 170}};

//! Base albedo of the shaded mesh and of the ray-cast image (RGB in [0, 1]); near grey, so that
//! shading never reaches the saturation of a box colour.
constexpr float mesh_colour[3] = {0.78f, 0.80f, 0.84f};
//! Background of the raster view and of ray-cast misses (RGB, 0-255).
constexpr std::uint8_t background_colour[3] = {22, 24, 30};

}  // namespace canopy::app
