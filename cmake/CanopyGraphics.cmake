# Graphics dependencies of the apps, all from Debian's packages:
#   glfw3 (libglfw3-dev), glm (libglm-dev), imgui (libimgui-dev; its static library holds the GLFW
#   and OpenGL3 backends), stb (libstb-dev, for stb_image_write), EGL/GL (libegl-dev, libgl-dev),
#   and a GL 4.5 core + EGL 1.5 loader generated at configure time by glad (python3-glad,
#   --reproducible: no download).
# Defines canopy::glad, canopy::imgui and canopy::stb, and sets CANOPY_GRAPHICS_FOUND.
#
# Machines without Debian packages (the GPU machine) put the packages' files under a prefix on
# CMAKE_PREFIX_PATH; imgui and stb are therefore found by path, not only through pkg-config (whose
# .pc files name /usr). CANOPY_GLAD_DIR may point at a loader generated elsewhere, so glad itself
# is not needed there.
find_package(glfw3 3.3 QUIET)
find_package(glm QUIET)
find_package(OpenGL QUIET COMPONENTS OpenGL EGL)
find_program(CANOPY_GLAD_EXECUTABLE glad)
find_path(CANOPY_IMGUI_INCLUDE_DIR imgui.h PATH_SUFFIXES imgui)
find_library(CANOPY_IMGUI_LIBRARY NAMES libimgui.a imgui)
find_path(CANOPY_STB_INCLUDE_DIR stb/stb_image_write.h)
find_library(CANOPY_STB_LIBRARY NAMES stb)  # libstb0: imgui's font atlas needs stb_rect_pack/stb_truetype
set(CANOPY_GLAD_DIR ${CMAKE_BINARY_DIR}/glad CACHE PATH "Where the glad GL 4.5 core + EGL 1.5 loader is (generated there if absent)")

set(CANOPY_GRAPHICS_FOUND OFF)
set(_missing "")
if(NOT glfw3_FOUND)
  list(APPEND _missing "glfw3 (libglfw3-dev)")
endif()
if(NOT glm_FOUND)
  list(APPEND _missing "glm (libglm-dev)")
endif()
if(NOT CANOPY_IMGUI_INCLUDE_DIR OR NOT CANOPY_IMGUI_LIBRARY OR NOT EXISTS ${CANOPY_IMGUI_INCLUDE_DIR}/backends/imgui_impl_opengl3.h)
  list(APPEND _missing "imgui (libimgui-dev)")
endif()
if(NOT CANOPY_STB_INCLUDE_DIR OR NOT CANOPY_STB_LIBRARY)
  list(APPEND _missing "stb (libstb-dev)")
endif()
if(NOT OpenGL_EGL_FOUND OR NOT OpenGL_OpenGL_FOUND)
  list(APPEND _missing "EGL/OpenGL (libegl-dev libgl-dev)")
endif()
set(_glad_dir ${CANOPY_GLAD_DIR})
set(_glad_ready OFF)
if(EXISTS ${_glad_dir}/src/gl.c AND EXISTS ${_glad_dir}/src/egl.c)
  set(_glad_ready ON)
elseif(NOT CANOPY_GLAD_EXECUTABLE)
  list(APPEND _missing "glad (python3-glad)")
endif()

if(_missing)
  message(STATUS "canopy: graphics apps OFF, missing: ${_missing}; run scripts/install-deps.sh")
  return()
endif()

if(NOT _glad_ready)
  execute_process(
    COMMAND ${CANOPY_GLAD_EXECUTABLE} --api gl:core=4.5,egl=1.5 --out-path ${_glad_dir} --quiet --reproducible c
    RESULT_VARIABLE _glad_result OUTPUT_VARIABLE _glad_out ERROR_VARIABLE _glad_err)
  if(NOT _glad_result EQUAL 0 OR NOT EXISTS ${_glad_dir}/src/gl.c)
    message(FATAL_ERROR "canopy: glad failed to generate the GL 4.5 loader:\n${_glad_out}${_glad_err}")
  endif()
endif()

add_library(canopy_glad STATIC ${_glad_dir}/src/gl.c ${_glad_dir}/src/egl.c)
target_include_directories(canopy_glad PUBLIC ${_glad_dir}/include)
target_link_libraries(canopy_glad PUBLIC ${CMAKE_DL_LIBS})
set_target_properties(canopy_glad PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(canopy::glad ALIAS canopy_glad)

# Debian's libimgui.a holds imgui, its GLFW backend and its OpenGL3 backend (which loads GL
# through its own loader, imgl3w, from libGL.so.1).
add_library(canopy_imgui INTERFACE)
target_include_directories(canopy_imgui INTERFACE ${CANOPY_IMGUI_INCLUDE_DIR} ${CANOPY_IMGUI_INCLUDE_DIR}/backends)
target_link_libraries(canopy_imgui INTERFACE ${CANOPY_IMGUI_LIBRARY} ${CANOPY_STB_LIBRARY} glfw OpenGL::OpenGL ${CMAKE_DL_LIBS})
add_library(canopy::imgui ALIAS canopy_imgui)

add_library(canopy_stb INTERFACE)
target_include_directories(canopy_stb INTERFACE ${CANOPY_STB_INCLUDE_DIR})
add_library(canopy::stb ALIAS canopy_stb)

set(CANOPY_GRAPHICS_FOUND ON)
message(STATUS "canopy: graphics apps ON (glfw ${glfw3_VERSION}, glm, imgui, stb, EGL, glad GL 4.5 core in ${_glad_dir})")
