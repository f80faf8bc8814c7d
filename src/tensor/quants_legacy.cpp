// Scalar reference for F32/F16/BF16 and the 32-element block types. The quantizers and dot products
// follow the arithmetic of ggml's reference/generic paths (same rounding, same order of float
// operations) so that files and results agree bit for bit where the description pins them down.
#include "tensor/quants_legacy.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

namespace lctx {

namespace {

// Bit 4 of element i of a 5-bit block lives in bit i of qh (little-endian u32).
inline uint32_t load_qh(const uint8_t qh[4]) {
    return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
           static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}
inline void store_qh(uint8_t qh[4], uint32_t v) {
    for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(v >> (8 * k));
}

// The 5-bit quants of a Q5_0/Q5_1 block, unsigned 0..31, in element order. q: [32]
inline void unpack_q5(const uint8_t qs[16], const uint8_t qh_bytes[4], int q[32]) {
    const uint32_t qh = load_qh(qh_bytes);
    for (int j = 0; j < 16; ++j) {
        q[j] = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
        q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    }
}

// Element with the largest magnitude, with its sign (the first one on ties).
inline float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

inline void min_max(const float *x, int n, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

}  // namespace

// ---------------------------------------------------------------- plain types

void dequantize_row_f32(const void *src, float *dst, int64_t n) {
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));  // in place is allowed
}

void dequantize_row_f16(const void *src, float *dst, int64_t n) {
    const fp16_t *x = static_cast<const fp16_t *>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(x[i]);
}

void dequantize_row_bf16(const void *src, float *dst, int64_t n) {
    const bf16_t *x = static_cast<const bf16_t *>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(x[i]);
}

void quantize_row_f32_ref(const float *src, void *dst, int64_t n) {
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));  // in place is allowed
}

void quantize_row_f16_ref(const float *src, void *dst, int64_t n) {
    fp16_t *y = static_cast<fp16_t *>(dst);
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(src[i]);
}

void quantize_row_bf16_ref(const float *src, void *dst, int64_t n) {
    bf16_t *y = static_cast<bf16_t *>(dst);
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(src[i]);
}

float vec_dot_f32_ref(int64_t n, const void *vx, const void *vy) {
    const float *x = static_cast<const float *>(vx);
    const float *y = static_cast<const float *>(vy);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
    return static_cast<float>(sum);
}

float vec_dot_f16_ref(int64_t n, const void *vx, const void *vy) {
    const fp16_t *x = static_cast<const fp16_t *>(vx);
    const fp16_t *y = static_cast<const fp16_t *>(vy);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
    return static_cast<float>(sum);
}

float vec_dot_bf16_ref(int64_t n, const void *vx, const void *vy) {
    const bf16_t *x = static_cast<const bf16_t *>(vx);
    const bf16_t *y = static_cast<const bf16_t *>(vy);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
    return static_cast<float>(sum);
}

// ---------------------------------------------------------------- dequantize

