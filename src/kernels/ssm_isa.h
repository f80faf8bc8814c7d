// Internal: the per-ISA state-space kernels (ssm_avx2.cpp, ssm_avx512.cpp on x86; ssm_neon.cpp on ARM64),
// each over a range of channels, chosen by ssm.cpp for the active level. Each level returns its kernel for a
// shape, or null for a shape it has none for (the scalar reference runs then).
#pragma once
#include <cstdint>

#include "kernels/ssm.h"

namespace lctx::kernels::detail {

using SsmScanFn = void (*)(const SsmScanArgs &a, int64_t c0, int64_t c1);
using SsmConvFn = void (*)(const SsmConvArgs &a, int64_t c0, int64_t c1);

#if defined(__x86_64__)
SsmScanFn ssm_scan_avx2(int64_t d_state);
SsmConvFn ssm_conv_avx2(int d_conv);
SsmScanFn ssm_scan_avx512(int64_t d_state);
SsmConvFn ssm_conv_avx512(int d_conv);
#elif defined(__aarch64__)
SsmScanFn ssm_scan_neon(int64_t d_state);
SsmConvFn ssm_conv_neon(int d_conv);
#endif

}  // namespace lctx::kernels::detail
