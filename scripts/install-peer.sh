#!/usr/bin/env bash
# Installs the llama.cpp peer for `lctx bench --peer`, into a cache folder (never the repo), and prints the folder
# that holds libllama (pass it to `lctx bench --peer`, which also finds both installs by itself).
#   usage: scripts/install-peer.sh [FOLDER]            llama.cpp's prebuilt CPU libraries from the npm package
#                                                      @node-llama-cpp/linux-x64 (see /work/shared/PEER.md),
#                                                      on an ARM64 machine @node-llama-cpp/linux-arm64;
#                                                      default FOLDER: ~/.cache/lctx/peer
#          scripts/install-peer.sh --arm64 [FOLDER]    the linux-arm64 package on any machine (what
#                                                      scripts/peer-arm64.sh runs under qemu);
#                                                      default FOLDER: ~/.cache/lctx/peer-arm64
#          scripts/install-peer.sh --native [FOLDER]   llama.cpp built from source for this machine (-march=native):
#                                                      the source is the git bundle node-llama-cpp@3.22.1 ships
#                                                      (package/llama/gitRelease.bundle); builds libllama and
#                                                      llama-bench (about 10 minutes on 2 cores; JOBS=N sets the
#                                                      parallel jobs, default 1, at nice 19);
#                                                      default FOLDER: ~/.cache/lctx/peer-native
#          scripts/install-peer.sh --native --server [FOLDER]
#                                                      the same, and llama-server beside llama-bench (what
#                                                      scripts/serve-bench.py --llama-server starts; prints
#                                                      the folder that holds it)
#          scripts/install-peer.sh --native-avx2 [FOLDER]
#                                                      the same source built for AVX2 (with FMA, F16C, BMI2) and
#                                                      no AVX-512: the peer for `LCTX_ISA=avx2` runs on an AVX-512
#                                                      machine; default FOLDER: ~/.cache/lctx/peer-avx2
# The prebuilt libraries are generic builds (on an AVX2-only EPYC their F16 prompt speed is 40% of a native
# build's), so speed is best reported against the native build.
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/lctx"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-peer: npm is not installed (apt-get install npm)" >&2
    exit 1
fi

if [ "${1:-}" = "--native" ] || [ "${1:-}" = "--native-avx2" ]; then
    server=0
    if [ "${2:-}" = "--server" ]; then
        server=1
        set -- "$1" "${@:3}"
    fi
    if [ "$1" = "--native" ]; then
        DIR="${2:-$CACHE/peer-native}"
        ARCH="-DGGML_NATIVE=ON"
        WHAT="-march=native"
    else
        DIR="${2:-$CACHE/peer-avx2}"
        # Without GGML_NATIVE, ggml turns on AVX, AVX2, FMA, F16C and BMI2 and leaves every AVX-512 option off.
        ARCH="-DGGML_NATIVE=OFF"
        WHAT="AVX2 (FMA, F16C, BMI2), no AVX-512"
    fi
    OUT="$DIR/build/bin"
    if [ -f "$OUT/libllama.so" ] && [ -x "$OUT/llama-bench" ] && [ -f "$DIR/lctx-peer-native" ] &&
       { [ $server = 0 ] || [ -x "$OUT/llama-server" ]; }; then
        echo "$OUT"
        exit 0
    fi
    for tool in git cmake; do
        command -v "$tool" >/dev/null 2>&1 || { echo "install-peer: $tool is not installed" >&2; exit 1; }
    done
    mkdir -p "$DIR"
    if [ ! -d "$DIR/src/.git" ] && [ -d "$CACHE/peer-native/src/.git" ] && [ "$DIR" != "$CACHE/peer-native" ]; then
        git clone --quiet "$CACHE/peer-native/src" "$DIR/src"  # the same source, fetched once
    fi
    if [ ! -d "$DIR/src/.git" ]; then
        echo "install-peer: fetching node-llama-cpp@3.22.1 for llama.cpp's source" >&2
        rm -rf "$DIR/pkg" "$DIR/src"
        mkdir -p "$DIR/pkg"
        (cd "$DIR/pkg" && npm pack --silent node-llama-cpp@3.22.1 >/dev/null && tar xzf node-llama-cpp-3.22.1.tgz)
        bundle="$DIR/pkg/package/llama/gitRelease.bundle"
        [ -f "$bundle" ] || { echo "install-peer: $bundle is missing from the package" >&2; exit 1; }
        git clone --quiet "$bundle" "$DIR/src"
        rm -rf "$DIR/pkg"
    fi
    echo "install-peer: building llama.cpp $(git -C "$DIR/src" describe --tags --always 2>/dev/null) ($WHAT) in $DIR/build (JOBS=${JOBS:-1})" >&2
    targets=(llama llama-bench)
    build_server=OFF
    if [ $server = 1 ]; then
        targets+=(llama-server)
        build_server=ON
    fi
    nice -n 19 cmake -S "$DIR/src" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release $ARCH \
        -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=$build_server >&2
    nice -n 19 cmake --build "$DIR/build" -j"${JOBS:-1}" --target "${targets[@]}" >&2
    if [ ! -f "$OUT/libllama.so" ]; then
        echo "install-peer: $OUT/libllama.so is missing after the build" >&2
        exit 1
    fi
    # What `lctx bench --peer` reports as the build it ran against.
    printf 'build of llama.cpp %s (node-llama-cpp@3.22.1 source), %s\n' \
        "$(git -C "$DIR/src" describe --tags --always 2>/dev/null)" "$WHAT" > "$DIR/lctx-peer-native"
    echo "$OUT"
    exit 0
fi

PLATFORM=linux-x64
if [ "$(uname -m)" = aarch64 ]; then PLATFORM=linux-arm64; fi
DEFAULT_DIR="$CACHE/peer"
if [ "${1:-}" = "--arm64" ]; then
    PLATFORM=linux-arm64
    DEFAULT_DIR="$CACHE/peer-arm64"
    shift
fi
PKG="@node-llama-cpp/$PLATFORM@3.22.1"
DIR="${1:-$DEFAULT_DIR}"
BINS="$DIR/node_modules/@node-llama-cpp/$PLATFORM/bins/$PLATFORM"

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
