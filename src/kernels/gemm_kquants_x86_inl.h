// Tiles of R weight rows x C activation rows (gemm) for the K super-block types (Q4_K, Q5_K, Q6_K, Q2_K,
// Q3_K, IQ4_XS) against Q8_K activations. Included only by dot_x86_inl.h, after its helpers, so like it
// this is compiled once per ISA file; the same rules hold: an anonymous namespace, no inline functions
// from other headers. With AVX-512 VNNI the scale multiply-add is vpdpwssd.
//
// Per super-block and tile row the scales are unpacked once (into KqRow); per 32-element chunk each
// row's quants are unpacked once and used for the C activation rows. Within a super-block the sums are
// integers; the offsets (Q4_K / Q5_K / Q2_K mins, the -32 of Q6_K, the -4 of Q3_K) go through the
// activation's bsums. Every output then takes the same float steps per super-block in the same order,
// whatever the tile shape, so its value depends only on its two rows.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "tensor/block_layouts.h"

namespace lctx::kernels {
namespace {

#define LCTX_KQ_UNROLL _Pragma("GCC unroll 16")

// One weight row's super-block, unpacked once for all activation rows of a tile.
struct KqRow {
    __m256i scale[8];  // int16 scales of chunk k (elements 32k..32k+31): low 128 bits, then high 128 bits
    __m256i corr16;    // int16 per group of 16 elements, multiplied with the activation's bsums
    float d, dmin;
};

// How the offset of the quants is taken out (corr16 . bsums, per super-block).
enum class KqCorr {
    None,  // signed quants
    Mins,  // x = d * sc * u - dmin * mn: the mins term is a second float term with dmin
    Int2,  // x = d * sc * (u - 4): subtract 4 * (sc . bsums) in the integer sum
    Int5,  // x = d * sc * (u - 32): subtract 32 * (sc . bsums)
};

// int16 scales of groups 2k (low 128 bits) and 2k + 1 (high 128 bits) for k = 0..7, from 16 int8 scales.
inline void kq_pair_scales(__m128i sc8, __m256i *out) {
    LCTX_KQ_UNROLL
    for (int k = 0; k < 8; ++k) {
        const __m128i pat =
            _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k));
        out[k] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pat));
    }
}

// The same scale for the 32 elements of chunk k: 8 unsigned int8 scales (bytes 0-7 of sc8).
inline void kq_chunk_scales(__m128i sc8, __m256i *out) {
    const __m256i s16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc8));  // 8 x i16 per lane
    LCTX_KQ_UNROLL
    for (int k = 0; k < 8; ++k) out[k] = _mm256_shuffle_epi8(s16, word_broadcast_pattern(k));
}

// Q4_K / Q5_K: chunk k is sub-block k: the low nibbles of qs[32 (k/2) ..] for even k, the high for odd
// (Q5_K: bit k of qh[l] is the fifth bit).
template <bool kFive>
struct KqQ45 {
    using Block = std::conditional_t<kFive, block_q5_K, block_q4_K>;
    static constexpr KqCorr kCorr = KqCorr::Mins;
    static constexpr bool kSigned = false;
    static void prepare(const Block &b, KqRow &row) {
        const __m128i smn = k4_scales_mins(b.scales);
        kq_chunk_scales(smn, row.scale);
        row.corr16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(smn, smn));  // m0 m0 m1 m1 ..
        row.d = h2f(b.d);
        row.dmin = h2f(b.dmin);
    }
    static __m256i quants(const Block &b, int k) {
        const __m256i q = loadu256(b.qs + 32 * (k / 2));
        __m256i u = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
        if constexpr (kFive) {
            const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(loadu256(b.qh), k), _mm256_set1_epi8(1));
            u = _mm256_or_si256(u, _mm256_slli_epi16(hb, 4));
        }
        return u;
    }
};

// Q6_K: element 128h + 32r + l (chunk k = 4h + r) has its low 4 bits in ql[64h + 32(r & 1) + l] (low
// nibble for r < 2) and its top 2 bits at bit 2r of qh[32h + l]; u = q + 32 in 0..63.
struct KqQ6 {
    using Block = block_q6_K;
    static constexpr KqCorr kCorr = KqCorr::Int5;
    static constexpr bool kSigned = false;
    static void prepare(const Block &b, KqRow &row) {
        const __m128i sc = loadu128(b.scales);
        kq_pair_scales(sc, row.scale);
        row.corr16 = _mm256_cvtepi8_epi16(sc);
        row.d = h2f(b.d);
        row.dmin = 0.0f;
    }
    static __m256i quants(const Block &b, int k) {
        const int h = k / 4, r = k % 4;
        const __m256i ql = loadu256(b.ql + 64 * h + 32 * (r & 1));
        const __m256i lo = _mm256_and_si256(r < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0f));
        // Bits 2r, 2r + 1 of each byte to bits 4, 5 (the bits kept come from the same byte).
        const __m256i qh = loadu256(b.qh + 32 * h);
        const __m256i hs = r == 0   ? _mm256_slli_epi16(qh, 4)
                           : r == 1 ? _mm256_slli_epi16(qh, 2)
                           : r == 2 ? qh
                                    : _mm256_srli_epi16(qh, 2);
        return _mm256_or_si256(lo, _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
    }
};

