// Prompt tiles on AMX (Intel's tile registers and tile multiplier) over the interleaved int8 layouts in
// groups of 16 rows (kernels/interleave.h). One tile multiply adds, for 16 activation rows x 16 weight rows,
// the int8 dot products of K = 32 elements (one block; 16 for Q6_K's scale groups) into 16 x 16 int32 sums.
// The layout is the multiplier's operand layout (a line holds 4 consecutive elements of each of 16 rows):
// Q8_0 lines are loaded straight from the weights, 4-, 5- and 6-bit codes are unpacked to int8 once per
// call, and the activation blocks of each 16 rows are staged contiguously, so that every tile load reads
// one contiguous run.
//
// Each block's sums leave the tiles through memory and are scaled and accumulated in zmm registers with
// the same integer and float operations, in the same block order, as the AVX-512 kernels (integer sums are
// exact in any order): an output has the same bits on either path, so results still do not depend on the
// batch size. Activation rows beyond the last whole 16 go to the AVX-512 kernel.
#include "kernels/dot.h"

#if defined(__x86_64__)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "kernels/interleave.h"
#include "kernels/simd_x86_inl.h"
#include "tensor/block_layouts.h"

namespace lctx::kernels {
namespace {

#define LCTX_UNROLL _Pragma("GCC unroll 16")

constexpr int kTileM = 16;  // activation rows per tile

// Palette 1 tile configuration (the 64-byte operand of LDTILECFG).
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// Tiles 0, 1: sums of 16 activation rows x 16 weight rows (int32); 2, 3: 16 activation rows x kK bytes;
// 4, 5: the kK elements of 16 weight rows (kK / 4 lines of 16 x 4 bytes). Two sets (0, 2, 4 and 1, 3, 5) let
// one block's multiply run while the previous block's sums are scaled. Macros: the tile intrinsics paste
// their register numbers into the instruction text.
#define LCTX_TILE_C0 0
#define LCTX_TILE_C1 1
#define LCTX_TILE_A0 2
#define LCTX_TILE_A1 3
#define LCTX_TILE_B0 4
#define LCTX_TILE_B1 5

// GCC's tile loads and stores are asm statements that do not tell the compiler they read or write memory:
// a barrier keeps the staging buffers' stores before the tile loads and the tile stores before their reads.
#define LCTX_TILE_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

// One unit of work on tile set C, A, B: C = 0, then C += A . B with the dot product DP (TDPBSSD: both
// operands signed; TDPBSUD: B unsigned), and C stored to `sums` (16 rows 64 bytes apart).
#define LCTX_TILE_UNIT(C, A, B, a_ptr, a_stride, b_ptr, sums, DP) \
    do {                                                          \
        _tile_zero(C);                                            \
        _tile_loadd(A, a_ptr, a_stride);                          \
        _tile_loadd(B, b_ptr, 64);                                \
        DP(C, A, B);                                              \
        _tile_stored(C, sums, 64);                                \
        LCTX_TILE_MEMORY_BARRIER();                               \
    } while (0)

// Runs n_units tile units software-pipelined over the two tile sets: issue0(u) / issue1(u) run unit u on set
// u % 2 (storing its sums in that set's buffer), consume(u, u % 2) reads them. Unit u + 1 is issued before
// unit u is consumed.
template <class Issue0, class Issue1, class Consume>
inline void tile_pipeline(int64_t n_units, Issue0 issue0, Issue1 issue1, Consume consume) {
    issue0(0);
    int64_t u = 0;
    for (; u + 2 <= n_units; u += 2) {
        issue1(u + 1);
        consume(u, 0);
        LCTX_TILE_MEMORY_BARRIER();
        if (u + 2 < n_units) issue0(u + 2);
        consume(u + 1, 1);
        LCTX_TILE_MEMORY_BARRIER();
    }
    if (u < n_units) consume(u, 0);  // an odd count: the last unit went to set 0
}

template <int kK>
void load_tile_config() {
    static const TileConfig cfg = [] {
        TileConfig c;
        for (int t : {LCTX_TILE_C0, LCTX_TILE_C1}) {
            c.rows[t] = kTileM;
            c.colsb[t] = 16 * sizeof(int32_t);
        }
        for (int t : {LCTX_TILE_A0, LCTX_TILE_A1}) {
            c.rows[t] = kTileM;
            c.colsb[t] = kK;
        }
        for (int t : {LCTX_TILE_B0, LCTX_TILE_B1}) {
            c.rows[t] = kK / 4;
            c.colsb[t] = 16 * 4;
        }
        return c;
    }();
    _tile_loadconfig(&cfg);
}

// Blocks of 32 elements prefetched ahead of their unpacking (about 2 KiB).
constexpr int kStagePrefetchBlocks = 8;
// Every line of block x (a prefetch past the end of the matrix does not fault).
template <class Block>
inline void prefetch_block(const Block *x) {
    const char *p = reinterpret_cast<const char *>(x);
    for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

// ---- one block of a 16-row group as a B operand: 8 lines of 16 rows x 4 int8, 64 bytes apart ----

// Q8_0: the layout's qs lines are the operand (no staging).
struct AmxQ8_0 {
    using Block = block_q8_0xG<16>;
    static constexpr GgmlType kType = GgmlType::Q8_0;
    static constexpr bool kDirect = true;
};

// Q4_0: line g of qs holds elements 8g..8g+3 (low nibbles) and 8g+4..8g+7 (high nibbles) of each row: operand
// lines 2g and 2g + 1, minus the offset 8.
struct AmxQ4_0 {
    using Block = block_q4_0xG<16>;
    static constexpr GgmlType kType = GgmlType::Q4_0;
    static constexpr bool kDirect = false;
    static void unpack(const Block &x, int8_t *out) {
        const __m512i m4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
        LCTX_UNROLL
        for (int g = 0; g < 4; ++g) {
            const __m512i v = _mm512_loadu_si512(x.qs + 64 * g);
            _mm512_storeu_si512(out + 128 * g, _mm512_sub_epi8(_mm512_and_si512(v, m4), eight));
            _mm512_storeu_si512(out + 128 * g + 64,
                                _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), eight));
        }
    }
};

// Q5_0: Q4_0's nibbles with the fifth bits of step g at bits 2g and 2g + 1 of qh, minus the offset 16.
struct AmxQ5_0 {
    using Block = block_q5_0xG<16>;
    static constexpr GgmlType kType = GgmlType::Q5_0;
    static constexpr bool kDirect = false;
    static void unpack(const Block &x, int8_t *out) {
        const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10),
                      sixteen = _mm512_set1_epi8(16);
        const __m512i qh = _mm512_loadu_si512(x.qh);
        // bit 2g (or 2g + 1) of each byte moved to bit 4
        const __m512i h[8] = {_mm512_slli_epi16(qh, 4),
                              _mm512_slli_epi16(qh, 3),
                              _mm512_slli_epi16(qh, 2),
                              _mm512_slli_epi16(qh, 1),
                              qh,
                              _mm512_srli_epi16(qh, 1),
                              _mm512_srli_epi16(qh, 2),
                              _mm512_srli_epi16(qh, 3)};
        LCTX_UNROLL
        for (int g = 0; g < 4; ++g) {
            const __m512i v = _mm512_loadu_si512(x.qs + 64 * g);
            const __m512i lo = _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(h[2 * g], m10));
            const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4),
                                               _mm512_and_si512(h[2 * g + 1], m10));
            _mm512_storeu_si512(out + 128 * g, _mm512_sub_epi8(lo, sixteen));
            _mm512_storeu_si512(out + 128 * g + 64, _mm512_sub_epi8(hi, sixteen));
        }
    }
};

