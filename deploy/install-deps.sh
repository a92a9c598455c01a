#!/usr/bin/env bash
# Installs everything longqa's build, tests and tools need on Debian 12 (bookworm), idempotently:
# Debian packages, sentencepiece built from Debian's source against the system protobuf
# (the prebuilt libsentencepiece0 crashes beside gRPC/LibTorch: ../shared/ENVIRONMENT.md), and the
# Python test venv (.venv). Safe to run again: finished steps are skipped.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
third_party="${LONGQA_THIRD_PARTY:-$root/third_party}"
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi

packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates curl dpkg-dev
  libtorch-dev libopenblas0-openmp
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus python3 python3-venv clang-format openssl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  log="$(mktemp)"
  if ! { $sudo_cmd apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
           "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log"; echo "install-deps: apt-get failed" >&2; exit 1
  fi
  rm -f "$log"
fi

# The reference BLAS makes LibTorch 13-17x slower; make sure OpenBLAS (OpenMP) is the provider.
if update-alternatives --list libblas.so.3-x86_64-linux-gnu >/dev/null 2>&1; then
  blas=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu | grep openblas-openmp | head -n1 || true)
  if [ -n "$blas" ]; then $sudo_cmd update-alternatives --set libblas.so.3-x86_64-linux-gnu "$blas" >/dev/null; fi
  lapack=$(update-alternatives --list liblapack.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas-openmp | head -n1 || true)
  if [ -n "$lapack" ]; then $sudo_cmd update-alternatives --set liblapack.so.3-x86_64-linux-gnu "$lapack" >/dev/null; fi
fi

# sentencepiece, static, against the system protobuf.
spm_prefix="$third_party/sentencepiece"
if [ ! -f "$spm_prefix/lib/libsentencepiece.a" ]; then
  echo "install-deps: building sentencepiece from Debian's source package"
  if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
     && ! grep -rqs "Types:.*deb-src" /etc/apt/sources.list.d/ 2>/dev/null; then
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        $sudo_cmd tee /etc/apt/sources.list.d/longqa-src.sources >/dev/null
    else
      echo "deb-src http://deb.debian.org/debian bookworm main" |
        $sudo_cmd tee /etc/apt/sources.list.d/longqa-src.list >/dev/null
    fi
    $sudo_cmd apt-get update -qq
  fi
  work="$(mktemp -d)"
  (cd "$work" && apt-get source --download-only sentencepiece >/dev/null 2>&1)
  tar -C "$work" -xf "$(ls "$work"/sentencepiece_*.orig.tar.* | head -n1)"
  src="$(find "$work" -maxdepth 1 -mindepth 1 -type d -name 'sentencepiece*' | head -n1)"
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSPM_USE_BUILTIN_PROTOBUF=OFF -DSPM_ENABLE_SHARED=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_INSTALL_PREFIX="$spm_prefix" >/dev/null
  cmake --build "$work/build" --target sentencepiece-static sentencepiece_train-static >/dev/null
  mkdir -p "$spm_prefix/lib" "$spm_prefix/include"
  cp "$work/build/src/libsentencepiece.a" "$work/build/src/libsentencepiece_train.a" "$spm_prefix/lib/"
  # The generated *.pb.h give SentencePieceText (per-piece byte offsets).
  cp "$src/src/sentencepiece_processor.h" "$src/src/sentencepiece_trainer.h" \
    "$work/build/src/sentencepiece.pb.h" "$work/build/src/sentencepiece_model.pb.h" "$spm_prefix/include/"
  rm -rf "$work"
fi

# Python test tools (never used by the server).
if [ "${LONGQA_SKIP_VENV:-0}" != 1 ]; then
  if [ ! -x "$root/.venv/bin/python" ]; then python3 -m venv "$root/.venv"; fi
  stamp="$root/.venv/.longqa-requirements"
  if ! cmp -s "$root/tests/requirements.txt" "$stamp" 2>/dev/null; then
    "$root/.venv/bin/pip" install -q --upgrade pip
    "$root/.venv/bin/pip" install -q -r "$root/tests/requirements.txt"
    cp "$root/tests/requirements.txt" "$stamp"
  fi
fi
echo "install-deps: done"
