// Marks a kernel's core as callable from host and device code: the CPU launcher and the CUDA
// launcher run the very same function, so CPU tests exercise the GPU's logic.
#pragma once

#if defined(__CUDACC__)
#define LONGQA_HD __host__ __device__
#else
#define LONGQA_HD
#endif
