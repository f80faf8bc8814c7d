// 256-bit gemm over interleaved weights (interleave.h), included after dot_x86_inl.h by dot_avx2.cpp and
// dot_avx512.cpp (same rules: anonymous namespace, compiled once per ISA file).
//
// One 32-byte weight load holds 4 elements of each of 8 rows; the 4 matching activation bytes are broadcast
// to every lane, so vpmaddubsw / vpdpbusd give each lane its own row's partial dot product. Per block and
// (8 rows, activation) pair: integer sums, one conversion, one fma with the 8 rows' scales times the
// activation's scale. Each output lane adds its blocks in order, whatever the tile width, so the value does
// not depend on the batch size or the thread split.
#pragma once
#include "kernels/interleave.h"

namespace lctx::kernels {
namespace {

// Software prefetch, per block, of the lines kPrefetchAhead bytes further on, covering the whole block
// (headers included). A single core does not keep enough misses in flight on its own: without it the
// 1-thread matrix-vector product reads 6-10 GB/s from DRAM, with it 13-18 (matmul_bench GemmX8/*/32768,
// distances of 1-8 KiB measured; 2 KiB was as good as any, within this machine's noise).
constexpr size_t kPrefetchAhead = 2048;
template <class Block>
inline void prefetch_ahead(const Block &x) {
    const char *p = reinterpret_cast<const char *>(&x) + kPrefetchAhead;
    for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
}

inline __m256i bcast_u32(const int8_t *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// s16 + (lo . aq[0..4)) + (hi . aq[4..8)) in int16 lanes: the unsigned codes of one step's two nibble halves
// (4 elements of each row per 32-bit lane) against the matching activation bytes, broadcast to every lane.
inline __m256i add_step_products(__m256i s16, __m256i lo, __m256i hi, const int8_t *aq) {
    return _mm256_add_epi16(s16, _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast_u32(aq)),
                                                  _mm256_maddubs_epi16(hi, bcast_u32(aq + 4))));
}

// 8 x Q4_0 rows x C activations. asum8[c * nb + b] = 8 * (sum of activation c's codes in block b): the
// codes are unsigned (q + 8), so sum (q + 8) a - 8 sum a = sum q a.
template <int C>
struct Q4_0x8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *asum8,
                    float *y, int64_t ldy) {
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        __m256 acc[C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
        const auto *xb = reinterpret_cast<const block_q4_0x8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const block_q4_0x8 &x = xb[b];
            prefetch_ahead(x);
            __m256i s[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) s[c] = _mm256_setzero_si256();
            LCTX_UNROLL
            for (int g = 0; g < 4; ++g) {
                const __m256i v = loadu256(x.qs + 32 * g);
                const __m256i lo = _mm256_and_si256(v, m4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const int8_t *aq = reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].qs + 8 * g;
#if LCTX_X86_VNNI
                    s[c] = _mm256_dpbusd_epi32(s[c], lo, bcast_u32(aq));
                    s[c] = _mm256_dpbusd_epi32(s[c], hi, bcast_u32(aq + 4));
#else
                    // int16 lanes: 8 loads x 2 products x 15 x 127 = 30480 at most, no overflow.
                    s[c] = add_step_products(s[c], lo, hi, aq);
#endif
                }
            }
            const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
#if LCTX_X86_VNNI
                __m256i s32 = s[c];
#else
                __m256i s32 = _mm256_madd_epi16(s[c], _mm256_set1_epi16(1));
#endif
                s32 = _mm256_sub_epi32(s32, _mm256_set1_epi32(asum8[c * nb + b]));
                const float dy = h2f(reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].d);
                acc[c] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(d8, _mm256_set1_ps(dy)), acc[c]);
            }
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
    }
};

