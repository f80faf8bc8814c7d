// Internal: the ARM64 plain-row dot products of the K super-block types (Q2_K .. Q6_K, IQ4_XS) against Q8_K
// activations, shared by the NEON level (dot_neon.cpp) and the dotprod level (dot_dotprod.cpp) as the
// legacy types' kernels are (dot_arm_inl.h): templates over kSdot, whose 8-bit dot products (dot4) give the
// same exact integer sums at both levels.
//
// Each super-block's integer work is exact: the products of 16 weight values and 16 activation bytes as 4
// i32 lanes, times the sub-block's scale, summed over the super-block in 4 lanes (no lane can overflow:
// at most 256 products of |w| <= 128, |a| <= 127 times a scale below 128 each). The float work per
// super-block is the reference's: d = d_w * d_a times the integer sum, less dmin * d_a times the minimums'
// sum where the type has minimums, added into one running sum.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dot_arm_inl.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

namespace lctx::kernels::arm {
namespace {

// The 4 i32 lanes of the products of 16 weight values and the activation's 16 bytes at a.
template <bool kSdot>
inline int32x4_t dot16(int8x16_t w, const int8_t *a) {
    return dot4<kSdot>(vdupq_n_s32(0), w, vld1q_s8(a));
}

// Q4_K / Q5_K: 8 six-bit scales and 8 six-bit minimums in 12 bytes, four at a time as 32-bit words.
// Sub-blocks 0-3: the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); sub-blocks 4-7: the nibbles
// of bytes 8-11 (low: scales, high: minimums) with the top 2 bits of bytes 0-3 / 4-7 above them.
inline void k4_scales_mins(const uint8_t *packed, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3];
    std::memcpy(u, packed, 12);
    constexpr uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t w[4] = {u[0] & m6, (u[2] & m4) | (((u[0] >> 6) & m2) << 4), u[1] & m6,
                           ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4)};
    std::memcpy(sc, w, 8);
    std::memcpy(mn, w + 2, 8);
}

// sum_j mn[j] * (bsums[2j] + bsums[2j + 1]): the Q4_K / Q5_K minimums against the activation's sums of 32.
inline int32_t k4_min_sum(const uint8_t mn[8], const int16_t *bsums) {
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));  // sums of 32, in order
    const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    const int32x4_t s = vmull_s16(vget_low_s16(pairs), vget_low_s16(m));
    return vaddvq_s32(vmlal_high_s16(s, pairs, m));
}

// Q4_K / Q5_K: chunk c of 32 bytes holds sub-block 2c in the low nibbles and 2c + 1 in the high ones;
// Q5_K's fifth bit of element l of sub-block j is bit j of qh[l]. x = d sc_j q - dmin mn_j.
template <bool kSdot, bool kFive>
float vec_dot_q45_K(int64_t n, const void *vx, const void *vy) {
    using Block = std::conditional_t<kFive, block_q5_K, block_q4_K>;
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    [[maybe_unused]] const uint8x16_t one = vdupq_n_u8(1);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        uint8_t sc[8], mn[8];
        k4_scales_mins(x[i].scales, sc, mn);
        const int32_t msum = k4_min_sum(mn, y[i].bsums);
        [[maybe_unused]] uint8x16_t h0, h1;  // Q5_K: qh, shifted right one bit per sub-block
        if constexpr (kFive) {
            h0 = vld1q_u8(x[i].qh);
            h1 = vld1q_u8(x[i].qh + 16);
        }
        int32x4_t isum = vdupq_n_s32(0);
        for (int c = 0; c < 4; ++c) {
            const uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * c), q1 = vld1q_u8(x[i].qs + 32 * c + 16);
            uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4);
            uint8x16_t hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
            if constexpr (kFive) {
                lo0 = vorrq_u8(lo0, vshlq_n_u8(vandq_u8(h0, one), 4));
                lo1 = vorrq_u8(lo1, vshlq_n_u8(vandq_u8(h1, one), 4));
                hi0 = vorrq_u8(hi0, vshlq_n_u8(vandq_u8(vshrq_n_u8(h0, 1), one), 4));
                hi1 = vorrq_u8(hi1, vshlq_n_u8(vandq_u8(vshrq_n_u8(h1, 1), one), 4));
                h0 = vshrq_n_u8(h0, 2);
                h1 = vshrq_n_u8(h1, 2);
            }
            const int8_t *a = y[i].qs + 64 * c;
            const int32x4_t plo = dot4<kSdot>(dot16<kSdot>(vreinterpretq_s8_u8(lo0), a),
                                              vreinterpretq_s8_u8(lo1), vld1q_s8(a + 16));
            const int32x4_t phi = dot4<kSdot>(dot16<kSdot>(vreinterpretq_s8_u8(hi0), a + 32),
                                              vreinterpretq_s8_u8(hi1), vld1q_s8(a + 48));
            isum = vmlaq_n_s32(isum, plo, sc[2 * c]);
            isum = vmlaq_n_s32(isum, phi, sc[2 * c + 1]);
        }
        const float dy = y[i].d;
        sum += fp16_to_fp32(x[i].d) * dy * static_cast<float>(vaddvq_s32(isum)) -
               fp16_to_fp32(x[i].dmin) * dy * static_cast<float>(msum);
    }
    return sum;
}

