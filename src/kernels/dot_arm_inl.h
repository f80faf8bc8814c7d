// Internal: the ARM64 dot-product kernels shared by the NEON level (dot_neon.cpp, armv8.0 Advanced SIMD) and
// the dotprod level (dot_dotprod.cpp, compiled with +dotprod), as the x86 levels share dot_x86_inl.h. Each
// kernel is a template over kSdot: the 8-bit dot products of four bytes into each i32 lane by SDOT (dotprod)
// or by widening multiplies and pairwise adds (smull + sadalp, NEON). Both give the same exact integer sums,
// so every output is the same float arithmetic on the same integers at both levels.
//
// Interleaved weights (interleave.h) are read in groups of 8 rows: a line of 32 bytes is two 128-bit
// registers, rows 0-3 and 4-7, one row per 32-bit lane, as the x86 kernels read theirs with one 256-bit
// register. An SDOT by lane then adds the activation's 4 matching bytes to each row's lane (no broadcast, no
// horizontal sums): one block of 32 elements of 8 rows is 16 SDOTs. Each output keeps one float chain over
// the blocks, sum += isum * (d_w * d_a), so its value does not depend on the tile it falls in.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

// Internal linkage (an unnamed namespace): each level's file keeps its own copies, compiled with its own
// flags, so the linker never hands the NEON level a copy compiled with +dotprod or +i8mm.
namespace lctx::kernels::arm {
namespace {

// Bytes ahead of the current weight block that the interleaved kernels ask the caches for (a few blocks of
// 8 rows: what one core's stream needs in flight to cover memory latency on a phone-class core).
constexpr size_t kPrefetchAhead = 1024;

// i32 lanes += 4-byte dot products of a and b, lane by lane.
template <bool kSdot>
inline int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b);

template <>
inline int32x4_t dot4<false>(int32x4_t acc, int8x16_t a, int8x16_t b) {
    // products of byte pairs (i16, exact), then pairs and quads added: lane k gets bytes 4k..4k+3
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    const int32x4_t plo = vpaddlq_s16(lo), phi = vpaddlq_s16(hi);  // pairs: [0,1],[2,3],...
    return vaddq_s32(acc, vpaddq_s32(plo, phi));
}

#if defined(__ARM_FEATURE_DOTPROD)
template <>
inline int32x4_t dot4<true>(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
}
#endif

// The 16 bytes whose every 32-bit lane is lane `lane` (4 bytes) of v: the activation's 4 bytes for each row.
template <int kLane>
inline int8x16_t lane_bytes(int8x16_t v) {
    return vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(v), kLane));
}

// acc (4 rows' lanes) += each row's 4 bytes in w times activation lane kLane's 4 bytes.
template <bool kSdot, int kLane>
inline int32x4_t dot_lane(int32x4_t acc, int8x16_t w, int8x16_t act) {
#if defined(__ARM_FEATURE_DOTPROD)
    if constexpr (kSdot) return vdotq_laneq_s32(acc, w, act, kLane);
#endif
    return dot4<false>(acc, w, lane_bytes<kLane>(act));
}

inline float32x4_t f16x4_to_f32(const uint16_t *h) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

// ---- plain rows ----

// Sum of the 32 products of one Q8_0 (or Q4_0 unpacked) block pair, as 4 i32 lanes.
template <bool kSdot>
inline int32x4_t block_dot(int8x16_t x0, int8x16_t x1, const int8_t *y) {
    const int32x4_t p = dot4<kSdot>(vdupq_n_s32(0), x0, vld1q_s8(y));
    return dot4<kSdot>(p, x1, vld1q_s8(y + 16));
}

template <bool kSdot>
float vec_dot_q8_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q8_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQK8_0; ++i) {
        const int32x4_t p = block_dot<kSdot>(vld1q_s8(x[i].qs), vld1q_s8(x[i].qs + 16), y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return vaddvq_f32(acc);
}

// Q4_0: codes 0..15 (element j low nibble of byte j, element j + 16 the high nibble), value d (code - 8).
inline void unpack_q4_0(const uint8_t *qs, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t v = vld1q_u8(qs);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f))), eight);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
}

