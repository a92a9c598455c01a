#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU (driver for CUDA 13): builds longqa against the
# CUDA LibTorch of pip's torch wheel and runs the GPU tests (every kernel op on CUDA against the
# CPU reference, the whole model on CUDA against CPU) and the benchmarks on the GPU.
# Usage: tests/gpu/run.sh            (results in build-cuda/gpu-results.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/install-deps.sh
[ -x .venv-gpu/bin/python ] || python3 -m venv .venv-gpu
.venv-gpu/bin/pip install -q "torch==2.15.0"
torch_dir="$(.venv-gpu/bin/python -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
lib="$torch_dir/lib"
# The explicit library paths keep CMake from picking up Debian's CPU libtorch from /usr/lib.
cmake -S . -B build-cuda -G Ninja -DLONGQA_WITH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="${NVCC:-/usr/local/cuda/bin/nvcc}" \
  -DCMAKE_PREFIX_PATH="$torch_dir/share/cmake" -DTORCH_LIBRARY="$lib/libtorch.so" \
  -Dc10_LIBRARY="$lib/libc10.so" -DC10_CUDA_LIBRARY="$lib/libc10_cuda.so" \
  -DCAFFE2_NVRTC_LIBRARY="$lib/libcaffe2_nvrtc.so"
cmake --build build-cuda
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  ctest --test-dir build-cuda -R "KernelOpTest|GpuEngineTest" --output-on-failure
  build-cuda/bench/longqa-encoder-bench --device=cuda --max_tokens=32768
} 2>&1 | tee build-cuda/gpu-results.txt