void dequantize_row_q4_0(const void *src, float *dst, int64_t n) {
    const block_q4_0 *x = static_cast<const block_q4_0 *>(src);
    for (int64_t i = 0; i < n / kQK4_0; ++i, dst += kQK4_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < 16; ++j) {
            dst[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
            dst[j + 16] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const void *src, float *dst, int64_t n) {
    const block_q4_1 *x = static_cast<const block_q4_1 *>(src);
    for (int64_t i = 0; i < n / kQK4_1; ++i, dst += kQK4_1) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        for (int j = 0; j < 16; ++j) {
            dst[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
            dst[j + 16] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const void *src, float *dst, int64_t n) {
    const block_q5_0 *x = static_cast<const block_q5_0 *>(src);
    for (int64_t i = 0; i < n / kQK5_0; ++i, dst += kQK5_0) {
        const float d = fp16_to_fp32(x[i].d);
        int q[32];
        unpack_q5(x[i].qs, x[i].qh, q);
        for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(q[j] - 16) * d;
    }
}

void dequantize_row_q5_1(const void *src, float *dst, int64_t n) {
    const block_q5_1 *x = static_cast<const block_q5_1 *>(src);
    for (int64_t i = 0; i < n / kQK5_1; ++i, dst += kQK5_1) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        int q[32];
        unpack_q5(x[i].qs, x[i].qh, q);
        for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(q[j]) * d + m;
    }
}

void dequantize_row_q8_0(const void *src, float *dst, int64_t n) {
    const block_q8_0 *x = static_cast<const block_q8_0 *>(src);
    for (int64_t i = 0; i < n / kQK8_0; ++i, dst += kQK8_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

void dequantize_row_q8_1(const void *src, float *dst, int64_t n) {
    const block_q8_1 *x = static_cast<const block_q8_1 *>(src);
    for (int64_t i = 0; i < n / kQK8_1; ++i, dst += kQK8_1) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

void dequantize_row_iq4_nl(const void *src, float *dst, int64_t n) {
    const block_iq4_nl *x = static_cast<const block_iq4_nl *>(src);
    for (int64_t i = 0; i < n / kQK4_NL; ++i, dst += kQK4_NL) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>(kValuesIq4nl[x[i].qs[j] & 0x0f]);
            dst[j + 16] = d * static_cast<float>(kValuesIq4nl[x[i].qs[j] >> 4]);
        }
    }
}

// ---------------------------------------------------------------- quantize

void quantize_row_q4_0_ref(const float *src, void *dst, int64_t n) {
    block_q4_0 *y = static_cast<block_q4_0 *>(dst);
    for (int64_t i = 0; i < n / kQK4_0; ++i, src += kQK4_0) {
        // The largest-magnitude element maps to -8 exactly, so the level range [-8, 7] is fully used.
        const float d = signed_absmax(src, kQK4_0) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
            // +8.5 then truncation: round half up into 0..16; 16 (the opposite extreme) clamps to 15.
            const int q0 = std::min(15, static_cast<int>(src[j] * id + 8.5f));
            const int q1 = std::min(15, static_cast<int>(src[j + 16] * id + 8.5f));
            y[i].qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
        }
    }
}

void quantize_row_q4_1_ref(const float *src, void *dst, int64_t n) {
    block_q4_1 *y = static_cast<block_q4_1 *>(dst);
    for (int64_t i = 0; i < n / kQK4_1; ++i, src += kQK4_1) {
        float mn, mx;
        min_max(src, kQK4_1, &mn, &mx);
        const float d = (mx - mn) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(mn);
        for (int j = 0; j < 16; ++j) {
            const int q0 = std::min(15, static_cast<int>((src[j] - mn) * id + 0.5f));
            const int q1 = std::min(15, static_cast<int>((src[j + 16] - mn) * id + 0.5f));
            y[i].qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
        }
    }
}

void quantize_row_q5_0_ref(const float *src, void *dst, int64_t n) {
    block_q5_0 *y = static_cast<block_q5_0 *>(dst);
    for (int64_t i = 0; i < n / kQK5_0; ++i, src += kQK5_0) {
        const float d = signed_absmax(src, kQK5_0) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            const int q0 = std::min(31, static_cast<int>(src[j] * id + 16.5f));
            const int q1 = std::min(31, static_cast<int>(src[j + 16] * id + 16.5f));
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= static_cast<uint32_t>(q0 >> 4) << j;
            qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
        }
        store_qh(y[i].qh, qh);
    }
}

void quantize_row_q5_1_ref(const float *src, void *dst, int64_t n) {
    block_q5_1 *y = static_cast<block_q5_1 *>(dst);
    for (int64_t i = 0; i < n / kQK5_1; ++i, src += kQK5_1) {
        float mn, mx;
        min_max(src, kQK5_1, &mn, &mx);
        const float d = (mx - mn) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            // The top element lands on 31 (+ rounding noise), so the clamp never changes a result.
            const int q0 = std::min(31, static_cast<int>((src[j] - mn) * id + 0.5f));
            const int q1 = std::min(31, static_cast<int>((src[j + 16] - mn) * id + 0.5f));
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= static_cast<uint32_t>(q0 >> 4) << j;
            qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
        }
        store_qh(y[i].qh, qh);
    }
}

namespace {

// Q8_0 and Q8_1 share their quantization; Q8_1 also returns the sum of the quants. Returns d.
float quantize_block_q8(const float *x, int8_t qs[32], int *sum) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int s = 0;
    for (int j = 0; j < 32; ++j) {
        qs[j] = static_cast<int8_t>(std::round(x[j] * id));  // round half away from zero (roundf)
        s += qs[j];
    }
    *sum = s;
    return d;
}

}  // namespace

