#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite. With --sanitize (what CI runs) it then builds the suite
# again with clang under AddressSanitizer + UndefinedBehaviorSanitizer, runs it, and runs each libFuzzer
# harness for a bounded time (LCTX_FUZZ_SECONDS, default 30) from the same instrumented build. With --tsan
# (CI too) it builds the suites whose code runs on several threads (kernels with the thread pool, context,
# the server's HTTP threads beside its decode loop) under ThreadSanitizer and runs them at the CPU's best
# level (tests/tsan.supp says what it suppresses and why). With --arm64 (CI too) it cross-builds the kernel and
# model suites for ARM64 and runs CI's subset of them under qemu-user at the ARM levels (scripts/test-arm64.sh
# --ci; the full run is scripts/test-arm64.sh).
# After each ctest run a summary counts the skipped tests by reason (scripts/check-skips.py); with
# --strict-skips (.ci/run passes it) or CI=true, a skip whose reason tests/skip-allowlist.txt does not name
# fails the run.
#   scripts/test.sh [--sanitize] [--tsan] [--arm64] [--strict-skips]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Each stage prints its wall time, so a slow CI run shows where the time went.
t_start=$SECONDS
stage_t0=$SECONDS
stage_name=""
# The CPU seconds (user + sys) of this script's finished child processes so far (cutime + cstime of
# /proc/PID/stat, in clock ticks): beside a stage's wall time it shows whether the stage kept both cores busy.
clk_tck=$(getconf CLK_TCK)
cpu_seconds() {
  awk -v tck="$clk_tck" '{ sub(/^.*\) /, ""); printf "%d", ($14 + $15) / tck }' "/proc/$$/stat"
}
stage_cpu0=0
stage() {
  if [ -n "$stage_name" ]; then
    local cpu
    cpu=$(cpu_seconds)
    echo "test.sh: stage '$stage_name' took $((SECONDS - stage_t0)) s ($((cpu - stage_cpu0)) CPU s)"
  fi
  stage_name="$1"
  stage_t0=$SECONDS
  stage_cpu0=$(cpu_seconds)
  [ -n "$stage_name" ] && echo "test.sh: stage '$stage_name'..."
  return 0
}
# A hung test fails within minutes instead of eating CI's budget (ctest's default is 1500 s per test).
# Sanitizer builds run several times slower, so they get a longer limit.
timeout_release=${LCTX_TEST_TIMEOUT:-300}
timeout_sanitized=${LCTX_TEST_TIMEOUT_SANITIZED:-900}
sanitize=0
tsan=0
arm64=0
strict_skips=0
[ "${CI:-}" = true ] && strict_skips=1
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --tsan) tsan=1 ;;
    --arm64) arm64=1 ;;
    --strict-skips) strict_skips=1 ;;
    *) echo "usage: $0 [--sanitize] [--tsan] [--arm64] [--strict-skips]" >&2; exit 2 ;;
  esac
done
# Runs ctest over a build folder (further arguments go to ctest), then counts its skips by reason.
run_ctest() {
  local dir=$1
  shift
  local junit="$dir/ctest-junit.xml"
  local rc=0
  rm -rf "$dir/gtest-xml"  # shard mode's per-shard gtest reports (LCTX_TEST_SHARDS), read for the skip reasons
  ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" --output-junit "$junit" "$@" || rc=$?
  local strict=()
  [ $strict_skips = 1 ] && strict=(--strict)
  if [ -f "$junit" ]; then
    /usr/bin/python3 "$root/scripts/check-skips.py" "${strict[@]}" --gtest-xml "$dir/gtest-xml" "$junit" "$stage_name" ||
      rc=1
  fi
  return $rc
}
# The three builds compile in unity batches (LCTX_UNITY, CMakeLists.txt): fewer, larger translation units, so the
# shared headers are parsed once per batch (README, the measured cut). LCTX_UNITY=OFF turns it off.
unity=${LCTX_UNITY:-ON}
stage "release build"
"$root/scripts/build.sh" -DLCTX_UNITY="$unity"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# The sanitizer builds keep line tables only (file:line in every report) instead of full debug info, which
# cuts their compile time by about a fifth on this code (clang, measured per file); a debugger wants -g.
sanitized_flags=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG"
                 -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG")