// The whole 16-row activation tiles of a call through amx(n_tiles) (tile state configured by it, released
// here), the activation rows after them through the type's AVX-512 kernel.
template <class Amx>
void amx_tiles_then_avx512(GgmlType type, int64_t n, const void *w, size_t ldw, int64_t nr, const void *act,
                           size_t lda, int64_t nc, float *y, int64_t ldy, Amx &&amx) {
    const int64_t n_tiles = nc / kTileM, done = n_tiles * kTileM;
    if (n_tiles > 0) {
        amx(n_tiles);
        _tile_release();
    }
    if (done < nc)
        detail::gemm_interleaved_avx512(type)(n, w, ldw, nr, static_cast<const uint8_t *>(act) + done * lda,
                                              lda, nc - done, y + done * ldy, ldy);
}

// 16 weight rows x 16 activation rows of a 32-element-block type: per block, sums = A . B, then
// acc += float(sums) * (d_w * d_a), as Q8_0Tile / Q4_0Tile do per lane. Software-pipelined over two sets of
// tiles: block b + 1's multiply is issued before block b's sums are scaled.
template <class W>
void tile_b32(int64_t nb, const int8_t *a, const float *da, const uint8_t *group, const int8_t *unpacked,
              float *y, int64_t ldy) {
    const auto *x = reinterpret_cast<const typename W::Block *>(group);
    alignas(64) int32_t sums[2][kTileM][16];
    __m512 acc[kTileM];
    LCTX_UNROLL
    for (int i = 0; i < kTileM; ++i) acc[i] = _mm512_setzero_ps();
    auto b_operand = [&](int64_t b) -> const void * {
        if constexpr (W::kDirect)
            return x[b].qs;
        else
            return unpacked + 512 * b;
    };
    auto scale = [&](int64_t b, int set) {
        const __m512 d16 = _mm512_cvtph_ps(loadu256(x[b].d));
        const float *dab = da + 16 * b;
        LCTX_UNROLL
        for (int i = 0; i < kTileM; ++i) {
            const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(sums[set][i]));
            acc[i] = _mm512_fmadd_ps(s, _mm512_mul_ps(d16, _mm512_set1_ps(dab[i])), acc[i]);
        }
    };
    tile_pipeline(
        nb,
        [&](int64_t b) {
            LCTX_TILE_UNIT(LCTX_TILE_C0, LCTX_TILE_A0, LCTX_TILE_B0, a + 512 * b, 32, b_operand(b),
                           &sums[0][0][0], _tile_dpbssd);
        },
        [&](int64_t b) {
            LCTX_TILE_UNIT(LCTX_TILE_C1, LCTX_TILE_A1, LCTX_TILE_B1, a + 512 * b, 32, b_operand(b),
                           &sums[1][0][0], _tile_dpbssd);
        },
        scale);
    LCTX_UNROLL
    for (int i = 0; i < kTileM; ++i) _mm512_storeu_ps(y + i * ldy, acc[i]);
}

