#!/usr/bin/env bash
# Configures and builds lctx into build/ (Release). Extra arguments go to cmake's configure step;
# LCTX_BUILD_TARGETS (space-separated) builds only those targets (the default run builds just the CLI).
# ccache, when installed, serves repeated compiles (the build is the same without it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$root/build" $("$root/scripts/generator.sh" "$root/build") -DCMAKE_BUILD_TYPE=Release \
      "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${LCTX_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$root/build" -j"$(nproc)" "${targets[@]}"
