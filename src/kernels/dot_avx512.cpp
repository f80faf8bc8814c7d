// AVX-512 (F/BW/VL/DQ + VNNI + BF16) kernels. Dots: the float types, Q8_0 / Q4_0 (two blocks per register,
// scales of 8 blocks gathered at once) and Q4_K / Q5_K / Q6_K (64 elements per register) use full 512-bit
// registers; the other types use the shared 256-bit set (dot_x86_inl.h), which here compiles its int8 dots to
// vpdpbusd. Gemm: the integer types over interleaved 16-row groups (gemm_interleaved_x86_inl.h, V512), F32
// and F16 over 8-row groups two rows per register, BF16 over 8-row groups four rows per register (vdpbf16ps),
// and the float types' plain rows (the KV cache) in 512-bit tiles; the other plain tiles are the shared
// 256-bit ones.
#include "kernels/dot.h"

#if defined(__x86_64__)
#include <type_traits>
#include <utility>

#include "kernels/dot_x86_inl.h"
#include "kernels/gemm_interleaved_x86_inl.h"

namespace lctx::kernels {
namespace {

// ---- float types: 64 elements per iteration, masked loads for the tail ----

inline float vec_dot_f32_512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const float *>(vx);
    const auto *y = static_cast<const float *>(vy);
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

inline __m512 load_f16x16(const fp16_t *p) {
    return _mm512_cvtph_ps(loadu256(p));
}

inline float vec_dot_f16_512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const fp16_t *>(vx);
    const auto *y = static_cast<const fp16_t *>(vy);
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(load_f16x16(x + i), load_f16x16(y + i), a0);
        a1 = _mm512_fmadd_ps(load_f16x16(x + i + 16), load_f16x16(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(load_f16x16(x + i + 32), load_f16x16(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(load_f16x16(x + i + 48), load_f16x16(y + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(load_f16x16(x + i), load_f16x16(y + i), a0);
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)),
                             _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, y + i)), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// vdpbf16ps: bf16 products are exact in fp32 and accumulate in fp32 (bf16 subnormals read as zero).
inline __m512 dot_bf16x32(__m512 acc, const void *x, const void *y) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(x), (__m512bh)_mm512_loadu_si512(y));
}

inline float vec_dot_bf16_512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const uint16_t *>(vx);
    const auto *y = static_cast<const uint16_t *>(vy);
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = dot_bf16x32(a0, x + i, y + i);
        a1 = dot_bf16x32(a1, x + i + 32, y + i + 32);
        a2 = dot_bf16x32(a2, x + i + 64, y + i + 64);
        a3 = dot_bf16x32(a3, x + i + 96, y + i + 96);
    }
    for (; i + 32 <= n; i += 32) a0 = dot_bf16x32(a0, x + i, y + i);
    if (i < n) {
        const __mmask32 m = static_cast<__mmask32>((1ull << (n - i)) - 1);
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_maskz_loadu_epi16(m, x + i),
                              (__m512bh)_mm512_maskz_loadu_epi16(m, y + i));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// ---- Q8_0 / Q4_0: groups of 8 blocks, two blocks per register (int32 lanes 0-7 and 8-15) ----

inline __m512i join256(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

// The half scales d (at offset 0) of 8 blocks `stride` bytes apart, as floats: a 32-bit gather (d and
// the block's next two bytes), narrowed to the low 16 bits, converted. Replaces 8 scalar conversions.
inline __m256 gather_d8(const void *first, __m256i offsets) {
    const __m256i w = _mm256_i32gather_epi32(static_cast<const int *>(first), offsets, 1);
    return _mm256_cvtph_ps(_mm256_cvtepi32_epi16(w));
}

inline __m256i block_offsets(int stride) {
    return _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
}

// Permutation that spreads scale 2p over lanes 0-7 and scale 2p+1 over lanes 8-15.
inline __m512i pair_index(int p) {
    return _mm512_add_epi32(_mm512_set1_epi32(2 * p),
                            _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(1), 1));
}

// Signed x times signed y (y in [-127, 127]) summed in 4s: |x| (unsigned) times y with x's sign.
inline __m512i dot_i8_512(__m512i x, __m512i y) {
    const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

// Two Q4_0 blocks' nibbles -> 64 bytes: block a low/high nibbles, then block b low/high nibbles.
inline __m512i unpack_nibbles_2(const uint8_t *a, const uint8_t *b) {
    const __m256i t = _mm256_set_m128i(loadu128(b), loadu128(a));
    const __m512i v = join256(t, _mm256_srli_epi16(t, 4));  // [a lo, b lo, a hi, b hi] in 128-bit lanes
    return _mm512_and_si512(_mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(0x0f));
}

// Q8_0 (kFour = false) or Q4_0 (kFour = true) weights against Q8_0. Q4_0: sum (q - 8) * y = sum q * y -
// sum 8 * y, both unsigned-times-signed vpdpbusd.
template <bool kFour>
inline float vec_dot_q8_0_q4_0_512(int64_t n, const void *vx, const void *vy) {
    using Block = std::conditional_t<kFour, block_q4_0, block_q8_0>;
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int64_t nb = n / kQK8_0;
    const __m256i x_off = block_offsets(sizeof(Block));
    const __m256i y_off = block_offsets(sizeof(block_q8_0));
    const __m512i pair_idx[4] = {pair_index(0), pair_index(1), pair_index(2), pair_index(3)};
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 7 < nb; i += 8) {
        const __m512 dd =
            _mm512_zextps256_ps512(_mm256_mul_ps(gather_d8(&x[i], x_off), gather_d8(&y[i], y_off)));
        for (int p = 0; p < 4; ++p) {
            const int64_t b = i + 2 * p;
            const __m512i yv = join256(loadu256(y[b].qs), loadu256(y[b + 1].qs));
            __m512i prod;
            if constexpr (kFour) {
                prod = _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, unpack_nibbles_2(x[b].qs, x[b + 1].qs), yv),
                                        _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(8), yv));
            } else {
                prod = dot_i8_512(join256(loadu256(x[b].qs), loadu256(x[b + 1].qs)), yv);
            }
            acc[p & 1] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), _mm512_permutexvar_ps(pair_idx[p], dd), acc[p & 1]);
        }
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    if (i < nb) {
        if constexpr (kFour) {
            s += vec_dot_q4_0((nb - i) * kQK8_0, x + i, y + i);
        } else {
            s += vec_dot_q8_0((nb - i) * kQK8_0, x + i, y + i);
        }
    }
    return s;
}

