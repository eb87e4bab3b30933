// canopy/app/image_io.hpp — files the apps write: PNG screenshots and float images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy::app {

//! Writes an RGBA8 image (top row first) as PNG through stb_image_write. Throws canopy::error
//! naming the path on failure.
void write_png(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgba);

//! Writes a one-channel float image (top row first) as a PFM ("Pf", little-endian; PFM stores rows
//! bottom first, which this function does). Used for the depth images the app tests compare.
void write_pfm(const std::string& path, int width, int height, const std::vector<float>& values);

//! Reads a file written by write_pfm(); rows top first. Throws canopy::error on a malformed file.
std::vector<float> read_pfm(const std::string& path, int& width, int& height);

}  // namespace canopy::app
