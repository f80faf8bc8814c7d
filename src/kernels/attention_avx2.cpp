// AVX2 scores against turned key blocks (attention_x86.h), for an encoder's F32 keys where the CPU stops at
// AVX2: the 16 cells of a block in two registers, up to 4 query vectors at a time. Each score is the one FMA
// chain over d that the AVX-512 tile takes, so the two levels give the same bits.
#include "kernels/attention_x86.h"

#if defined(__x86_64__)
#include "kernels/simd_x86_inl.h"

namespace lctx::kernels::detail {

namespace {

#define LCTX_UNROLL _Pragma("GCC unroll 16")

// NH query vectors x one block of 16 cells: 2 NH accumulators (8 at most, with the block's two registers and
// the broadcast 11 of the 16 registers), each the FMA chain of one score's 8 cells.
template <int NH>
void scores_tile8(const float *q, int dk, const float *kt, float *scores, int64_t lds) {
    __m256 acc[NH][2];
    LCTX_UNROLL
    for (int h = 0; h < NH; ++h) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
    for (int d = 0; d < dk; ++d) {
        const __m256 k0 = _mm256_loadu_ps(kt + d * kKeyBlock), k1 = _mm256_loadu_ps(kt + d * kKeyBlock + 8);
        LCTX_UNROLL
        for (int h = 0; h < NH; ++h) {
            const __m256 qv = _mm256_set1_ps(q[h * dk + d]);
            acc[h][0] = _mm256_fmadd_ps(qv, k0, acc[h][0]);
            acc[h][1] = _mm256_fmadd_ps(qv, k1, acc[h][1]);
        }
    }
    LCTX_UNROLL
    for (int h = 0; h < NH; ++h) {
        _mm256_storeu_ps(scores + h * lds, acc[h][0]);
        _mm256_storeu_ps(scores + h * lds + 8, acc[h][1]);
    }
}

using TileFn = void (*)(const float *, int, const float *, float *, int64_t);
constexpr TileFn kTiles[4] = {&scores_tile8<1>, &scores_tile8<2>, &scores_tile8<3>, &scores_tile8<4>};

}  // namespace

// Block by block (dk x 16 floats, 4 KiB at head dim 64, in L1 while every query tile passes over it); the
// query vectors in tiles of even size, as the AVX-512 kernel takes them.
void key_block_scores_avx2(const float *q, int n_q, int dk, const float *kt, size_t block_stride,
                           int64_t n_blocks, float *scores, int64_t lds) {
    constexpr int kMaxHeads = 4;
    const int n_tiles = (n_q + kMaxHeads - 1) / kMaxHeads;
    for (int64_t b = 0; b < n_blocks; ++b) {
        for (int t = 0, h = 0; t < n_tiles; ++t) {
            const int nh = even_part(n_q, n_tiles, t);
            kTiles[nh - 1](q + static_cast<int64_t>(h) * dk, dk, kt + b * block_stride,
                           scores + h * lds + b * kKeyBlock, lds);
            h += nh;
        }
    }
}

}  // namespace lctx::kernels::detail

#else
namespace lctx::kernels::detail {
void key_block_scores_avx2(const float *, int, int, const float *, size_t, int64_t, float *, int64_t) {}
}  // namespace lctx::kernels::detail
#endif
