// NEON state-space kernels (ARM64 only): ssm_simd_inl.h's bodies, 4 lanes (a state of 16: four vectors).
#include <arm_neon.h>

#include "kernels/ssm_isa.h"
#include "kernels/ssm_simd_inl.h"
#include "kernels/vmath_neon_inl.h"

namespace lctx::kernels::detail {

namespace {

struct SsmV4 {
    using Reg = float32x4_t;
    static constexpr int kLanes = 4;
    static Reg load(const float *p) { return vld1q_f32(p); }
    static void store(float *p, Reg r) { vst1q_f32(p, r); }
    static Reg set1(float x) { return vdupq_n_f32(x); }
    static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
    static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
    static Reg exp(Reg x) { return exp128(x); }
    static Reg softplus(Reg x) { return softplus128(x); }
    static float hsum(Reg x) { return vaddvq_f32(x); }
};

}  // namespace

SsmScanFn ssm_scan_neon(int64_t d_state) {
    if (d_state == 16) return ssm_scan_channels<SsmV4, 4>;
    if (d_state == 8) return ssm_scan_channels<SsmV4, 2>;
    if (d_state == 32) return ssm_scan_channels<SsmV4, 8>;
    return nullptr;
}

SsmConvFn ssm_conv_neon(int d_conv) {
    return d_conv == 4 ? ssm_conv_channels<SsmV4, 4> : nullptr;
}

}  // namespace lctx::kernels::detail