template <bool kSdot>
float vec_dot_q4_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q4_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQK8_0; ++i) {
        int8x16_t lo, hi;
        unpack_q4_0(x[i].qs, &lo, &hi);
        const int32x4_t p = block_dot<kSdot>(lo, hi, y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return vaddvq_f32(acc);
}

// Q4_1 against Q8_1: codes 0..15 unsigned (no offset), x = d q + m; the block's m * s (s = d_y * sum q_y) is
// added apart, as the reference does.
template <bool kSdot>
float vec_dot_q4_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q4_1 *>(vx);
    const auto *y = static_cast<const block_q8_1 *>(vy);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float32x4_t acc = vdupq_n_f32(0.0f);
    float sum_m = 0.0f;
    for (int64_t i = 0; i < n / kQK8_1; ++i) {
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, m4));
        const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        const int32x4_t p = block_dot<kSdot>(lo, hi, y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
        sum_m += fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return vaddvq_f32(acc) + sum_m;
}

// Q5_0 / Q5_1 codes 0..31: the low 4 bits as Q4_0's nibbles, bit 4 of element j is bit j of qh (a
// little-endian u32). Each qh byte is spread over 8 lanes and tested against the lane's bit.
inline void unpack_q5(const uint8_t *qs, const uint8_t *qh, uint8x16_t *lo, uint8x16_t *hi) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    static const uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bits = vld1q_u8(kBits);
    const uint8x16_t h_lo =
        vcombine_u8(vdup_n_u8(static_cast<uint8_t>(h)), vdup_n_u8(static_cast<uint8_t>(h >> 8)));
    const uint8x16_t h_hi =
        vcombine_u8(vdup_n_u8(static_cast<uint8_t>(h >> 16)), vdup_n_u8(static_cast<uint8_t>(h >> 24)));
    const uint8x16_t b4 = vdupq_n_u8(0x10);
    const uint8x16_t v = vld1q_u8(qs);
    *lo = vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0f)), vandq_u8(vtstq_u8(h_lo, bits), b4));
    *hi = vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(vtstq_u8(h_hi, bits), b4));
}