template <class W>
void gemm_amx_b32(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                  float *y, int64_t ldy) {
    using Block = typename W::Block;
    amx_tiles_then_avx512(W::kType, n, w, ldw, nr, act, lda, nc, y, ldy, [&](int64_t n_tiles) {
        const auto *ab = static_cast<const uint8_t *>(act);
        const int64_t nb = n / 32;
        const auto *wb = static_cast<const uint8_t *>(w);
        const size_t group_bytes = 16 * ldw;
        const size_t a_bytes = static_cast<size_t>(n_tiles * nb) * 512;
        const size_t da_bytes = static_cast<size_t>(n_tiles * nb) * 64;
        const size_t w_bytes = W::kDirect ? 0 : static_cast<size_t>(nb) * 512;
        uint8_t *scratch = kernel_tile_scratch(a_bytes + da_bytes + w_bytes);
        auto *sa = reinterpret_cast<int8_t *>(scratch);
        auto *sda = reinterpret_cast<float *>(scratch + a_bytes);
        auto *sw = reinterpret_cast<int8_t *>(scratch + a_bytes + da_bytes);
        for (int64_t t = 0; t < n_tiles; ++t) {
            for (int i = 0; i < kTileM; ++i) {
                const auto *blocks = reinterpret_cast<const block_q8_0 *>(ab + (t * kTileM + i) * lda);
                for (int64_t b = 0; b < nb; ++b) {
                    storeu256(sa + (t * nb + b) * 512 + 32 * i, loadu256(blocks[b].qs));
                    sda[(t * nb + b) * 16 + i] = h2f(blocks[b].d);
                }
            }
        }
        load_tile_config<32>();
        for (int64_t r0 = 0; r0 < nr; r0 += 16) {
            const uint8_t *group = wb + (r0 / 16) * group_bytes;
            if constexpr (!W::kDirect) {
                const auto *x = reinterpret_cast<const Block *>(group);
                for (int64_t b = 0; b < nb; ++b) {
                    // The weights come from memory here, once per call: keep several blocks in flight.
                    prefetch_block(x + b + kStagePrefetchBlocks);
                    W::unpack(x[b], sw + 512 * b);
                }
                LCTX_TILE_MEMORY_BARRIER();
            }
            for (int64_t t = 0; t < n_tiles; ++t)
                tile_b32<W>(nb, sa + t * nb * 512, sda + t * nb * 16, group, sw, y + t * kTileM * ldy + r0,
                            ldy);
        }
    });
}