// ---- K types: 64 elements (two 32-element sub-blocks) per register ----

// Q4_K / Q5_K: chunk j (32 bytes of nibbles) is sub-blocks 2j and 2j+1, also 64 consecutive activations.
// vpmaddubsw pairs (<= 2 * 31 * 127) then vpdpwssd by the sub-block's scale.
template <bool kFive>
inline float vec_dot_q45_K_512(int64_t n, const void *vx, const void *vy) {
    using Block = std::conditional_t<kFive, block_q5_K, block_q4_K>;
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i one = _mm512_set1_epi8(1);
    // pshufb patterns: word 2j of each 128-bit lane in the low half, word 2j+1 in the high half.
    __m512i scale_pick[4];
    for (int j = 0; j < 4; ++j)
        scale_pick[j] = join256(word_broadcast_pattern(2 * j), word_broadcast_pattern(2 * j + 1));
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m128i smn = k4_scales_mins(x[i].scales);
        const __m512i sc16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(smn));  // 8 x i16 per lane
        const float dy = y[i].d;
        accm = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].dmin) * dy),
                               _mm256_cvtepi32_ps(k4_mins_dot(smn, y[i].bsums)), accm);
        [[maybe_unused]] __m256i hb;
        if constexpr (kFive) hb = loadu256(x[i].qh);
        __m512i sumi = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            const __m256i q = loadu256(x[i].qs + 32 * j);
            __m512i v = _mm512_and_si512(join256(q, _mm256_srli_epi16(q, 4)), m4);
            if constexpr (kFive) {
                const __m512i h = _mm512_and_si512(join256(hb, _mm256_srli_epi16(hb, 1)), one);
                v = _mm512_or_si512(v, _mm512_slli_epi16(h, 4));
                hb = _mm256_srli_epi16(hb, 2);
            }
            const __m512i yv = _mm512_loadu_si512(y[i].qs + 64 * j);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(v, yv),
                                       _mm512_shuffle_epi8(sc16, scale_pick[j]));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(h2f(x[i].d) * dy), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - hsum_ps(accm);
}

// Word t of register k covers scale group 4k + t / 8 (16 elements = 8 pair words).
struct Q6GroupIdx {
    alignas(64) int16_t v[4][32];
};
constexpr Q6GroupIdx make_q6_group_idx() {
    Q6GroupIdx t{};
    for (int k = 0; k < 4; ++k)
        for (int w = 0; w < 32; ++w) t.v[k][w] = static_cast<int16_t>(4 * k + w / 8);
    return t;
}
constexpr Q6GroupIdx kQ6GroupIdx = make_q6_group_idx();

// Q6_K: per 128-element half, ql[0..31] | ql[32..63] and qh | qh >> 2 give elements 0-63 in one register
// (low nibbles, qh bits 0-1 / 2-3) and 64-127 in another (high nibbles, qh bits 4-5 / 6-7).
inline float vec_dot_q6_K_512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q6_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i m2 = _mm512_set1_epi8(3);
    const __m512i group_idx[4] = {_mm512_load_si512(kQ6GroupIdx.v[0]), _mm512_load_si512(kQ6GroupIdx.v[1]),
                                  _mm512_load_si512(kQ6GroupIdx.v[2]), _mm512_load_si512(kQ6GroupIdx.v[3])};
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m512i sc16 = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(loadu128(x[i].scales)));
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h) {
            const __m512i ql = join256(loadu256(x[i].ql + 64 * h), loadu256(x[i].ql + 64 * h + 32));
            const __m256i qh1 = loadu256(x[i].qh + 32 * h);
            const __m512i qh = join256(qh1, _mm256_srli_epi16(qh1, 2));
            const __m512i u_lo =
                _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(qh, m2), 4));
            const __m512i u_hi =
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 4), m2), 4));
            const __m512i y_lo = _mm512_loadu_si512(y[i].qs + 128 * h);
            const __m512i y_hi = _mm512_loadu_si512(y[i].qs + 128 * h + 64);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(u_lo, y_lo),
                                       _mm512_permutexvar_epi16(group_idx[2 * h], sc16));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(u_hi, y_hi),
                                       _mm512_permutexvar_epi16(group_idx[2 * h + 1], sc16));
        }
        // The quants were taken unsigned (q + 32): remove 32 * sum_g scale_g * bsum_g.
        const __m256i corr = _mm256_slli_epi32(scaled_bsums(loadu128(x[i].scales), y[i].bsums), 5);
        sumi = _mm512_sub_epi32(sumi, _mm512_zextsi256_si512(corr));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(h2f(x[i].d) * y[i].d), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

// ---- F32 / F16 / BF16 over interleaved weights (block_x8), 512-bit ----

// The float tiles below run over 8-row groups. With more activations than one tile takes, this driver
// prefetches the weights of the next group (or chunk) a few lines per tile while one computes: the first tile
// reads a group's weights from memory at the rate it computes, faster than one core streams, and large
// matrices ran at 80-85% of the speed of ones that fit the cache (TinyLlama F16 82 -> 93 G multiply-adds/s at
// 1 thread, BF16 139 -> 170). Calls whose activations outgrow L2 (over 384 KiB) also go chunk by chunk
// (2 KiB of each activation), kChunkGroups512 groups at a time: a chunk's slice of the activations then comes
// from L2 for every group of the block, where group by group over all of k the whole activations came from
// L3 every 8 rows. The tile's lane sums go through acc ([groups][nc][Tile::kAcc floats]) between chunks, in
// block order: the same operations as one pass, so the same bits. Smaller calls keep one pass over k (the
// chunks' extra lane-sum traffic cost SmolLM's matrices 5%), and single tokens (one tile) also no prefetch.
constexpr int64_t kChunkActBytes512 = 2048;  // per activation and chunk: 64 blocks of f32, 128 of bf16
constexpr int64_t kChunkAboveActBytes512 = 384 * 1024;
constexpr int64_t kChunkGroups512 = 4;

