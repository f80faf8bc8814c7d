// AVX2 + FMA state-space kernels: ssm_simd_inl.h's bodies, 8 lanes (a state of 16: two vectors).
#include "kernels/ssm_isa.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"
#include "kernels/ssm_simd_inl.h"
#include "kernels/vmath_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

struct SsmV8 {
    using Reg = __m256;
    static constexpr int kLanes = 8;
    static Reg load(const float *p) { return _mm256_loadu_ps(p); }
    static void store(float *p, Reg r) { _mm256_storeu_ps(p, r); }
    static Reg set1(float x) { return _mm256_set1_ps(x); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg exp(Reg x) { return exp256(x); }
    static Reg softplus(Reg x) { return softplus256(x); }
    static float hsum(Reg x) { return hsum256(x); }
};

}  // namespace

SsmScanFn ssm_scan_avx2(int64_t d_state) {
    if (d_state == 16) return ssm_scan_channels<SsmV8, 2>;
    if (d_state == 8) return ssm_scan_channels<SsmV8, 1>;
    if (d_state == 32) return ssm_scan_channels<SsmV8, 4>;
    return nullptr;
}

SsmConvFn ssm_conv_avx2(int d_conv) {
    return d_conv == 4 ? ssm_conv_channels<SsmV8, 4> : nullptr;
}

}  // namespace lctx::kernels::detail

#endif
