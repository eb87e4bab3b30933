# canopy_cuda_sources(<files>...)
# Sources that hold kernels are .cu files. Without nvcc they are compiled as C++
# (the kernels are compiled out by CANOPY_HAS_CUDA=0), so one source serves both backends.
function(canopy_cuda_sources)
  if(NOT CANOPY_HAS_CUDA)
    set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CXX)
    if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.26)
      # nothing more: CMake passes -x c++ itself for LANGUAGE CXX on non-C++ extensions
    endif()
    foreach(f IN LISTS ARGN)
      set_property(SOURCE ${f} APPEND PROPERTY COMPILE_OPTIONS -x c++)
    endforeach()
  endif()
endfunction()

# canopy_target_defaults(<target>): warnings and CUDA flags shared by every canopy target.
function(canopy_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --extended-lambda -Xcompiler=-Wall>)
endfunction()
