#!/usr/bin/env bash
# The test suite under sanitizers (docs/reliability.md, "Sanitizers"):
#   address: the tree built with ASan+UBSan in build-asan (Clang, RelWithDebInfo, no benches, no
#            tcmalloc; the same build as the fuzz targets': tests/sanitize/configure.sh); the unit
#            tests and the C++ integration tests (real server and CLI processes, themselves
#            instrumented). Left out: the Python and deploy tests (they run
#            the normal build), the checks that measure memory or the allocator
#            (memory_estimate_test, ManyOneLineParagraphsDoNotBlowMemory: ASan's shadow and
#            quarantine are counted; AllocatesThroughTcmallocWhenBuiltWithIt, allocator_test: no
#            tcmalloc here), and DemoModelTest on models/demo (it checks the trained model's
#            answers, which the normal build checks; under ASan its six demo tests took 11 minutes
#            of CI's 90, int8 calibration at load 3-4 minutes each; the scratch_etc and etc_minilm
#            variants stay (fp32, short documents: the pooled entity path on trained weights),
#            and int8 and bf16 serve under ASan in ServerOptionsTest).
#            The tests run one at a time, as they always have (see jobs below): the drain and
#            hostile-client tests bound times, and two instrumented servers side by side were
#            never tried against those bounds.
#   thread:  TSan in build-tsan on the project's own concurrent code without gRPC: batcher_test
#            (the scheduler, its queues, workers, sweeps and drain, with a fake engine) and the
#            metrics it drives. Debian's gRPC, Abseil and LibTorch are not instrumented, so TSan
#            cannot see their synchronisation: tests that run them are not meaningful here.
# Usage: tests/sanitize/run.sh address|thread
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
kind="${1:?address or thread}"
# Counted before OMP_NUM_THREADS=1 is exported below: nproc honours it, and until session 46
# both builds here ran on one core of two (20 and 8.5 minutes of CI's 90).
jobs="$(nproc)"
case "$kind" in
  address) build="${BUILD:-$src/build-asan}" ;;
  thread) build="${BUILD:-$src/build-tsan}" ;;
  *) echo "usage: $0 address|thread" >&2; exit 2 ;;
esac
"$src/tests/sanitize/configure.sh" "$kind" "$build"
export OMP_NUM_THREADS=1
if [[ $kind == address ]]; then
  cmake --build "$build" -j "$jobs"
  # allocator_may_return_null: EngineTest's 256 TiB allocation must fail as it does in
  # production (an exception the engine turns into RESOURCE_EXHAUSTED), not abort ASan.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:allocator_may_return_null=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  cd "$build"
  ctest --output-on-failure -j 1 --timeout 1200 -L "unit|integration" -LE python \
    -E "memory_estimate_test|ManyOneLineParagraphsDoNotBlowMemory|AllocatesThroughTcmalloc|allocator_test|DemoModelTest.*/demo_"
else
  cmake --build "$build" -j "$jobs" --target batcher_test
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
  "$build/tests/unit/batcher_test"
fi
