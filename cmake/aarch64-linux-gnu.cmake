# Cross build for 64-bit ARM Linux (aarch64-linux-gnu) with Debian's cross toolchain and multiarch :arm64
# packages (scripts/build-arm64.sh installs both):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The test binaries run under qemu-user (qemu-aarch64 -L /, see below), which is also what CMake
# uses as the emulator for anything it runs; ctest discovers each binary's tests when the tests run (not at
# build time), so building needs no emulator.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LCTX_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${LCTX_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${LCTX_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${LCTX_CROSS_TRIPLE})

# Debian multiarch: the :arm64 libraries live in /usr/lib/aarch64-linux-gnu beside the host's, headers are
# shared under /usr/include, and arch-independent CMake packages (nlohmann_json, CLI11) under /usr/share.
# So search the usual prefixes, and let CMAKE_LIBRARY_ARCHITECTURE pick the aarch64 library folders; the
# host's own (x86_64-linux-gnu) are never searched. Programs are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${LCTX_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config finds the :arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${LCTX_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# The emulator's loader prefix: the root when libc6:arm64 (multiarch) is installed, whose loader matches the
# libc.so.6 the binaries load; the cross sysroot's loader with the multiarch libc hangs in pthread_create
# (scripts/arm64-ld-prefix.sh says why).
find_program(LCTX_QEMU_AARCH64 qemu-aarch64)
if(LCTX_QEMU_AARCH64)
  if(EXISTS /lib/ld-linux-aarch64.so.1 AND EXISTS /lib/${LCTX_CROSS_TRIPLE}/libc.so.6)
    set(LCTX_QEMU_LD_PREFIX /)
  else()
    set(LCTX_QEMU_LD_PREFIX /usr/${LCTX_CROSS_TRIPLE})
  endif()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LCTX_QEMU_AARCH64};-L;${LCTX_QEMU_LD_PREFIX})
endif()
set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)
