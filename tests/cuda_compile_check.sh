#!/usr/bin/env bash
# Compiles every kernels/**/*.cu for sm_80 and sm_90 (object files only; nothing runs).
# Exit 77 (CTest: skipped) when nvcc is absent, so a skip is visible, never a silent pass.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [ ! -x "$nvcc" ]; then
  echo "cuda_compile_check: SKIPPED: nvcc not found"
  exit 77
fi
mapfile -t sources < <(find "$root/kernels" -name '*.cu' | sort)
if [ "${#sources[@]}" -eq 0 ]; then
  echo "cuda_compile_check: no .cu files under kernels/" >&2
  exit 1
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for src in "${sources[@]}"; do
  obj="$out/$(basename "$src").o"
  "$nvcc" -std=c++17 -O2 -I"$root" \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -Xcompiler -Wall,-Wextra -Werror all-warnings -c "$src" -o "$obj"
  echo "compiled ${src#$root/} for sm_80, sm_90"
done
echo "cuda_compile_check: ${#sources[@]} files OK"
