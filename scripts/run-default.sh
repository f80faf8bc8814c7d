#!/usr/bin/env bash
# The README's first command: set up, build the library and the CLI (not the test suite, so text appears
# within minutes on a small machine), and generate text with the model shipped in models/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LCTX_BUILD_TARGETS=lctx_cli "$root/scripts/build.sh"
"$root/build/bin/lctx" run -p "${1:-Once upon a time}" -n "${2:-128}"