void quantize_row_q8_0_ref(const float *src, void *dst, int64_t n) {
    block_q8_0 *y = static_cast<block_q8_0 *>(dst);
    for (int64_t i = 0; i < n / kQK8_0; ++i, src += kQK8_0) {
        int sum;
        y[i].d = fp32_to_fp16(quantize_block_q8(src, y[i].qs, &sum));
    }
}

void quantize_row_q8_1_ref(const float *src, void *dst, int64_t n) {
    block_q8_1 *y = static_cast<block_q8_1 *>(dst);
    for (int64_t i = 0; i < n / kQK8_1; ++i, src += kQK8_1) {
        int sum;
        const float d = quantize_block_q8(src, y[i].qs, &sum);
        y[i].d = fp32_to_fp16(d);
        // s uses the unrounded float d, as ggml does.
        y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

int iq4nl_nearest_index(float x) {
    if (x <= kValuesIq4nl[0]) return 0;
    if (x >= kValuesIq4nl[15]) return 15;
    // Binary search for the bracketing pair lo < x <= hi region, then pick the closer one.
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < kValuesIq4nl[mid])
            hi = mid;
        else
            lo = mid;
    }
    return x - kValuesIq4nl[hi - 1] < kValuesIq4nl[hi] - x ? hi - 1 : hi;
}

void quantize_row_iq4_nl_ref(const float *src, void *dst, int64_t n) {
    // Per block: weighted least squares over candidate scales, weights w = x^2 (no importance matrix).
    // Start from d = max/127 refined by the least-squares optimum, then try inverse scales
    // (k - 127)/max for k in [-7, 7] and keep the one with the largest sumqx^2/sumq2 (= smallest
    // weighted error at its optimal d).
    constexpr int kNtry = 7;
    constexpr float kGroupMaxEps = 1e-15f;
    block_iq4_nl *y = static_cast<block_iq4_nl *>(dst);
    for (int64_t i = 0; i < n / kQK4_NL; ++i, src += kQK4_NL) {
        const float *x = src;
        float w[kQK4_NL];  // [32]
        for (int j = 0; j < kQK4_NL; ++j) w[j] = x[j] * x[j];
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK4_NL; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        float d = 0.0f;
        if (amax >= kGroupMaxEps) {
            d = -max / kValuesIq4nl[0];
            float id = 1.0f / d;
            float sumqx = 0.0f, sumq2 = 0.0f;
            for (int j = 0; j < kQK4_NL; ++j) {
                const float q = kValuesIq4nl[iq4nl_nearest_index(id * x[j])];
                sumqx += w[j] * q * x[j];
                sumq2 += w[j] * q * q;
            }
            d = sumqx / sumq2;
            float best = d * sumqx;
            for (int itry = -kNtry; itry <= kNtry; ++itry) {
                id = static_cast<float>(itry + kValuesIq4nl[0]) / max;
                sumqx = sumq2 = 0.0f;
                for (int j = 0; j < kQK4_NL; ++j) {
                    const float q = kValuesIq4nl[iq4nl_nearest_index(id * x[j])];
                    sumqx += w[j] * q * x[j];
                    sumq2 += w[j] * q * q;
                }
                if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
        }
        y[i].d = fp32_to_fp16(d);
        // Final indices against the float (not the half-rounded) scale, as ggml does.
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 16; ++j) {
            const int l0 = iq4nl_nearest_index(id * x[j]);
            const int l1 = iq4nl_nearest_index(id * x[j + 16]);
            y[i].qs[j] = static_cast<uint8_t>(l0 | l1 << 4);
        }
    }
}