// ---- K types: per 256-element block, one tile multiply per scale group (32 elements for Q4_K, 16 for
// Q6_K), the group sums combined in int32 with the rows' scales as Q4_KTile / Q6_KTile combine them ----

// Operands staged per call: for 16 activation rows and block b, per group j the 16 x kK bytes of A, the
// activation scales and (Q4_K) sub-block sum pairs; for one 16-row group of weights and block b, per scale
// group j the kK / 4 lines of B and the 16 rows' scales as int32, and (Q4_K) the mins as int16 pairs.
struct KStage {
    const int8_t *a;    // [nb][groups][16 x kK]
    const float *da;    // [nb][16]   activation scales
    const int32_t *bs;  // [nb][16][4] Q4_K: the activations' sub-block sum pairs
    const int8_t *w;    // [nb][groups][kK / 4 lines x 64]
    const int32_t *sc;  // [nb][groups][16]
    const int32_t *mn;  // [nb][4][16] Q4_K: the rows' (min 2jp, min 2jp + 1) int16 pairs
};

// Q4_K: unsigned codes 0..15 (TDPBSUD), isum = sum_j sc_j * S_j, msum = sum_j min_j * bsum_j;
// acc = fma(isum, d * da, acc), then acc = fnmadd(msum, dmin * da, acc).
struct AmxQ4_K {
    using Block = block_q4_KxG<16>;
    static constexpr GgmlType kType = GgmlType::Q4_K;
    static constexpr int kGroups = 8, kK = 32;
    static constexpr bool kSignedCodes = false;
    // The 8 lines of sub-block j.
    static void unpack(const Block &x, int j, int8_t *out) {
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        LCTX_UNROLL
        for (int g = 0; g < 4; ++g) {
            const __m512i v = _mm512_loadu_si512(x.qs[j][g]);
            _mm512_storeu_si512(out + 128 * g, _mm512_and_si512(v, m4));
            _mm512_storeu_si512(out + 128 * g + 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
        }
    }
    static __m512i scales(const Block &x, int j) { return _mm512_cvtepu8_epi32(loadu128(x.scales[j])); }
};

// Q6_K: codes 0..63 staged as code - 32 (TDPBSSD), isum = sum_k sc_k * S_k over the 16-element groups:
// the integer Q6_KTile forms as isum' - 32 * osum; acc = fma(isum, d * da, acc).
struct AmxQ6_K {
    using Block = block_q6_KxG<16>;
    static constexpr GgmlType kType = GgmlType::Q6_K;
    static constexpr int kGroups = 16, kK = 16;
    static constexpr bool kSignedCodes = true;
    // The 4 lines of 16-element group k = 2j + h.
    static void unpack(const Block &x, int k, int8_t *out) {
        const int j = k / 2, h = k % 2;
        const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), off = _mm512_set1_epi8(32);
        const auto &half = x.half[j][h];
        const __m512i qh = _mm512_loadu_si512(half.qh);
        const __m512i v0 = _mm512_loadu_si512(half.ql[0]), v1 = _mm512_loadu_si512(half.ql[1]);
        const __m512i lo0 =
            _mm512_or_si512(_mm512_and_si512(v0, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30));
        const __m512i hi0 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v0, 4), m4),
                                            _mm512_and_si512(_mm512_slli_epi16(qh, 2), m30));
        const __m512i lo1 = _mm512_or_si512(_mm512_and_si512(v1, m4), _mm512_and_si512(qh, m30));
        const __m512i hi1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v1, 4), m4),
                                            _mm512_and_si512(_mm512_srli_epi16(qh, 2), m30));
        _mm512_storeu_si512(out, _mm512_sub_epi8(lo0, off));
        _mm512_storeu_si512(out + 64, _mm512_sub_epi8(hi0, off));
        _mm512_storeu_si512(out + 128, _mm512_sub_epi8(lo1, off));
        _mm512_storeu_si512(out + 192, _mm512_sub_epi8(hi1, off));
    }
    static __m512i scales(const Block &x, int k) { return _mm512_cvtepi8_epi32(loadu128(x.scales[k])); }
};

