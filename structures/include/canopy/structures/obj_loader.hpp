// canopy/structures/obj_loader.hpp — Wavefront OBJ files to canopy::mesh, through tinyobjloader.
#pragma once

#include <canopy/structures/scene.hpp>

#include <string>

namespace canopy {

//! Reads the OBJ file at `path`: every face of every shape, triangulated (fan), positions only
//! (normals, texture coordinates and materials are ignored). A missing, unreadable or malformed
//! file, or one with no triangles, throws canopy::error naming the path and tinyobjloader's
//! message. A build without tinyobjloader throws canopy::error saying so.
mesh load_obj(const std::string& path);

//! Same, from OBJ text in memory (tests). `name` is used in error messages.
mesh parse_obj(const std::string& text, const std::string& name = "<memory>");

//! Path of a file in the source tree's assets/ folder (e.g. asset_path("bunny.obj")); the folder
//! can be moved with the environment variable CANOPY_ASSETS.
std::string asset_path(const std::string& file);

}  // namespace canopy