// Q2_K: element 128h + 32j + l (chunk k = 4h + j) is bits 2j..2j+1 of qs[32h + l]; scale byte g: low
// nibble the scale, high nibble the min of group g.
struct KqQ2 {
    using Block = block_q2_K;
    static constexpr KqCorr kCorr = KqCorr::Mins;
    static constexpr bool kSigned = false;
    static void prepare(const Block &b, KqRow &row) {
        const __m128i s = loadu128(b.scales);
        const __m128i m4 = _mm_set1_epi8(15);
        kq_pair_scales(_mm_and_si128(s, m4), row.scale);
        row.corr16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
        row.d = h2f(b.d);
        row.dmin = h2f(b.dmin);
    }
    static __m256i quants(const Block &b, int k) {
        const __m256i q = loadu256(b.qs + 32 * (k / 4));
        return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (k % 4)), _mm256_set1_epi8(3));
    }
};

// Q3_K: as Q2_K for the low 2 bits; the third bit is bit k of hmask[l]; u = q + 4 in 0..7.
struct KqQ3 {
    using Block = block_q3_K;
    static constexpr KqCorr kCorr = KqCorr::Int2;
    static constexpr bool kSigned = false;
    static void prepare(const Block &b, KqRow &row) {
        const __m128i sc = q3_K_scales(b.scales);
        kq_pair_scales(sc, row.scale);
        row.corr16 = _mm256_cvtepi8_epi16(sc);
        row.d = h2f(b.d);
        row.dmin = 0.0f;
    }
    static __m256i quants(const Block &b, int k) {
        const __m256i q = loadu256(b.qs + 32 * (k / 4));
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (k % 4)), _mm256_set1_epi8(3));
        const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(loadu256(b.hmask), k), _mm256_set1_epi8(1));
        return _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
    }
};

// IQ4_XS: sub-block k is the IQ4_NL table at the 32 nibbles of qs[16k ..] (signed), scale ls - 32.
struct KqIQ4XS {
    using Block = block_iq4_xs;
    static constexpr KqCorr kCorr = KqCorr::None;
    static constexpr bool kSigned = true;
    static void prepare(const Block &b, KqRow &row) {
        LCTX_KQ_UNROLL
        for (int k = 0; k < 8; ++k) {
            const int ls = ((b.scales_l[k / 2] >> (4 * (k % 2))) & 15) | (((b.scales_h >> (2 * k)) & 3) << 4);
            row.scale[k] = _mm256_set1_epi16(static_cast<int16_t>(ls - 32));
        }
        row.d = h2f(b.d);
        row.dmin = 0.0f;
    }
    static __m256i quants(const Block &b, int k) {
        return _mm256_shuffle_epi8(iq4nl_table(), unpack_nibbles(b.qs + 16 * k));
    }
};

// acc + (pair sums p16) . (int16 scales s), as 8 x i32.
inline __m256i kq_madd_acc(__m256i acc, __m256i p16, __m256i s) {
#if LCTX_X86_VNNI
    return _mm256_dpwssd_epi32(acc, p16, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s));
#endif
}

