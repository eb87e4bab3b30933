#include <canopy/app/image_io.hpp>

#include <canopy/core/error.hpp>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace canopy::app {

void write_png(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgba) {
  require(width > 0 && height > 0 && rgba.size() == std::size_t(width) * height * 4, "canopy::app::write_png",
          "rgba", "must hold width * height * 4 bytes");
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4))
    throw error("canopy::app::write_png: cannot write '" + path + "'");
}

void write_pfm(const std::string& path, int width, int height, const std::vector<float>& values) {
  require(width > 0 && height > 0 && values.size() == std::size_t(width) * height, "canopy::app::write_pfm",
          "values", "must hold width * height floats");
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error("canopy::app::write_pfm: cannot write '" + path + "'");
  out << "Pf\n" << width << " " << height << "\n-1.0\n";  // negative scale: little-endian
  for (int y = height - 1; y >= 0; --y)
    out.write(reinterpret_cast<const char*>(values.data() + std::size_t(y) * width), std::streamsize(width) * 4);
  if (!out) throw error("canopy::app::write_pfm: failed writing '" + path + "'");
}

std::vector<float> read_pfm(const std::string& path, int& width, int& height) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("canopy::app::read_pfm: cannot open '" + path + "'");
  std::string magic;
  float scale = 0;
  in >> magic >> width >> height >> scale;
  in.get();  // the single whitespace after the header
  if (magic != "Pf" || width <= 0 || height <= 0 || scale >= 0)
    throw error("canopy::app::read_pfm: '" + path + "' is not a little-endian one-channel PFM");
  std::vector<float> v(std::size_t(width) * height);
  for (int y = height - 1; y >= 0; --y)
    in.read(reinterpret_cast<char*>(v.data() + std::size_t(y) * width), std::streamsize(width) * 4);
  if (!in) throw error("canopy::app::read_pfm: '" + path + "' is truncated");
  return v;
}

}  // namespace canopy::app