// 8 x Q5_0 rows x C activations: codes 0..31 = nibble | fifth bit << 4; asum16[c * nb + b] = 16 * (sum of
// activation c's codes in block b). int16 lanes are widened every 2 steps (8 products of at most 31 x 127).
template <int C>
struct Q5_0x8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *asum16,
                    float *y, int64_t ldy) {
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        const __m256i m10 = _mm256_set1_epi8(0x10);
        const __m256i ones = _mm256_set1_epi16(1);
        __m256 acc[C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
        const auto *xb = reinterpret_cast<const block_q5_0x8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const block_q5_0x8 &x = xb[b];
            prefetch_ahead(x);
            const __m256i qh = loadu256(x.qh);
            // fifth bits of step g: bit 2g (low nibble's element) and 2g + 1, moved to bit 4
            const __m256i h[8] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), m10),
                                  _mm256_and_si256(_mm256_slli_epi16(qh, 3), m10),
                                  _mm256_and_si256(_mm256_slli_epi16(qh, 2), m10),
                                  _mm256_and_si256(_mm256_slli_epi16(qh, 1), m10),
                                  _mm256_and_si256(qh, m10),
                                  _mm256_and_si256(_mm256_srli_epi16(qh, 1), m10),
                                  _mm256_and_si256(_mm256_srli_epi16(qh, 2), m10),
                                  _mm256_and_si256(_mm256_srli_epi16(qh, 3), m10)};
            __m256i s32[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) s32[c] = _mm256_setzero_si256();
            LCTX_UNROLL
            for (int half = 0; half < 2; ++half) {
                __m256i s16[C];
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) s16[c] = _mm256_setzero_si256();
                LCTX_UNROLL
                for (int gg = 0; gg < 2; ++gg) {
                    const int g = 2 * half + gg;
                    const __m256i v = loadu256(x.qs + 32 * g);
                    const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4), h[2 * g]);
                    const __m256i hi =
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h[2 * g + 1]);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const int8_t *aq = reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].qs + 8 * g;
                        s16[c] = add_step_products(s16[c], lo, hi, aq);
                    }
                }
                LCTX_UNROLL
                for (int c = 0; c < C; ++c)
                    s32[c] = _mm256_add_epi32(s32[c], _mm256_madd_epi16(s16[c], ones));
            }
            const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const __m256i s = _mm256_sub_epi32(s32[c], _mm256_set1_epi32(asum16[c * nb + b]));
                const float dy = h2f(reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].d);
                acc[c] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d8, _mm256_set1_ps(dy)), acc[c]);
            }
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
    }
};

// 8 x Q8_0 rows x C activations: signed x signed through |w| and the activation with w's sign.
template <int C>
struct Q8_0x8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                    int64_t ldy) {
        __m256 acc[C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
        const auto *xb = reinterpret_cast<const block_q8_0x8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const block_q8_0x8 &x = xb[b];
            prefetch_ahead(x);
            __m256i s[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) s[c] = _mm256_setzero_si256();
            LCTX_UNROLL
            for (int g = 0; g < 8; ++g) {
                const __m256i v = loadu256(x.qs + 32 * g);
                const __m256i av = _mm256_sign_epi8(v, v);
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const int8_t *aq = reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].qs + 4 * g;
                    const __m256i ys = _mm256_sign_epi8(bcast_u32(aq), v);
#if LCTX_X86_VNNI
                    s[c] = _mm256_dpbusd_epi32(s[c], av, ys);
#else
                    s[c] = _mm256_add_epi32(
                        s[c], _mm256_madd_epi16(_mm256_maddubs_epi16(av, ys), _mm256_set1_epi16(1)));
#endif
                }
            }
            const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const float dy = h2f(reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].d);
                acc[c] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c]), _mm256_mul_ps(d8, _mm256_set1_ps(dy)), acc[c]);
            }
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
    }
};

// kOffset * sum of the codes of each Q8_0 block of nc activation rows -> out[c * nb + b].
template <int kOffset>
void q8_0_block_sums(const uint8_t *act, size_t lda, int64_t nc, int64_t nb, int32_t *out) {
    for (int64_t c = 0; c < nc; ++c) {
        const auto *a = reinterpret_cast<const block_q8_0 *>(act + c * lda);
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(kOffset), loadu256(a[b].qs));
            out[c * nb + b] = hsum_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
        }
    }
}

