#!/usr/bin/env bash
# Cross-builds lctx for 64-bit ARM Linux (aarch64-linux-gnu) into build-arm64/ (Release), on Debian 12:
# installs what is missing (the cross compiler, qemu-user to run the results, and the :arm64 multiarch dev
# packages of the libraries lctx links: PCRE2, cpp-httplib, GoogleTest), configures with
# cmake/aarch64-linux-gnu.cmake and builds. Runs as root, or through sudo for a normal user.
#   scripts/build-arm64.sh                      liblctx, the lctx CLI and every test binary
#   LCTX_BUILD_TARGETS="lctx_cli test_kernels" scripts/build-arm64.sh    only those targets
#   LCTX_ARM64_BUILD_DIR=DIR                    another build folder (default: build-arm64)
#   scripts/build-arm64.sh --install-only       installs what is missing and stops (scripts/test.sh runs it
#                                               beside other work, before its ARM64 stage)
# Other arguments go to cmake's configure step. ccache, when installed, serves repeated compiles. The
# binaries run under qemu-user: scripts/test-arm64.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${LCTX_ARM64_BUILD_DIR:-$root/build-arm64}"
install_only=0
if [ "${1:-}" = --install-only ]; then install_only=1; shift; fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

host_packages=(build-essential cmake pkg-config git g++-aarch64-linux-gnu qemu-user nlohmann-json3-dev libcli11-dev)
arm_packages=(libpcre2-dev:arm64 libcpp-httplib-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
missing=()
for p in "${host_packages[@]}" "${arm_packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "build-arm64: adding the arm64 architecture to dpkg (multiarch)"
    $SUDO dpkg --add-architecture arm64
  fi
  echo "build-arm64: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ $install_only = 1 ] && exit 0

args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake")
if command -v ninja >/dev/null 2>&1; then args+=(-G Ninja); fi
if command -v ccache >/dev/null 2>&1; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# A folder configured with another generator keeps it (cmake refuses to switch).
if [ -f "$build/CMakeCache.txt" ]; then
  args=(-DCMAKE_BUILD_TYPE=Release)
fi
cmake -S "$root" -B "$build" "${args[@]}" "$@" >/dev/null
targets=()
for t in ${LCTX_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"${JOBS:-$(nproc)}" "${targets[@]}"
echo "build-arm64: built into $build (run the tests: scripts/test-arm64.sh)"