// Q5_0 against Q8_0: x = d (q - 16).
template <bool kSdot>
float vec_dot_q5_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q5_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int8x16_t sixteen = vdupq_n_s8(16);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQK8_0; ++i) {
        uint8x16_t lo, hi;
        unpack_q5(x[i].qs, x[i].qh, &lo, &hi);
        const int32x4_t p = block_dot<kSdot>(vsubq_s8(vreinterpretq_s8_u8(lo), sixteen),
                                             vsubq_s8(vreinterpretq_s8_u8(hi), sixteen), y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return vaddvq_f32(acc);
}

// Q5_1 against Q8_1: x = d q + m, m * s added apart (as Q4_1).
template <bool kSdot>
float vec_dot_q5_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q5_1 *>(vx);
    const auto *y = static_cast<const block_q8_1 *>(vy);
    float32x4_t acc = vdupq_n_f32(0.0f);
    float sum_m = 0.0f;
    for (int64_t i = 0; i < n / kQK8_1; ++i) {
        uint8x16_t lo, hi;
        unpack_q5(x[i].qs, x[i].qh, &lo, &hi);
        const int32x4_t p = block_dot<kSdot>(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
        sum_m += fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return vaddvq_f32(acc) + sum_m;
}

// IQ4_NL against Q8_0: each nibble (Q4_0's order) indexes the 16 signed levels, one table lookup (TBL) per
// 16 codes.
template <bool kSdot>
float vec_dot_iq4_nl(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_iq4_nl *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int8x16_t levels = vld1q_s8(kValuesIq4nl);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQK4_NL; ++i) {
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int32x4_t p = block_dot<kSdot>(vqtbl1q_s8(levels, vandq_u8(v, m4)),
                                             vqtbl1q_s8(levels, vshrq_n_u8(v, 4)), y[i].qs);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return vaddvq_f32(acc);
}

// One output of the plain-row gemm: the level's vec_dot, so that an output is the same in any tile.
template <float (*kDot)(int64_t, const void *, const void *)>
void gemm_by_dots(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                  float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t c = 0; c < nc; ++c)
        for (int64_t r = 0; r < nr; ++r) y[c * ldy + r] = kDot(n, wb + r * ldw, ab + c * lda);
}

// ---- interleaved groups of 8 rows ----

// One Q8_0 block (32 elements) of 8 interleaved rows against one activation block: the rows' integer sums,
// rows 0-3 in s0 and 4-7 in s1. Line g (32 bytes) holds elements 4g..4g+3 of each row; activation elements
// 0-15 are lanes 0-3 of a0, 16-31 lanes 0-3 of a1.
template <bool kSdot>
inline void q8_0x8_block(const int8_t *qs, int8x16_t a0, int8x16_t a1, int32x4_t *s0, int32x4_t *s1) {
    int32x4_t r0 = vdupq_n_s32(0), r1 = vdupq_n_s32(0);
#define LCTX_LINE(g, a, lane)                                   \
    r0 = dot_lane<kSdot, lane>(r0, vld1q_s8(qs + 32 * (g)), a); \
    r1 = dot_lane<kSdot, lane>(r1, vld1q_s8(qs + 32 * (g) + 16), a);
    LCTX_LINE(0, a0, 0)
    LCTX_LINE(1, a0, 1)
    LCTX_LINE(2, a0, 2)
    LCTX_LINE(3, a0, 3)
    LCTX_LINE(4, a1, 0)
    LCTX_LINE(5, a1, 1)
    LCTX_LINE(6, a1, 2)
    LCTX_LINE(7, a1, 3)
#undef LCTX_LINE
    *s0 = r0;
    *s1 = r1;
}

// One 32-element run of 4-bit codes of 8 interleaved rows (a Q4_0 block, a Q4_K sub-block): 4 lines, line g
// holds elements 8g..8g+3 of each row in the low nibbles and 8g+4..8g+7 in the high ones; the values are
// code - kOffset (Q4_0: 8; Q4_K: 0, its minimum is applied apart).
template <bool kSdot, int kOffset>
inline void q4x8_run(const uint8_t *qs, int8x16_t a0, int8x16_t a1, int32x4_t *s0, int32x4_t *s1) {
    int32x4_t r0 = vdupq_n_s32(0), r1 = vdupq_n_s32(0);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    auto lo = [&](uint8x16_t v) {
        const int8x16_t c = vreinterpretq_s8_u8(vandq_u8(v, m4));
        return kOffset ? vsubq_s8(c, vdupq_n_s8(kOffset)) : c;
    };
    auto hi = [&](uint8x16_t v) {
        const int8x16_t c = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        return kOffset ? vsubq_s8(c, vdupq_n_s8(kOffset)) : c;
    };
#define LCTX_LINE(g, a, lane_lo, lane_hi)                   \
    {                                                       \
        const uint8x16_t w0 = vld1q_u8(qs + 32 * (g));      \
        const uint8x16_t w1 = vld1q_u8(qs + 32 * (g) + 16); \
        r0 = dot_lane<kSdot, lane_lo>(r0, lo(w0), a);       \
        r1 = dot_lane<kSdot, lane_lo>(r1, lo(w1), a);       \
        r0 = dot_lane<kSdot, lane_hi>(r0, hi(w0), a);       \
        r1 = dot_lane<kSdot, lane_hi>(r1, hi(w1), a);       \
    }
    LCTX_LINE(0, a0, 0, 1)
    LCTX_LINE(1, a0, 2, 3)
    LCTX_LINE(2, a1, 0, 1)
    LCTX_LINE(3, a1, 2, 3)
#undef LCTX_LINE
    *s0 = r0;
    *s1 = r1;
}

template <bool kSdot>
inline void q4_0x8_block(const uint8_t *qs, int8x16_t a0, int8x16_t a1, int32x4_t *s0, int32x4_t *s1) {
    q4x8_run<kSdot, 8>(qs, a0, a1, s0, s1);
}

// One Q5_0 block of 8 interleaved rows: Q4_0's 4 lines of low nibbles, and one line qh (rows 0-3, 4-7) whose
// bits 2g / 2g + 1 are the fifth bits of line g's low / high nibbles; values code - 16. qh is shifted right 2
// bits a line, so each line's bits are bits 0 and 1, moved to bit 4.
template <bool kSdot>
inline void q5_0x8_block(const uint8_t *qs, const uint8_t *qh, int8x16_t a0, int8x16_t a1, int32x4_t *s0,
                         int32x4_t *s1) {
    int32x4_t r0 = vdupq_n_s32(0), r1 = vdupq_n_s32(0);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
    const int8x16_t sixteen = vdupq_n_s8(16);
    uint8x16_t h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
    auto lo = [&](uint8x16_t v, uint8x16_t h) {
        return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), vandq_u8(vshlq_n_u8(h, 4), b4))),
                        sixteen);
    };
    auto hi = [&](uint8x16_t v, uint8x16_t h) {
        return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(vshlq_n_u8(h, 3), b4))),
                        sixteen);
    };
