// AVX2 + FMA + F16C row ops: a vectorized exp for softmax and SiLU, and the axpy steps of attention.
// No inline function from other headers is called here (see simd_x86_inl.h on why).
#include "kernels/exp_poly.h"
#include "kernels/ops_x86.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

// exp(x) for x <= 88 (larger gives +inf) by exp_poly.h; below -87.3 the result is 0, -inf gives 0.
inline __m256 exp256(__m256 x) {
    using namespace exp_poly;
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r =
        _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x));
    __m256 p = _mm256_set1_ps(kCoeffs[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 8; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoeffs[i]));
    // 2^n for n in [-126, 127]; outside, the range checks below take over.
    const __m256 nc = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nc), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(kMin), _CMP_LT_OQ), y);
    return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()),
                            _mm256_cmp_ps(x, _mm256_set1_ps(kMax), _CMP_GT_OQ));
}

inline float exp_scalar(float x) {
    alignas(32) float b[8] = {x, 0, 0, 0, 0, 0, 0, 0};
    _mm256_store_ps(b, exp256(_mm256_load_ps(b)));
    return b[0];
}

inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline __m256 silu256(__m256 g) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

}  // namespace

float scale_mask_max_avx2(float *x, const float *mask, int64_t n, float scale, float slope) {
    __m256 vmax = _mm256_set1_ps(-__builtin_inff());
    const __m256 vs = _mm256_set1_ps(scale);
    int64_t i = 0;
    if (mask && slope != 1.0f) {  // ALiBi: the mask holds distances, times the head's slope
        const __m256 vslope = _mm256_set1_ps(slope);
        for (; i + 8 <= n; i += 8) {
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
                                           _mm256_mul_ps(vslope, _mm256_loadu_ps(mask + i)));
            _mm256_storeu_ps(x + i, v);
            vmax = _mm256_max_ps(vmax, v);
        }
    } else {
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
            if (mask) v = _mm256_add_ps(v, _mm256_loadu_ps(mask + i));
            _mm256_storeu_ps(x + i, v);
            vmax = _mm256_max_ps(vmax, v);
        }
    }
    float mx = hmax(vmax);
    for (; i < n; ++i) {
        float v = x[i] * scale;
        if (mask) v += slope * mask[i];
        x[i] = v;
        if (v > mx) mx = v;
    }
    return mx;
}

double exp_sum_avx2(float *x, int64_t n, float max) {
    const __m256 vm = _mm256_set1_ps(max);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(s0, s1));
    double sum = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; ++i) {
        const float e = exp_scalar(x[i] - max);
        x[i] = e;
        sum += e;
    }
    return sum;
}

void scale_avx2(float *x, float s, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    for (; i < n; ++i) x[i] *= s;
}

namespace {

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|) in (0, 1]: no overflow, and an absolute error of a
// few 1e-8 from exp256's (the relative error grows near 0, where tanh is small).
inline __m256 tanh256(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const __m256 e = exp256(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    return _mm256_or_ps(t, sign);
}

// gelu of 8 values from the half table (ops.h): the halves' bits as indices, 0 at or below -10, x at or
// above 10.
inline __m256 gelu256(__m256 x, const float *table) {
    const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    __m256 y = _mm256_i32gather_ps(table, idx, 4);
    y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ), y);
}

inline float gelu_scalar(float x, const float *table) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return table[static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT))];
}

}  // namespace

void softcap_avx2(float *x, int64_t n, float cap, float scale) {
    const float pre = scale / cap;
    const __m256 vpre = _mm256_set1_ps(pre), vcap = _mm256_set1_ps(cap);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(vcap, tanh256(_mm256_mul_ps(_mm256_loadu_ps(x + i), vpre))));
    if (i < n) {  // the tail through the same vector code, so that every element gets the same function
        alignas(32) float t[8] = {};
        for (int64_t j = i; j < n; ++j) t[j - i] = x[j];
        _mm256_store_ps(t, _mm256_mul_ps(vcap, tanh256(_mm256_mul_ps(_mm256_load_ps(t), vpre))));
        for (int64_t j = i; j < n; ++j) x[j] = t[j - i];
    }
}

void geglu_avx2(const float *g, const float *u, float *y, int64_t n, const float *table) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_mul_ps(gelu256(_mm256_loadu_ps(g + i), table), _mm256_loadu_ps(u + i)));
    for (; i < n; ++i) y[i] = gelu_scalar(g[i], table) * u[i];
}

void gelu_avx2(float *x, int64_t n, const float *table) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu256(_mm256_loadu_ps(x + i), table));
    for (; i < n; ++i) x[i] = gelu_scalar(x[i], table);
}

void swiglu_avx2(const float *g, const float *u, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(silu256(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i)));
    for (; i < n; ++i) y[i] = g[i] / (1.0f + exp_scalar(-g[i])) * u[i];
}

void silu_avx2(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, silu256(_mm256_loadu_ps(x + i)));
    for (; i < n; ++i) x[i] = x[i] / (1.0f + exp_scalar(-x[i]));
}

void axpy_f32_avx2(float a, const float *x, float *y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}

void axpy_f16_avx2(float a, const uint16_t *x, float *y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x + i)));
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, xv, _mm256_loadu_ps(y + i)));
    }
    for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