// A tile's lane sums go to acc (a chunk before the last) or, reduced in registers, to y (the last chunk: y is
// the tile's first activation's output at the group's first row, activations ldy apart).
using FloatX8TileFn = void (*)(int64_t, const uint8_t *, const uint8_t *, size_t, float *, bool, float *,
                               int64_t);
// Tile<1>::run ... Tile<N>::run (a plain array: no library code instantiated with this file's flags).
template <template <int> class Tile, class Seq>
struct FloatX8TileTable;
template <template <int> class Tile, size_t... I>
struct FloatX8TileTable<Tile, std::index_sequence<I...>> {
    static constexpr FloatX8TileFn fn[] = {&Tile<static_cast<int>(I) + 1>::run...};
};

// Staged (a tile type other than Tile): with more activations than one tile takes, each group's chunk of
// weights is converted once (Tile<1>::to_f32, into kStageFloats512 floats after the lane sums, in L1) and
// Staged's tiles run over it: F16 weights widened once per call instead of once per tile (4 conversions for a
// 6-activation tile's 24 FMAs; the embedding models' F16 products at one thread, `matmul_bench
// --benchmark_filter=MatmulEnc/f16`, ran 5-15% faster staged, at up to 98% of the FMA peak). Staged's tiles
// take the widened values through the same FMAs in the same order: the same bits.
constexpr int64_t kStageBlocks512 = 128;  // 32 KiB of f32: a smollm-135m row (72 blocks) in one chunk
constexpr int64_t kStageFloats512 = kStageBlocks512 * 64;

template <template <int> class Tile, int kMaxC, template <int> class Staged = Tile>
struct FloatX8Driver512 {
    static constexpr const FloatX8TileFn *kTiles =
        FloatX8TileTable<Tile, std::make_index_sequence<kMaxC>>::fn;
    static constexpr const FloatX8TileFn *kStagedTiles =
        FloatX8TileTable<Staged, std::make_index_sequence<kMaxC>>::fn;
    static constexpr bool kStages = !std::is_same_v<Tile<1>, Staged<1>>;
    static constexpr int64_t kAcc = Tile<1>::kAcc;
    static constexpr int64_t kChunkBlocks = kChunkActBytes512 / Tile<1>::kActBlock;
    static constexpr int64_t kBlockBytes = Tile<1>::kBlockBytes;
    static_assert(!kStages || (Staged<1>::kAcc == kAcc && Staged<1>::kActBlock == Tile<1>::kActBlock &&
                               Staged<1>::kBlockBytes == 256 && kChunkBlocks <= kStageBlocks512));

    // Floats of acc a call with nc activations needs (and the staged chunk after them).
    static size_t acc_floats(int64_t nc) {
        return static_cast<size_t>(kChunkGroups512 * nc * kAcc) + (kStages ? kStageFloats512 : 0);
    }

    // a: the activations in the tile's format, kActBlock bytes per block, lda bytes apart.
    static void run(int64_t nb, const uint8_t *w, size_t ldw, int64_t nr, const uint8_t *a, size_t lda,
                    int64_t nc, float *acc, float *y, int64_t ldy) {
        if (nc == 1) return run_one(nb, w, ldw, nr, a, acc, y);
        const bool tiles = nc > kMaxC;  // more than one tile of activations: prefetch, maybe chunks
        // (Staged from 4 tiles on: with 2 or 3, a batched decode's few activations, the store and reload of
        // the chunk would cost about what it saves, and such steps read their weights from memory.)
        const bool stage = kStages && nc > 3 * kMaxC;
        const bool chunked = tiles && nc * nb * Tile<1>::kActBlock > kChunkAboveActBytes512;
        const int64_t chunk = chunked ? even_chunk(nb, kChunkBlocks)
                              : stage ? even_chunk(nb, kStageBlocks512)
                                      : nb;
        float *staged = acc + kChunkGroups512 * nc * kAcc;
        // Tiles of even size: 128 activations as 18 x 6 + 4 x 5, not 21 x 6 + 2 (a 2-activation tile's 8
        // chains leave the FMA ports half idle; it took 2% of a nomic-embed pass).
        const int64_t n_tiles = (nc + kMaxC - 1) / kMaxC;
        for (int64_t rb = 0; rb < nr; rb += 8 * kChunkGroups512) {
            const int64_t block_end = rb + 8 * kChunkGroups512 < nr ? rb + 8 * kChunkGroups512 : nr;
            for (int64_t b0 = 0; b0 < nb; b0 += chunk) {
                const int64_t kb = nb - b0 < chunk ? nb - b0 : chunk;
                for (int64_t r0 = rb; r0 < block_end; r0 += 8) {
                    const ChunkPos p = next_chunk(rb, block_end, r0, b0, chunk, nb);
                    const int64_t p_blocks = nb - p.b0 < chunk ? nb - p.b0 : chunk;
                    // the chunk's blocks, one stretch
                    SpreadPrefetch pf(tiles && p.r0 < nr ? kBlockBytes / 64 * p_blocks : 0, n_tiles);
                    const char *pf_base = reinterpret_cast<const char *>(w + p.r0 * ldw) + p.b0 * kBlockBytes;
                    float *ga = acc + (r0 - rb) / 8 * nc * kAcc;
                    const uint8_t *wc = w + r0 * ldw + b0 * kBlockBytes;
                    if constexpr (kStages) {
                        if (stage) {
                            Tile<1>::to_f32(kb, wc, staged);
                            wc = reinterpret_cast<const uint8_t *>(staged);
                        }
                    }
                    const FloatX8TileFn *fn = stage ? kStagedTiles : kTiles;
                    for (int64_t t = 0, c0 = 0; t < n_tiles; ++t) {
                        pf.step([&](int64_t i) { return pf_base + 64 * i; });
                        const int cc = even_part(nc, n_tiles, t);
                        fn[cc - 1](kb, wc, a + c0 * lda + b0 * Tile<1>::kActBlock, lda, ga + c0 * kAcc,
                                   b0 == 0, b0 + kb == nb ? y + c0 * ldy + r0 : nullptr, ldy);
                        c0 += cc;
                    }
                }
            }
        }
    }