template <bool kSdot>
float vec_dot_q4_K(int64_t n, const void *vx, const void *vy) {
    return vec_dot_q45_K<kSdot, false>(n, vx, vy);
}
template <bool kSdot>
float vec_dot_q5_K(int64_t n, const void *vx, const void *vy) {
    return vec_dot_q45_K<kSdot, true>(n, vx, vy);
}

// Q6_K: half h (128 elements) has 64 bytes of low nibbles ql and 32 of top bits qh. Its run r of 32
// elements (l = 0..31) takes the low (r = 0, 1) or high (r = 2, 3) nibble of ql[l + 32 (r & 1)] and bits
// 2r, 2r + 1 of qh[l]; the value is (low | top << 4) - 32, times the signed scale of its 16.
template <bool kSdot>
float vec_dot_q6_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q6_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(0x03);
    const int8x16_t k32 = vdupq_n_s8(32);
    auto value = [&](uint8x16_t low4, uint8x16_t top2) {
        return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low4, vshlq_n_u8(top2, 4))), k32);
    };
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const int8_t *sc = x[i].scales;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            const uint8_t *ql = x[i].ql + 64 * h;
            const uint8_t *qh = x[i].qh + 32 * h;
            const int8_t *a = y[i].qs + 128 * h;
            for (int p = 0; p < 2; ++p) {  // elements l = 16p .. 16p + 15 of each run
                const uint8x16_t l0 = vld1q_u8(ql + 16 * p), l1 = vld1q_u8(ql + 32 + 16 * p);
                const uint8x16_t t = vld1q_u8(qh + 16 * p);
                const int8x16_t w[4] = {
                    value(vandq_u8(l0, m4), vandq_u8(t, m3)),
                    value(vandq_u8(l1, m4), vandq_u8(vshrq_n_u8(t, 2), m3)),
                    value(vshrq_n_u8(l0, 4), vandq_u8(vshrq_n_u8(t, 4), m3)),
                    value(vshrq_n_u8(l1, 4), vshrq_n_u8(t, 6)),
                };
                for (int r = 0; r < 4; ++r) {
                    const int s = sc[8 * h + 2 * r + p];  // the 16 of elements 128h + 32r + 16p ..
                    isum = vmlaq_n_s32(isum, dot16<kSdot>(w[r], a + 32 * r + 16 * p), s);
                }
            }
        }
        sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(vaddvq_s32(isum));
    }
    return sum;
}

// Q3_K: 16 six-bit scales in 12 bytes, stored offset by 32. Low 4 bits: the low (sub-blocks 0-7) or high
// (8-15) nibble of byte j % 8; top 2 bits: bits 2 (j / 4), +1 of byte 8 + j % 4. Four at a time in words.
inline void q3_K_scales(const uint8_t *packed, int8_t sc[16]) {
    uint32_t u[3];
    std::memcpy(u, packed, 12);
    constexpr uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t w[4] = {(u[0] & m4) | ((u[2] & m2) << 4), (u[1] & m4) | (((u[2] >> 2) & m2) << 4),
                           ((u[0] >> 4) & m4) | (((u[2] >> 4) & m2) << 4),
                           ((u[1] >> 4) & m4) | (((u[2] >> 6) & m2) << 4)};
    int8x16_t v = vreinterpretq_s8_u32(vld1q_u32(w));
    vst1q_s8(sc, vsubq_s8(v, vdupq_n_s8(32)));
}