// 8 x Q4_K rows x C activations. Per sub-block j: int16 sums of the nibble products (16 products of at most
// 15 x 127 per lane), widened by vpmaddwd with the rows' scales (each row's scale in both int16 lanes of its
// 32-bit lane); the mins meet the activation's sub-block sums, passed in bs4[(c * nb + b) * 4 + jp] as the
// int16 pair (sum of sub-block 2 jp, sum of 2 jp + 1).
template <int C>
struct Q4_Kx8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *bs4, float *y,
                    int64_t ldy) {
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        // byte r of a broadcast 8-byte group -> both int16 lanes of 32-bit lane r (zero-extended)
        const __m256i pair = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1,
                                              4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
        __m256 acc[C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
        const auto *xb = reinterpret_cast<const block_q4_Kx8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const block_q4_Kx8 &x = xb[b];
            prefetch_ahead(x);
            __m256i isum[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
            for (int j = 0; j < 8; ++j) {
                int64_t scj;
                std::memcpy(&scj, x.scales[j], 8);
                const __m256i sc = _mm256_shuffle_epi8(_mm256_set1_epi64x(scj), pair);
                __m256i s16[C];
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) s16[c] = _mm256_setzero_si256();
                LCTX_UNROLL
                for (int g = 0; g < 4; ++g) {
                    const __m256i v = loadu256(x.qs[j][g]);
                    const __m256i lo = _mm256_and_si256(v, m4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const int8_t *aq =
                            reinterpret_cast<const block_q8_K *>(a + c * lda)[b].qs + 32 * j + 8 * g;
                        s16[c] = add_step_products(s16[c], lo, hi, aq);
                    }
                }
                LCTX_UNROLL
                for (int c = 0; c < C; ++c)
                    isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(s16[c], sc));
            }
            __m256i msum[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) msum[c] = _mm256_setzero_si256();
            LCTX_UNROLL
            for (int jp = 0; jp < 4; ++jp) {
                const __m256i m16 = _mm256_cvtepu8_epi16(loadu128(x.mins[jp]));
                LCTX_UNROLL
                for (int c = 0; c < C; ++c)
                    msum[c] = _mm256_add_epi32(
                        msum[c], _mm256_madd_epi16(m16, _mm256_set1_epi32(bs4[(c * nb + b) * 4 + jp])));
            }
            const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
            const __m256 m8 = _mm256_cvtph_ps(loadu128(x.dmin));
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const __m256 dy = _mm256_set1_ps(reinterpret_cast<const block_q8_K *>(a + c * lda)[b].d);
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d8, dy), acc[c]);
                acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[c]), _mm256_mul_ps(m8, dy), acc[c]);
            }
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
    }
};

// The int16 pairs of Q8_K sub-block sums that tile_q4_Kx8 takes, for nc activation rows.
inline void q8_K_subblock_pairs(const uint8_t *act, size_t lda, int64_t nc, int64_t nb, int32_t *out) {
    for (int64_t c = 0; c < nc; ++c) {
        const auto *a = reinterpret_cast<const block_q8_K *>(act + c * lda);
        for (int64_t b = 0; b < nb; ++b) {
            for (int jp = 0; jp < 4; ++jp) {
                const int16_t *s = a[b].bsums + 4 * jp;
                const auto lo = static_cast<uint16_t>(s[0] + s[1]), hi = static_cast<uint16_t>(s[2] + s[3]);
                out[(c * nb + b) * 4 + jp] =
                    static_cast<int32_t>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
            }
        }
    }
}