    // One activation (a decoded token): the groups two at a time (for_group_pairs, Tile<1>::run_groups), so
    // that two streams are read at once. Group by group, one stream, a 128 MiB F16 matrix read at 20-32 GB/s
    // on one core of an AMD EPYC (Zen 5), two streams at 33-44 (integer types' one stream at 30-32), with the
    // same operations per row; mamba-130m F16 generation 92 -> 120-132 t/s at 1 thread.
    static void run_one(int64_t nb, const uint8_t *w, size_t ldw, int64_t nr, const uint8_t *a, float *acc,
                        float *y) {
        for_group_pairs(
            nr / 8,
            [&](int64_t g0, int64_t g1) {
                const uint8_t *ws[2] = {w + 8 * g0 * ldw, w + 8 * g1 * ldw};
                Tile<1>::template run_groups<2>(nb, ws, a, acc);
                Tile<1>::reduce(acc, y + 8 * g0);
                Tile<1>::reduce(acc + kAcc, y + 8 * g1);
            },
            [&](int64_t g) {
                const uint8_t *ws[1] = {w + 8 * g * ldw};
                Tile<1>::template run_groups<1>(nb, ws, a, acc);
                Tile<1>::reduce(acc, y + 8 * g);
            });
    }
};

// F32 / F16: 8 rows x C activations. Register p holds 8 elements of rows 2p and 2p + 1; the activation's 8
// elements (f32, converted once per call for F16) are broadcast to both halves. Each (row, activation) keeps
// the 8 partial sums of FloatX8Tile and reduces them in the same order, so the values are the 256-bit tile's
// bit for bit, with half the instructions and up to 6 activations per pass (4 x 6 accumulators). A decoded
// token goes through run_groups: two groups at once, each prefetched 8 KiB ahead (kFloatX8PrefetchBytes).
struct F16Pairs {
    using T = uint16_t;
    static __m512 load(const T *p) { return _mm512_cvtph_ps(loadu256(p)); }
};
struct F32Pairs {
    using T = float;
    static __m512 load(const T *p) { return _mm512_loadu_ps(p); }
};
template <class P, int C>
struct PairRowsTile512 {
    using Block = block_x8<typename P::T>;
    static constexpr int64_t kAcc = 64;       // floats of lane sums per activation: 4 registers
    static constexpr int64_t kActBlock = 32;  // bytes of activation per block: 8 floats
    static constexpr int64_t kBlockBytes = sizeof(Block);
    static void run(int64_t nb, const uint8_t *w, const uint8_t *ab, size_t lda, float *acc_out, bool first,
                    float *y, int64_t ldy) {
        const auto *a = reinterpret_cast<const float *>(ab);
        const int64_t ldf = static_cast<int64_t>(lda / sizeof(float));
        __m512 acc[4][C];
        LCTX_UNROLL
        for (int p = 0; p < 4; ++p) {
            LCTX_UNROLL
            for (int c = 0; c < C; ++c)
                acc[p][c] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc_out + (c * 4 + p) * 16);
        }
        const auto *xb = reinterpret_cast<const Block *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const Block &x = xb[b];
            __m512 xv[4];
            LCTX_UNROLL
            for (int p = 0; p < 4; ++p) xv[p] = P::load(x.v[2 * p]);
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + c * ldf + 8 * b));
                LCTX_UNROLL
                for (int p = 0; p < 4; ++p) acc[p][c] = _mm512_fmadd_ps(xv[p], av, acc[p][c]);
            }
        }
        if (y) {
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) reduce(acc[0][c], acc[1][c], acc[2][c], acc[3][c], y + c * ldy);
            return;
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            LCTX_UNROLL
            for (int p = 0; p < 4; ++p) _mm512_store_ps(acc_out + (c * 4 + p) * 16, acc[p][c]);
        }
    }
    // nb blocks as block_x8<float> (the staged driver's chunk): the values run() would load.
    static void to_f32(int64_t nb, const uint8_t *w, float *dst) {
        const auto *xb = reinterpret_cast<const Block *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            LCTX_UNROLL
            for (int p = 0; p < 4; ++p) _mm512_store_ps(dst + b * 64 + p * 16, P::load(xb[b].v[2 * p]));
        }
    }
    // One activation against G groups at once, each group's lane sums as run's (kAcc floats per group).
    template <int G>
    static void run_groups(int64_t nb, const uint8_t *const *w, const uint8_t *ab, float *acc_out) {
        const auto *a = reinterpret_cast<const float *>(ab);
        const Block *xb[G];
        __m512 acc[G][4];
        LCTX_UNROLL
        for (int g = 0; g < G; ++g) {
            xb[g] = reinterpret_cast<const Block *>(w[g]);
            LCTX_UNROLL
            for (int p = 0; p < 4; ++p) acc[g][p] = _mm512_setzero_ps();
        }
        for (int64_t b = 0; b < nb; ++b) {
            const __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + 8 * b));
            LCTX_UNROLL
            for (int g = 0; g < G; ++g) {
                prefetch_block_ahead(&xb[g][b]);
                LCTX_UNROLL
                for (int p = 0; p < 4; ++p)
                    acc[g][p] = _mm512_fmadd_ps(P::load(xb[g][b].v[2 * p]), av, acc[g][p]);
            }
        }
        LCTX_UNROLL
        for (int g = 0; g < G; ++g) {
            LCTX_UNROLL
            for (int p = 0; p < 4; ++p) _mm512_store_ps(acc_out + g * kAcc + p * 16, acc[g][p]);
        }
    }
    // Each row's 8 lane sums added as hsum_ps adds them (l_i + l_i+4, then those at distance 2, then 1),
    // the 8 rows side by side: the same bits for a twelfth of the instructions (one row at a time this
    // took 8% of an 8 x 32-token bge-small pass). The last chunk's tile reduces from its registers: through
    // acc and back, the lane sums of a 128-token call (128 KiB) came from L2, 7% of a nomic-embed pass.
    static void reduce(const float *acc, float *y) {
        reduce(_mm512_load_ps(acc), _mm512_load_ps(acc + 16), _mm512_load_ps(acc + 32),
               _mm512_load_ps(acc + 48), y);
    }
    static void reduce(__m512 v0, __m512 v1, __m512 v2, __m512 v3, float *y) {
        // 128-bit lanes [row 2p lanes 0-3, row 2p lanes 4-7, row 2p+1 lanes 0-3, row 2p+1 lanes 4-7]:
        // a = the rows' low quads + their high quads, rows 0-3 in a01 and 4-7 in a23.
        const __m512 a01 =
            _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x88), _mm512_shuffle_f32x4(v0, v1, 0xdd));
        const __m512 a23 =
            _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x88), _mm512_shuffle_f32x4(v2, v3, 0xdd));
        // lane k: [a0 + a2, a1 + a3] of row k, then of row k + 4
        const __m512 b = _mm512_add_ps(_mm512_shuffle_ps(a01, a23, 0x44), _mm512_shuffle_ps(a01, a23, 0xee));
        const __m512 t = _mm512_add_ps(b, _mm512_permute_ps(b, 0xb1));  // row k at 4k, row k + 4 at 4k + 2
        const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
        _mm256_storeu_ps(y, _mm512_castps512_ps256(_mm512_permutexvar_ps(order, t)));
    }
};
template <int C>
using F16Tile512 = PairRowsTile512<F16Pairs, C>;
template <int C>
using F32Tile512 = PairRowsTile512<F32Pairs, C>;
constexpr int kPairRowsMaxC512 = 6;

