#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# build-fuzz/, then runs each for a bounded time. Any finding (crash, sanitizer report, leak, timeout,
# out-of-memory) fails the script; the reproducer is kept in build-fuzz/findings/<harness>/.
#   scripts/fuzz.sh [--long] [seconds per harness, default 60] [harness ...]
#     harnesses: gguf model_load tokenize state chat grammar json_schema template server_request server_bodies control_vector lora tool_calls
#     --long: an hour per harness (unless seconds are given) in fork mode, which goes on after a finding;
#             the summary gives each harness's finding count.
# The corpus is kept: each run starts from fuzz/corpus/<harness> (committed) and merges into it what it found
# that reaches new code (libFuzzer -merge=1, so the corpus stays minimal for its coverage); commit it.
# LCTX_FUZZ_KEEP=0 leaves fuzz/corpus untouched (CI). scripts/fuzz.sh --minimize rewrites each committed
# corpus as the smallest subset with the same coverage. Harnesses run side by side, LCTX_FUZZ_JOBS at once
# (default: one per core).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
long=0
minimize=0
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1; shift ;;
    --minimize) minimize=1; shift ;;
    *) break ;;
  esac
done
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
elif [ $long = 1 ]; then
  seconds=3600
else
  seconds=60
fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(gguf model_load tokenize state chat grammar json_schema template server_request server_bodies control_vector lora tool_calls)
keep=${LCTX_FUZZ_KEEP:-1}
# LCTX_FUZZ_BUILD names an already configured sanitizer build with LCTX_FUZZ=ON (scripts/test.sh shares
# its ASan build this way, so CI compiles the library once for tests and fuzzing).
build="${LCTX_FUZZ_BUILD:-$root/build-fuzz}"
jobs=${LCTX_FUZZ_BUILD_JOBS:-$(nproc)}

"$root/scripts/setup.sh"