// ---------------------------------------------------------------- dot products

float vec_dot_q4_0_q8_0_ref(int64_t n, const void *vx, const void *vy) {
    const block_q4_0 *x = static_cast<const block_q4_0 *>(vx);
    const block_q8_0 *y = static_cast<const block_q8_0 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += ((x[ib].qs[j] & 0x0f) - 8) * y[ib].qs[j];
            sumi1 += ((x[ib].qs[j] >> 4) - 8) * y[ib].qs[j + 16];
        }
        sumf += static_cast<float>(sumi0 + sumi1) * fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d);
    }
    return sumf;
}

float vec_dot_q4_1_q8_1_ref(int64_t n, const void *vx, const void *vy) {
    const block_q4_1 *x = static_cast<const block_q4_1 *>(vx);
    const block_q8_1 *y = static_cast<const block_q8_1 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK8_1; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += (x[ib].qs[j] & 0x0f) * y[ib].qs[j];
            sumi1 += (x[ib].qs[j] >> 4) * y[ib].qs[j + 16];
        }
        // sum(d q + m)(dy qy) = d dy sum(q qy) + m (dy sum qy) = ... + m * s
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi0 + sumi1) +
                fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
    }
    return sumf;
}

float vec_dot_q5_0_q8_0_ref(int64_t n, const void *vx, const void *vy) {
    const block_q5_0 *x = static_cast<const block_q5_0 *>(vx);
    const block_q8_0 *y = static_cast<const block_q8_0 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
        int q[32];
        unpack_q5(x[ib].qs, x[ib].qh, q);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += (q[j] - 16) * y[ib].qs[j];
            sumi1 += (q[j + 16] - 16) * y[ib].qs[j + 16];
        }
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi0 + sumi1);
    }
    return sumf;
}

float vec_dot_q5_1_q8_1_ref(int64_t n, const void *vx, const void *vy) {
    const block_q5_1 *x = static_cast<const block_q5_1 *>(vx);
    const block_q8_1 *y = static_cast<const block_q8_1 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK8_1; ++ib) {
        int q[32];
        unpack_q5(x[ib].qs, x[ib].qh, q);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += q[j] * y[ib].qs[j];
            sumi1 += q[j + 16] * y[ib].qs[j + 16];
        }
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi0 + sumi1) +
                fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
    }
    return sumf;
}

float vec_dot_q8_0_q8_0_ref(int64_t n, const void *vx, const void *vy) {
    const block_q8_0 *x = static_cast<const block_q8_0 *>(vx);
    const block_q8_0 *y = static_cast<const block_q8_0 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
        int sumi = 0;
        for (int j = 0; j < 32; ++j) sumi += x[ib].qs[j] * y[ib].qs[j];
        sumf += static_cast<float>(sumi) * (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d));
    }
    return sumf;
}

float vec_dot_iq4_nl_q8_0_ref(int64_t n, const void *vx, const void *vy) {
    const block_iq4_nl *x = static_cast<const block_iq4_nl *>(vx);
    const block_q8_0 *y = static_cast<const block_q8_0 *>(vy);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kQK4_NL; ++ib) {
        const float d = fp16_to_fp32(y[ib].d) * fp16_to_fp32(x[ib].d);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi1 += y[ib].qs[j] * kValuesIq4nl[x[ib].qs[j] & 0x0f];
            sumi2 += y[ib].qs[j + 16] * kValuesIq4nl[x[ib].qs[j] >> 4];
        }
        sumf += d * static_cast<float>(sumi1 + sumi2);
    }
    return sumf;
}

}  // namespace lctx
