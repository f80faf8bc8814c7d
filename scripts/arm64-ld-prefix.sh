#!/usr/bin/env bash
# Prints the folder qemu-aarch64 must take as its loader prefix (-L / QEMU_LD_PREFIX) to run lctx's ARM64
# binaries on this Debian host: the one whose dynamic loader matches the C library the binaries load.
#
# The binaries link the :arm64 multiarch packages (scripts/build-arm64.sh), which bring libc6:arm64 into
# /lib/aarch64-linux-gnu, and the loader finds its libraries there through /etc/ld.so.cache. The cross
# toolchain's sysroot (/usr/aarch64-linux-gnu, libc6-arm64-cross) holds another build of the same glibc
# version. With -L /usr/aarch64-linux-gnu qemu starts that sysroot's ld-linux-aarch64.so.1, which then loads
# the multiarch libc.so.6: a loader and a libc of two different builds share glibc-private structures, and the
# first pthread_create spins forever (seen with 2.36-8cross1 against 2.36-9+deb12u14: every multi-threaded
# test hung under qemu, single-threaded ones passed). So: the root, whose loader is the multiarch one, when
# libc6:arm64 is installed; the sysroot only where it is all there is.
set -euo pipefail
if [ -e /lib/ld-linux-aarch64.so.1 ] && [ -e /lib/aarch64-linux-gnu/libc.so.6 ]; then
  echo /
else
  echo /usr/aarch64-linux-gnu
fi
