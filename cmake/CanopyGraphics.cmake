# Graphics dependencies of the apps, all from Debian's packages:
#   glfw3 (libglfw3-dev), glm (libglm-dev), imgui (libimgui-dev, pkg-config; its static library
#   holds the GLFW and OpenGL3 backends), EGL/GL (libegl-dev, libgl-dev), and a GL 4.5 core + EGL
#   1.5 loader generated at configure time by glad (python3-glad, --reproducible: no download).
# Defines canopy::glad and canopy::imgui, and sets CANOPY_GRAPHICS_FOUND.
find_package(glfw3 3.3 QUIET)
find_package(glm QUIET)
find_package(PkgConfig QUIET)
find_package(OpenGL QUIET COMPONENTS OpenGL EGL)
find_program(CANOPY_GLAD_EXECUTABLE glad)
if(PkgConfig_FOUND)
  pkg_check_modules(IMGUI QUIET IMPORTED_TARGET imgui)
endif()

set(CANOPY_GRAPHICS_FOUND OFF)
set(_missing "")
if(NOT glfw3_FOUND)
  list(APPEND _missing "glfw3 (libglfw3-dev)")
endif()
if(NOT glm_FOUND)
  list(APPEND _missing "glm (libglm-dev)")
endif()
if(NOT IMGUI_FOUND)
  list(APPEND _missing "imgui (libimgui-dev)")
endif()
if(NOT OpenGL_EGL_FOUND OR NOT OpenGL_OpenGL_FOUND)
  list(APPEND _missing "EGL/OpenGL (libegl-dev libgl-dev)")
endif()
if(NOT CANOPY_GLAD_EXECUTABLE)
  list(APPEND _missing "glad (python3-glad)")
endif()

if(_missing)
  message(STATUS "canopy: graphics apps OFF, missing: ${_missing}; run scripts/install-deps.sh")
  return()
endif()

set(_glad_dir ${CMAKE_BINARY_DIR}/glad)
if(NOT EXISTS ${_glad_dir}/src/gl.c OR NOT EXISTS ${_glad_dir}/src/egl.c)
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

add_library(canopy_imgui INTERFACE)
target_link_libraries(canopy_imgui INTERFACE PkgConfig::IMGUI glfw OpenGL::OpenGL)
add_library(canopy::imgui ALIAS canopy_imgui)

set(CANOPY_GRAPHICS_FOUND ON)
message(STATUS "canopy: graphics apps ON (glfw ${glfw3_VERSION}, glm, imgui, EGL, glad GL 4.5 core)")
