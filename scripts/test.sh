#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite. With --sanitize (what CI runs) it then builds the suite
# again with clang under AddressSanitizer + UndefinedBehaviorSanitizer, runs it, and runs each libFuzzer
# harness for a bounded time (LCTX_FUZZ_SECONDS, default 30) from the same instrumented build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j"$(nproc)"
if [ "${1:-}" = "--sanitize" ]; then
  "$root/scripts/setup.sh"
  # fuzzer-no-link only adds coverage hooks (served by the ASan runtime in test binaries), so one
  # instrumented library serves both the tests and the fuzz harnesses.
  flags="-fsanitize=fuzzer-no-link -fno-omit-frame-pointer"
  cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLCTX_SANITIZE=ON -DLCTX_FUZZ=ON \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
  cmake --build "$root/build-asan" -j"$(nproc)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$(nproc)"
  LCTX_FUZZ_BUILD="$root/build-asan" "$root/scripts/fuzz.sh" "${LCTX_FUZZ_SECONDS:-30}"
fi
