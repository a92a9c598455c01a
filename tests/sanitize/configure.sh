#!/usr/bin/env bash
# Configures an instrumented build folder; shared by tests/fuzz/run.sh and tests/sanitize/run.sh.
#   address: Clang, the tree with ASan+UBSan and libFuzzer coverage (LONGQA_FUZZ): one build
#            serves the fuzz targets and the test suite under ASan (one 25-minute build, not two)
#   thread:  GCC with TSan (LONGQA_SANITIZE=thread)
# Usage: tests/sanitize/configure.sh address|thread BUILD_DIR
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
kind="$1"; build="$2"
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLONGQA_BUILD_BENCHMARKS=OFF
        -DLONGQA_WITH_CUDA=OFF)
case "$kind" in
  address) cmake -S "$src" -B "$build" "${common[@]}" -DCMAKE_C_COMPILER=clang \
             -DCMAKE_CXX_COMPILER=clang++ -DLONGQA_FUZZ=ON -DLONGQA_BUILD_TESTS=ON >/dev/null ;;
  thread) cmake -S "$src" -B "$build" "${common[@]}" -DLONGQA_SANITIZE=thread -DLONGQA_BUILD_TESTS=ON >/dev/null ;;
  *) echo "usage: $0 address|thread BUILD_DIR" >&2; exit 2 ;;
esac
