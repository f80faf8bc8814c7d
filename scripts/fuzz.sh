#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# build-fuzz/, then runs each for a bounded time. Any finding (crash, sanitizer report, leak, timeout,
# out-of-memory) fails the script; the reproducer is kept in build-fuzz/findings/<harness>/.
#   scripts/fuzz.sh [seconds per harness, default 60] [harness ...]   (harnesses: gguf model_load tokenize state)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(gguf model_load tokenize state)
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
targets=(--target fuzz_make_seeds)
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
cmake --build "$build" -j"$jobs" "${targets[@]}"

# The seeds are committed; regenerate them only when the corpus is missing.
[ -d "$root/fuzz/corpus/gguf" ] || "$root/fuzz/make_corpus.sh" "$build"

# Small, quick runs: 64 KiB inputs for the tokenizer (long texts), whole seed files elsewhere.
declare -A extra=([gguf]="-max_len=65536" [model_load]="-max_len=131072" [tokenize]="-max_len=65536"
                  [state]="-max_len=65536")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for h in "${harnesses[@]}"; do
  work="$build/corpus/$h"
  findings="$build/findings/$h"
  mkdir -p "$work" "$findings"
  echo "== fuzz_$h for ${seconds}s"
  # New inputs go to the work corpus; the seeds in fuzz/corpus are only read.
  if ! "$build/fuzz/fuzz_$h" "$work" "$root/fuzz/corpus/$h" -max_total_time="$seconds" -timeout=25 \
        ${extra[$h]} -artifact_prefix="$findings/" -print_final_stats=1 \
        >"$build/fuzz_$h.log" 2>&1; then
    tail -n 60 "$build/fuzz_$h.log"
    failed+=("$h")
  else
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|Done " "$build/fuzz_$h.log" || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (reproducers in $build/findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