// 8 x Q6_K rows x C activations: codes 0..63 (low nibble | top bits << 4), value d * sc_k * (code - 32). Two
// vpmaddubsw (2 x 2 x 63 x 127 per int16 lane) per widening; a group's 16-element sum is multiplied by its
// scale in int32 (one sign extension of the 8 rows' scales instead of pairing them per int16 lane); the -32
// meets the activation's 16-element sums once per block.
template <int C>
struct Q6_Kx8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                    int64_t ldy) {
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        const __m256i m30 = _mm256_set1_epi8(0x30);
        const __m256i ones = _mm256_set1_epi16(1);
        __m256 acc[C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
        const auto *xb = reinterpret_cast<const block_q6_Kx8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const block_q6_Kx8 &x = xb[b];
            prefetch_ahead(x);
            __m256i isum[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
            for (int j = 0; j < 8; ++j) {
                LCTX_UNROLL
                for (int h = 0; h < 2; ++h) {
                    const __m256i qh = loadu256(x.qh[j][h]);
                    const __m256i v0 = loadu256(x.ql[j][2 * h]), v1 = loadu256(x.ql[j][2 * h + 1]);
                    const __m256i lo0 = _mm256_or_si256(_mm256_and_si256(v0, m4),
                                                        _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
                    const __m256i hi0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v0, 4), m4),
                                                        _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
                    const __m256i lo1 = _mm256_or_si256(_mm256_and_si256(v1, m4), _mm256_and_si256(qh, m30));
                    const __m256i hi1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v1, 4), m4),
                                                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
                    // the 8 rows' scales of group 2j + h as int32 lanes
                    const __m256i sc = _mm256_cvtepi8_epi32(
                        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(x.scales[2 * j + h])));
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const int8_t *aq =
                            reinterpret_cast<const block_q8_K *>(a + c * lda)[b].qs + 32 * j + 16 * h;
                        const __m256i t0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo0, bcast_u32(aq)),
                                                            _mm256_maddubs_epi16(hi0, bcast_u32(aq + 4)));
                        const __m256i t1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo1, bcast_u32(aq + 8)),
                                                            _mm256_maddubs_epi16(hi1, bcast_u32(aq + 12)));
                        const __m256i d16 =
                            _mm256_add_epi32(_mm256_madd_epi16(t0, ones), _mm256_madd_epi16(t1, ones));
                        isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(d16, sc));
                    }
                }
            }
            __m256i osum[C];
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) osum[c] = _mm256_setzero_si256();
            LCTX_UNROLL
            for (int kp = 0; kp < 8; ++kp) {
                const __m128i e = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(x.scales[2 * kp]));
                const __m128i o = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(x.scales[2 * kp + 1]));
                const __m256i p16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(e, o));
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const int16_t *bs = reinterpret_cast<const block_q8_K *>(a + c * lda)[b].bsums + 2 * kp;
                    int32_t pr;
                    std::memcpy(&pr, bs, 4);
                    osum[c] = _mm256_add_epi32(osum[c], _mm256_madd_epi16(p16, _mm256_set1_epi32(pr)));
                }
            }
            const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const __m256i s = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(osum[c], 5));
                const __m256 dy = _mm256_set1_ps(reinterpret_cast<const block_q8_K *>(a + c * lda)[b].d);
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d8, dy), acc[c]);
            }
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
    }
};

// 8 rows of F16 / BF16 weights x C activations of the same type (block_f16x8: 8 elements of each row per
// 128-byte block). Each (row, activation) keeps 8 f32 partial sums reduced once at the end, as the plain
// float tile does, so the values are the plain kernel's. One activation: all 8 rows at once; more: 4 rows at
// a time (4 x 3 accumulators fill the 16 registers), the second half of the group then read from L1.
template <class L, int C>
struct FloatX8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                    int64_t ldy) {
        using T = typename L::T;
        constexpr int R = C == 1 ? 8 : 4;
        const auto *xb = reinterpret_cast<const block_f16x8 *>(w);
        for (int h = 0; h < 8; h += R) {
            __m256 acc[R][C];
            LCTX_UNROLL
            for (int r = 0; r < R; ++r) {
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
            }
            for (int64_t b = 0; b < nb; ++b) {
                const block_f16x8 &x = xb[b];
                if (h == 0) prefetch_ahead(x);
                __m256 xv[R];
                LCTX_UNROLL
                for (int r = 0; r < R; ++r) xv[r] = L::v(reinterpret_cast<const T *>(x.v[h + r]));
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const __m256 yv = L::v(reinterpret_cast<const T *>(a + c * lda) + 8 * b);
                    LCTX_UNROLL
                    for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], yv, acc[r][c]);
                }
            }
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                LCTX_UNROLL
                for (int r = 0; r < R; ++r) y[c * ldy + h + r] = hsum_ps(acc[r][c]);
            }
        }
    }
};
template <int C>
using F16x8Tile = FloatX8Tile<LoadF16, C>;
template <int C>
using BF16x8Tile = FloatX8Tile<LoadBF16, C>;

