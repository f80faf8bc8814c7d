// NEON row ops (ARM64 only, CMakeLists.txt: *_neon.cpp): softmax's exp and sum, SiLU / SwiGLU, the RMS norm's
// sum of squares and scaling, attention's axpy and rope's rotation, 4 lanes at a time with the scalar code
// for the tails.
// The exp is exp_poly.h's (vmath_neon_inl.h), as on x86: 2^n e^r with the degree-7 polynomial.
#include <arm_neon.h>

#include "kernels/ops_arm.h"
#include "kernels/softmax_scalar_inl.h"
#include "kernels/vmath_neon_inl.h"

namespace lctx::kernels::detail {

namespace {

inline float exp_scalar(float x) {
    return vgetq_lane_f32(exp128(vdupq_n_f32(x)), 0);
}

inline float32x4_t silu128(float32x4_t g) {
    return vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp128(vnegq_f32(g))));
}

}  // namespace

float scale_mask_max_neon(float *x, const float *mask, int64_t n, float scale, float slope) {
    float32x4_t vmax = vdupq_n_f32(-__builtin_inff());
    int64_t i = 0;
    if (mask && slope != 1.0f) {  // ALiBi: the mask holds distances, times the head's slope
        for (; i + 4 <= n; i += 4) {
            const float32x4_t v =
                vaddq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vmulq_n_f32(vld1q_f32(mask + i), slope));
            vst1q_f32(x + i, v);
            vmax = vmaxq_f32(vmax, v);
        }
    } else {
        for (; i + 4 <= n; i += 4) {
            float32x4_t v = vmulq_n_f32(vld1q_f32(x + i), scale);
            if (mask) v = vaddq_f32(v, vld1q_f32(mask + i));
            vst1q_f32(x + i, v);
            vmax = vmaxq_f32(vmax, v);
        }
    }
    return scale_mask_max_scalar(x, mask, i, n, scale, slope, vmaxvq_f32(vmax));
}

double exp_sum_neon(float *x, int64_t n, float max) {
    const float32x4_t vm = vdupq_n_f32(max);
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = exp128(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(x + i, e);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
    }
    double sum = vaddvq_f64(vaddq_f64(s0, s1));
    for (; i < n; ++i) {
        const float e = exp_scalar(x[i] - max);
        x[i] = e;
        sum += e;
    }
    return sum;
}

void scale_neon(float *x, float s, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), s));
    for (; i < n; ++i) x[i] *= s;
}

void swiglu_neon(const float *g, const float *u, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_f32(silu128(vld1q_f32(g + i)), vld1q_f32(u + i)));
    for (; i < n; ++i) y[i] = g[i] / (1.0f + exp_scalar(-g[i])) * u[i];
}

void silu_neon(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, silu128(vld1q_f32(x + i)));
    for (; i < n; ++i) x[i] = x[i] / (1.0f + exp_scalar(-x[i]));
}

void axpy_f32_neon(float a, const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; ++i) y[i] += a * x[i];
}

void add_neon(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
    for (; i < n; ++i) y[i] += x[i];
}

void f16_to_f32_neon(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i))));
    for (; i < n; ++i) y[i] = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(x[i]))), 0);
}

// sum of x[i]^2 in double (the products of floats are exact in double), 4 partial sums.
double sum_sq_neon(const float *x, int64_t n) {
    float64x2_t a0 = vdupq_n_f64(0.0), a1 = a0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        const float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
        a0 = vfmaq_f64(a0, lo, lo);
        a1 = vfmaq_f64(a1, hi, hi);
    }
    double sum = vaddvq_f64(vaddq_f64(a0, a1));
    for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
    return sum;
}

void scale_mul_neon(const float *x, float s, const float *w, float *y, int64_t n) {
    int64_t i = 0;
    if (w) {
        for (; i + 4 <= n; i += 4)
            vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), s), vld1q_f32(w + i)));
        for (; i < n; ++i) y[i] = x[i] * s * w[i];
    } else {
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_n_f32(vld1q_f32(x + i), s));
        for (; i < n; ++i) y[i] = x[i] * s;
    }
}

// Rope's rotation of each head's pairs by precomputed angles (rope_apply's contract): 4 pairs at a time, the
// pairs (2i, 2i + 1) split and rejoined by LD2 / ST2 (normal) or (i, i + half) read as two runs (NeoX).
void rope_apply_neon(float *x, int n_head, int head_dim, const float *cos_sin, int n_rot, bool neox) {
    const int half = n_rot / 2;
    const float *cos_v = cos_sin, *sin_v = cos_sin + half;
    for (int h = 0; h < n_head; ++h) {
        float *v = x + static_cast<int64_t>(h) * head_dim;
        int i = 0;
        for (; i + 4 <= half; i += 4) {
            const float32x4_t c = vld1q_f32(cos_v + i), s = vld1q_f32(sin_v + i);
            if (neox) {
                const float32x4_t x0 = vld1q_f32(v + i), x1 = vld1q_f32(v + i + half);
                vst1q_f32(v + i, vfmsq_f32(vmulq_f32(x0, c), x1, s));
                vst1q_f32(v + i + half, vfmaq_f32(vmulq_f32(x1, c), x0, s));
            } else {
                const float32x4x2_t p = vld2q_f32(v + 2 * i);
                float32x4x2_t r;
                r.val[0] = vfmsq_f32(vmulq_f32(p.val[0], c), p.val[1], s);
                r.val[1] = vfmaq_f32(vmulq_f32(p.val[1], c), p.val[0], s);
                vst2q_f32(v + 2 * i, r);
            }
        }
        for (; i < half; ++i) {
            const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cos_v[i] - x1 * sin_v[i];
            v[b] = x0 * sin_v[i] + x1 * cos_v[i];
        }
    }
}

}  // namespace lctx::kernels::detail
