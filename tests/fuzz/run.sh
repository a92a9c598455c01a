#!/usr/bin/env bash
# Builds the libFuzzer targets (Clang; the tree instrumented with ASan+UBSan) in BUILD (default
# build-asan, shared with tests/sanitize/run.sh address) and runs each for SECONDS (default 60) from its seed corpus (tests/fuzz/corpus/
# <target>, copied: the seeds in git stay as they are), printing one line a target: executions,
# corpus size, coverage. Exit 1 when a target crashes, leaks or fails a check; its input is then
# in BUILD/fuzz-artifacts/.
# Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD:-$src/build-asan}"
seconds="${1:-60}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(tokenize_text_fuzzer tokenizer_json_fuzzer safetensors_fuzzer model_config_fuzzer
           decode_fuzzer answer_request_fuzzer jsonl_fuzzer)
fi
"$src/tests/sanitize/configure.sh" address "$build"
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
mkdir -p "$build/fuzz-artifacts"
# LibTorch, OpenBLAS and protobuf are not instrumented; OpenMP threads are not wanted here.
export OMP_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
fail=0
for target in "${targets[@]}"; do
  corpus="$(mktemp -d)"
  cp "$src/tests/fuzz/corpus/$target"/* "$corpus/"
  log="$build/fuzz-artifacts/$target.log"
  if "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=4096 \
      -timeout=30 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" \
      "$corpus" >"$log" 2>&1; then
    outcome=ok
  else
    outcome=FAILED
    fail=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-24s %-6s %10s executions in %ss, coverage %s edges, corpus %s -> %s files\n' \
    "$target" "$outcome" "${runs:-?}" "$seconds" "${cov:-?}" \
    "$(ls "$src/tests/fuzz/corpus/$target" | wc -l)" "$(ls "$corpus" | wc -l)"
  [[ $outcome == ok ]] || tail -40 "$log"
  rm -rf "$corpus"
done
exit "$fail"
