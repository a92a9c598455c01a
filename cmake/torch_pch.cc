// The donor of a precompiled <ATen/ATen.h> (cmake/torch_pch.cmake): CMake builds the header for
// this target, and the project's LibTorch targets reuse it. Nothing is compiled from here.
