// AVX2 + FMA + F16C row ops: a vectorized exp for softmax and SiLU, and the axpy steps of attention.
// No inline function from other headers is called here (see simd_x86_inl.h on why).
#include <cstring>

#include "kernels/ops_x86.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"
#include "kernels/softmax_scalar_inl.h"
#include "kernels/softmax_x86_inl.h"
#include "kernels/vmath_x86_inl.h"
#include "kernels/weighted_rows_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

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

// The sum in four vectors of partial sums: element 16 k + l goes to s[l / 4], lane l % 4 (an 8-element block
// left over to s0 and s1), as exp_sum_avx512 takes it with one chain of adds per 16 elements instead of per 8
// (its exp and sum: 6-14% less of a 512-token bge-small pass's time; at this level the exp is the bound, and
// no change was seen). Floats summed in double over a softmax's range are exact, so the order moves no value.
double exp_sum_avx2(float *x, int64_t n, float max) {
    const __m256 vm = _mm256_set1_ps(max);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(),
            s3 = _mm256_setzero_pd();
    int64_t i = 0;
    // 32 elements at a time, their exps in lockstep (exp256_n), each sum taking its elements in the order
    // of the 16-element loop below
    for (; i + 32 <= n; i += 32) {
        __m256 e[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) e[k] = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8 * k), vm);
        exp256_n(e);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(x + i + 8 * k, e[k]);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e[0])));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e[0], 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(e[1])));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(e[1], 1)));
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e[2])));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e[2], 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(e[3])));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(e[3], 1)));
    }
    for (; i + 16 <= n; i += 16) {
        const __m256 e0 = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        const __m256 e1 = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        _mm256_storeu_ps(x + i, e0);
        _mm256_storeu_ps(x + i + 8, e1);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e0)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e0, 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(e1)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(e1, 1)));
    }
    if (i + 8 <= n) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
        i += 8;
    }
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3)));
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

void relu_avx2(float *x, int64_t n) {
    const __m256 zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 32; k += 8)
            _mm256_storeu_ps(x + i + k, _mm256_max_ps(_mm256_loadu_ps(x + i + k), zero));
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_max_ps(_mm256_loadu_ps(x + i), zero));
    for (; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
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

// 8 lanes for weighted_rows_x86_inl.h: groups of 4 heads over 2 vectors (8 sums, 4 broadcasts and the values
// in registers: 13 of 16).
struct V8 {
    using Reg = __m256;
    static constexpr int kLanes = 8, kVectors = 2, kHeads = 4;
    static Reg load(const float *x) { return _mm256_loadu_ps(x); }
    static void store(float *x, Reg r) { _mm256_storeu_ps(x, r); }
    static Reg set1(float a) { return _mm256_set1_ps(a); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
    // the values of channels [c, c + 8) of a row, as dequantize_row gives them
    template <RowType kType>
    static Reg values(const uint8_t *row, int c) {
        if constexpr (kType == RowType::F32) {
            return _mm256_loadu_ps(reinterpret_cast<const float *>(row) + c);
        } else if constexpr (kType == RowType::F16) {
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 2 * c)));
        } else if constexpr (kType == RowType::BF16) {
            const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 2 * c));
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        } else if constexpr (kType == RowType::Q8_0) {
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q8_0_codes(row, c)));
            return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                                 _mm256_set1_ps(q8_0_scale(row, c)));
        } else {
            const uint8_t *b;
            const __m128i q = nibble_codes<kType, 8>(row, c, &b);
            const __m256 x =
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(f16_at(b)));
            if constexpr (NibbleBlock<kType>::kM >= 0)
                return _mm256_add_ps(rounded(x), _mm256_set1_ps(f16_at(b + NibbleBlock<kType>::kM)));
            else
                return x;
        }
    }
};

