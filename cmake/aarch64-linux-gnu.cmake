# Cross build for 64-bit ARM Linux (aarch64-linux-gnu) with Debian's cross toolchain and multiarch :arm64
# packages (scripts/build-arm64.sh installs both):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The test binaries run under qemu-user (qemu-aarch64 -L /usr/aarch64-linux-gnu), which is also what CMake
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

find_program(LCTX_QEMU_AARCH64 qemu-aarch64)
if(LCTX_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LCTX_QEMU_AARCH64};-L;/usr/${LCTX_CROSS_TRIPLE})
endif()
set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)
