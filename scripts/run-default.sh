#!/usr/bin/env bash
# The README's first command: set up, build, and generate text with the model shipped in models/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Only what runs here (the library and the CLI), not the test suite: text appears within minutes on 2 cores.
"$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target lctx_cli
"$root/build/bin/lctx" run -p "${1:-Once upon a time}" -n "${2:-128}"
