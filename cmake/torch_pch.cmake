# Precompiled LibTorch headers. <ATen/ATen.h> costs 6-8 s of every translation unit that includes
# it, most of the tree: precompiled once it costs about 1 s (int8_calibration.cc: 8.7 s -> 2.6 s;
# the tree's cold build on 2 cores: 7 minutes), in the normal build, the ASan one and the container
# image's alike. GCC and Clang use a precompiled header only when it was built with the same
# position-independence, and <ATen/Parallel.h> reads differently under OpenMP, so there is one
# precompiled header per (PIC, OpenMP) kind, each built by a donor target that compiles nothing
# else; every project target that sees LibTorch's headers reuses its kind's. A macro defined for a
# target but not for its donor makes GCC pass the header over (with a warning) when the header
# tests that macro: gRPC's pkg-config flags (Abseil's) define NOMINMAX, a Windows-only macro, so
# donors and the targets reusing them all define it. Off with -DLONGQA_PCH=OFF.
option(LONGQA_PCH "Precompile LibTorch's <ATen/ATen.h> for the targets that see it" ON)

# Project targets register here (longqa_library, longqa_executable, longqa_test).
function(longqa_register_target target)
  set_property(GLOBAL APPEND PROPERTY LONGQA_TARGETS ${target})
endfunction()

# Whether linking ITEM brings LibTorch's headers: it is longqa_torch, or a target whose usage
# requirements (its PUBLIC and INTERFACE links, at any depth) carry longqa_torch. Remembered per
# target; private links of a static library ($<LINK_ONLY:...>) carry no headers and are skipped.
function(_longqa_carries_torch item out)
  if(item STREQUAL "longqa_torch")
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET "${item}")
    set(${out} FALSE PARENT_SCOPE)
    return()
  endif()
  get_property(known GLOBAL PROPERTY "LONGQA_CARRIES_TORCH_${item}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "LONGQA_CARRIES_TORCH_${item}")
    set(${out} ${answer} PARENT_SCOPE)
    return()
  endif()
  get_target_property(libs "${item}" INTERFACE_LINK_LIBRARIES)
  _longqa_any_carries_torch("${libs}" answer)
  set_property(GLOBAL PROPERTY "LONGQA_CARRIES_TORCH_${item}" ${answer})
  set(${out} ${answer} PARENT_SCOPE)
endfunction()

# Whether any item of the link list LIBS brings LibTorch's headers (above).
function(_longqa_any_carries_torch libs out)
  foreach(lib IN LISTS libs)
    _longqa_carries_torch("${lib}" found)
    if(found)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

function(_longqa_pch_donor name pic openmp)
  add_library(${name} OBJECT "${CMAKE_SOURCE_DIR}/cmake/torch_pch.cc")
  target_link_libraries(${name} PRIVATE longqa_torch)
  target_compile_options(${name} PRIVATE ${LONGQA_WARNINGS})
  target_compile_definitions(${name} PRIVATE NOMINMAX)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ${pic})
  if(openmp)
    longqa_use_openmp(${name})
  endif()
  target_precompile_headers(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:<ATen/ATen.h$<ANGLE-R>>")
endfunction()

# Called once every target exists (the end of the top-level CMakeLists.txt).
function(longqa_use_torch_pch)
  if(NOT LONGQA_PCH)
    return()
  endif()
  get_property(targets GLOBAL PROPERTY LONGQA_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(libs ${target} LINK_LIBRARIES)
    _longqa_any_carries_torch("${libs}" sees_torch)
    if(NOT sees_torch)
      continue()
    endif()
    get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
    get_target_property(openmp ${target} LONGQA_OPENMP)
    if(NOT pic)
      set(pic OFF)
    endif()
    if(NOT openmp OR NOT TARGET OpenMP::OpenMP_CXX)
      set(openmp OFF)
    endif()
    set(donor "longqa_torch_pch_pic_${pic}_openmp_${openmp}")
    if(NOT TARGET ${donor})
      _longqa_pch_donor(${donor} ${pic} ${openmp})
    endif()
    target_precompile_headers(${target} REUSE_FROM ${donor})
    target_compile_definitions(${target} PRIVATE NOMINMAX)
  endforeach()
endfunction()