template <class U, int R, int C>
void kq_tile(int64_t nb, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda, float *y, int64_t ldy) {
    using Block = typename U::Block;
    __m256 acc[R][C];
    LCTX_KQ_UNROLL
    for (int r = 0; r < R; ++r) {
        LCTX_KQ_UNROLL
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nb; ++b) {
        const Block *xb[R];
        KqRow row[R];
        LCTX_KQ_UNROLL
        for (int r = 0; r < R; ++r) {
            xb[r] = reinterpret_cast<const Block *>(w + r * ldw) + b;
            // As in tile_q8: the same super-block of the next tile's rows (a prefetch does not fault).
            const char *next = reinterpret_cast<const char *>(xb[r]) + R * ldw;
            for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(next + o, _MM_HINT_T0);
            U::prepare(*xb[r], row[r]);
        }
        const block_q8_K *yb[C];
        LCTX_KQ_UNROLL
        for (int c = 0; c < C; ++c) yb[c] = reinterpret_cast<const block_q8_K *>(a + c * lda) + b;

        __m256i sumi[R][C];
        LCTX_KQ_UNROLL
        for (int r = 0; r < R; ++r) {
            LCTX_KQ_UNROLL
            for (int c = 0; c < C; ++c) sumi[r][c] = _mm256_setzero_si256();
        }
        LCTX_KQ_UNROLL
        for (int k = 0; k < 8; ++k) {  // chunks of 32 elements
            __m256i yv[C];
            LCTX_KQ_UNROLL
            for (int c = 0; c < C; ++c) yv[c] = loadu256(yb[c]->qs + 32 * k);
            LCTX_KQ_UNROLL
            for (int r = 0; r < R; ++r) {
                const __m256i q = U::quants(*xb[r], k);
                if constexpr (U::kSigned) {  // |q| times y with q's sign (see dot_i8)
                    const __m256i aq = _mm256_sign_epi8(q, q);
                    LCTX_KQ_UNROLL
                    for (int c = 0; c < C; ++c)
                        sumi[r][c] =
                            kq_madd_acc(sumi[r][c], _mm256_maddubs_epi16(aq, _mm256_sign_epi8(yv[c], q)),
                                        row[r].scale[k]);
                } else {
                    LCTX_KQ_UNROLL
                    for (int c = 0; c < C; ++c)
                        sumi[r][c] = kq_madd_acc(sumi[r][c], _mm256_maddubs_epi16(q, yv[c]), row[r].scale[k]);
                }
            }
            // Keep each sum a running register: left free, GCC reassociates the 8 adds into a tree whose
            // partial products spill.
            LCTX_KQ_UNROLL
            for (int r = 0; r < R; ++r) {
                LCTX_KQ_UNROLL
                for (int c = 0; c < C; ++c) keep_in_register(sumi[r][c]);
            }
        }

        LCTX_KQ_UNROLL
        for (int c = 0; c < C; ++c) {
            const float dy = yb[c]->d;
            LCTX_KQ_UNROLL
            for (int r = 0; r < R; ++r) {
                __m256i s = sumi[r][c];
                if constexpr (U::kCorr == KqCorr::Mins) {
                    // d * dy * s - dmin * dy * (mins . bsums), as (d * s - dmin * m) * dy.
                    const __m256i m = _mm256_madd_epi16(loadu256(yb[c]->bsums), row[r].corr16);
                    const __m256 t =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(row[r].d),
                                        _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(-row[r].dmin)));
                    acc[r][c] = _mm256_fmadd_ps(t, _mm256_set1_ps(dy), acc[r][c]);
                } else {
                    if constexpr (U::kCorr != KqCorr::None) {
                        constexpr int kShift = U::kCorr == KqCorr::Int5 ? 5 : 2;
                        const __m256i m = _mm256_madd_epi16(loadu256(yb[c]->bsums), row[r].corr16);
                        s = _mm256_sub_epi32(s, _mm256_slli_epi32(m, kShift));
                    }
                    acc[r][c] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(row[r].d * dy), acc[r][c]);
                }
            }
        }
    }
    LCTX_KQ_UNROLL
    for (int c = 0; c < C; ++c) {
        LCTX_KQ_UNROLL
        for (int r = 0; r < R; ++r) y[c * ldy + r] = hsum_ps(acc[r][c]);
    }
}

using KqTileFn = void (*)(int64_t, const uint8_t *, size_t, const uint8_t *, size_t, float *, int64_t);

// Tiles of up to kKqTileR x kKqTileC: R * C integer sums, C activation chunks and a row's quants fit the 16
// ymm registers of AVX2 (2 x 4 was the fastest of 2..4 x 2..4 for Q4_K and Q6_K on Zen 3); one activation:
// up to kKqRows1 rows.
constexpr int kKqTileR = 2, kKqTileC = 4, kKqRows1 = 4;

template <class U>
struct KqTable {
    KqTileFn fn[kKqTileR][kKqTileC];
    KqTileFn rows1[kKqRows1];  // R x 1
};

template <class U, int... Is, int... Js>
constexpr KqTable<U> kq_make_table(std::integer_sequence<int, Is...>, std::integer_sequence<int, Js...>) {
    KqTable<U> t{};
    ((t.fn[Is / kKqTileC][Is % kKqTileC] = &kq_tile<U, Is / kKqTileC + 1, Is % kKqTileC + 1>), ...);
    ((t.rows1[Js] = &kq_tile<U, Js + 1, 1>), ...);
    return t;
}

template <class U>
void gemm_kq(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
             float *y, int64_t ldy) {
    static constexpr KqTable<U> table = kq_make_table<U>(
        std::make_integer_sequence<int, kKqTileR * kKqTileC>{}, std::make_integer_sequence<int, kKqRows1>{});
    const int64_t nb = n / kQK_K;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    if (nc == 1) {
        for (int64_t r0 = 0; r0 < nr; r0 += kKqRows1) {
            const int rr = static_cast<int>(nr - r0 < kKqRows1 ? nr - r0 : kKqRows1);
            table.rows1[rr - 1](nb, wb + r0 * ldw, ldw, ab, lda, y + r0, ldy);
        }
        return;
    }
    for (int64_t r0 = 0; r0 < nr; r0 += kKqTileR) {
        const int rr = static_cast<int>(nr - r0 < kKqTileR ? nr - r0 : kKqTileR);
        for (int64_t c0 = 0; c0 < nc; c0 += kKqTileC) {
            const int cc = static_cast<int>(nc - c0 < kKqTileC ? nc - c0 : kKqTileC);
            table.fn[rr - 1][cc - 1](nb, wb + r0 * ldw, ldw, ab + c0 * lda, lda, y + c0 * ldy + r0, ldy);
        }
    }
}

#undef LCTX_KQ_UNROLL

}  // namespace
}  // namespace lctx::kernels