#define LCTX_LINE(g, a, lane_lo, lane_hi)                   \
    {                                                       \
        const uint8x16_t w0 = vld1q_u8(qs + 32 * (g));      \
        const uint8x16_t w1 = vld1q_u8(qs + 32 * (g) + 16); \
        r0 = dot_lane<kSdot, lane_lo>(r0, lo(w0, h0), a);   \
        r1 = dot_lane<kSdot, lane_lo>(r1, lo(w1, h1), a);   \
        r0 = dot_lane<kSdot, lane_hi>(r0, hi(w0, h0), a);   \
        r1 = dot_lane<kSdot, lane_hi>(r1, hi(w1, h1), a);   \
        h0 = vshrq_n_u8(h0, 2);                             \
        h1 = vshrq_n_u8(h1, 2);                             \
    }
    LCTX_LINE(0, a0, 0, 1)
    LCTX_LINE(1, a0, 2, 3)
    LCTX_LINE(2, a1, 0, 1)
    LCTX_LINE(3, a1, 2, 3)
#undef LCTX_LINE
    *s0 = r0;
    *s1 = r1;
}

// Interleaved Q8_0 / Q4_0 / Q5_0 (act Q8_0) over groups of 8 rows; Block = block_q8_0xG<8>, block_q4_0xG<8>
// or block_q5_0xG<8> (kQ4: the 4-bit lines, with Q5_0's fifth bits where Block has them).
template <bool kSdot, class Block, bool kQ4>
void gemm_interleaved_x8(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                         size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    const int64_t nb = n / kQK8_0;
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t g = 0; g < n_rows / 8; ++g) {
        const auto *wg = reinterpret_cast<const Block *>(static_cast<const uint8_t *>(w) + g * 8 * w_stride);
        for (int64_t c = 0; c < n_act; ++c) {
            const auto *a = reinterpret_cast<const block_q8_0 *>(ab + c * act_stride);
            float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
            for (int64_t b = 0; b < nb; ++b) {
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(wg + b) + kPrefetchAhead);
                const int8x16_t a0 = vld1q_s8(a[b].qs), a1 = vld1q_s8(a[b].qs + 16);
                int32x4_t s0, s1;
                if constexpr (std::is_same_v<Block, block_q5_0xG<8>>)
                    q5_0x8_block<kSdot>(wg[b].qs, wg[b].qh, a0, a1, &s0, &s1);
                else if constexpr (kQ4)
                    q4_0x8_block<kSdot>(wg[b].qs, a0, a1, &s0, &s1);
                else
                    q8_0x8_block<kSdot>(wg[b].qs, a0, a1, &s0, &s1);
                const float da = fp16_to_fp32(a[b].d);
                const float32x4_t d0 = vmulq_n_f32(f16x4_to_f32(wg[b].d), da);
                const float32x4_t d1 = vmulq_n_f32(f16x4_to_f32(wg[b].d + 4), da);
                acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(s0), d0);
                acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(s1), d1);
            }
            vst1q_f32(y + c * ldy + 8 * g, acc0);
            vst1q_f32(y + c * ldy + 8 * g + 4, acc1);
        }
    }
}

