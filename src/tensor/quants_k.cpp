// Scalar reference dequantization of the 256-element super-block types (Q2_K .. Q6_K, Q8_K, IQ4_XS).
// Element order and per-element arithmetic follow ggml's reference dequantizers, so the floats are
// bit-identical to what llama.cpp produces for the same blocks. Quantizers: quants_k_quantize.cpp;
// dot products: quants_k_dot.cpp.
#include "tensor/quants_k.h"

#include "tensor/quants_k_internal.h"

namespace lctx {

using kquant::load_block;
using kquant::super_blocks;

// Each 128-element half uses 32 bytes of qs; within a half, 2-bit field k (bits 2k..2k+1) of byte l
// is element 32k + l. Sub-block scales/mins (16 elements each) run in element order.
void dequantize_row_q2_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q2_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q2_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        const float dmin = fp16_to_fp32(b.dmin);
        float *y = dst + i * kQK_K;  // [256]
        for (int half = 0; half < 2; ++half) {
            const uint8_t *q = b.qs + 32 * half;
            for (int k = 0; k < 4; ++k) {
                for (int g = 0; g < 2; ++g) {
                    const uint8_t sc = b.scales[8 * half + 2 * k + g];
                    const float dl = d * static_cast<float>(sc & 0x0f);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        const int v = (q[16 * g + l] >> (2 * k)) & 3;
                        y[128 * half + 32 * k + 16 * g + l] = dl * static_cast<float>(v) - ml;
                    }
                }
            }
        }
    }
}

// Low 2 bits as Q2_K; the third bit of element 32m + l (m = 0..7) is bit m of hmask[l], and a clear
// bit means "subtract 4" (values -4..3).
void dequantize_row_q3_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q3_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q3_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        int scale[16];
        kquant::unpack_scales_q3_K(b.scales, scale);
        float *y = dst + i * kQK_K;  // [256]
        for (int half = 0; half < 2; ++half) {
            const uint8_t *q = b.qs + 32 * half;
            for (int k = 0; k < 4; ++k) {
                const uint8_t hbit = static_cast<uint8_t>(1u << (4 * half + k));
                for (int g = 0; g < 2; ++g) {
                    const float dl = d * static_cast<float>(scale[8 * half + 2 * k + g]);
                    for (int l = 16 * g; l < 16 * g + 16; ++l) {
                        const int v = ((q[l] >> (2 * k)) & 3) - ((b.hmask[l] & hbit) ? 0 : 4);
                        y[128 * half + 32 * k + l] = dl * static_cast<float>(v);
                    }
                }
            }
        }
    }
}

// 64-element chunk c uses qs[32c .. 32c+31]: low nibbles are elements 64c + l (sub-block 2c), high
// nibbles elements 64c + 32 + l (sub-block 2c+1). x = d*scale*q - dmin*min.
void dequantize_row_q4_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q4_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q4_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        const float dmin = fp16_to_fp32(b.dmin);
        uint8_t sc[8], mn[8];
        kquant::unpack_scale_min_k4(b.scales, sc, mn);
        float *y = dst + i * kQK_K;  // [256]
        for (int c = 0; c < 4; ++c) {
            const uint8_t *q = b.qs + 32 * c;
            const float d1 = d * static_cast<float>(sc[2 * c]);
            const float m1 = dmin * static_cast<float>(mn[2 * c]);
            const float d2 = d * static_cast<float>(sc[2 * c + 1]);
            const float m2 = dmin * static_cast<float>(mn[2 * c + 1]);
            for (int l = 0; l < 32; ++l) y[64 * c + l] = d1 * static_cast<float>(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
    }
}

// As Q4_K; the fifth bit of element 32s + l (sub-block s = 0..7) is bit s of qh[l].
void dequantize_row_q5_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q5_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q5_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        const float dmin = fp16_to_fp32(b.dmin);
        uint8_t sc[8], mn[8];
        kquant::unpack_scale_min_k4(b.scales, sc, mn);
        float *y = dst + i * kQK_K;  // [256]
        for (int c = 0; c < 4; ++c) {
            const uint8_t *q = b.qs + 32 * c;
            const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * c));
            const uint8_t hi_bit = static_cast<uint8_t>(1u << (2 * c + 1));
            const float d1 = d * static_cast<float>(sc[2 * c]);
            const float m1 = dmin * static_cast<float>(mn[2 * c]);
            const float d2 = d * static_cast<float>(sc[2 * c + 1]);
            const float m2 = dmin * static_cast<float>(mn[2 * c + 1]);
            for (int l = 0; l < 32; ++l) {
                const int v = (q[l] & 0x0f) + ((b.qh[l] & lo_bit) ? 16 : 0);
                y[64 * c + l] = d1 * static_cast<float>(v) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const int v = (q[l] >> 4) + ((b.qh[l] & hi_bit) ? 16 : 0);
                y[64 * c + 32 + l] = d2 * static_cast<float>(v) - m2;
            }
        }
    }
}

// Each 128-element half h uses ql[64h .. 64h+63] and qh[32h .. 32h+31]. For l = 0..31, element
// 128h + 32r + l (r = 0..3) takes its low nibble from ql[64h + l + 32*(r&1)] (low nibble for r < 2, high
// for r >= 2) and its top 2 bits from bits 2r..2r+1 of qh[32h + l]; values are offset by 32. Each 16
// elements have their own signed 8-bit scale.
void dequantize_row_q6_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q6_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q6_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        float *y = dst + i * kQK_K;  // [256]
        for (int half = 0; half < 2; ++half) {
            const uint8_t *ql = b.ql + 64 * half;
            const uint8_t *qh = b.qh + 32 * half;
            const int8_t *sc = b.scales + 8 * half;
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                float *yh = y + 128 * half;
                yh[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
                yh[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
                yh[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
                yh[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
            }
        }
    }
}

void dequantize_row_q8_K(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_q8_K");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_q8_K>(src, i);
        float *y = dst + i * kQK_K;  // [256]
        for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
    }
}

// Sub-block ib (32 elements) uses qs[16ib .. 16ib+15]: low nibbles are elements 0..15, high nibbles
// 16..31; each nibble indexes the IQ4_NL table.
void dequantize_row_iq4_xs(const void *src, float *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "dequantize_row_iq4_xs");
    for (int64_t i = 0; i < nb; ++i) {
        const auto b = load_block<block_iq4_xs>(src, i);
        const float d = fp16_to_fp32(b.d);
        float *y = dst + i * kQK_K;  // [256]
        for (int ib = 0; ib < 8; ++ib) {
            const float dl = d * static_cast<float>(kquant::iq4_xs_scale(b, ib));
            const uint8_t *q = b.qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[32 * ib + j] = dl * static_cast<float>(kValuesIq4nl[q[j] & 0x0f]);
                y[32 * ib + 16 + j] = dl * static_cast<float>(kValuesIq4nl[q[j] >> 4]);
            }
        }
    }
}

}  // namespace lctx
