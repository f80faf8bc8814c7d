#!/usr/bin/env bash
# Prints the CMake generator option for a build folder: Ninja (installed by scripts/setup.sh) for a new
# folder, nothing for one already configured (CMake refuses to change a folder's generator).
#   scripts/generator.sh BUILD_DIR
set -euo pipefail
if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
  echo "-G Ninja"
fi
