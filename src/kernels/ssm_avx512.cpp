// AVX-512 state-space kernels: ssm_simd_inl.h's bodies, 16 lanes (a state of 16: one vector).
#include "kernels/ssm_isa.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"
#include "kernels/ssm_simd_inl.h"
#include "kernels/vmath_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

struct SsmV16 {
    using Reg = __m512;
    static constexpr int kLanes = 16;
    static Reg load(const float *p) { return _mm512_loadu_ps(p); }
    static void store(float *p, Reg r) { _mm512_storeu_ps(p, r); }
    static Reg set1(float x) { return _mm512_set1_ps(x); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static Reg exp(Reg x) { return exp512(x); }
    static Reg softplus(Reg x) { return softplus512(x); }
    static float hsum(Reg x) { return hsum512(x); }
};

}  // namespace

SsmScanFn ssm_scan_avx512(int64_t d_state) {
    if (d_state == 16) return ssm_scan_channels<SsmV16, 1>;
    if (d_state == 32) return ssm_scan_channels<SsmV16, 2>;
    return nullptr;
}

SsmConvFn ssm_conv_avx512(int d_conv) {
    return d_conv == 4 ? ssm_conv_channels<SsmV16, 4> : nullptr;
}

}  // namespace lctx::kernels::detail

#endif
