#!/usr/bin/env bash
# Runs lctx's ARM64 build (scripts/build-arm64.sh, into build-arm64/) under Debian's qemu-user: the kernel,
# model (golden logits) and context suites, each at the ARM kernel levels, on two emulated CPUs:
#   qemu-aarch64 -cpu cortex-a53   armv8.0 (NEON, no dotprod, no i8mm): the scalar and neon levels, and the
#                                  dotprod level's copy must say it cannot run there;
#   qemu-aarch64 -cpu max          every feature qemu has (dotprod, i8mm): the dotprod and i8mm levels.
# Each run checks which level the CPU reports (LCTX_EXPECT_DETECTED, tests/isa_level.cpp) and runs the level
# LCTX_ISA asks for. The two CPUs' runs go side by side (two qemu processes: one per core of a 2-core host).
#
#   scripts/test-arm64.sh          the full run: builds test_kernels, test_model, test_context and runs every
#                                  test of them at every level (long under emulation: an hour and more)
#   scripts/test-arm64.sh --ci     CI's subset (cross build included, cold: see docs/BENCH.md's ARM section):
#                                  builds test_kernels and test_model only. The kernel suites on the max CPU
#                                  at i8mm, less the scalar and neon instances of the suites parameterized by
#                                  level (those test every level the CPU has whatever LCTX_ISA says; the
#                                  scalar one is portable code that x86 CI runs); the neon instances on the
#                                  Cortex-A53 (where no dotprod/i8mm instruction may reach them); the golden
#                                  logits and greedy tokens of the shipped model at neon (A53) and i8mm (max)
#   scripts/test-arm64.sh --no-build ...   runs what build-arm64/ holds
# Prints one line per run and closes with "N passed, N failed"; exits 1 when any run failed or hung (each run
# is killed after LCTX_ARM64_RUN_TIMEOUT seconds, 900 by default).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${LCTX_ARM64_BUILD_DIR:-$root/build-arm64}"
mode=full
do_build=1
for a in "$@"; do
  case "$a" in
    --ci) mode=ci ;;
    --no-build) do_build=0 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "test-arm64: unknown argument $a" >&2; exit 2 ;;
  esac
done

if [ "$mode" = ci ]; then
  targets="test_kernels test_model"
else
  targets="test_kernels test_model test_context"
fi
if [ "$do_build" = 1 ]; then
  LCTX_BUILD_TARGETS="$targets" LCTX_ARM64_BUILD_DIR="$build" "$root/scripts/build-arm64.sh"
fi
qemu=$(command -v qemu-aarch64 || true)
[ -n "$qemu" ] || { echo "test-arm64: qemu-aarch64 is missing (scripts/build-arm64.sh installs qemu-user)" >&2; exit 1; }
# The loader prefix whose ld-linux matches the libc the binaries load (a mismatched pair hangs every
# pthread_create: scripts/arm64-ld-prefix.sh).
sysroot=$("$root/scripts/arm64-ld-prefix.sh")
run_timeout=${LCTX_ARM64_RUN_TIMEOUT:-900}

# CI's kernel subsets (see the header).
# On the max CPU at i8mm: the suites parameterized by level as their dotprod and i8mm instances, the others
# once (less the thread pool's tests, which test no level and under emulation only slow the run), in two
# processes, one per core, so that the two sides take about as long: the dotprod instances and the attention
# suite beside the A53's runs, the rest on the other core. Two attention tests are left to the full run: under
# emulation they took 74 of the suite's 92 s (their reference sums in double for 8 interleaved sequences);
# what they test is the portable attention code, which the x86 stages run at every level, and the ARM kernels
# they reach (each cache type's gemm, the row ops) are checked per ARM level by GemmIsaTest and OpsTest.
kernel_filter_ci_max='-*_scalar:*_neon:*_dotprod:ThreadPoolTest.*:AttentionTest.*'
kernel_filter_ci_max_dotprod='*_dotprod:AttentionTest.*:-AttentionTest.InterleavedSequencesOverTheirVisibleCells:AttentionTest.DecodeOverValuesByRowsWithEveryCellVisible'
kernel_filter_ci_a53='*_neon:IsaLevel.*:DotDispatch.*'
# CI's model subset: the shipped model's golden logits and greedy tokens (small inputs).
model_filter_ci='*Golden*Logits*:*GoldenGreedy*:IsaLevel.*'