// 16 weight rows x 16 activation rows. Group sums go through a ring of two buffers while the next group's
// multiply runs; each block's isum lives in registers, the float accumulators in `acc` (L1).
template <class W>
void tile_k(int64_t nb, const KStage &s, const uint8_t *group, float *y, int64_t ldy) {
    constexpr int kG = W::kGroups, kOp = 16 * W::kK;  // groups per block, bytes of one A (or B) operand
    const auto *x = reinterpret_cast<const typename W::Block *>(group);
    alignas(64) int32_t sums[2][kTileM][16];
    alignas(64) float acc[kTileM][16] = {};
    __m512i isum[kTileM];
    auto add_group = [&](int64_t u, int set) {
        const __m512i sc = _mm512_load_si512(s.sc + 16 * u);
        LCTX_UNROLL
        for (int i = 0; i < kTileM; ++i)
            isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(_mm512_load_si512(sums[set][i]), sc));
    };
    auto finish_block = [&](int64_t b) {
        const __m512 d16 = _mm512_cvtph_ps(loadu256(x[b].d));
        const float *da = s.da + 16 * b;
        if constexpr (W::kType == GgmlType::Q4_K) {
            const __m512 m16 = _mm512_cvtph_ps(loadu256(x[b].dmin));
            const int32_t *bs = s.bs + 64 * b;
            const int32_t *mn = s.mn + 64 * b;
            LCTX_UNROLL
            for (int i = 0; i < kTileM; ++i) {
                __m512i msum = _mm512_setzero_si512();
                LCTX_UNROLL
                for (int jp = 0; jp < 4; ++jp)
                    msum = _mm512_add_epi32(msum, _mm512_madd_epi16(_mm512_load_si512(mn + 16 * jp),
                                                                    _mm512_set1_epi32(bs[4 * i + jp])));
                const __m512 dy = _mm512_set1_ps(da[i]);
                __m512 v = _mm512_load_ps(acc[i]);
                v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d16, dy), v);
                v = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(m16, dy), v);
                _mm512_store_ps(acc[i], v);
            }
        } else {
            LCTX_UNROLL
            for (int i = 0; i < kTileM; ++i) {
                const __m512 v = _mm512_load_ps(acc[i]);
                _mm512_store_ps(acc[i], _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]),
                                                        _mm512_mul_ps(d16, _mm512_set1_ps(da[i])), v));
            }
        }
    };
    // Q6_K's codes are staged signed, Q4_K's unsigned.
#define LCTX_K_UNIT(C, A, B, u, set)                                                           \
    do {                                                                                       \
        if constexpr (W::kSignedCodes)                                                         \
            LCTX_TILE_UNIT(C, A, B, s.a + kOp * (u), W::kK, s.w + kOp * (u), &sums[set][0][0], \
                           _tile_dpbssd);                                                      \
        else                                                                                   \
            LCTX_TILE_UNIT(C, A, B, s.a + kOp * (u), W::kK, s.w + kOp * (u), &sums[set][0][0], \
                           _tile_dpbsud);                                                      \
    } while (0)
    tile_pipeline(
        nb * kG, [&](int64_t u) { LCTX_K_UNIT(LCTX_TILE_C0, LCTX_TILE_A0, LCTX_TILE_B0, u, 0); },
        [&](int64_t u) { LCTX_K_UNIT(LCTX_TILE_C1, LCTX_TILE_A1, LCTX_TILE_B1, u, 1); },
        [&](int64_t u, int set) {
            if (u % kG == 0) {
                LCTX_UNROLL
                for (int i = 0; i < kTileM; ++i) isum[i] = _mm512_setzero_si512();
            }
            add_group(u, set);
            if (u % kG == kG - 1) finish_block(u / kG);
        });
#undef LCTX_K_UNIT
    LCTX_UNROLL
    for (int i = 0; i < kTileM; ++i) _mm512_storeu_ps(y + i * ldy, _mm512_load_ps(acc[i]));
}

