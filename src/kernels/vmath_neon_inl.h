// The vectorized exp and softplus of the NEON kernels (ops_neon.cpp, ssm_neon.cpp), 4 lanes: the same
// polynomials as on x86 (vmath_x86_inl.h). In an anonymous namespace, as the x86 ones (simd_x86_inl.h says
// why).
#pragma once
#include <arm_neon.h>

#include "kernels/exp_poly.h"
#include "kernels/log_poly.h"

namespace lctx::kernels {
namespace {

// exp(x) for x <= 88 (larger gives +inf); below -87.3 the result is 0, -inf gives 0.
inline float32x4_t exp128(float32x4_t x) {
    using namespace detail::exp_poly;
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, kLog2e));
    const float32x4_t r = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(kLn2Hi)), n, vdupq_n_f32(kLn2Lo));
    float32x4_t p = vdupq_n_f32(kCoeffs[0]);
    for (int i = 1; i < 8; ++i) p = vfmaq_f32(vdupq_n_f32(kCoeffs[i]), p, r);
    // 2^n for n in [-126, 127]; outside, the range checks below take over.
    const float32x4_t nc = vminq_f32(vmaxq_f32(n, vdupq_n_f32(-126.0f)), vdupq_n_f32(127.0f));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(nc), vdupq_n_s32(127)), 23);
    float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    const uint32x4_t below = vcltq_f32(x, vdupq_n_f32(kMin));
    y = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), below));
    return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(kMax)), vdupq_n_f32(__builtin_inff()), y);
}

// log(u) for finite u >= 1 by log_poly.h.
inline float32x4_t log128_ge1(float32x4_t u) {
    using namespace detail::log_poly;
    const int32x4_t i = vsubq_s32(vreinterpretq_s32_f32(u), vdupq_n_s32(kSqrtHalfBits));
    const float32x4_t k = vcvtq_f32_s32(vshrq_n_s32(i, 23));
    const float32x4_t m =
        vreinterpretq_f32_s32(vaddq_s32(vandq_s32(i, vdupq_n_s32(0x7fffff)), vdupq_n_s32(kSqrtHalfBits)));
    const float32x4_t f = vsubq_f32(m, vdupq_n_f32(1.0f));  // exact: m is within a factor 2 of 1
    const float32x4_t s = vdivq_f32(f, vaddq_f32(f, vdupq_n_f32(2.0f)));
    const float32x4_t z = vmulq_f32(s, s);
    float32x4_t p = vdupq_n_f32(kCoeffs[0]);
    for (int j = 1; j < 5; ++j) p = vfmaq_f32(vdupq_n_f32(kCoeffs[j]), p, z);
    const float32x4_t log_m = vmulq_f32(s, p);
    return vfmaq_f32(vfmaq_f32(log_m, k, vdupq_n_f32(kLn2Lo)), k, vdupq_n_f32(kLn2Hi));
}

// softplus(x) = log1p(exp(x)), x itself above 20, as softplus256 (vmath_x86_inl.h).
inline float32x4_t softplus128(float32x4_t x) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    const float32x4_t e = exp128(x);
    const float32x4_t u = vaddq_f32(one, e);
    const float32x4_t lost = vsubq_f32(e, vsubq_f32(u, one));
    const float32x4_t l = vaddq_f32(log128_ge1(u), vdivq_f32(lost, u));
    return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(detail::log_poly::kSoftplusLinear)), x, l);
}

}  // namespace
}  // namespace lctx::kernels
