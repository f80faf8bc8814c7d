// Scalar reference dot products of K-quant weight rows with Q8_K activation rows.
//
// The integer work (quant x quant products, summed per sub-block and weighted by the 6/8-bit sub-block
// scales) is exact; the float work is the same operations in the same order as ggml's generic (non-SIMD)
// path, so the results should match it bit for bit (our tests check the arithmetic against the dequantized
// float dot, not against ggml itself):
//   * Q3_K..Q6_K keep 8 int32 "lanes" per super-block (lane = element index mod 8), scale each lane by
//     d = x.d * y.d into 8 running float sums, subtract dmin * sum(min * bsum) from a separate running
//     float sum per super-block, and add the 8 lane sums to it at the very end, lane 0 first.
//   * Q2_K adds dall * isum - dmin * summs per super-block.
//   * IQ4_XS adds (x.d * y.d * scale) * sumi per 32-element sub-block.
#include "tensor/quants_k.h"
#include "tensor/quants_k_internal.h"

namespace lctx {

using kquant::load_block;
using kquant::super_blocks;

namespace {

// Accumulates d * lane[l] into the 8 running lane sums (the shared tail of the Q3_K..Q6_K dots).
inline void add_lanes(float sums[8], float d, const int32_t lanes[8]) {
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(lanes[l]);
}

// Weighted lanes of one super-block: lanes[e % 8] += scale[e / group] * w[e] * q8[e].
inline void weighted_lanes(const int8_t w[kQK_K], const int8_t q8[kQK_K], const int scale[], int group,
                           int32_t lanes[8]) {
    for (int l = 0; l < 8; ++l) lanes[l] = 0;
    for (int e = 0; e < kQK_K; ++e) lanes[e % 8] += scale[e / group] * (static_cast<int32_t>(w[e]) * q8[e]);
}

// Sum over the 16 bsums of bsum[j] * min[j / 2] (the Q4_K/Q5_K min correction, 32-element sub-blocks).
inline int32_t min_correction(const block_q8_K &y, const uint8_t mn[8]) {
    int32_t s = 0;
    for (int j = 0; j < kQK_K / 16; ++j) s += static_cast<int32_t>(y.bsums[j]) * mn[j / 2];
    return s;
}

}  // namespace

float vec_dot_q2_K_q8_K_ref(int64_t n, const void *x, const void *y) {
    const int64_t nb = super_blocks(n, "vec_dot_q2_K_q8_K_ref");
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const auto bx = load_block<block_q2_K>(x, i);
        const auto by = load_block<block_q8_K>(y, i);
        int32_t summs = 0;  // sum of min * bsum over the 16 sub-blocks
        for (int j = 0; j < 16; ++j) summs += static_cast<int32_t>(by.bsums[j]) * (bx.scales[j] >> 4);
        const float dall = by.d * fp16_to_fp32(bx.d);
        const float dmin = by.d * fp16_to_fp32(bx.dmin);
        int32_t isum = 0;
        for (int half = 0; half < 2; ++half) {
            const uint8_t *q2 = bx.qs + 32 * half;
            for (int k = 0; k < 4; ++k) {
                for (int g = 0; g < 2; ++g) {
                    const int sub = 8 * half + 2 * k + g;
                    const int8_t *q8 = by.qs + 16 * sub;
                    int32_t s = 0;
                    for (int l = 0; l < 16; ++l) s += q8[l] * ((q2[16 * g + l] >> (2 * k)) & 3);
                    isum += (bx.scales[sub] & 0x0f) * s;
                }
            }
        }
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

float vec_dot_q3_K_q8_K_ref(int64_t n, const void *x, const void *y) {
    const int64_t nb = super_blocks(n, "vec_dot_q3_K_q8_K_ref");
    float sums[8] = {};
    for (int64_t i = 0; i < nb; ++i) {
        const auto bx = load_block<block_q3_K>(x, i);
        const auto by = load_block<block_q8_K>(y, i);
        int8_t w[kQK_K];  // the 3-bit values, -4..3, in element order
        for (int e = 0; e < kQK_K; ++e) {
            const int half = e / 128, k = (e % 128) / 32, l = e % 32;
            const int lo = (bx.qs[32 * half + l] >> (2 * k)) & 3;
            const bool hi = (bx.hmask[l] >> (4 * half + k)) & 1;
            w[e] = static_cast<int8_t>(lo - (hi ? 0 : 4));
        }
        int scale[16];
        kquant::unpack_scales_q3_K(bx.scales, scale);
        int32_t lanes[8];
        weighted_lanes(w, by.qs, scale, 16, lanes);
        add_lanes(sums, fp16_to_fp32(bx.d) * by.d, lanes);
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

namespace {

// Quant values (0..15 or 0..31) of a Q4_K / Q5_K block in element order: 64-element chunk c holds
// elements 64c + l in the low nibbles of qs[32c + l] and 64c + 32 + l in the high nibbles; Q5_K adds
// bit (e / 32) of qh[e % 32] as the fifth bit.
void unpack_q4_K_values(const block_q4_K &b, int8_t w[kQK_K]) {
    for (int e = 0; e < kQK_K; ++e) {
        const uint8_t q = b.qs[32 * (e / 64) + e % 32];
        w[e] = static_cast<int8_t>((e % 64) < 32 ? (q & 0x0f) : (q >> 4));
    }
}

void unpack_q4_K_values(const block_q5_K &b, int8_t w[kQK_K]) {
    for (int e = 0; e < kQK_K; ++e) {
        const uint8_t q = b.qs[32 * (e / 64) + e % 32];
        const int nib = (e % 64) < 32 ? (q & 0x0f) : (q >> 4);
        w[e] = static_cast<int8_t>(nib + (((b.qh[e % 32] >> (e / 32)) & 1) ? 16 : 0));
    }
}

template <typename Block>
float dot_q45_K(int64_t nb, const void *x, const void *y) {
    float sums[8] = {};
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const auto bx = load_block<Block>(x, i);
        const auto by = load_block<block_q8_K>(y, i);
        int8_t w[kQK_K];
        unpack_q4_K_values(bx, w);
        uint8_t sc[8], mn[8];
        kquant::unpack_scale_min_k4(bx.scales, sc, mn);
        const int32_t sumi = min_correction(by, mn);
        int scale[8];
        for (int j = 0; j < 8; ++j) scale[j] = sc[j];
        int32_t lanes[8];
        weighted_lanes(w, by.qs, scale, 32, lanes);
        add_lanes(sums, fp16_to_fp32(bx.d) * by.d, lanes);
        const float dmin = fp16_to_fp32(bx.dmin) * by.d;
        sumf -= dmin * static_cast<float>(sumi);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

}  // namespace

float vec_dot_q4_K_q8_K_ref(int64_t n, const void *x, const void *y) {
    return dot_q45_K<block_q4_K>(super_blocks(n, "vec_dot_q4_K_q8_K_ref"), x, y);
}

float vec_dot_q5_K_q8_K_ref(int64_t n, const void *x, const void *y) {
    return dot_q45_K<block_q5_K>(super_blocks(n, "vec_dot_q5_K_q8_K_ref"), x, y);
}

float vec_dot_q6_K_q8_K_ref(int64_t n, const void *x, const void *y) {
    const int64_t nb = super_blocks(n, "vec_dot_q6_K_q8_K_ref");
    float sums[8] = {};
    for (int64_t i = 0; i < nb; ++i) {
        const auto bx = load_block<block_q6_K>(x, i);
        const auto by = load_block<block_q8_K>(y, i);
        int8_t w[kQK_K];  // the 6-bit values minus 32, in element order
        for (int e = 0; e < kQK_K; ++e) {
            const int half = e / 128, r = (e % 128) / 32, l = e % 32;
            const uint8_t lq = bx.ql[64 * half + l + 32 * (r & 1)];
            const int lo = r < 2 ? (lq & 0x0f) : (lq >> 4);
            const int hi = (bx.qh[32 * half + l] >> (2 * r)) & 3;
            w[e] = static_cast<int8_t>((lo | (hi << 4)) - 32);
        }
        int scale[16];
        for (int j = 0; j < 16; ++j) scale[j] = bx.scales[j];
        int32_t lanes[8];
        weighted_lanes(w, by.qs, scale, 16, lanes);
        add_lanes(sums, fp16_to_fp32(bx.d) * by.d, lanes);
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

float vec_dot_iq4_xs_q8_K_ref(int64_t n, const void *x, const void *y) {
    const int64_t nb = super_blocks(n, "vec_dot_iq4_xs_q8_K_ref");
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const auto bx = load_block<block_iq4_xs>(x, i);
        const auto by = load_block<block_q8_K>(y, i);
        const float d4d8 = fp16_to_fp32(bx.d) * by.d;
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t *q = bx.qs + 16 * ib;
            const int8_t *q8 = by.qs + 32 * ib;
            int32_t sumi = 0;
            for (int j = 0; j < 16; ++j) {
                sumi += q8[j] * kValuesIq4nl[q[j] & 0x0f] + q8[j + 16] * kValuesIq4nl[q[j] >> 4];
            }
            const float dl = d4d8 * static_cast<float>(kquant::iq4_xs_scale(bx, ib));
            sumf += dl * static_cast<float>(sumi);
        }
    }
    return sumf;
}

}  // namespace lctx