void gemm_interleaved_f16_512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                              int64_t nc, float *y, int64_t ldy) {
    using Driver = FloatX8Driver512<F16Tile512, kPairRowsMaxC512, F32Tile512>;
    const int64_t nb = n / 8;
    // The activations as f32 (exactly their half values), then the lane sums, in a buffer from a baseline
    // translation unit.
    const size_t a_floats = (static_cast<size_t>(nc * n) + 15) / 16 * 16;
    auto *af =
        reinterpret_cast<float *>(kernel_tile_scratch((a_floats + Driver::acc_floats(nc)) * sizeof(float)));
    for (int64_t c = 0; c < nc; ++c) {
        const auto *h = static_cast<const uint16_t *>(act) + c * static_cast<int64_t>(lda / 2);
        for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(af + c * n + i, _mm256_cvtph_ps(loadu128(h + i)));
    }
    Driver::run(nb, static_cast<const uint8_t *>(w), ldw, nr, reinterpret_cast<const uint8_t *>(af),
                static_cast<size_t>(n) * sizeof(float), nc, af + a_floats, y, ldy);
}

// F32 activations, and F16's in their wide form (quantize_act_f16_wide_512), are read where they are.
template <template <int> class Tile, template <int> class Staged = Tile>
void gemm_interleaved_f32_acts_512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act,
                                   size_t lda, int64_t nc, float *y, int64_t ldy) {
    using Driver = FloatX8Driver512<Tile, kPairRowsMaxC512, Staged>;
    auto *acc = reinterpret_cast<float *>(kernel_tile_scratch(Driver::acc_floats(nc) * sizeof(float)));
    Driver::run(n / 8, static_cast<const uint8_t *>(w), ldw, nr, static_cast<const uint8_t *>(act), lda, nc,
                acc, y, ldy);
}
void gemm_interleaved_f32_512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                              int64_t nc, float *y, int64_t ldy) {
    gemm_interleaved_f32_acts_512<F32Tile512>(n, w, ldw, nr, act, lda, nc, y, ldy);
}

// F16 activations widened back to f32 in one pass: each value is quantize_act_f16's half (a NaN its plain
// quiet NaN) as f32, so gemm_interleaved_f16_512's activations without its widening in every call.
void quantize_act_f16_wide_512(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<float *>(vy);
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000));
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512 h = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        _mm512_storeu_ps(y + i, _mm512_mask_or_ps(h, nan, _mm512_and_ps(v, sign), qnan));
    }
    for (; i < n; ++i) {
        fp16_t h;
        quantize_act_f16(x + i, &h, 1);
        y[i] = _cvtsh_ss(h);
    }
}
void gemm_interleaved_f16_wide_512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act,
                                   size_t lda, int64_t nc, float *y, int64_t ldy) {
    gemm_interleaved_f32_acts_512<F16Tile512, F32Tile512>(n, w, ldw, nr, act, lda, nc, y, ldy);
}

// ---- BF16 over interleaved weights (block_f16x8), vdpbf16ps ----