# The sanitizer stages run each test binary as a few processes that share its tests (LCTX_TEST_SHARDS, gtest's
# sharding; CMakeLists.txt says why), not one process per test as the release stage does: a sanitized process
# is slow to start and reloads its suite's fixtures.
shards=${LCTX_TEST_SHARDS:-2}
stage "release tests"
# The level copy of the CPU's best kernel level repeats the unprefixed tests (which run at that level):
# left out here, run by a plain `ctest` (lctx --version names the level).
best=$("$root/build/bin/lctx" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p')
skip_best=()
[ -n "$best" ] && skip_best=(-E "^${best}\\.")
# The ARM64 cross toolchain, qemu-user and the :arm64 libraries install beside the release tests (mostly
# download and unpacking, while the tests leave some of the 2 cores idle), after the release build: an install
# of the arm64 headers may touch the shared /usr/include files a compile is reading.
arm_install_pid=""
arm_install_log="$root/build-arm64/install.log"
if [ $arm64 = 1 ]; then
  mkdir -p "$root/build-arm64"
  "$root/scripts/build-arm64.sh" --install-only >"$arm_install_log" 2>&1 &
  arm_install_pid=$!
fi
run_ctest "$root/build" --timeout "$timeout_release" "${skip_best[@]}"
if [ $sanitize = 1 ] || [ $tsan = 1 ]; then
  "$root/scripts/setup.sh"
fi
# The kernel tests that call kernels directly on one thread are left out under TSan (nothing for it to see there).
tsan_filter='-*/GemmInterleavedTest.*:*/GemmIsaTest.*:*/DotTest.*:*/QuantizeActTest.*:*/FloatActTest.*'
tsan_build() {
  cmake -S "$root" -B "$root/build-tsan" $("$root/scripts/generator.sh" "$root/build-tsan") -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLCTX_TSAN=ON -DLCTX_BUILD_BENCH=OFF -DLCTX_UNITY="$unity" \
        -DLCTX_TEST_SHARDS="$shards" -DLCTX_TEST_SHARD_FILTER="$tsan_filter" "${sanitized_flags[@]}" \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
  cmake --build "$root/build-tsan" -j"$(nproc)" --target test_kernels test_context test_server
}
tsan_build_pid=""
tsan_build_log=""
# The ARM64 kernel and model suites, cross-built once the toolchain is in (the install began beside the
# release tests). With --sanitize and --tsan they build before the fuzz smoke run and run under qemu beside
# the TSan build.
arm64_build() {
  stage "ARM64 cross build"
  if ! wait "$arm_install_pid"; then
    cat "$arm_install_log"
    echo "test.sh: installing the ARM64 toolchain failed" >&2
    exit 1
  fi
  LCTX_BUILD_TARGETS="test_kernels test_model" "$root/scripts/build-arm64.sh" -DLCTX_UNITY="$unity"
}
arm64_build_done=0
# The qemu runs begun beside the TSan build end before the TSan tests start (those time a server's drain).
arm64_tests_wait() {
  stage "ARM64 tests (qemu)"
  echo "test.sh: (begun beside the TSan build; its output follows)"
  local rc=0
  wait "$arm_tests_pid" || rc=$?
  cat "$arm_tests_log"
  [ $rc = 0 ] || { echo "test.sh: the ARM64 tests failed" >&2; exit 1; }
  arm64_tests_waited=1
}
arm64_tests_waited=0
arm_tests_pid=""
arm_tests_log=""
if [ $sanitize = 1 ]; then
  # One instrumented library serves both the tests and the fuzz harnesses: with LCTX_FUZZ on, fuzz/CMakeLists.txt
  # adds libFuzzer's coverage hooks (-fsanitize=fuzzer-no-link, served by the ASan runtime in test binaries) to
  # the library's objects alone. The tests, the server and the CLI are left without them (set globally they cost
  # a sixth of a test file's compile time and guide no fuzzer).
  stage "ASan+UBSan build"
  cmake -S "$root" -B "$root/build-asan" $("$root/scripts/generator.sh" "$root/build-asan") -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLCTX_SANITIZE=ON -DLCTX_FUZZ=ON \
        -DLCTX_BUILD_BENCH=OFF -DLCTX_UNITY="$unity" \
        -DLCTX_TEST_SHARDS="$shards" "${sanitized_flags[@]}" \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_C_FLAGS= -DCMAKE_CXX_FLAGS= "${launcher[@]}" >/dev/null  # empty: a folder configured with the hooks drops them
  cmake --build "$root/build-asan" -j"$(nproc)"
  # Every suite at the CPU's best level (the unprefixed copies), and the kernel suite at the scalar level too;
  # the other level copies run in the release pass above. The kernel suites sweep every level in one process
  # (each vector path and the scalar reference under the sanitizers), so the scalar copies of the model,
  # context and LoRA suites (labels scalar-LAYER), a quarter of this stage's time, would only run the same
  # kernels again behind code that is the same at every level.
  stage "ASan+UBSan tests"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest "$root/build-asan" --timeout "$timeout_sanitized" -LE '^((avx2|avx512|amx)(-.*)?|scalar-.*)$'
  if [ $arm64 = 1 ]; then
    arm64_build
    arm64_build_done=1
  fi
  stage "fuzz smoke run"
  # A bounded smoke run that leaves the committed corpus as it is. Each harness runs for a fixed time on one
  # thread and the run kept the 2 cores only 60% busy (88 CPU s in 71 s), so the TSan build starts beside it
  # (its output kept in a log, shown when it fails); the fuzz run's length stays what it was.
  if [ $tsan = 1 ]; then
    mkdir -p "$root/build-tsan"
    tsan_build_log="$root/build-tsan/tsan-build.log"
    tsan_build >"$tsan_build_log" 2>&1 &
    tsan_build_pid=$!
  fi
  LCTX_FUZZ_KEEP=0 LCTX_FUZZ_BUILD="$root/build-asan" "$root/scripts/fuzz.sh" "${LCTX_FUZZ_SECONDS:-30}"
  # The ARM64 runs under qemu go beside the rest of the TSan build: on their own they left a core idle a third
  # of the time (their two lanes end apart), and neither they nor a compile depend on timing (the fuzz run's
  # per-input limit does, so they wait for it).
  if [ $arm64 = 1 ] && [ -n "$tsan_build_pid" ]; then
    arm_tests_log="$root/build-arm64/test-arm64.log"
    "$root/scripts/test-arm64.sh" --ci --no-build >"$arm_tests_log" 2>&1 &
    arm_tests_pid=$!
  fi
fi
if [ $tsan = 1 ]; then
  stage "TSan build"
  if [ -n "$tsan_build_pid" ]; then
    echo "test.sh: (begun beside the fuzz smoke run; its output: $tsan_build_log)"
    if ! wait "$tsan_build_pid"; then
      tail -50 "$tsan_build_log"
      echo "test.sh: the TSan build failed (whole output: $tsan_build_log)" >&2
      exit 1
    fi
  else
    tsan_build
  fi
  [ -z "$arm_tests_pid" ] || arm64_tests_wait
  # The unprefixed copies only (labelled by layer; the kernel suite's scalar copy runs the same threads over
  # other kernels), less tsan_filter's tests.
  stage "TSan tests"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp \
    run_ctest "$root/build-tsan" --timeout "$timeout_sanitized" -L '^(kernels|context|server)$'
fi
if [ $arm64 = 1 ]; then
  if [ -n "$arm_tests_pid" ]; then
    [ $arm64_tests_waited = 1 ] || arm64_tests_wait
  else
    [ $arm64_build_done = 1 ] || arm64_build
    stage "ARM64 tests (qemu)"
    "$root/scripts/test-arm64.sh" --ci --no-build
  fi
fi
stage ""
echo "test.sh: all stages took $((SECONDS - t_start)) s"
