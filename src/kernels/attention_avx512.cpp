// AVX-512 key blocks for attention (attention_x86.h): an F16 key block turned on its side, and the scores of
// several query heads against a run of blocks.
#include "kernels/attention_x86.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

#define LCTX_UNROLL _Pragma("GCC unroll 16")

// r[i] = row i of a 16 x 16 block of floats -> r[j] = column j.
inline void transpose_16x16(__m512 (&r)[16]) {
    __m512 t[16];
    LCTX_UNROLL
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // per 128-bit lane L, r[4i + q] = column 4L + q of rows 4i..4i+3
    LCTX_UNROLL
    for (int i = 0; i < 4; ++i) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xee);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    __m512 out[16];
    LCTX_UNROLL
    for (int q = 0; q < 4; ++q) {
        const __m512 a = _mm512_shuffle_f32x4(r[q], r[4 + q], 0x88),
                     b = _mm512_shuffle_f32x4(r[q], r[4 + q], 0xdd);
        const __m512 c = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0x88),
                     d = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0xdd);
        out[q] = _mm512_shuffle_f32x4(a, c, 0x88);
        out[8 + q] = _mm512_shuffle_f32x4(a, c, 0xdd);
        out[4 + q] = _mm512_shuffle_f32x4(b, d, 0x88);
        out[12 + q] = _mm512_shuffle_f32x4(b, d, 0xdd);
    }
    LCTX_UNROLL
    for (int j = 0; j < 16; ++j) r[j] = out[j];
}

// NH heads x NB blocks of scores, one accumulator each (NH * NB independent chains keep both FMA ports busy
// where one head against one block would wait on the FMA latency).
// pf: the next run's n_pf blocks, fetched into L1 alongside.
template <int NH, int NB>
void scores_tile(const float *q, int dk, const float *kt, size_t block_stride, float *scores, int64_t lds,
                 const float *pf, int n_pf) {
    __m512 acc[NH][NB];
    LCTX_UNROLL
    for (int h = 0; h < NH; ++h) {
        LCTX_UNROLL
        for (int b = 0; b < NB; ++b) acc[h][b] = _mm512_setzero_ps();
    }
    for (int d = 0; d < dk; ++d) {
        __m512 kv[NB];
        LCTX_UNROLL
        for (int b = 0; b < NB; ++b) kv[b] = _mm512_loadu_ps(kt + b * block_stride + d * kKeyBlock);
        for (int b = 0; b < n_pf; ++b)
            _mm_prefetch(reinterpret_cast<const char *>(pf + b * block_stride + d * kKeyBlock), _MM_HINT_T0);
        LCTX_UNROLL
        for (int h = 0; h < NH; ++h) {
            const __m512 qv = _mm512_set1_ps(q[h * dk + d]);
            LCTX_UNROLL
            for (int b = 0; b < NB; ++b) acc[h][b] = _mm512_fmadd_ps(qv, kv[b], acc[h][b]);
        }
    }
    LCTX_UNROLL
    for (int h = 0; h < NH; ++h) {
        LCTX_UNROLL
        for (int b = 0; b < NB; ++b) _mm512_storeu_ps(scores + h * lds + b * kKeyBlock, acc[h][b]);
    }
}

using TileFn = void (*)(const float *, int, const float *, size_t, float *, int64_t, const float *, int);

// [NH - 1][NB - 1]
constexpr TileFn kTiles[4][4] = {
    {&scores_tile<1, 1>, &scores_tile<1, 2>, &scores_tile<1, 3>, &scores_tile<1, 4>},
    {&scores_tile<2, 1>, &scores_tile<2, 2>, &scores_tile<2, 3>, &scores_tile<2, 4>},
    {&scores_tile<3, 1>, &scores_tile<3, 2>, &scores_tile<3, 3>, &scores_tile<3, 4>},
    {&scores_tile<4, 1>, &scores_tile<4, 2>, &scores_tile<4, 3>, &scores_tile<4, 4>},
};

// load(c, d0, m): elements d0.. (mask m) of cell c's keys as f32
template <class Load>
inline void turn_key_block(int n, int dk, float *kt, Load &&load) {
    for (int d0 = 0; d0 < dk; d0 += 16) {
        const int nd = dk - d0 < 16 ? dk - d0 : 16;
        const auto m = static_cast<__mmask16>((1u << nd) - 1);
        __m512 r[16];
        LCTX_UNROLL
        for (int c = 0; c < 16; ++c) r[c] = c < n ? load(c, d0, m) : _mm512_setzero_ps();
        transpose_16x16(r);
        for (int d = 0; d < nd; ++d) _mm512_storeu_ps(kt + (d0 + d) * kKeyBlock, r[d]);
    }
}

}  // namespace

void turn_key_block_f16(const uint8_t *k, size_t row_bytes, int n, int dk, float *kt) {
    turn_key_block(n, dk, kt, [&](int c, int d0, __mmask16 m) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, k + c * row_bytes + 2 * d0));
    });
}

void turn_key_block_f32(const uint8_t *k, size_t row_bytes, int n, int dk, float *kt) {
    turn_key_block(n, dk, kt, [&](int c, int d0, __mmask16 m) {
        return _mm512_maskz_loadu_ps(m, k + c * row_bytes + 4 * d0);
    });
}

// Runs of 4 blocks (16 KiB of keys at head dim 64, held in L1) go past every query head before the next run
// is read, so each key is read from L2 once per call however many heads there are. The query vectors go in
// tiles of even size (4 rows of an encoder's item in one tile, 5 as 3 + 2): a lone vector's 4 chains wait on
// the FMA latency, and 3 + 1 took 30% of a nomic-embed pass's scores where 4 takes one tile.
void key_block_scores(const float *q, int n_q, int dk, const float *kt, size_t block_stride, int64_t n_blocks,
                      float *scores, int64_t lds) {
    constexpr int kMaxHeads = 4, kMaxBlocks = 4;
    const int n_tiles = (n_q + kMaxHeads - 1) / kMaxHeads;
    for (int64_t b = 0; b < n_blocks; b += kMaxBlocks) {
        const int nb = static_cast<int>(n_blocks - b < kMaxBlocks ? n_blocks - b : kMaxBlocks);
        for (int t = 0, h = 0; t < n_tiles; ++t) {
            const int nh = even_part(n_q, n_tiles, t);
            const int64_t rest = n_blocks - b - nb;  // blocks after this run
            const int n_pf = h == 0 ? static_cast<int>(rest < kMaxBlocks ? rest : kMaxBlocks) : 0;
            kTiles[nh - 1][nb - 1](q + static_cast<int64_t>(h) * dk, dk, kt + b * block_stride, block_stride,
                                   scores + h * lds + b * kKeyBlock, lds, kt + (b + nb) * block_stride, n_pf);
            h += nh;
        }
    }
}

}  // namespace lctx::kernels::detail

#else
namespace lctx::kernels::detail {
void turn_key_block_f16(const uint8_t *, size_t, int, int, float *) {}
void turn_key_block_f32(const uint8_t *, size_t, int, int, float *) {}
void key_block_scores(const float *, int, int, const float *, size_t, int64_t, float *, int64_t) {}
}  // namespace lctx::kernels::detail
#endif
