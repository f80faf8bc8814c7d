// Internal: the ARM64 plain-row prompt tiles of the K types without an interleaved layout (Q2_K, Q3_K,
// Q5_K, IQ4_XS) against Q8_K activations, shared by the NEON and dotprod levels (templates over kSdot, as
// dot_kquants_arm_inl.h's dot products). Each super-block of a weight row is unpacked once to its 256 signed
// values (16 registers of 16 elements, in element order) and the scale of each 16, then applied to up to
// kKTileActs activations; the row is read and unpacked once per tile instead of once per activation.
//
// Each output is its type's vec_dot: the integer sums are exact in any order, and the float work per
// super-block is the same expression (sum += d_w d_a isum, less dmin_w d_a msum where the type has
// minimums), so the gemm gives the dot products' bits whatever the tile.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/dot_arm_inl.h"
#include "kernels/dot_kquants_arm_inl.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

namespace lctx::kernels::arm {
namespace {

// Activations per tile: 4 sums in flight beside the 16 registers of the unpacked super-block.
constexpr int kKTileActs = 4;

// One super-block unpacked: values w[k] of elements 16k .. 16k + 15, times the scale sc[k]; mn: Q5_K's
// six-bit minimums of its sub-blocks of 32.
struct KUnpacked {
    int8x16_t w[16];
    int32_t sc[16];
    uint8_t mn[8];
};

// sum_k sc[k] * (w[k] . a[16k ..]): the super-block's integer sum against one activation (exact).
template <bool kSdot>
inline int32_t k_isum(const KUnpacked &u, const int8_t *a) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int k = 0; k < 16; ++k) isum = vmlaq_n_s32(isum, dot16<kSdot>(u.w[k], a + 16 * k), u.sc[k]);
    return vaddvq_s32(isum);
}

// Q2_K (vec_dot_q2_K's order): sub-block 8h + 2k + g is bits 2k, 2k + 1 of qs[32h + 16g ..], scale the low
// nibble of its scale byte.
struct Q2KTile {
    using Block = block_q2_K;
    static void unpack(const Block &x, KUnpacked *u) {
        const uint8x16_t m3 = vdupq_n_u8(0x03);
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 2; ++g) {
                uint8x16_t q = vld1q_u8(x.qs + 32 * h + 16 * g);
                for (int k = 0; k < 4; ++k) {
                    const int sub = 8 * h + 2 * k + g;
                    u->w[sub] = vreinterpretq_s8_u8(vandq_u8(q, m3));
                    u->sc[sub] = x.scales[sub] & 0x0f;
                    q = vshrq_n_u8(q, 2);
                }
            }
    }
    template <bool kSdot>
    static void add(float *sum, const Block &x, const KUnpacked &u, const block_q8_K &y) {
        const int32_t msum = q2_K_min_sum(x.scales, y.bsums);
        const int32_t isum = k_isum<kSdot>(u, y.qs);
        const float dy = y.d;
        *sum += dy * fp16_to_fp32(x.d) * static_cast<float>(isum) -
                dy * fp16_to_fp32(x.dmin) * static_cast<float>(msum);
    }
};

// Q3_K (vec_dot_q3_K's order): half h's run k, elements 16p .. 16p + 15, is the 16 of index 8h + 2k + p.
struct Q3KTile {
    using Block = block_q3_K;
    static void unpack(const Block &x, KUnpacked *u) {
        const uint8x16_t m3 = vdupq_n_u8(0x03), four = vdupq_n_u8(4);
        int8_t sc[16];
        q3_K_scales(x.scales, sc);
        const uint8x16_t hm[2] = {vld1q_u8(x.hmask), vld1q_u8(x.hmask + 16)};
        for (int h = 0; h < 2; ++h)
            for (int p = 0; p < 2; ++p) {
                uint8x16_t q = vld1q_u8(x.qs + 32 * h + 16 * p);
                uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << (4 * h)));
                for (int k = 0; k < 4; ++k) {
                    const int idx = 8 * h + 2 * k + p;
                    const uint8x16_t low = vandq_u8(q, m3);
                    const uint8x16_t off = vbicq_u8(four, vtstq_u8(hm[p], bit));  // 4 where the bit is clear
                    u->w[idx] = vsubq_s8(vreinterpretq_s8_u8(low), vreinterpretq_s8_u8(off));
                    u->sc[idx] = sc[idx];
                    q = vshrq_n_u8(q, 2);
                    bit = vshlq_n_u8(bit, 1);
                }
            }
    }
    template <bool kSdot>
    static void add(float *sum, const Block &x, const KUnpacked &u, const block_q8_K &y) {
        const int32_t isum = k_isum<kSdot>(u, y.qs);
        *sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(isum);
    }
};