// 8 rows x C activations. A block's first and last 64 bytes are rows 0-3 and 4-7 (8 elements each); the
// activation's 8 values (bf16 already: BF16's activation type) are broadcast to the four 128-bit lanes, and
// vdpbf16ps adds a pair of products into each lane: lane 4 r + q gathers row r's elements 2q and 2q + 1 of
// every block, in block order. At the end a row's 4 lanes are added in one order. So each (row, activation)
// sees the same operations whatever the tile, at twice the rate of f32 FMAs over converted weights (which
// stayed at 0.74-0.78x llama.cpp's prompt speed for tinyllama BF16: it uses vdpbf16ps too).
template <int C>
struct BF16DpTile512 {
    static constexpr int64_t kAcc = 32;       // floats of lane sums per activation: 2 registers
    static constexpr int64_t kActBlock = 16;  // bytes of activation per block: 8 bf16
    static constexpr int64_t kBlockBytes = sizeof(block_f16x8);
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, float *acc_out, bool first,
                    float *y, int64_t ldy) {
        __m512 acc[2][C];
        LCTX_UNROLL
        for (int h = 0; h < 2; ++h) {
            LCTX_UNROLL
            for (int c = 0; c < C; ++c)
                acc[h][c] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc_out + (c * 2 + h) * 16);
        }
        const auto *xb = reinterpret_cast<const block_f16x8 *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const auto x0 = (__m512bh)_mm512_loadu_si512(xb[b].v[0]);
            const auto x1 = (__m512bh)_mm512_loadu_si512(xb[b].v[4]);
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const auto av = (__m512bh)_mm512_broadcast_i32x4(loadu128(a + c * lda + 16 * b));
                acc[0][c] = _mm512_dpbf16_ps(acc[0][c], x0, av);
                acc[1][c] = _mm512_dpbf16_ps(acc[1][c], x1, av);
            }
        }
        if (y) {
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) reduce(acc[0][c], acc[1][c], y + c * ldy);
            return;
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            LCTX_UNROLL
            for (int h = 0; h < 2; ++h) _mm512_store_ps(acc_out + (c * 2 + h) * 16, acc[h][c]);
        }
    }
    // One activation against G groups at once, each group's lane sums as run's (kAcc floats per group).
    template <int G>
    static void run_groups(int64_t nb, const uint8_t *const *w, const uint8_t *a, float *acc_out) {
        const block_f16x8 *xb[G];
        __m512 acc[G][2];
        LCTX_UNROLL
        for (int g = 0; g < G; ++g) {
            xb[g] = reinterpret_cast<const block_f16x8 *>(w[g]);
            acc[g][0] = acc[g][1] = _mm512_setzero_ps();
        }
        for (int64_t b = 0; b < nb; ++b) {
            const auto av = (__m512bh)_mm512_broadcast_i32x4(loadu128(a + 16 * b));
            LCTX_UNROLL
            for (int g = 0; g < G; ++g) {
                prefetch_block_ahead(&xb[g][b]);
                acc[g][0] = _mm512_dpbf16_ps(acc[g][0], (__m512bh)_mm512_loadu_si512(xb[g][b].v[0]), av);
                acc[g][1] = _mm512_dpbf16_ps(acc[g][1], (__m512bh)_mm512_loadu_si512(xb[g][b].v[4]), av);
            }
        }
        LCTX_UNROLL
        for (int g = 0; g < G; ++g) {
            _mm512_store_ps(acc_out + g * kAcc, acc[g][0]);
            _mm512_store_ps(acc_out + g * kAcc + 16, acc[g][1]);
        }
    }
    static void reduce(const float *acc, float *y) {
        reduce(_mm512_load_ps(acc), _mm512_load_ps(acc + 16), y);
    }
    static void reduce(__m512 v0, __m512 v1, float *y) {
        LCTX_UNROLL
        for (int h = 0; h < 2; ++h) {
            // (l0 + l1) + (l2 + l3) of each row's 4 lanes, into the row's first lane
            const __m512 v = h ? v1 : v0;
            const __m512 t = _mm512_add_ps(v, _mm512_permute_ps(v, 0xb1));
            alignas(64) float s[16];
            _mm512_store_ps(s, _mm512_add_ps(t, _mm512_permute_ps(t, 0x4e)));
            LCTX_UNROLL
            for (int r = 0; r < 4; ++r) y[4 * h + r] = s[4 * r];
        }
    }
};
constexpr int kBF16DpMaxC = 8;

void gemm_interleaved_bf16_dp512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act,
                                 size_t lda, int64_t nc, float *y, int64_t ldy) {
    using Driver = FloatX8Driver512<BF16DpTile512, kBF16DpMaxC>;
    auto *acc = reinterpret_cast<float *>(kernel_tile_scratch(Driver::acc_floats(nc) * sizeof(float)));
    Driver::run(n / 8, static_cast<const uint8_t *>(w), ldw, nr, static_cast<const uint8_t *>(act), lda, nc,
                acc, y, ldy);
}

// ---- F32 / F16 / BF16 in the plain layout (the KV cache's keys and transposed values), 512-bit ----

// A row of n 16-bit values (F16 or BF16, by L's conversion) as f32, 16 at a time (conversions are exact).
template <class L>
inline void row16_impl(const uint8_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, L::v16(src + 2 * i));
    if (i < n) {
        const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, m, L::v16(src + 2 * i, m));
    }
}

struct LoadF32Row {
    static __m512 v16(const uint8_t *p) { return _mm512_loadu_ps(p); }
    static __m512 v16(const uint8_t *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
    static void row(const uint8_t *src, float *dst, int64_t n) { std::memcpy(dst, src, sizeof(float) * n); }
    static constexpr size_t kElemBytes = 4;
};
struct LoadF16Row {
    static void row16(const uint8_t *src, float *dst, int64_t n) { row16_impl<LoadF16Row>(src, dst, n); }
    static __m512 v16(const uint8_t *p) { return _mm512_cvtph_ps(loadu256(p)); }
    static __m512 v16(const uint8_t *p, __mmask16 m) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    }
    static void row(const uint8_t *src, float *dst, int64_t n) { row16(src, dst, n); }
    static constexpr size_t kElemBytes = 2;
};
struct LoadBF16Row {
    static void row16(const uint8_t *src, float *dst, int64_t n) { row16_impl<LoadBF16Row>(src, dst, n); }
    static __m512 v16(const uint8_t *p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(loadu256(p)), 16));
    }
    static __m512 v16(const uint8_t *p, __mmask16 m) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    }
    static void row(const uint8_t *src, float *dst, int64_t n) { row16(src, dst, n); }
    static constexpr size_t kElemBytes = 2;
};