// Q3_K: half h's run k of 32 elements (l = 0..31) takes bits 2k, 2k + 1 of qs[32h + l] as its low bits; its
// value is low - 4 unless bit 4h + k of hmask[l] is set (then low). Times the signed scale of its 16.
template <bool kSdot>
float vec_dot_q3_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q3_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const uint8x16_t m3 = vdupq_n_u8(0x03), four = vdupq_n_u8(4);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t sc[16];
        q3_K_scales(x[i].scales, sc);
        const uint8x16_t hm[2] = {vld1q_u8(x[i].hmask), vld1q_u8(x[i].hmask + 16)};
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h)
            for (int p = 0; p < 2; ++p) {  // elements l = 16p .. 16p + 15 of each run
                uint8x16_t q = vld1q_u8(x[i].qs + 32 * h + 16 * p);
                uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << (4 * h)));
                for (int k = 0; k < 4; ++k) {
                    const uint8x16_t low = vandq_u8(q, m3);
                    const uint8x16_t off = vbicq_u8(four, vtstq_u8(hm[p], bit));  // 4 where the bit is clear
                    const int8x16_t w = vsubq_s8(vreinterpretq_s8_u8(low), vreinterpretq_s8_u8(off));
                    const int8_t *a = y[i].qs + 128 * h + 32 * k + 16 * p;
                    isum = vmlaq_n_s32(isum, dot16<kSdot>(w, a), sc[8 * h + 2 * k + p]);
                    q = vshrq_n_u8(q, 2);
                    bit = vshlq_n_u8(bit, 1);
                }
            }
        sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(vaddvq_s32(isum));
    }
    return sum;
}

// Q2_K: the minimums (the high nibbles of the 16 scale bytes) against the activation's sums of 16.
inline int32_t q2_K_min_sum(const uint8_t *scales, const int16_t *bsums) {
    const uint8x16_t scm = vld1q_u8(scales);
    const int16x8_t mn0 = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(vget_low_u8(scm), 4)));
    const int16x8_t mn1 = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(vget_high_u8(scm), 4)));
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    int32x4_t ms = vmull_s16(vget_low_s16(b0), vget_low_s16(mn0));
    ms = vmlal_high_s16(ms, b0, mn0);
    ms = vmlal_s16(ms, vget_low_s16(b1), vget_low_s16(mn1));
    ms = vmlal_high_s16(ms, b1, mn1);
    return vaddvq_s32(ms);
}

// Q2_K: half h's 32 bytes qs[32h ..]; sub-block 8h + 2k + g (16 elements) is bits 2k, 2k + 1 of bytes
// 16g .. 16g + 15. x = d (sc & 15) q - dmin (sc >> 4), q 0..3.
template <bool kSdot>
float vec_dot_q2_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q2_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const uint8x16_t m3 = vdupq_n_u8(0x03);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const int32_t msum = q2_K_min_sum(x[i].scales, y[i].bsums);
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 2; ++g) {
                uint8x16_t q = vld1q_u8(x[i].qs + 32 * h + 16 * g);
                for (int k = 0; k < 4; ++k) {
                    const int sub = 8 * h + 2 * k + g;
                    const int8x16_t w = vreinterpretq_s8_u8(vandq_u8(q, m3));
                    isum = vmlaq_n_s32(isum, dot16<kSdot>(w, y[i].qs + 16 * sub), x[i].scales[sub] & 0x0f);
                    q = vshrq_n_u8(q, 2);
                }
            }
        const float dy = y[i].d;
        sum += dy * fp16_to_fp32(x[i].d) * static_cast<float>(vaddvq_s32(isum)) -
               dy * fp16_to_fp32(x[i].dmin) * static_cast<float>(msum);
    }
    return sum;
}

// IQ4_XS: sub-block j (32 elements) is the 16 bytes qs[16j ..], elements 0-15 in the low nibbles and 16-31
// in the high ones, each indexing the IQ4_NL levels (TBL). Its 6-bit scale (offset by 32): the nibble j % 2
// of scales_l[j / 2] below bits 2j, 2j + 1 of scales_h.
template <bool kSdot>
float vec_dot_iq4_xs(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_iq4_xs *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int8x16_t levels = vld1q_s8(kValuesIq4nl);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int32x4_t isum = vdupq_n_s32(0);
        for (int j = 0; j < 8; ++j) {
            const int s =
                (((x[i].scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((x[i].scales_h >> (2 * j)) & 3) << 4)) -
                32;
            const uint8x16_t v = vld1q_u8(x[i].qs + 16 * j);
            const int8_t *a = y[i].qs + 32 * j;
            const int32x4_t p = dot4<kSdot>(dot16<kSdot>(vqtbl1q_s8(levels, vandq_u8(v, m4)), a),
                                            vqtbl1q_s8(levels, vshrq_n_u8(v, 4)), vld1q_s8(a + 16));
            isum = vmlaq_n_s32(isum, p, s);
        }
        sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(vaddvq_s32(isum));
    }
    return sum;
}

}  // namespace
}  // namespace lctx::kernels::arm
#endif
