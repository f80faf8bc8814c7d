// The vectorized exp and softplus of the x86 kernels (ops_*.cpp, ssm_*.cpp), 8 lanes (AVX2 + FMA) and, in the
// files compiled for AVX-512, 16 lanes. Each 16-lane function takes the operations of its 8-lane one in the
// same order, so the two widths give the same bits. In an anonymous namespace (simd_x86_inl.h says why).
#pragma once
#include "kernels/exp_poly.h"
#include "kernels/log_poly.h"
#include "kernels/simd_x86_inl.h"

namespace lctx::kernels {
namespace {

// exp(x) for x <= 88 (larger gives +inf) by exp_poly.h; below -87.3 the result is 0, -inf gives 0.
// N vectors go in lockstep, each step for all of them before the next: one vector's exp is a chain of some 15
// dependent steps (about 50 cycles), and with the vectors one after the other the out-of-order window held
// only two or three chains, so that exp_sum ran at about 15 cycles a vector. Each lane takes the same
// operations in the same order whatever N: the same bits.
template <int N>
inline void exp256_n(__m256 (&x)[N]) {
    using namespace detail::exp_poly;
    __m256 n[N], r[N], p[N];
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k)
        n[k] = _mm256_round_ps(_mm256_mul_ps(x[k], _mm256_set1_ps(kLog2e)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) r[k] = _mm256_fnmadd_ps(n[k], _mm256_set1_ps(kLn2Hi), x[k]);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) r[k] = _mm256_fnmadd_ps(n[k], _mm256_set1_ps(kLn2Lo), r[k]);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) p[k] = _mm256_set1_ps(kCoeffs[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 8; ++i) {
#pragma GCC unroll 8
        for (int k = 0; k < N; ++k) p[k] = _mm256_fmadd_ps(p[k], r[k], _mm256_set1_ps(kCoeffs[i]));
    }
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) {
        // 2^n for n in [-126, 127]; outside, the range checks below take over.
        const __m256 nc = _mm256_min_ps(_mm256_max_ps(n[k], _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
        const __m256i e =
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nc), _mm256_set1_epi32(127)), 23);
        __m256 y = _mm256_mul_ps(p[k], _mm256_castsi256_ps(e));
        y = _mm256_andnot_ps(_mm256_cmp_ps(x[k], _mm256_set1_ps(kMin), _CMP_LT_OQ), y);
        x[k] = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()),
                                _mm256_cmp_ps(x[k], _mm256_set1_ps(kMax), _CMP_GT_OQ));
    }
}
inline __m256 exp256(__m256 x) {
    __m256 v[1] = {x};
    exp256_n(v);
    return v[0];
}

// log(u) for finite u >= 1 by log_poly.h.
inline __m256 log256_ge1(__m256 u) {
    using namespace detail::log_poly;
    const __m256i i = _mm256_sub_epi32(_mm256_castps_si256(u), _mm256_set1_epi32(kSqrtHalfBits));
    const __m256 k = _mm256_cvtepi32_ps(_mm256_srai_epi32(i, 23));
    const __m256 m = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_and_si256(i, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(kSqrtHalfBits)));
    const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f));  // exact: m is within a factor 2 of 1
    const __m256 s = _mm256_div_ps(f, _mm256_add_ps(f, _mm256_set1_ps(2.0f)));
    const __m256 z = _mm256_mul_ps(s, s);
    __m256 p = _mm256_set1_ps(kCoeffs[0]);
#pragma GCC unroll 5
    for (int j = 1; j < 5; ++j) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kCoeffs[j]));
    const __m256 log_m = _mm256_mul_ps(s, p);
    return _mm256_fmadd_ps(k, _mm256_set1_ps(kLn2Hi), _mm256_fmadd_ps(k, _mm256_set1_ps(kLn2Lo), log_m));
}