// The 16 sums of a 4 x 4 block of accumulators in one register, lane 4 c + r holding acc[r][c]: pairs of rows
// (within 128-bit lanes), then pairs of pairs, then the four 128-bit lanes. Every output's 16 partial sums
// are added in the same order wherever it sits, and unused (zero) accumulators never meet used ones.
inline __m512 reduce_4x4(const __m512 (&acc)[4][4]) {
    __m512 x[2][4];  // x[h][c]: rows 2h, 2h + 1, two partial sums each per 128-bit lane
    LCTX_UNROLL
    for (int h = 0; h < 2; ++h) {
        LCTX_UNROLL
        for (int c = 0; c < 4; ++c) {
            const __m512 a = acc[2 * h][c], b = acc[2 * h + 1][c];
            x[h][c] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
        }
    }
    __m512 z[4];  // z[c]: rows 0-3 in each 128-bit lane
    LCTX_UNROLL
    for (int c = 0; c < 4; ++c) {
        const __m512d p = _mm512_castps_pd(x[0][c]), q = _mm512_castps_pd(x[1][c]);
        z[c] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p, q)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(p, q)));
    }
    // lanes 0 + 1 and 2 + 3 of c = 0, 1 (and 2, 3), then of the pairs: lane c of the result is z[c]'s total
    const __m512 s01 =
        _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], 0x88), _mm512_shuffle_f32x4(z[0], z[1], 0xdd));
    const __m512 s23 =
        _mm512_add_ps(_mm512_shuffle_f32x4(z[2], z[3], 0x88), _mm512_shuffle_f32x4(z[2], z[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xdd));
}

// One 16-element step of R weight rows (a masked tail when m is given) against C activations (f32,
// zero-padded to whole 16s) into acc[r % 4][r / 4 + c] (row r of the 16-row tile, or (r, c) of a 4 x 4 one).
template <class L, int R, int C>
inline void step_float_plain512(__m512 (&acc)[4][4], const uint8_t *w, size_t ldw, const float *a,
                                int64_t lda, int64_t i, const __mmask16 *m) {
    __m512 x[R];
    LCTX_UNROLL
    for (int r = 0; r < R; ++r) {
        const uint8_t *p = w + r * ldw + i * L::kElemBytes;
        x[r] = m ? L::v16(p, *m) : L::v16(p);
    }
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) {
        const __m512 av = _mm512_loadu_ps(a + c * lda + i);
        LCTX_UNROLL
        for (int r = 0; r < R; ++r) acc[r % 4][r / 4 + c] = _mm512_fmadd_ps(x[r], av, acc[r % 4][r / 4 + c]);
    }
}

// The 16 sums of R rows x C activations, R x C <= 16 (R = 16: one activation), one accumulator per output
// over 16-element steps, the row's tail masked; lane 4 (r / 4 + c) + r % 4 of the result is output (r, c).
template <class L, int R, int C>
inline __m512 sums_float_plain512(int64_t n, const uint8_t *w, size_t ldw, const float *a, int64_t lda) {
    static_assert((R <= 4 && C <= 4) || (R == 16 && C == 1));
    __m512 acc[4][4];
    LCTX_UNROLL
    for (int r = 0; r < 4; ++r) {
        LCTX_UNROLL
        for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) step_float_plain512<L, R, C>(acc, w, ldw, a, lda, i, nullptr);
    if (i < n) {
        const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
        step_float_plain512<L, R, C>(acc, w, ldw, a, lda, i, &m);
    }
    return reduce_4x4(acc);
}

// R (<= 4) weight rows x C (<= 4) activations.
template <class L, int R, int C>
void tile_float_plain512(int64_t n, const uint8_t *w, size_t ldw, const float *a, int64_t lda, float *y,
                         int64_t ldy) {
    alignas(64) float sums[16];
    _mm512_store_ps(sums, sums_float_plain512<L, R, C>(n, w, ldw, a, lda));
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) {
        LCTX_UNROLL
        for (int r = 0; r < R; ++r) y[c * ldy + r] = sums[4 * c + r];
    }
}

// One activation against 16 rows: the 16 accumulators reduce together (row r in lane r), in the order every
// output of the 4 x 4 tiles is reduced in, so a row's value is the same in either.
template <class L>
void tile_float_plain512_16rows(int64_t n, const uint8_t *w, size_t ldw, const float *a, float *y) {
    _mm512_storeu_ps(y, sums_float_plain512<L, 16, 1>(n, w, ldw, a, 0));
}

// Weights read by L, activations converted by LA (LoadF16Row, LoadF32Row: F16 rows against F32 activations,
// the F32 kernel's arithmetic on the exactly converted weights).
template <class L, class LA = L>
void gemm_float_plain512(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                         int64_t nc, float *y, int64_t ldy) {
    using TileFn = void (*)(int64_t, const uint8_t *, size_t, const float *, int64_t, float *, int64_t);
    static constexpr TileFn kTiles[4][4] = {{&tile_float_plain512<L, 1, 1>, &tile_float_plain512<L, 1, 2>,
                                             &tile_float_plain512<L, 1, 3>, &tile_float_plain512<L, 1, 4>},
                                            {&tile_float_plain512<L, 2, 1>, &tile_float_plain512<L, 2, 2>,
                                             &tile_float_plain512<L, 2, 3>, &tile_float_plain512<L, 2, 4>},
                                            {&tile_float_plain512<L, 3, 1>, &tile_float_plain512<L, 3, 2>,
                                             &tile_float_plain512<L, 3, 3>, &tile_float_plain512<L, 3, 4>},
                                            {&tile_float_plain512<L, 4, 1>, &tile_float_plain512<L, 4, 2>,
                                             &tile_float_plain512<L, 4, 3>, &tile_float_plain512<L, 4, 4>}};
    // The activations as f32 rows of whole 16s (zero tail), in a buffer from a baseline translation unit.
    const int64_t ld = (n + 15) / 16 * 16;
    auto *af = reinterpret_cast<float *>(kernel_tile_scratch(static_cast<size_t>(nc * ld) * sizeof(float)));
    for (int64_t c = 0; c < nc; ++c) {
        LA::row(static_cast<const uint8_t *>(act) + c * lda, af + c * ld, n);
        for (int64_t i = n; i < ld; ++i) af[c * ld + i] = 0.0f;
    }
    const auto *wb = static_cast<const uint8_t *>(w);
    int64_t r0 = 0;
    if (nc == 1 && n * static_cast<int64_t>(L::kElemBytes) >= kLongRowBytes) {
        // One activation against long plain rows (a decoded token's matrix kept plain, LCTX_REPACK=0; model
        // weights take the 8-row groups, interleave.h): four rows at a time,
        // four streams (16 rows side by side are 16 streams, about 30% slower from DRAM; one row alone is one
        // chain of dependent FMAs, and two rows read slower still: a 256 MiB F32 product at 1 thread read
        // 26-27 GB/s by one row, 22-25 by two, 27-30 by four). The value is the one every tile position
        // gives.
        for (; r0 + 4 <= nr; r0 += 4)
            tile_float_plain512<L, 4, 1>(n, wb + r0 * ldw, ldw, af, ld, y + r0, ldy);
        for (; r0 < nr; ++r0) tile_float_plain512<L, 1, 1>(n, wb + r0 * ldw, ldw, af, ld, y + r0, ldy);
        return;
    }
    if (nc == 1)  // one activation (a decoded token's query head): 16 rows per reduction
        for (; r0 + 16 <= nr; r0 += 16) tile_float_plain512_16rows<L>(n, wb + r0 * ldw, ldw, af, y + r0);
    for (; r0 < nr; r0 += 4) {
        const int rr = static_cast<int>(nr - r0 < 4 ? nr - r0 : 4);
        for (int64_t c0 = 0; c0 < nc; c0 += 4) {
            const int cc = static_cast<int>(nc - c0 < 4 ? nc - c0 : 4);
            kTiles[rr - 1][cc - 1](n, wb + r0 * ldw, ldw, af + c0 * ld, ld, y + c0 * ldy + r0, ldy);
        }
    }
}

}  // namespace
}  // namespace lctx::kernels
#endif