template <RowType kType>
void weighted_rows(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes, int j0, int j1,
                   float *o, int64_t ldo, int n) {
    const int c0 = weighted_rows_vectors<V8, kType>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
    // channels past the last 8 (no model here has them)
    for (int c = c0; c < n; ++c)
        for (int j = j0; j < j1; ++j) {
            // memcpy: a row need not start on an element boundary (row_bytes is any stride)
            const uint8_t *row = v + j * row_bytes;
            float x;
            if constexpr (kType == RowType::F16) {
                uint16_t h;
                std::memcpy(&h, row + c * sizeof h, sizeof h);
                x = _cvtsh_ss(h);
            } else if constexpr (kType == RowType::BF16) {
                uint16_t h;
                std::memcpy(&h, row + c * sizeof h, sizeof h);
                x = bf2f(h);
            } else {
                std::memcpy(&x, row + c * sizeof x, sizeof x);
            }
            for (int h = 0; h < n_p; ++h)
                if (p[h * ldp + j] != 0.0f)
                    o[h * ldo + c] = __builtin_fmaf(p[h * ldp + j], x, o[h * ldo + c]);
        }
}

}  // namespace

float scale_mask_max_avx2(float *x, const float *mask, int64_t n, float scale, float slope) {
    int64_t i = 0;
    const float mx = hmax(scale_mask_max_vectors<V8>(x, mask, n, scale, slope, &i));
    return scale_mask_max_scalar(x, mask, i, n, scale, slope, mx);
}

void weighted_rows_avx2(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes,
                        RowType type, int j0, int j1, float *o, int64_t ldo, int n) {
    with_row_type(type, [&](auto t) {
        weighted_rows<decltype(t)::value>(p, ldp, n_p, v, row_bytes, j0, j1, o, ldo, n);
    });
}

void add_avx2(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    for (; i < n; ++i) y[i] += x[i];
}

void f16_to_f32_avx2(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x + i))));
    for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
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

namespace {
// The 8 parts of a layer_norm sum (two registers of 4) added as the scalar code adds them, part 0 first.
double add_parts(__m256d lo, __m256d hi, double tail) {
    alignas(32) double part[8];
    _mm256_store_pd(part, lo);
    _mm256_store_pd(part + 4, hi);
    part[0] += tail;
    double sum = 0.0;
    for (double p : part) sum += p;
    return sum;
}
}  // namespace

double sum_parts_avx2(const float *x, int64_t n) {
    const int64_t n8 = n / 8 * 8;
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (int64_t i = 0; i < n8; i += 8) {
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
    }
    double tail = 0.0;
    for (int64_t i = n8; i < n; ++i) tail += static_cast<double>(x[i]);
    return add_parts(lo, hi, tail);
}

double center_sum_sq_avx2(const float *x, float mean, float *y, int64_t n) {
    const int64_t n8 = n / 8 * 8;
    const __m256 vm = _mm256_set1_ps(mean);
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (int64_t i = 0; i < n8; i += 8) {
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        _mm256_storeu_ps(y + i, d);
        const __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(d));
        const __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1));
        lo = _mm256_fmadd_pd(d0, d0, lo);  // (a float's square is exact in double: FMA or not)
        hi = _mm256_fmadd_pd(d1, d1, hi);
    }
    double tail = 0.0;
    for (int64_t i = n8; i < n; ++i) {
        const float d = x[i] - mean;
        y[i] = d;
        tail += static_cast<double>(d) * d;
    }
    return add_parts(lo, hi, tail);
}

void scale_affine_avx2(float *y, float s, const float *w, const float *b, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    // y * s, then * w + b in one FMA (or the one of them there is); load: whole registers, or the tail's
    // lanes
    auto step = [&](int64_t i, __m256 v, auto load) {
        v = _mm256_mul_ps(v, vs);
        if (w && b) return _mm256_fmadd_ps(v, load(w + i), load(b + i));
        if (w) return _mm256_mul_ps(v, load(w + i));
        if (b) return _mm256_add_ps(v, load(b + i));
        return v;
    };
    int64_t i = 0;
    const auto whole = [](const float *p) { return _mm256_loadu_ps(p); };
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, step(i, _mm256_loadu_ps(y + i), whole));
    // The tail through a mask, with the same arithmetic as every other element (masked stores are slow on AMD
    // cores: the tail only).
    if (i < n) {
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const auto part = [m](const float *p) { return _mm256_maskload_ps(p, m); };
        _mm256_maskstore_ps(y + i, m, step(i, _mm256_maskload_ps(y + i, m), part));
    }
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