logdir=$(mktemp -d "${TMPDIR:-/tmp}/lctx-arm64.XXXXXX")
results="$logdir/results"
: >"$results"
# run CPU LEVEL EXPECT BINARY FILTER [PART]: one gtest process under qemu; EXPECT is the level the CPU must
# report; PART names a share of a binary's tests run in a process of its own.
run() {
  local cpu=$1 level=$2 expect=$3 bin=$4 filter=$5 part=${6:-}
  local name="$bin${part:+ ($part)} @ $level on $cpu"
  local log="$logdir/$bin${part:+.$part}.$level.$cpu.log"
  local t0=$SECONDS
  if QEMU_LD_PREFIX="$sysroot" LCTX_ISA="$level" LCTX_EXPECT_DETECTED="$expect" \
     timeout -s KILL "$run_timeout" "$qemu" -cpu "$cpu" -L "$sysroot" "$build/bin/$bin" --gtest_filter="$filter" \
     --gtest_brief=1 >"$log" 2>&1; then
    echo "ok    $name ($((SECONDS - t0)) s, $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log" | head -1))" |
      tee -a "$results"
  else
    { echo "FAIL  $name ($((SECONDS - t0)) s, exit $?): $log"; tail -30 "$log" | sed 's/^/      /'; } | tee -a "$results"
  fi
}
# A copy above the CPU's level must report itself skipped (not run a lower level's code under its name).
run_skips() {
  local cpu=$1 level=$2 expect=$3 bin=$4
  local log="$logdir/$bin.$level.$cpu.skip.log"
  if QEMU_LD_PREFIX="$sysroot" LCTX_ISA="$level" LCTX_EXPECT_DETECTED="$expect" \
     timeout -s KILL "$run_timeout" "$qemu" -cpu "$cpu" -L "$sysroot" "$build/bin/$bin" --gtest_filter='IsaLevel.*' \
     >"$log" 2>&1 && grep -q "asks for a level this CPU lacks (its best is $expect)" "$log"; then
    echo "ok    $bin @ $level on $cpu reports itself skipped (best: $expect)" | tee -a "$results"
  else
    { echo "FAIL  $bin @ $level on $cpu did not report a skip: $log"; tail -10 "$log" | sed 's/^/      /'; } |
      tee -a "$results"
  fi
}

echo "test-arm64: $mode run on $(basename "$build")/ under $("$qemu" --version | head -1), loader prefix $sysroot"
if [ "$mode" = ci ]; then
  (
    run max i8mm i8mm test_kernels "$kernel_filter_ci_max"
    run max i8mm i8mm test_model "$model_filter_ci"
  ) &
  (
    run max i8mm i8mm test_kernels "$kernel_filter_ci_max_dotprod" "dotprod instances, attention"
    run cortex-a53 neon neon test_kernels "$kernel_filter_ci_a53"
    run_skips cortex-a53 dotprod neon test_kernels
    run cortex-a53 neon neon test_model "$model_filter_ci"
  ) &
  wait
else
  for bin in test_kernels test_model test_context; do
    (
      for level in dotprod i8mm; do run max "$level" i8mm "$bin" '*'; done
    ) &
    (
      for level in scalar neon; do run cortex-a53 "$level" neon "$bin" '*'; done
      run_skips cortex-a53 dotprod neon "$bin"
    ) &
    wait
  done
fi
passed=$(grep -c '^ok ' "$results" || true)
failed=$(grep -c '^FAIL ' "$results" || true)
echo "test-arm64: logs in $logdir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
