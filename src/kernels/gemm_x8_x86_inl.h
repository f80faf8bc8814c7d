// 256-bit gemm over interleaved weights (interleave.h), included after dot_x86_inl.h by dot_avx2.cpp and
// dot_avx512.cpp (same rules: anonymous namespace, compiled once per ISA file).
//
// One 32-byte weight load holds 4 elements of each of 8 rows; the 4 matching activation bytes are broadcast
// to every lane, so vpmaddubsw / vpdpbusd give each lane its own row's partial dot product. Per block and
// (8 rows, activation) pair: integer sums, one conversion, one fma with the 8 rows' scales times the
// activation's scale. Each output lane adds its blocks in order, whatever the tile width, so the value does
// not depend on the batch size or the thread split.
#pragma once
#include <vector>

#include "kernels/interleave.h"

namespace lctx::kernels {
namespace {

inline __m256i bcast_u32(const int8_t *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// 8 x Q4_0 rows x C activations. asum8[c * nb + b] = 8 * (sum of activation c's codes in block b): the
// codes are unsigned (q + 8), so sum (q + 8) a - 8 sum a = sum q a.
template <int C>
void tile_q4_0x8(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *asum8, float *y,
                 int64_t ldy) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[C];
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    const auto *xb = reinterpret_cast<const block_q4_0x8 *>(w);
    for (int64_t b = 0; b < nb; ++b) {
        const block_q4_0x8 &x = xb[b];
        _mm_prefetch(reinterpret_cast<const char *>(&x) + 4 * sizeof x, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char *>(&x) + 4 * sizeof x + 64, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char *>(&x) + 4 * sizeof x + 128, _MM_HINT_T0);
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
                s[c] = _mm256_add_epi16(s[c], _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast_u32(aq)),
                                                               _mm256_maddubs_epi16(hi, bcast_u32(aq + 4))));
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
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(d8, _mm256_set1_ps(dy)), acc[c]);
        }
    }
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
}

// 8 x Q8_0 rows x C activations: signed x signed through |w| and the activation with w's sign.
template <int C>
void tile_q8_0x8(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                 int64_t ldy) {
    __m256 acc[C];
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    const auto *xb = reinterpret_cast<const block_q8_0x8 *>(w);
    for (int64_t b = 0; b < nb; ++b) {
        const block_q8_0x8 &x = xb[b];
        for (int p = 0; p < 5; ++p)
            _mm_prefetch(reinterpret_cast<const char *>(&x) + 3 * sizeof x + 64 * p, _MM_HINT_T0);
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
                s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(_mm256_maddubs_epi16(av, ys), _mm256_set1_epi16(1)));
#endif
            }
        }
        const __m256 d8 = _mm256_cvtph_ps(loadu128(x.d));
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            const float dy = h2f(reinterpret_cast<const block_q8_0 *>(a + c * lda)[b].d);
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c]), _mm256_mul_ps(d8, _mm256_set1_ps(dy)), acc[c]);
        }
    }
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * ldy, acc[c]);
}

// 8 * sum of the codes of each Q8_0 block of nc activation rows -> out[c * nb + b].
inline void q8_0_block_sums8(const uint8_t *act, size_t lda, int64_t nc, int64_t nb, int32_t *out) {
    for (int64_t c = 0; c < nc; ++c) {
        const auto *a = reinterpret_cast<const block_q8_0 *>(act + c * lda);
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(8), loadu256(a[b].qs));
            out[c * nb + b] = hsum_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
        }
    }
}

using TileX8Fn = void (*)(int64_t, const uint8_t *, const uint8_t *, size_t, const int32_t *, float *, int64_t);
constexpr int kTileX8C = 4;

template <template <int> class Tile>
struct X8Table {
    static constexpr TileX8Fn fn[kTileX8C] = {&Tile<1>::run, &Tile<2>::run, &Tile<3>::run, &Tile<4>::run};
};
template <int C>
struct Q4_0x8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *s, float *y,
                    int64_t ldy) {
        tile_q4_0x8<C>(nb, w, a, lda, s, y, ldy);
    }
};
template <int C>
struct Q8_0x8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *s, float *y,
                    int64_t ldy) {
        tile_q8_0x8<C>(nb, w, a, lda, s, y, ldy);
    }
};

// Groups of 8 rows x up to 4 activations; the activations of a call (at most one token chunk) stay in L2
// while each group's blocks are reused from L1.
template <template <int> class Tile, bool kNeedSums>
void gemm_x8_tiled(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                   float *y, int64_t ldy) {
    const int64_t nb = n / 32;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    thread_local std::vector<int32_t> sums;
    if constexpr (kNeedSums) {
        sums.resize(static_cast<size_t>(nc * nb));
        q8_0_block_sums8(ab, lda, nc, nb, sums.data());
    }
    for (int64_t r0 = 0; r0 < nr; r0 += 8) {
        for (int64_t c0 = 0; c0 < nc; c0 += kTileX8C) {
            const int cc = static_cast<int>(nc - c0 < kTileX8C ? nc - c0 : kTileX8C);
            X8Table<Tile>::fn[cc - 1](nb, wb + r0 * ldw, ab + c0 * lda, lda,
                                      kNeedSums ? sums.data() + c0 * nb : nullptr, y + c0 * ldy + r0, ldy);
        }
    }
}

inline GemmFn shared_gemm_x8(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
            return &gemm_x8_tiled<Q4_0x8Tile, true>;
        case GgmlType::Q8_0:
            return &gemm_x8_tiled<Q8_0x8Tile, false>;
        default:
            return nullptr;
    }
}

}  // namespace
}  // namespace lctx::kernels