template <class W>
void gemm_amx_k(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                float *y, int64_t ldy) {
    using Block = typename W::Block;
    constexpr int kG = W::kGroups, kOp = 16 * W::kK;
    amx_tiles_then_avx512(W::kType, n, w, ldw, nr, act, lda, nc, y, ldy, [&](int64_t n_tiles) {
        const auto *ab = static_cast<const uint8_t *>(act);
        const int64_t nb = n / 256;
        const auto *wb = static_cast<const uint8_t *>(w);
        const size_t group_bytes = 16 * ldw;
        // scratch: per activation tile a, da, bs; for the current weight group w, sc, mn
        const size_t a_tile = static_cast<size_t>(nb) * kG * kOp, da_tile = static_cast<size_t>(nb) * 64,
                     bs_tile = static_cast<size_t>(nb) * 256;
        const size_t w_bytes = static_cast<size_t>(nb) * kG * kOp,
                     sc_bytes = static_cast<size_t>(nb) * kG * 64, mn_bytes = static_cast<size_t>(nb) * 256;
        const size_t per_tile = a_tile + da_tile + bs_tile;
        uint8_t *scratch = kernel_tile_scratch(n_tiles * per_tile + w_bytes + sc_bytes + mn_bytes);
        uint8_t *wst = scratch + n_tiles * per_tile;
        auto *sw = reinterpret_cast<int8_t *>(wst);
        auto *ssc = reinterpret_cast<int32_t *>(wst + w_bytes);
        auto *smn = reinterpret_cast<int32_t *>(wst + w_bytes + sc_bytes);
        for (int64_t t = 0; t < n_tiles; ++t) {
            uint8_t *ts = scratch + t * per_tile;
            auto *sa = reinterpret_cast<int8_t *>(ts);
            auto *sda = reinterpret_cast<float *>(ts + a_tile);
            auto *sbs = reinterpret_cast<int32_t *>(ts + a_tile + da_tile);
            for (int i = 0; i < kTileM; ++i) {
                const auto *blocks = reinterpret_cast<const block_q8_K *>(ab + (t * kTileM + i) * lda);
                for (int64_t b = 0; b < nb; ++b) {
                    const block_q8_K &q = blocks[b];
                    for (int g = 0; g < kG; ++g)
                        std::memcpy(sa + (b * kG + g) * kOp + W::kK * i, q.qs + W::kK * g, W::kK);
                    sda[b * 16 + i] = q.d;
                    for (int jp = 0; jp < 4; ++jp) {
                        const int16_t *bs = q.bsums + 4 * jp;
                        const auto lo = static_cast<uint16_t>(bs[0] + bs[1]),
                                   hi = static_cast<uint16_t>(bs[2] + bs[3]);
                        sbs[b * 64 + 4 * i + jp] = static_cast<int32_t>(static_cast<uint32_t>(lo) |
                                                                        (static_cast<uint32_t>(hi) << 16));
                    }
                }
            }
        }
        load_tile_config<W::kK>();
        for (int64_t r0 = 0; r0 < nr; r0 += 16) {
            const uint8_t *group = wb + (r0 / 16) * group_bytes;
            const auto *x = reinterpret_cast<const Block *>(group);
            for (int64_t b = 0; b < nb; ++b) {
                prefetch_block(x + b + 1);
                for (int g = 0; g < kG; ++g) {
                    W::unpack(x[b], g, sw + (b * kG + g) * kOp);
                    _mm512_store_si512(ssc + (b * kG + g) * 16, W::scales(x[b], g));
                }
                if constexpr (W::kType == GgmlType::Q4_K) {
                    for (int jp = 0; jp < 4;
                         ++jp)  // (min 2jp, min 2jp + 1) of each row: bytes -> int16 pairs
                        _mm512_store_si512(smn + (b * 4 + jp) * 16,
                                           _mm512_cvtepu8_epi16(loadu256(x[b].mins[jp])));
                }
            }
            LCTX_TILE_MEMORY_BARRIER();
            for (int64_t t = 0; t < n_tiles; ++t) {
                const uint8_t *ts = scratch + t * per_tile;
                const KStage st{reinterpret_cast<const int8_t *>(ts),
                                reinterpret_cast<const float *>(ts + a_tile),
                                reinterpret_cast<const int32_t *>(ts + a_tile + da_tile),
                                sw,
                                ssc,
                                smn};
                tile_k<W>(nb, st, group, y + t * kTileM * ldy + r0, ldy);
            }
        }
    });
}

}  // namespace

namespace detail {
GemmFn gemm_interleaved_amx(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::Q8_0:
            return &gemm_amx_b32<AmxQ8_0>;
        case GgmlType::Q4_0:
            return &gemm_amx_b32<AmxQ4_0>;
        case GgmlType::Q5_0:
            return &gemm_amx_b32<AmxQ5_0>;
        case GgmlType::Q4_K:
            return &gemm_amx_k<AmxQ4_K>;
        case GgmlType::Q6_K:
            return &gemm_amx_k<AmxQ6_K>;
        default:
            return nullptr;
    }
}
}  // namespace detail

}  // namespace lctx::kernels

#else
namespace lctx::kernels::detail {
GemmFn gemm_interleaved_amx(GgmlType) {
    return nullptr;
}
}  // namespace lctx::kernels::detail
#endif