// Q5_K (vec_dot_q45_K's order): chunk c's low nibbles (with qh's bit 2c) are sub-block 2c, elements
// 64c .. 64c + 31, its high nibbles (bit 2c + 1) sub-block 2c + 1.
struct Q5KTile {
    using Block = block_q5_K;
    static void unpack(const Block &x, KUnpacked *u) {
        const uint8x16_t m4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
        uint8_t sc[8];
        k4_scales_mins(x.scales, sc, u->mn);
        uint8x16_t h0 = vld1q_u8(x.qh), h1 = vld1q_u8(x.qh + 16);
        for (int c = 0; c < 4; ++c) {
            const uint8x16_t q0 = vld1q_u8(x.qs + 32 * c), q1 = vld1q_u8(x.qs + 32 * c + 16);
            const uint8x16_t lo0 = vorrq_u8(vandq_u8(q0, m4), vshlq_n_u8(vandq_u8(h0, one), 4));
            const uint8x16_t lo1 = vorrq_u8(vandq_u8(q1, m4), vshlq_n_u8(vandq_u8(h1, one), 4));
            const uint8x16_t hi0 =
                vorrq_u8(vshrq_n_u8(q0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h0, 1), one), 4));
            const uint8x16_t hi1 =
                vorrq_u8(vshrq_n_u8(q1, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h1, 1), one), 4));
            h0 = vshrq_n_u8(h0, 2);
            h1 = vshrq_n_u8(h1, 2);
            u->w[4 * c] = vreinterpretq_s8_u8(lo0);
            u->w[4 * c + 1] = vreinterpretq_s8_u8(lo1);
            u->w[4 * c + 2] = vreinterpretq_s8_u8(hi0);
            u->w[4 * c + 3] = vreinterpretq_s8_u8(hi1);
            u->sc[4 * c] = u->sc[4 * c + 1] = sc[2 * c];
            u->sc[4 * c + 2] = u->sc[4 * c + 3] = sc[2 * c + 1];
        }
    }
    template <bool kSdot>
    static void add(float *sum, const Block &x, const KUnpacked &u, const block_q8_K &y) {
        const int32_t msum = k4_min_sum(u.mn, y.bsums);
        const int32_t isum = k_isum<kSdot>(u, y.qs);
        const float dy = y.d;
        *sum += fp16_to_fp32(x.d) * dy * static_cast<float>(isum) -
                fp16_to_fp32(x.dmin) * dy * static_cast<float>(msum);
    }
};

// IQ4_XS (vec_dot_iq4_xs's order): sub-block j's low nibbles are elements 32j .. 32j + 15, its high ones
// the next 16, each a level of the IQ4_NL table.
struct IQ4XSTile {
    using Block = block_iq4_xs;
    static void unpack(const Block &x, KUnpacked *u) {
        const int8x16_t levels = vld1q_s8(kValuesIq4nl);
        const uint8x16_t m4 = vdupq_n_u8(0x0f);
        for (int j = 0; j < 8; ++j) {
            const int s =
                (((x.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((x.scales_h >> (2 * j)) & 3) << 4)) - 32;
            const uint8x16_t v = vld1q_u8(x.qs + 16 * j);
            u->w[2 * j] = vqtbl1q_s8(levels, vandq_u8(v, m4));
            u->w[2 * j + 1] = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
            u->sc[2 * j] = u->sc[2 * j + 1] = s;
        }
    }
    template <bool kSdot>
    static void add(float *sum, const Block &x, const KUnpacked &u, const block_q8_K &y) {
        const int32_t isum = k_isum<kSdot>(u, y.qs);
        *sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(isum);
    }
};

// The plain-row gemm of a K type (GemmFn): row by row, the activations kKTileActs at a time, each
// super-block unpacked once for the tile and its next bytes asked of the caches (as the interleaved kernels).
template <bool kSdot, class Tile>
void gemm_k_tiles(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                  float *y, int64_t ldy) {
    using Block = typename Tile::Block;
    const int64_t nb = n / kQK_K;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t r = 0; r < nr; ++r) {
        const auto *x = reinterpret_cast<const Block *>(wb + r * ldw);
        for (int64_t c0 = 0; c0 < nc; c0 += kKTileActs) {
            const int na = static_cast<int>(std::min<int64_t>(kKTileActs, nc - c0));
            const block_q8_K *a[kKTileActs];
            float sum[kKTileActs];
            for (int k = 0; k < na; ++k) {
                a[k] = reinterpret_cast<const block_q8_K *>(ab + (c0 + k) * lda);
                sum[k] = 0.0f;
            }
            for (int64_t i = 0; i < nb; ++i) {
                __builtin_prefetch(reinterpret_cast<const uint8_t *>(x + i) + kPrefetchAhead);
                KUnpacked u;
                Tile::unpack(x[i], &u);
                for (int k = 0; k < na; ++k) Tile::template add<kSdot>(&sum[k], x[i], u, a[k][i]);
            }
            for (int k = 0; k < na; ++k) y[(c0 + k) * ldy + r] = sum[k];
        }
    }
}

}  // namespace
}  // namespace lctx::kernels::arm
#endif