// 8 bytes as i32 lanes (rows 0-3, 4-7): unsigned (Q4_K's 6-bit scales and mins) or signed (Q6_K's scales).
inline void widen_u8x8(const uint8_t *p, int32x4_t *lo, int32x4_t *hi) {
    const uint16x8_t w = vmovl_u8(vld1_u8(p));
    *lo = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w)));
    *hi = vreinterpretq_s32_u32(vmovl_high_u16(w));
}
inline void widen_s8x8(const int8_t *p, int32x4_t *lo, int32x4_t *hi) {
    const int16x8_t w = vmovl_s8(vld1_s8(p));
    *lo = vmovl_s16(vget_low_s16(w));
    *hi = vmovl_high_s16(w);
}

// Interleaved Q4_K against Q8_K activations, groups of 8 rows. Per super-block: each sub-block j's integer
// sums times its 6-bit scale, summed over j (exact); the minimums times the activation's sums of each 32
// (its bsums, exact); then sum += isum * (d_w d_a) - msum * (dmin_w d_a), one chain per output.
template <bool kSdot>
void gemm_interleaved_q4_K_x8(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                              size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    using Block = block_q4_KxG<8>;
    const int64_t nb = n / kQK_K;
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t g = 0; g < n_rows / 8; ++g) {
        const auto *wg = reinterpret_cast<const Block *>(static_cast<const uint8_t *>(w) + g * 8 * w_stride);
        for (int64_t c = 0; c < n_act; ++c) {
            const auto *a = reinterpret_cast<const block_q8_K *>(ab + c * act_stride);
            float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
            for (int64_t b = 0; b < nb; ++b) {
                const Block &x = wg[b];
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(&x) + kPrefetchAhead);
                int32x4_t i0 = vdupq_n_s32(0), i1 = i0, m0 = i0, m1 = i0;
                for (int j = 0; j < 8; ++j) {
                    const int8x16_t a0 = vld1q_s8(a[b].qs + 32 * j), a1 = vld1q_s8(a[b].qs + 32 * j + 16);
                    int32x4_t s0, s1, sc0, sc1;
                    q4x8_run<kSdot, 0>(&x.qs[j][0][0], a0, a1, &s0, &s1);
                    widen_u8x8(x.scales[j], &sc0, &sc1);
                    i0 = vmlaq_s32(i0, s0, sc0);
                    i1 = vmlaq_s32(i1, s1, sc1);
                }
                for (int k = 0; k < 4; ++k) {
                    // mins[k][r][0..1]: sub-blocks 2k and 2k + 1 of each row, split by vld2
                    const uint8x8x2_t mk = vld2_u8(&x.mins[k][0][0]);
                    for (int h = 0; h < 2; ++h) {
                        const int j = 2 * k + h;
                        const int16_t bs = static_cast<int16_t>(a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
                        const int16x8_t mn = vreinterpretq_s16_u16(vmovl_u8(mk.val[h]));
                        m0 = vmlal_n_s16(m0, vget_low_s16(mn), bs);
                        m1 = vmlal_n_s16(m1, vget_high_s16(mn), bs);
                    }
                }
                const float da = a[b].d;
                acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(i0), vmulq_n_f32(f16x4_to_f32(x.d), da));
                acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(i1), vmulq_n_f32(f16x4_to_f32(x.d + 4), da));
                acc0 = vfmsq_f32(acc0, vcvtq_f32_s32(m0), vmulq_n_f32(f16x4_to_f32(x.dmin), da));
                acc1 = vfmsq_f32(acc1, vcvtq_f32_s32(m1), vmulq_n_f32(f16x4_to_f32(x.dmin + 4), da));
            }
            vst1q_f32(y + c * ldy + 8 * g, acc0);
            vst1q_f32(y + c * ldy + 8 * g + 4, acc1);
        }
    }
}