using TileX8Fn = void (*)(int64_t, const uint8_t *, const uint8_t *, size_t, const int32_t *, float *,
                          int64_t);
constexpr int kTileX8C = 4;

template <template <int> class Tile>
struct X8Table {
    static constexpr TileX8Fn fn[kTileX8C] = {&Tile<1>::run, &Tile<2>::run, &Tile<3>::run, &Tile<4>::run};
};

enum class ActSums { None, Q8_0Blocks, Q8_0Blocks16, Q8_KPairs };

// Groups of 8 rows x up to kMaxC activations; the activations of a call (at most one token chunk) stay in
// L2 while each group's blocks are reused from L1.
template <template <int> class Tile, ActSums kSums, int kBlock, int kMaxC>
void gemm_x8_tiled(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                   float *y, int64_t ldy) {
    static_assert(kMaxC >= 1 && kMaxC <= kTileX8C);
    const int64_t nb = n / kBlock;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    // The buffer comes from a baseline translation unit: no std::vector code may be instantiated here (an
    // inline library function compiled with this file's ISA flags could be the copy the linker keeps).
    const int64_t per_act = kSums == ActSums::None ? 0 : kSums == ActSums::Q8_KPairs ? nb * 4 : nb;
    int32_t *sums = per_act ? x8_sums_scratch(static_cast<size_t>(nc * per_act)) : nullptr;
    if constexpr (kSums == ActSums::Q8_0Blocks) q8_0_block_sums<8>(ab, lda, nc, nb, sums);
    if constexpr (kSums == ActSums::Q8_0Blocks16) q8_0_block_sums<16>(ab, lda, nc, nb, sums);
    if constexpr (kSums == ActSums::Q8_KPairs) q8_K_subblock_pairs(ab, lda, nc, nb, sums);
    for (int64_t r0 = 0; r0 < nr; r0 += 8) {
        for (int64_t c0 = 0; c0 < nc; c0 += kMaxC) {
            const int cc = static_cast<int>(nc - c0 < kMaxC ? nc - c0 : kMaxC);
            X8Table<Tile>::fn[cc - 1](nb, wb + r0 * ldw, ab + c0 * lda, lda,
                                      sums ? sums + c0 * per_act : nullptr, y + c0 * ldy + r0, ldy);
        }
    }
}

inline GemmFn shared_gemm_x8(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
            return &gemm_x8_tiled<Q4_0x8Tile, ActSums::Q8_0Blocks, 32, 4>;
        case GgmlType::Q8_0:
            return &gemm_x8_tiled<Q8_0x8Tile, ActSums::None, 32, 4>;
        case GgmlType::Q5_0:
            return &gemm_x8_tiled<Q5_0x8Tile, ActSums::Q8_0Blocks16, 32, 4>;
        case GgmlType::Q4_K:
            return &gemm_x8_tiled<Q4_Kx8Tile, ActSums::Q8_KPairs, 256, 3>;
        case GgmlType::Q6_K:
            return &gemm_x8_tiled<Q6_Kx8Tile, ActSums::None, 256, 3>;
        case GgmlType::F16:
            return &gemm_x8_tiled<F16x8Tile, ActSums::None, 8, 3>;
        case GgmlType::BF16:
            return &gemm_x8_tiled<BF16x8Tile, ActSums::None, 8, 3>;
        default:
            return nullptr;
    }
}

}  // namespace
}  // namespace lctx::kernels
