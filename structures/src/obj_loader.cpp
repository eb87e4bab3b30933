// Wavefront OBJ through tinyobjloader (Debian's libtinyobjloader-dev); positions only.
#include <canopy/core/error.hpp>
#include <canopy/structures/obj_loader.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#if CANOPY_HAS_TINYOBJLOADER
#include <tiny_obj_loader.h>
#endif

#ifndef CANOPY_ASSETS_DIR
#define CANOPY_ASSETS_DIR "assets"
#endif

namespace canopy {

namespace {

#if CANOPY_HAS_TINYOBJLOADER
mesh convert(const tinyobj::ObjReader& reader, const std::string& name) {
  const tinyobj::attrib_t& attrib = reader.GetAttrib();
  mesh m;
  const std::size_t nv = attrib.vertices.size() / 3;
  m.vertices.resize(nv);
  for (std::size_t i = 0; i < nv; ++i)
    m.vertices[i] = vec3{attrib.vertices[3 * i], attrib.vertices[3 * i + 1], attrib.vertices[3 * i + 2]};
  for (const tinyobj::shape_t& shape : reader.GetShapes()) {
    std::size_t offset = 0;
    for (const unsigned char fv : shape.mesh.num_face_vertices) {
      // tinyobjloader triangulates already; a fan covers what it leaves (fv > 3 if disabled).
      for (unsigned k = 1; k + 1 < fv; ++k) {
        const int idx[3] = {shape.mesh.indices[offset].vertex_index, shape.mesh.indices[offset + k].vertex_index,
                            shape.mesh.indices[offset + k + 1].vertex_index};
        for (int v : idx) {
          if (v < 0 || std::size_t(v) >= nv)
            throw error("canopy::load_obj: " + name + ": face refers to vertex " + std::to_string(v + 1) +
                        " of " + std::to_string(nv));
          m.indices.push_back(std::uint32_t(v));
        }
      }
      offset += fv;
    }
  }
  if (m.indices.empty()) throw error("canopy::load_obj: " + name + ": no triangles in the file");
  return m;
}

mesh read(bool from_file, const std::string& source, const std::string& name) {
  tinyobj::ObjReaderConfig config;
  config.triangulate = true;
  config.vertex_color = false;
  config.mtl_search_path = "";
  tinyobj::ObjReader reader;
  const bool ok = from_file ? reader.ParseFromFile(source, config) : reader.ParseFromString(source, "", config);
  if (!ok) {
    std::string why = reader.Error();
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    throw error("canopy::load_obj: " + name + ": " + (why.empty() ? std::string("cannot parse") : why));
  }
  // tinyobjloader accepts lines it cannot read with a warning; a "v" line without three numbers
  // is such a line, and the file is then not what it claims to be.
  const std::string& warn = reader.Warning();
  if (warn.find("Vertex") != std::string::npos || warn.find("vertex") != std::string::npos)
    throw error("canopy::load_obj: " + name + ": " + warn);
  return convert(reader, name);
}
#endif

}  // namespace

mesh load_obj(const std::string& path) {
#if CANOPY_HAS_TINYOBJLOADER
  std::ifstream probe(path);
  if (!probe) throw error("canopy::load_obj: " + path + ": cannot open the file");
  return read(true, path, path);
#else
  throw error("canopy::load_obj: " + path + ": this build of canopy has no tinyobjloader (install libtinyobjloader-dev)");
#endif
}

mesh parse_obj(const std::string& text, const std::string& name) {
#if CANOPY_HAS_TINYOBJLOADER
  return read(false, text, name);
#else
  throw error("canopy::parse_obj: " + name + ": this build of canopy has no tinyobjloader (install libtinyobjloader-dev)");
#endif
}

std::string asset_path(const std::string& file) {
  const char* dir = std::getenv("CANOPY_ASSETS");
  return std::string(dir && *dir ? dir : CANOPY_ASSETS_DIR) + "/" + file;
}

}  // namespace canopy
