#!/usr/bin/env bash
# For a GPU machine that can neither install packages nor reach a network but has NVIDIA's driver
# and pip's CUDA torch (the machines the workplace lends): builds the CUDA binaries HERE against
# the same torch wheel and packs them, with the shared libraries such a machine may lack (gRPC,
# protobuf, Abseil, ICU, ... from Debian), into one tarball. tests/gpu/run_prebuilt.sh runs the
# GPU checks there from it. The CUDA libraries, LibTorch, glibc and libstdc++ are the machine's.
# LibTorch's own CUDA dependencies (cuSPARSELt, NVSHMEM, cuFile: pip packages there) need not
# exist here: the link leaves their symbols to the machine that runs the programs, and the test
# programs are not run here to list their tests (PRE_TEST discovery).
# Usage: tests/gpu/stage_prebuilt.sh OUT_DIR   (env TORCH_VERSION, default 2.11.0: the version
# the GPU machine's python3 has, so the binaries link the same LibTorch they will load there;
# TORCH_DIR: an unpacked wheel's torch/ folder to use instead of downloading one; its
# include/google is deleted)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
version="${TORCH_VERSION:-2.11.0}"
wheels="$root/build-cuda/torch-wheel"
torch="${TORCH_DIR:-$wheels/torch}"
if [ ! -f "$torch/version.py" ]; then
  mkdir -p "$wheels"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d "$wheels" "torch==$version"
  unzip -q -o "$wheels"/torch-"$version"-*.whl 'torch/*' -d "$wheels"
fi
# The wheel carries its own protobuf's headers, which would hide the system protobuf that gRPC
# and the generated code were built with; LibTorch's own headers never include them.
rm -rf "$torch/include/google"
lib="$torch/lib"
cmake -S "$root" -B "$root/build-cuda" -G Ninja -DLONGQA_WITH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="${NVCC:-/usr/local/cuda/bin/nvcc}" \
  -DCMAKE_PREFIX_PATH="$torch/share/cmake" -DTORCH_LIBRARY="$lib/libtorch.so" \
  -Dc10_LIBRARY="$lib/libc10.so" -DC10_CUDA_LIBRARY="$lib/libc10_cuda.so" \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
  -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST > /dev/null
programs=(tests/unit/kernels_test tests/gpu/gpu_engine_test bench/longqa-encoder-bench
          server/longqa-server client/longqa tools/longqa-random-model train/longqa-train)
cmake --build "$root/build-cuda" --target "${programs[@]##*/}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for p in "${programs[@]}"; do
  cp "$root/build-cuda/$p" "$stage/bin/"  # with symbols: a crash there gets a readable backtrace
done
# Every library the programs load except the ones the GPU machine brings: LibTorch and its
# CUDA libraries (the torch wheel there), CUDA's (its toolkit), glibc and the C++ runtime.
for p in "$stage"/bin/*; do ldd "$p"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
  sort -u | while read -r name path; do
    case "$path" in
      "$torch"/* | /usr/local/cuda* | */libcuda.so* | */libnv*) continue ;;
    esac
    case "$name" in
      libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | libstdc++.so.* | \
        libgcc_s.so.* | libcud* | libcublas* | libnccl*) continue ;;
    esac
    cp -L "$path" "$stage/lib/$name"
  done
python3 -c "exec(open('$torch/version.py').read()); print(__version__, git_version)" \
  > "$stage/torch-built-against.txt"
git -C "$root" rev-parse HEAD > "$stage/commit.txt"
tar -C "$stage" -cJf "$out/longqa-gpu.tar.xz" .
ls -l "$out/longqa-gpu.tar.xz"