# The top-level CMakeLists.txt builds fuzz/ when LCTX_FUZZ is on. Until it does, a wrapper project in
# build-fuzz/wrapper includes it (through links, so its globs see the real tree) and adds fuzz/ itself.
src="$root"
if ! grep -q "add_subdirectory(fuzz)" "$root/CMakeLists.txt"; then
  src="$build/wrapper"
  mkdir -p "$src"
  for d in "$root"/*; do
    case "$(basename "$d")" in CMakeLists.txt | build*) continue ;; esac
    ln -sfn "$d" "$src/$(basename "$d")"
  done
  cat > "$src/CMakeLists.txt" <<WRAP
cmake_minimum_required(VERSION 3.20)
project(lctx_fuzz_wrapper LANGUAGES C CXX)
include("$root/CMakeLists.txt")
add_subdirectory("$root/fuzz" fuzz)
WRAP
fi

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ -z "${LCTX_FUZZ_BUILD:-}" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLCTX_FUZZ=ON -DLCTX_BUILD_TESTS=OFF \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
fi
targets=()
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
cmake --build "$build" -j"$jobs" "${targets[@]}"

# The seeds are committed; regenerate them (with fuzz_make_seeds) only when the corpus is missing.
if [ ! -d "$root/fuzz/corpus/gguf" ]; then
  cmake --build "$build" -j"$jobs" --target fuzz_make_seeds
  "$root/fuzz/make_corpus.sh" "$build"
fi

# Small, quick runs: 64 KiB inputs for the tokenizer (long texts), whole seed files elsewhere.
declare -A extra=([gguf]="-max_len=65536" [model_load]="-max_len=131072" [tokenize]="-max_len=65536"
                  [state]="-max_len=65536" [chat]="-max_len=65536" [grammar]="-max_len=65536"
                  [json_schema]="-max_len=16384" [template]="-max_len=65536" [server_request]="-max_len=65536" [server_bodies]="-max_len=65536" [control_vector]="-max_len=16384" [lora]="-max_len=65536" [tool_calls]="-max_len=16384")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Findings libFuzzer left in a folder (not its slow-unit reports).
count_findings() { find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
  -o -name 'oom-*' \) | wc -l; }
# One harness: its run, the merge of what it found into the committed corpus, and a summary line and exit
# status in files (harnesses run side by side, each in a subshell).
fuzz_one() {
  local h=$1
  local bin="$build/fuzz/fuzz_$h"
  local seeds="$root/fuzz/corpus/$h"
  local work="$build/corpus/$h"
  local findings="$build/findings/$h"
  mkdir -p "$work" "$findings" "$seeds"
  if [ $minimize = 1 ]; then
    # The smallest subset of the committed corpus with its coverage, in place of it.
    local fresh="$build/corpus-min/$h"
    rm -rf "$fresh" && mkdir -p "$fresh"
    "$bin" -merge=1 ${extra[$h]} "$fresh" "$seeds" >"$build/fuzz_${h}_minimize.log" 2>&1
    rm -rf "$seeds" && mv "$fresh" "$seeds"
    echo "fuzz_$h corpus minimized: $(ls "$seeds" | wc -l) inputs, $(du -sh "$seeds" | cut -f1)" >"$build/fuzz_$h.summary"
    echo 0 >"$build/fuzz_$h.status"
    return 0
  fi
  local before crashes_before
  before=$(ls "$seeds" | wc -l)
  crashes_before=$(count_findings "$findings")
  # New inputs go to the work corpus; the committed seeds are read, and merged into below.
  local mode=()
  [ $long = 1 ] && mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local status=0
  "$bin" "$work" "$seeds" "${mode[@]}" -max_total_time="$seconds" -timeout=25 ${extra[$h]} \
      -artifact_prefix="$findings/" -print_final_stats=1 >"$build/fuzz_$h.log" 2>&1 || status=$?
  local crashes=$(( $(count_findings "$findings") - crashes_before ))
  if [ "$keep" = 1 ]; then
    "$bin" -merge=1 ${extra[$h]} "$seeds" "$work" >"$build/fuzz_${h}_merge.log" 2>&1 || true
  fi
  local added=$(( $(ls "$seeds" | wc -l) - before ))
  # The run count: the final stats, or in fork mode the last status line's #N.
  local execs
  execs=$( (grep -E "^stat::number_of_executed_units" "$build/fuzz_$h.log" || true) | tail -1 | awk '{print $2}')
  [ -n "$execs" ] || execs=$( (grep -oE "^#[0-9]+" "$build/fuzz_$h.log" || true) | tail -1 | tr -d '#')
  echo "fuzz_$h: ${seconds}s, ${execs:-?} runs, $crashes finding(s), corpus $before -> $((before + added))" \
      >"$build/fuzz_$h.summary"
  if [ $status != 0 ] || [ $crashes -gt 0 ]; then echo 1; else echo 0; fi >"$build/fuzz_$h.status"
}
# Harnesses run side by side, one per core (LCTX_FUZZ_JOBS): each fuzzes on one thread, so a smoke run of
# every harness takes its seconds times the harness count over the cores.
run_jobs=${LCTX_FUZZ_JOBS:-$(nproc)}
running=0
for h in "${harnesses[@]}"; do
  rm -f "$build/fuzz_$h.status" "$build/fuzz_$h.summary"
  if [ $minimize = 0 ]; then echo "== fuzz_$h for ${seconds}s"; fi
  fuzz_one "$h" &
  running=$((running + 1))
  if [ $running -ge "$run_jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
failed=()
summary=()
for h in "${harnesses[@]}"; do
  if [ "$(cat "$build/fuzz_$h.status" 2>/dev/null || echo 1)" != 0 ]; then
    [ -f "$build/fuzz_$h.log" ] && tail -n 60 "$build/fuzz_$h.log"
    failed+=("$h")
  fi
  summary+=("$(cat "$build/fuzz_$h.summary" 2>/dev/null || echo "fuzz_$h: no result (the run stopped early)")")
done
[ $minimize = 1 ] && { printf '%s\n' "${summary[@]}"; exit 0; }
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (reproducers in $build/findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
