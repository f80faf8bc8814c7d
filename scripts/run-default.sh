#!/usr/bin/env bash
# The README's first command: set up, build, and generate text with the model shipped in models/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
"$root/build/bin/lctx" run -p "${1:-Once upon a time}" -n "${2:-128}"
