#!/usr/bin/env bash
# Installs the llama.cpp peer for `lctx bench --peer`: llama.cpp's prebuilt CPU libraries as shipped in the npm
# package @node-llama-cpp/linux-x64 (see /work/shared/PEER.md), into a cache folder, and prints the folder that
# holds libllama (pass it to `lctx bench --peer`).
#   usage: scripts/install-peer.sh [FOLDER]      (default: ~/.cache/lctx/peer)
set -euo pipefail

PKG="@node-llama-cpp/linux-x64@3.22.1"
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/lctx/peer}"
BINS="$DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-peer: npm is not installed (apt-get install npm)" >&2
    exit 1
fi
mkdir -p "$DIR"
if [ ! -f "$BINS/libllama.v0.5.0.so" ]; then
    echo "install-peer: installing $PKG into $DIR" >&2
    # A package.json of our own keeps npm from walking up to some parent project.
    [ -f "$DIR/package.json" ] || echo '{"name":"lctx-peer","private":true}' > "$DIR/package.json"
    (cd "$DIR" && npm install --omit=optional --ignore-scripts --no-audit --no-fund "$PKG" >&2)
fi
if [ ! -f "$BINS/libllama.v0.5.0.so" ]; then
    echo "install-peer: $BINS/libllama.v0.5.0.so is missing after the install" >&2
    exit 1
fi
echo "$BINS"