namespace {

// NV vectors of 8 channels from c0 for up to kHeads heads (12 accumulators at most).
constexpr int kHeads = 3;
template <int NH, int NV, RowType kType>
void weighted_rows_block(const float *p, int64_t ldp, const uint8_t *v, size_t row_bytes, int j0, int j1, float *o,
                         int64_t ldo, int c0) {
    constexpr int nh = NH;
    __m256 acc[NH][NV];
    for (int h = 0; h < nh; ++h)
        for (int k = 0; k < NV; ++k) acc[h][k] = _mm256_loadu_ps(o + h * ldo + c0 + 8 * k);
    for (int j = j0; j < j1; ++j) {
        float pj[NH];
        bool any = false;
        for (int h = 0; h < nh; ++h) {
            pj[h] = p[h * ldp + j];
            any |= pj[h] != 0.0f;
        }
        if (!any) continue;
        const uint8_t *row = v + j * row_bytes;
        __m256 x[NV];
        if constexpr (kType == RowType::Q8_0) {
            static_assert(NV == 4, "a Q8_0 block is 32 values");
            const uint8_t *blk = row + (c0 / 32) * 34;  // block_q8_0: the f16 scale, then 32 codes
            uint16_t d16;
            __builtin_memcpy(&d16, blk, sizeof d16);
            const __m256 d = _mm256_set1_ps(_cvtsh_ss(d16));
            for (int k = 0; k < NV; ++k)
                x[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                         _mm_loadl_epi64(reinterpret_cast<const __m128i *>(blk + 2 + 8 * k)))),
                                     d);
        } else {
            for (int k = 0; k < NV; ++k) {
                if constexpr (kType == RowType::F16)
                    x[k] = _mm256_cvtph_ps(
                        _mm_loadu_si128(reinterpret_cast<const __m128i *>(row) + (c0 + 8 * k) / 8));
                else
                    x[k] = _mm256_loadu_ps(reinterpret_cast<const float *>(row) + c0 + 8 * k);
            }
        }
        for (int h = 0; h < nh; ++h) {
            if (pj[h] == 0.0f) continue;
            const __m256 ph = _mm256_set1_ps(pj[h]);
            for (int k = 0; k < NV; ++k) acc[h][k] = _mm256_fmadd_ps(ph, x[k], acc[h][k]);
        }
    }
    for (int h = 0; h < nh; ++h)
        for (int k = 0; k < NV; ++k) _mm256_storeu_ps(o + h * ldo + c0 + 8 * k, acc[h][k]);
}

template <RowType kType>
void weighted_rows(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes, int j0, int j1,
                   float *o, int64_t ldo, int n) {
    constexpr bool kF16 = kType == RowType::F16;
    for (int h0 = 0; h0 < n_p; h0 += kHeads) {
        const int nh = n_p - h0 < kHeads ? n_p - h0 : kHeads;
        const float *ph = p + h0 * ldp;
        float *oh = o + h0 * ldo;
        int c = 0;
        using Block = void (*)(const float *, int64_t, const uint8_t *, size_t, int, int, float *, int64_t, int);
        static constexpr Block k4[kHeads] = {&weighted_rows_block<1, 4, kType>, &weighted_rows_block<2, 4, kType>,
                                             &weighted_rows_block<3, 4, kType>};
        for (; c + 32 <= n; c += 32) k4[nh - 1](ph, ldp, v, row_bytes, j0, j1, oh, ldo, c);
        if constexpr (kType != RowType::Q8_0) {  // (Q8_0 rows are whole blocks of 32)
            static constexpr Block k1[kHeads] = {&weighted_rows_block<1, 1, kType>,
                                                 &weighted_rows_block<2, 1, kType>,
                                                 &weighted_rows_block<3, 1, kType>};
            for (; c + 8 <= n; c += 8) k1[nh - 1](ph, ldp, v, row_bytes, j0, j1, oh, ldo, c);
            for (; c < n; ++c)  // channels past the last 8 (no model here has them)
                for (int j = j0; j < j1; ++j) {
                    const uint8_t *row = v + j * row_bytes;
                    const float x = kF16 ? _cvtsh_ss(reinterpret_cast<const uint16_t *>(row)[c])
                                         : reinterpret_cast<const float *>(row)[c];
                    for (int h = 0; h < nh; ++h)
                        oh[h * ldo + c] = __builtin_fmaf(ph[h * ldp + j], x, oh[h * ldo + c]);
                }
        }
    }
}

}  // namespace

void weighted_rows_avx2(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes, RowType type,
                        int j0, int j1, float *o, int64_t ldo, int n) {
    switch (type) {
        case RowType::F32:
            return weighted_rows<RowType::F32>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
        case RowType::F16:
            return weighted_rows<RowType::F16>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
        case RowType::Q8_0:
            return weighted_rows<RowType::Q8_0>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
    }
}

void add_avx2(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    for (; i < n; ++i) y[i] += x[i];
}

double sum_sq_avx2(const float *x, int64_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        const __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        a0 = _mm256_fmadd_pd(lo, lo, a0);
        a1 = _mm256_fmadd_pd(hi, hi, a1);
    }
    alignas(32) double part[4];
    _mm256_store_pd(part, _mm256_add_pd(a0, a1));
    double sum = (part[0] + part[1]) + (part[2] + part[3]);
    for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
    return sum;
}

void scale_mul_avx2(const float *x, float s, const float *w, float *y, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    if (w) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(
                y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
        for (; i < n; ++i) y[i] = x[i] * s * w[i];
    } else {
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
        for (; i < n; ++i) y[i] = x[i] * s;
    }
}

}  // namespace lctx::kernels::detail

#endif
