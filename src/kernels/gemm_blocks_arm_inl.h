// Internal: the ARM64 plain-row prompt tiles of the 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL) against their Q8_0 / Q8_1 activations, shared by the NEON and dotprod levels (templates over
// kSdot, as dot_arm_inl.h's dot products). Each weight block is decoded once to its 32 signed or unsigned
// values (two registers, as its vec_dot decodes it) and applied to up to kBlockTileActs activations; the
// row is read and decoded once per tile instead of once per activation.
//
// Each output is its type's vec_dot: the same integer sums (exact) into the same 4-lane float chain,
// acc += isum * (d_w * d_a) block by block, lanes added at the end, and for Q4_1 / Q5_1 the same scalar sum
// of m_w * s_a added after, so the gemm gives the dot products' bits whatever the tile.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/dot_arm_inl.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

namespace lctx::kernels::arm {
namespace {

// Activations per tile: 4 float chains beside the 2 registers of the decoded block.
constexpr int kBlockTileActs = 4;

// Q8_0: the 32 bytes as they are.
struct Q8_0Tile {
    using Block = block_q8_0;
    using ActBlock = block_q8_0;
    static constexpr bool kMin = false;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) {
        *lo = vld1q_s8(x.qs);
        *hi = vld1q_s8(x.qs + 16);
    }
};

// Q4_0: codes less 8 (unpack_q4_0).
struct Q4_0Tile {
    using Block = block_q4_0;
    using ActBlock = block_q8_0;
    static constexpr bool kMin = false;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) { unpack_q4_0(x.qs, lo, hi); }
};

// Q4_1: codes 0..15 as they are; the block's m * s added apart.
struct Q4_1Tile {
    using Block = block_q4_1;
    using ActBlock = block_q8_1;
    static constexpr bool kMin = true;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) {
        const uint8x16_t v = vld1q_u8(x.qs);
        *lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f)));
        *hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    }
};

// Q5_0: codes 0..31 (unpack_q5) less 16.
struct Q5_0Tile {
    using Block = block_q5_0;
    using ActBlock = block_q8_0;
    static constexpr bool kMin = false;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) {
        uint8x16_t l, h;
        unpack_q5(x.qs, x.qh, &l, &h);
        const int8x16_t sixteen = vdupq_n_s8(16);
        *lo = vsubq_s8(vreinterpretq_s8_u8(l), sixteen);
        *hi = vsubq_s8(vreinterpretq_s8_u8(h), sixteen);
    }
};

// Q5_1: codes 0..31 as they are; the block's m * s added apart.
struct Q5_1Tile {
    using Block = block_q5_1;
    using ActBlock = block_q8_1;
    static constexpr bool kMin = true;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) {
        uint8x16_t l, h;
        unpack_q5(x.qs, x.qh, &l, &h);
        *lo = vreinterpretq_s8_u8(l);
        *hi = vreinterpretq_s8_u8(h);
    }
};

// IQ4_NL: each nibble a level of the table (one TBL per 16 codes).
struct IQ4NLTile {
    using Block = block_iq4_nl;
    using ActBlock = block_q8_0;
    static constexpr bool kMin = false;
    static void decode(const Block &x, int8x16_t *lo, int8x16_t *hi) {
        const int8x16_t levels = vld1q_s8(kValuesIq4nl);
        const uint8x16_t v = vld1q_u8(x.qs);
        *lo = vqtbl1q_s8(levels, vandq_u8(v, vdupq_n_u8(0x0f)));
        *hi = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
    }
};

// The plain-row gemm of a 32-element block type (GemmFn): row by row, the activations kBlockTileActs at a
// time, each weight block decoded once for the tile and its next bytes asked of the caches.
template <bool kSdot, class Tile>
void gemm_block_tiles(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                      int64_t nc, float *y, int64_t ldy) {
    using Block = typename Tile::Block;
    using ActBlock = typename Tile::ActBlock;
    const int64_t nb = n / kQK8_0;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t r = 0; r < nr; ++r) {
        const auto *x = reinterpret_cast<const Block *>(wb + r * ldw);
        for (int64_t c0 = 0; c0 < nc; c0 += kBlockTileActs) {
            const int na = static_cast<int>(std::min<int64_t>(kBlockTileActs, nc - c0));
            const ActBlock *a[kBlockTileActs];
            float32x4_t acc[kBlockTileActs];
            float sum_m[kBlockTileActs];
            for (int k = 0; k < na; ++k) {
                a[k] = reinterpret_cast<const ActBlock *>(ab + (c0 + k) * lda);
                acc[k] = vdupq_n_f32(0.0f);
                sum_m[k] = 0.0f;
            }
            for (int64_t i = 0; i < nb; ++i) {
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(x + i) + kPrefetchAhead);
                int8x16_t lo, hi;
                Tile::decode(x[i], &lo, &hi);
                const float dx = fp16_to_fp32(x[i].d);
                for (int k = 0; k < na; ++k) {
                    const ActBlock &b = a[k][i];
                    const int32x4_t p = block_dot<kSdot>(lo, hi, b.qs);
                    acc[k] = vfmaq_n_f32(acc[k], vcvtq_f32_s32(p), dx * fp16_to_fp32(b.d));
                    if constexpr (Tile::kMin) sum_m[k] += fp16_to_fp32(x[i].m) * fp16_to_fp32(b.s);
                }
            }
            for (int k = 0; k < na; ++k) {
                if constexpr (Tile::kMin)
                    y[(c0 + k) * ldy + r] = vaddvq_f32(acc[k]) + sum_m[k];
                else
                    y[(c0 + k) * ldy + r] = vaddvq_f32(acc[k]);
            }
        }
    }
}

}  // namespace
}  // namespace lctx::kernels::arm
#endif
