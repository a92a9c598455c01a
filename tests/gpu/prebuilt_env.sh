# shellcheck shell=bash
# Sourced by tests/gpu/run_prebuilt.sh and train_prebuilt.sh with the tarball of
# tests/gpu/stage_prebuilt.sh as $1: unpacks it into $pkg (removed on exit) and sets $libs, the
# library path its programs need there (the package's own libraries, then the machine's pip
# torch and its NVIDIA libraries, then CUDA's), and run(), which runs a program with it.
# Env PYTHON: the python that has the CUDA torch (default python3).
pkg="$(mktemp -d)"
trap 'rm -rf "$pkg"' EXIT
tar -C "$pkg" -xJf "$1"
py="${PYTHON:-python3}"
torch="$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
nvidia_libs="$(find "$(dirname "$torch")/nvidia" -maxdepth 3 -name lib -type d 2>/dev/null | tr '\n' :)"
# Only the programs see these libraries (python keeps the machine's own).
libs="$pkg/lib:$torch/lib:${nvidia_libs}/usr/local/cuda/lib64"
run() { LD_LIBRARY_PATH="$libs" "$@"; }