// Interleaved Q6_K against Q8_K, groups of 8 rows. Each 16-element half h of sub-block j: two lines of low
// nibbles (elements 0-7 and 8-15 of the half, as Q4_0's lines) and one line of top bits (bits 0-1 / 2-3 the
// first line's low / high nibble elements, 4-5 / 6-7 the second's); values (low | top << 4) - 32, times the
// signed scale of the 16 (k = 2j + h). sum += isum * (d_w d_a) per super-block.
template <bool kSdot>
void gemm_interleaved_q6_K_x8(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                              size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    using Block = block_q6_KxG<8>;
    const int64_t nb = n / kQK_K;
    const auto *ab = static_cast<const uint8_t *>(act);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(0x03);
    const int8x16_t k32 = vdupq_n_s8(32);
    // low nibble / high nibble of l, with the 2 top bits of qh at bit `shift`
    auto code = [&](uint8x16_t low4, uint8x16_t qh, int shift) {
        uint8x16_t top;
        switch (shift) {
            case 0:
                top = vandq_u8(qh, m3);
                break;
            case 2:
                top = vandq_u8(vshrq_n_u8(qh, 2), m3);
                break;
            case 4:
                top = vandq_u8(vshrq_n_u8(qh, 4), m3);
                break;
            default:
                top = vshrq_n_u8(qh, 6);
                break;
        }
        return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low4, vshlq_n_u8(top, 4))), k32);
    };
    for (int64_t g = 0; g < n_rows / 8; ++g) {
        const auto *wg = reinterpret_cast<const Block *>(static_cast<const uint8_t *>(w) + g * 8 * w_stride);
        for (int64_t c = 0; c < n_act; ++c) {
            const auto *a = reinterpret_cast<const block_q8_K *>(ab + c * act_stride);
            float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
            for (int64_t b = 0; b < nb; ++b) {
                const Block &x = wg[b];
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(&x) + kPrefetchAhead);
                int32x4_t i0 = vdupq_n_s32(0), i1 = i0;
                for (int j = 0; j < 8; ++j)
                    for (int h = 0; h < 2; ++h) {
                        const auto &hf = x.half[j][h];
                        const int8x16_t av = vld1q_s8(a[b].qs + 32 * j + 16 * h);
                        int32x4_t r0 = vdupq_n_s32(0), r1 = r0;
                        for (int part = 0; part < 2; ++part) {  // rows 0-3, rows 4-7
                            const uint8x16_t l0 = vld1q_u8(hf.ql[0] + 16 * part);
                            const uint8x16_t l1 = vld1q_u8(hf.ql[1] + 16 * part);
                            const uint8x16_t qh = vld1q_u8(hf.qh + 16 * part);
                            int32x4_t &r = part ? r1 : r0;
                            r = dot_lane<kSdot, 0>(r, code(vandq_u8(l0, m4), qh, 0), av);
                            r = dot_lane<kSdot, 1>(r, code(vshrq_n_u8(l0, 4), qh, 2), av);
                            r = dot_lane<kSdot, 2>(r, code(vandq_u8(l1, m4), qh, 4), av);
                            r = dot_lane<kSdot, 3>(r, code(vshrq_n_u8(l1, 4), qh, 6), av);
                        }
                        int32x4_t sc0, sc1;
                        widen_s8x8(x.scales[2 * j + h], &sc0, &sc1);
                        i0 = vmlaq_s32(i0, r0, sc0);
                        i1 = vmlaq_s32(i1, r1, sc1);
                    }
                const float da = a[b].d;
                acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(i0), vmulq_n_f32(f16x4_to_f32(x.d), da));
                acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(i1), vmulq_n_f32(f16x4_to_f32(x.d + 4), da));
            }
            vst1q_f32(y + c * ldy + 8 * g, acc0);
            vst1q_f32(y + c * ldy + 8 * g + 4, acc1);
        }
    }
}

}  // namespace
}  // namespace lctx::kernels::arm
#endif