// softplus(x) = log1p(exp(x)), x itself above 20. log1p(e) = log(u) + (e - (u - 1)) / u with u = 1 + e
// rounded: the second term restores what the rounding of u lost (all of e when e is below half an ulp of 1).
inline __m256 softplus256(__m256 x) {
    const __m256 e = exp256(x);
    const __m256 u = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
    const __m256 lost = _mm256_sub_ps(e, _mm256_sub_ps(u, _mm256_set1_ps(1.0f)));
    const __m256 l = _mm256_add_ps(log256_ge1(u), _mm256_div_ps(lost, u));
    return _mm256_blendv_ps(l, x,
                            _mm256_cmp_ps(x, _mm256_set1_ps(detail::log_poly::kSoftplusLinear), _CMP_GT_OQ));
}

// the sum of the 8 lanes, pairs (i, i + 4) first
inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#if defined(__AVX512F__)
// exp256_n, 16 lanes.
template <int N>
inline void exp512_n(__m512 (&x)[N]) {
    using namespace detail::exp_poly;
    __m512 n[N], r[N], p[N];
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k)
        n[k] = _mm512_roundscale_ps(_mm512_mul_ps(x[k], _mm512_set1_ps(kLog2e)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) r[k] = _mm512_fnmadd_ps(n[k], _mm512_set1_ps(kLn2Hi), x[k]);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) r[k] = _mm512_fnmadd_ps(n[k], _mm512_set1_ps(kLn2Lo), r[k]);
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) p[k] = _mm512_set1_ps(kCoeffs[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 8; ++i) {
#pragma GCC unroll 8
        for (int k = 0; k < N; ++k) p[k] = _mm512_fmadd_ps(p[k], r[k], _mm512_set1_ps(kCoeffs[i]));
    }
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) {
        const __m512 nc = _mm512_min_ps(_mm512_max_ps(n[k], _mm512_set1_ps(-126.0f)), _mm512_set1_ps(127.0f));
        const __m512i e =
            _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(nc), _mm512_set1_epi32(127)), 23);
        __m512 y = _mm512_mul_ps(p[k], _mm512_castsi512_ps(e));
        y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x[k], _mm512_set1_ps(kMin), _CMP_NLT_UQ), y);
        x[k] = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x[k], _mm512_set1_ps(kMax), _CMP_GT_OQ),
                                  _mm512_set1_ps(__builtin_inff()));
    }
}
inline __m512 exp512(__m512 x) {
    __m512 v[1] = {x};
    exp512_n(v);
    return v[0];
}

// log256_ge1, 16 lanes.
inline __m512 log512_ge1(__m512 u) {
    using namespace detail::log_poly;
    const __m512i i = _mm512_sub_epi32(_mm512_castps_si512(u), _mm512_set1_epi32(kSqrtHalfBits));
    const __m512 k = _mm512_cvtepi32_ps(_mm512_srai_epi32(i, 23));
    const __m512 m = _mm512_castsi512_ps(
        _mm512_add_epi32(_mm512_and_si512(i, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(kSqrtHalfBits)));
    const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f));
    const __m512 s = _mm512_div_ps(f, _mm512_add_ps(f, _mm512_set1_ps(2.0f)));
    const __m512 z = _mm512_mul_ps(s, s);
    __m512 p = _mm512_set1_ps(kCoeffs[0]);
#pragma GCC unroll 5
    for (int j = 1; j < 5; ++j) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(kCoeffs[j]));
    const __m512 log_m = _mm512_mul_ps(s, p);
    return _mm512_fmadd_ps(k, _mm512_set1_ps(kLn2Hi), _mm512_fmadd_ps(k, _mm512_set1_ps(kLn2Lo), log_m));
}

// softplus256, 16 lanes.
inline __m512 softplus512(__m512 x) {
    const __m512 e = exp512(x);
    const __m512 u = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
    const __m512 lost = _mm512_sub_ps(e, _mm512_sub_ps(u, _mm512_set1_ps(1.0f)));
    const __m512 l = _mm512_add_ps(log512_ge1(u), _mm512_div_ps(lost, u));
    return _mm512_mask_mov_ps(
        l, _mm512_cmp_ps_mask(x, _mm512_set1_ps(detail::log_poly::kSoftplusLinear), _CMP_GT_OQ), x);
}

// hsum256 of the sum of the two halves: what hsum256 gives for the lanes (i, i + 8) of two 8-lane vectors
// added first.
inline float hsum512(__m512 v) {
    return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
#endif

}  // namespace
}  // namespace lctx::kernels
