#!/usr/bin/env bash
# llama.cpp's own ARM64 library (the npm package @node-llama-cpp/linux-arm64@3.22.1, scripts/install-peer.sh
# --arm64) and lctx, both built for ARM64 and run under qemu-user, give the same greedy tokens on the same
# files: stories260K as shipped (F32) and quantized by lctx to Q8_0 and Q4_0 (the int8 kernels), lctx at the
# neon level on a Cortex-A53 and at the i8mm level on qemu's max CPU, the peer on the max CPU.
#   scripts/peer-arm64.sh [--no-build]
# Needs the cross build (scripts/build-arm64.sh; targets lctx_cli and lctx_peer_bench) and npm. One thread each
# (emulation is slow enough). The loader prefix is scripts/arm64-ld-prefix.sh's (a mismatched one hangs threads).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${LCTX_ARM64_BUILD_DIR:-$root/build-arm64}"
if [ "${1:-}" != "--no-build" ]; then
  LCTX_BUILD_TARGETS="lctx_cli lctx_peer_bench" LCTX_ARM64_BUILD_DIR="$build" "$root/scripts/build-arm64.sh"
fi
lib=$("$root/scripts/install-peer.sh" --arm64)
sysroot=$("$root/scripts/arm64-ld-prefix.sh")
emu() { local cpu=$1; shift; QEMU_LD_PREFIX="$sysroot" qemu-aarch64 -cpu "$cpu" -L "$sysroot" "$@"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lctx-peer-arm64.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

text="Once upon a time"
n=24
src="$root/fixtures/golden/models/stories260K.gguf"
cp "$src" "$tmp/stories260K-F32.gguf"
for t in Q8_0 Q4_0; do
  emu max "$build/bin/lctx" quantize "$src" "$tmp/stories260K-$t.gguf" "$t" >/dev/null 2>&1
done

# the JSON arrays "prompt_ids" and "ids" of a --json / --generate answer, as one line
ids() { python3 -c 'import json,sys; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(j["prompt_ids"], j["ids"])'; }
passed=0
failed=0
for t in F32 Q8_0 Q4_0; do
  m="$tmp/stories260K-$t.gguf"
  want=$(emu max "$build/bin/lctx-peer-bench" --lib "$lib" -m "$m" --generate "$text" -n "$n" -t 1 2>/dev/null | ids)
  for run in "cortex-a53 neon" "max i8mm"; do
    set -- $run
    got=$(LCTX_ISA=$2 emu "$1" "$build/bin/lctx" run -m "$m" -p "$text" -n "$n" --temp 0 --json -q -t 1 2>/dev/null | ids)
    if [ "$got" = "$want" ]; then
      passed=$((passed + 1))
      echo "ok    stories260K $t: lctx at $2 ($1) = llama.cpp arm64: $got"
    else
      failed=$((failed + 1))
      echo "FAIL  stories260K $t: lctx at $2 ($1): $got"
      echo "                          llama.cpp arm64: $want"
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
