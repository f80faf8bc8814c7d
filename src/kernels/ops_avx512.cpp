// AVX-512 row ops: softmax's exp and sum, GELU's table lookups and attention's product with V 16 lanes at a
// time. Each lane computes what the AVX2 version (exp256 of vmath_x86_inl.h, gelu256) computes, with the same
// operations in the same order, and the sum is formed in the AVX2 version's order, so the results have the
// same bits on either path.
#include "kernels/ops_x86.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"
#include "kernels/softmax_scalar_inl.h"
#include "kernels/softmax_x86_inl.h"
#include "kernels/vmath_x86_inl.h"
#include "kernels/weighted_rows_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

// 16 lanes for weighted_rows_x86_inl.h: groups of 8 heads over 2 vectors (16 sums, 8 broadcasts and the
// values in registers: 25 of 32), so a decoded token of an 8-query-head group reads each value once.
struct V16 {
    using Reg = __m512;
    static constexpr int kLanes = 16, kVectors = 2, kHeads = 8;
    static Reg load(const float *x) { return _mm512_loadu_ps(x); }
    static void store(float *x, Reg r) { _mm512_storeu_ps(x, r); }
    static Reg set1(float a) { return _mm512_set1_ps(a); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
    // the values of channels [c, c + 16) of a row, each lane as the AVX2 version forms it
    template <RowType kType>
    static Reg values(const uint8_t *row, int c) {
        if constexpr (kType == RowType::F32) {
            return _mm512_loadu_ps(reinterpret_cast<const float *>(row) + c);
        } else if constexpr (kType == RowType::F16) {
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 2 * c)));
        } else if constexpr (kType == RowType::BF16) {
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 2 * c));
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        } else if constexpr (kType == RowType::Q8_0) {
            const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q8_0_codes(row, c)));
            return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                                 _mm512_set1_ps(q8_0_scale(row, c)));
        } else {
            const uint8_t *b;
            const __m128i q = nibble_codes<kType, 16>(row, c, &b);
            const __m512 x =
                _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(f16_at(b)));
            if constexpr (NibbleBlock<kType>::kM >= 0)
                return _mm512_add_ps(rounded(x), _mm512_set1_ps(f16_at(b + NibbleBlock<kType>::kM)));
            else
                return x;
        }
    }
};

template <RowType kType>
void weighted_rows(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes, int j0, int j1,
                   float *o, int64_t ldo, int n) {
    const int c = weighted_rows_vectors<V16, kType>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
    // the last channels (fewer than 16: elementwise types only) by the AVX2 version, which gives the same
    // bits
    if (c < n) {
        const size_t es = kType == RowType::F16 || kType == RowType::BF16 ? 2 : 4;
        weighted_rows_avx2(p, ldp, n_p, v + c * es, row_bytes, kType, j0, j1, o + c, ldo, n - c);
    }
}

// gelu of 16 values from the half table, as gelu256 (ops_avx2.cpp) forms each lane. The 512-bit gathers of
// this CPU class (Zen 5) ran 1.6x as fast per value as the 256-bit ones on a feed-forward's values (0.45
// against 0.71-0.79 ns); a table of halves (half the cache footprint, a conversion per lane) was slower than
// either.
inline __m512 gelu512(__m512 x, const float *table) {
    const __m512i idx = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    __m512 y = _mm512_i32gather_ps(idx, table, 4);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GE_OQ), x);
    return _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(x, _mm512_set1_ps(-10.0f), _CMP_LE_OQ), y);
}

}  // namespace

void gelu_avx512(float *x, int64_t n, const float *table) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu512(_mm512_loadu_ps(x + i), table));
    if (i < n) gelu_avx2(x + i, n - i, table);  // the AVX2 version's lanes and tail: the same bits
}

void geglu_avx512(const float *g, const float *u, float *y, int64_t n, const float *table) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i,
                         _mm512_mul_ps(gelu512(_mm512_loadu_ps(g + i), table), _mm512_loadu_ps(u + i)));
    if (i < n) geglu_avx2(g + i, u + i, y + i, n - i, table);
}

void weighted_rows_avx512(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes,
                          RowType type, int j0, int j1, float *o, int64_t ldo, int n) {
    with_row_type(type, [&](auto t) {
        weighted_rows<decltype(t)::value>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
    });
}

float scale_mask_max_avx512(float *x, const float *mask, int64_t n, float scale, float slope) {
    int64_t i = 0;
    const float mx = _mm512_reduce_max_ps(scale_mask_max_vectors<V16>(x, mask, n, scale, slope, &i));
    return scale_mask_max_scalar(x, mask, i, n, scale, slope, mx);  // (masked stores are slow on AMD)
}

void scale_avx512(float *x, float s, int64_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vs));
    if (i < n) scale_avx2(x + i, s, n - i);
}

double exp_sum_avx512(float *x, int64_t n, float max) {
    const __m512 vm = _mm512_set1_ps(max);
    // s is the AVX2 version's s0 and s1 side by side (elements 16 k .. 16 k + 7, and an 8-element block
    // left over), t its s2 and s3 (elements 16 k + 8 .. 16 k + 15)
    __m512d s = _mm512_setzero_pd(), t = _mm512_setzero_pd();
    int64_t i = 0;
    // 64 elements at a time, their exps in lockstep (exp512_n), the sums in the order of the loop below
    for (; i + 64 <= n; i += 64) {
        __m512 e[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) e[k] = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * k), vm);
        exp512_n(e);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            _mm512_storeu_ps(x + i + 16 * k, e[k]);
            s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(e[k])));
            t = _mm512_add_pd(t, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e[k], 1)));
        }
    }
    for (; i + 16 <= n; i += 16) {
        const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(x + i, e);
        s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        t = _mm512_add_pd(t, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    // the tail, 8 then 1 at a time in the AVX2 version: masked lanes add 0 and store nothing
    for (; i < n; i += 8) {
        const int k = n - i < 8 ? static_cast<int>(n - i) : 8;
        const auto m = static_cast<__mmask16>((1u << k) - 1);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
        _mm512_mask_storeu_ps(x + i, m, e);
        if (k == 8) {
            s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        } else {
            alignas(64) float t16[16];
            _mm512_store_ps(t16, e);
            alignas(64) double d[8];
            _mm512_store_pd(d, _mm512_add_pd(s, t));
            double sum = (d[0] + d[4] + (d[1] + d[5])) + (d[2] + d[6] + (d[3] + d[7]));
            for (int j = 0; j < k; ++j) sum += t16[j];
            return sum;
        }
    }
    alignas(64) double d[8];
    _mm512_store_pd(d, _mm512_add_pd(s, t));
    return (d[0] + d[4] + (d[1] + d[5])) + (d[2] + d[6] + (d[3] + d[7]));
}

}  // namespace lctx::kernels::detail
#endif