namespace lctx::kernels::detail {

#if defined(__x86_64__)
VecDotFn vec_dot_avx512(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32:
            return &vec_dot_f32_512;
        case GgmlType::F16:
            return &vec_dot_f16_512;
        case GgmlType::BF16:
            return &vec_dot_bf16_512;
        case GgmlType::Q8_0:
            return &vec_dot_q8_0_q4_0_512<false>;
        case GgmlType::Q4_0:
            return &vec_dot_q8_0_q4_0_512<true>;
        case GgmlType::Q4_K:
            return &vec_dot_q45_K_512<false>;
        case GgmlType::Q5_K:
            return &vec_dot_q45_K_512<true>;
        case GgmlType::Q6_K:
            return &vec_dot_q6_K_512;
        default:
            return shared_vec_dot(weight_type);
    }
}
QuantizeActFn quantize_act_avx512(GgmlType act_type) {
    return shared_quantize_act(act_type);
}
// The integer types over 16-row groups (one row per zmm lane), the float types over 8-row groups (two rows
// per zmm register).
GemmFn gemm_interleaved_avx512(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32:
            return &gemm_interleaved_f32_512;
        case GgmlType::F16:
            return &gemm_interleaved_f16_512;
        case GgmlType::BF16:
            return &gemm_interleaved_bf16_dp512;
        default:
            return shared_gemm_interleaved_int<V512>(weight_type);
    }
}
int group_rows_avx512(GgmlType weight_type) {
    if (weight_type == GgmlType::F32 || weight_type == GgmlType::F16 || weight_type == GgmlType::BF16)
        return kGroupRows256;
    return shared_gemm_interleaved_int<V512>(weight_type) ? kGroupRows512 : 0;
}
int interleaved_tile_acts_avx512(GgmlType weight_type) {
    return shared_interleaved_tile_acts<V512>(weight_type);
}
// gemm_interleaved_f16_512 widens each call's activations to f32 (they are F16): calls of 128 tokens and
// 256 rows widen each once per 256 rows, where 64 x 64 calls did it once per 64 (nomic-embed-text F16, 512
// tokens, 2 threads: 1101-1125 -> 1168-1191 t/s; TinyLlama F16 pp512 160-162 -> 171-179; one thread alike).
bool interleaved_stages_avx512(GgmlType weight_type) {
    return weight_type == GgmlType::F16;
}
QuantizeActFn quantize_act_wide_avx512(GgmlType act_type) {
    return act_type == GgmlType::F16 ? &quantize_act_f16_wide_512 : nullptr;
}
GemmFn gemm_interleaved_wide_avx512(GgmlType weight_type) {
    return weight_type == GgmlType::F16 ? &gemm_interleaved_f16_wide_512 : nullptr;
}
// The float types in 512-bit tiles (attention over the KV cache); the others in the 256-bit tiles of the
// shared set (int8 dots in vpdpbusd here): a tile reuses each unpacked block across activations, which a
// 512-bit dot per output cannot.
GemmFn gemm_avx512(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32:
            return &gemm_float_plain512<LoadF32Row>;
        case GgmlType::F16:
            return &gemm_float_plain512<LoadF16Row>;
        case GgmlType::BF16:
            return &gemm_float_plain512<LoadBF16Row>;
        default:
            return shared_gemm(weight_type);
    }
}
GemmFn gemm_f16_by_f32_avx512() {
    return &gemm_float_plain512<LoadF16Row, LoadF32Row>;
}
#else
VecDotFn vec_dot_avx512(GgmlType) {
    return nullptr;
}
QuantizeActFn quantize_act_avx512(GgmlType) {
    return nullptr;
}
GemmFn gemm_avx512(GgmlType) {
    return nullptr;
}
GemmFn gemm_f16_by_f32_avx512() {
    return nullptr;
}
GemmFn gemm_interleaved_avx512(GgmlType) {
    return nullptr;
}
int group_rows_avx512(GgmlType) {
    return 0;
}
int interleaved_tile_acts_avx512(GgmlType) {
    return 0;
}
bool interleaved_stages_avx512(GgmlType) {
    return false;
}
QuantizeActFn quantize_act_wide_avx512(GgmlType) {
    return nullptr;
}
GemmFn gemm_interleaved_wide_avx512(GgmlType) {
    return nullptr;
}
#endif

}  // namespace lctx::kernels::detail
