// ARM64 i8mm level (FEAT_I8MM: SMMLA): the interleaved Q8_0 / Q4_0 / Q5_0 gemm takes two activations at a
// time. SMMLA multiplies a 2 x 8 int8 matrix by another's transpose into 2 x 2 i32 sums: two rows' 8
// consecutive elements against two activations' same 8 elements, twice the products of an SDOT. The
// interleaved lines hold 4 elements per row (interleave.h), so two lines zipped by 32-bit lanes give two
// rows' 8 consecutive elements, with no other layout. The integer sums are those of the dotprod level, and
// each output takes the same float steps, so this level gives the dotprod level's values bit for bit; a last
// odd activation goes through the dotprod kernel. Everything else is the dotprod level's. Compiled with
// +dotprod+i8mm on ARM64 only (CMakeLists.txt: *_i8mm.cpp), entered only when the CPU reports I8MM.
#include <type_traits>

#include "kernels/dot.h"
#include "kernels/dot_arm_inl.h"

namespace lctx::kernels {
namespace {

// Two activations' elements [8h, 8h + 8) side by side: the right operand of SMMLA.
inline int8x16_t act_pair(const int8_t *a0, const int8_t *a1, int h) {
    return vcombine_s8(vld1_s8(a0 + 8 * h), vld1_s8(a1 + 8 * h));
}

// acc01 += [r0 c0, r0 c1, r1 c0, r1 c1] etc. over the 8 elements whose 4-element halves are in x and y (one
// register of 4 rows each).
inline void mmla4(int8x16_t x, int8x16_t y, int8x16_t a, int32x4_t *acc01, int32x4_t *acc23) {
    const int32x4_t xi = vreinterpretq_s32_s8(x), yi = vreinterpretq_s32_s8(y);
    *acc01 = vmmlaq_s32(*acc01, vreinterpretq_s8_s32(vzip1q_s32(xi, yi)), a);
    *acc23 = vmmlaq_s32(*acc23, vreinterpretq_s8_s32(vzip2q_s32(xi, yi)), a);
}

// Block: block_q8_0xG<8>, block_q4_0xG<8> or block_q5_0xG<8> (kQ4: 4-bit lines, with Q5_0's fifth bits).
template <class Block, bool kQ4>
void gemm_interleaved_x8_i8mm(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                              size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    const int64_t nb = n / kQK8_0;
    const auto *ab = static_cast<const uint8_t *>(act);
    constexpr bool kQ5 = std::is_same_v<Block, block_q5_0xG<8>>;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
    const int8x16_t offset = vdupq_n_s8(kQ5 ? 16 : 8);  // Q4_0: code - 8; Q5_0: code - 16
    for (int64_t g = 0; g < n_rows / 8; ++g) {
        const uint8_t *wgb = static_cast<const uint8_t *>(w) + g * 8 * w_stride;
        const auto *wg = reinterpret_cast<const Block *>(wgb);
        int64_t c = 0;
        for (; c + 2 <= n_act; c += 2) {
            const auto *x0 = reinterpret_cast<const block_q8_0 *>(ab + c * act_stride);
            const auto *x1 = reinterpret_cast<const block_q8_0 *>(ab + (c + 1) * act_stride);
            // [activation][rows 0-3, 4-7]
            float32x4_t f00 = vdupq_n_f32(0.0f), f01 = f00, f10 = f00, f11 = f00;
            for (int64_t b = 0; b < nb; ++b) {
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(wg + b) + arm::kPrefetchAhead);
                // i32 sums, rows (0,1), (2,3), (4,5), (6,7) each against both activations
                int32x4_t s01 = vdupq_n_s32(0), s23 = s01, s45 = s01, s67 = s01;
                // Q5_0: the fifth bits of line h at bits 0 / 1 (rows 0-3, 4-7), shifted 2 bits a line
                [[maybe_unused]] uint8x16_t h0, h1;
                if constexpr (kQ5) {
                    h0 = vld1q_u8(wg[b].qh);
                    h1 = vld1q_u8(wg[b].qh + 16);
                }
                for (int h = 0; h < 4; ++h) {
                    const int8x16_t a = act_pair(x0[b].qs, x1[b].qs, h);
                    int8x16_t lo0, lo1, hi0,
                        hi1;  // elements [8h, 8h + 4) and [8h + 4, 8h + 8), rows 0-3 / 4-7
                    if constexpr (kQ4) {
                        const uint8x16_t v0 = vld1q_u8(wg[b].qs + 32 * h),
                                         v1 = vld1q_u8(wg[b].qs + 32 * h + 16);
                        uint8x16_t c_lo0 = vandq_u8(v0, m4), c_lo1 = vandq_u8(v1, m4);
                        uint8x16_t c_hi0 = vshrq_n_u8(v0, 4), c_hi1 = vshrq_n_u8(v1, 4);
                        if constexpr (kQ5) {
                            c_lo0 = vorrq_u8(c_lo0, vandq_u8(vshlq_n_u8(h0, 4), b4));
                            c_lo1 = vorrq_u8(c_lo1, vandq_u8(vshlq_n_u8(h1, 4), b4));
                            c_hi0 = vorrq_u8(c_hi0, vandq_u8(vshlq_n_u8(h0, 3), b4));
                            c_hi1 = vorrq_u8(c_hi1, vandq_u8(vshlq_n_u8(h1, 3), b4));
                            h0 = vshrq_n_u8(h0, 2);
                            h1 = vshrq_n_u8(h1, 2);
                        }
                        lo0 = vsubq_s8(vreinterpretq_s8_u8(c_lo0), offset);
                        lo1 = vsubq_s8(vreinterpretq_s8_u8(c_lo1), offset);
                        hi0 = vsubq_s8(vreinterpretq_s8_u8(c_hi0), offset);
                        hi1 = vsubq_s8(vreinterpretq_s8_u8(c_hi1), offset);
                    } else {
                        const int8_t *q = reinterpret_cast<const int8_t *>(wg[b].qs) + 64 * h;
                        lo0 = vld1q_s8(q);
                        lo1 = vld1q_s8(q + 16);
                        hi0 = vld1q_s8(q + 32);
                        hi1 = vld1q_s8(q + 48);
                    }
                    mmla4(lo0, hi0, a, &s01, &s23);
                    mmla4(lo1, hi1, a, &s45, &s67);
                }
                // per activation, rows 0-3 and 4-7: even lanes are activation 0's, odd lanes activation 1's
                const int32x4_t c0a = vuzp1q_s32(s01, s23), c0b = vuzp1q_s32(s45, s67);
                const int32x4_t c1a = vuzp2q_s32(s01, s23), c1b = vuzp2q_s32(s45, s67);
                const float32x4_t dw0 = arm::f16x4_to_f32(wg[b].d), dw1 = arm::f16x4_to_f32(wg[b].d + 4);
                const float da0 = fp16_to_fp32(x0[b].d), da1 = fp16_to_fp32(x1[b].d);
                f00 = vfmaq_f32(f00, vcvtq_f32_s32(c0a), vmulq_n_f32(dw0, da0));
                f01 = vfmaq_f32(f01, vcvtq_f32_s32(c0b), vmulq_n_f32(dw1, da0));
                f10 = vfmaq_f32(f10, vcvtq_f32_s32(c1a), vmulq_n_f32(dw0, da1));
                f11 = vfmaq_f32(f11, vcvtq_f32_s32(c1b), vmulq_n_f32(dw1, da1));
            }
            vst1q_f32(y + c * ldy + 8 * g, f00);
            vst1q_f32(y + c * ldy + 8 * g + 4, f01);
            vst1q_f32(y + (c + 1) * ldy + 8 * g, f10);
            vst1q_f32(y + (c + 1) * ldy + 8 * g + 4, f11);
        }
        if (c < n_act)  // the last odd activation: SDOT by lane, the same sums and float steps
            arm::gemm_interleaved_x8<true, Block, kQ4>(n, wgb, w_stride, 8, ab + c * act_stride, act_stride,
                                                       1, y + c * ldy + 8 * g, ldy);
    }
}

}  // namespace

namespace detail {

GemmFn gemm_interleaved_i8mm(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
            return &gemm_interleaved_x8_i8mm<block_q8_0xG<8>, false>;
        case GgmlType::Q4_0:
            return &gemm_interleaved_x8_i8mm<block_q4_0xG<8>, true>;
        case GgmlType::Q5_0:
            return &gemm_interleaved_x8_i8mm<block_q5_0xG<8>, true>;
        default:
            return nullptr;
    }
}

}  // namespace detail
}  // namespace lctx::kernels
