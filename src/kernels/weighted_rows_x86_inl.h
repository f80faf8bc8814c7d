// Attention's product with V stored by rows (a flash-attention cache): o[h][c] += sum over cells j of
// p[h][j] * v_j[c], for the query heads of one KV head (ops_x86.h, weighted_rows_*). Included by
// ops_avx2.cpp with 8-lane vectors and by ops_avx512.cpp with 16-lane ones; every lane takes the same
// operations in the same order on both, so the two give the same bits.
//
// The cells go by chunks small enough that the chunk's rows stay in L1 while every group of heads and
// every run of channels passes over them; each (group, run) keeps its heads' sums in registers across the
// chunk. A chunk in which no head of the group has a zero probability takes a loop without branches (the
// usual case); one with zeros passes over a cell whose probabilities are all 0 (cells of other sequences,
// masked ones) and over a head whose probability is 0, as axpy does.
#pragma once
#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/ops_x86.h"
#include "kernels/simd_x86_inl.h"

namespace lctx::kernels::detail {
namespace {

// Calls f with RowType `type` as a compile-time constant (std::integral_constant): each level's entry point
// picks its template instance through it.
template <class F>
void with_row_type(RowType type, F &&f) {
    switch (type) {
        case RowType::F32:
            return f(std::integral_constant<RowType, RowType::F32>{});
        case RowType::F16:
            return f(std::integral_constant<RowType, RowType::F16>{});
        case RowType::Q8_0:
            return f(std::integral_constant<RowType, RowType::Q8_0>{});
        case RowType::BF16:
            return f(std::integral_constant<RowType, RowType::BF16>{});
        case RowType::Q4_0:
            return f(std::integral_constant<RowType, RowType::Q4_0>{});
        case RowType::Q4_1:
            return f(std::integral_constant<RowType, RowType::Q4_1>{});
        case RowType::Q5_0:
            return f(std::integral_constant<RowType, RowType::Q5_0>{});
        case RowType::Q5_1:
            return f(std::integral_constant<RowType, RowType::Q5_1>{});
        case RowType::IQ4_NL:
            return f(std::integral_constant<RowType, RowType::IQ4_NL>{});
    }
}

// The 4- and 5-bit blocks of 32 (block_layouts.h): bytes per block and the offsets of the f16 scale d, the
// f16 minimum m (-1: none), the u32 of fifth bits qh (-1: none) and the 16 bytes of nibbles qs (element i <
// 16 in the low nibble of qs[i], element i + 16 in its high nibble).
template <RowType kType>
struct NibbleBlock;
template <>
struct NibbleBlock<RowType::Q4_0> {
    static constexpr int kBytes = sizeof(block_q4_0), kM = -1, kQh = -1, kQs = offsetof(block_q4_0, qs);
};
template <>
struct NibbleBlock<RowType::Q4_1> {
    static constexpr int kBytes = sizeof(block_q4_1), kM = offsetof(block_q4_1, m), kQh = -1,
                         kQs = offsetof(block_q4_1, qs);
};
template <>
struct NibbleBlock<RowType::Q5_0> {
    static constexpr int kBytes = sizeof(block_q5_0), kM = -1, kQh = offsetof(block_q5_0, qh),
                         kQs = offsetof(block_q5_0, qs);
};
template <>
struct NibbleBlock<RowType::Q5_1> {
    static constexpr int kBytes = sizeof(block_q5_1), kM = offsetof(block_q5_1, m),
                         kQh = offsetof(block_q5_1, qh), kQs = offsetof(block_q5_1, qs);
};
template <>
struct NibbleBlock<RowType::IQ4_NL> {
    static constexpr int kBytes = sizeof(block_iq4_nl), kM = -1, kQh = -1, kQs = offsetof(block_iq4_nl, qs);
};

inline float f16_at(const uint8_t *p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

// Channels [c, c + n) (n = 8 or 16, c a multiple of n) of a row of nibble blocks: the block, and the codes as
// signed bytes (the low n bytes of the result): Q4_0 q - 8, Q5_0 q - 16, Q4_1 / Q5_1 q, IQ4_NL the level
// kValuesIq4nl[q]. The value is then code * d (+ m), as dequantize_row forms it.
template <RowType kType, int n>
inline __m128i nibble_codes(const uint8_t *row, int c, const uint8_t **block) {
    using B = NibbleBlock<kType>;
    const uint8_t *b = row + (c / 32) * B::kBytes;
    *block = b;
    const int o = c % 32;
    __m128i q = n == 8 ? _mm_loadl_epi64(reinterpret_cast<const __m128i *>(b + B::kQs + (o & 15)))
                       : _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + B::kQs));
    if (o >= 16) q = _mm_srli_epi16(q, 4);
    q = _mm_and_si128(q, _mm_set1_epi8(0x0f));
    if constexpr (B::kQh >= 0) {
        uint32_t qh;
        std::memcpy(&qh, b + B::kQh, sizeof qh);
        const uint32_t bits = qh >> o;  // bit i: the fifth bit of channel c + i
        // byte i gets 0x10 where bit i is set
        const __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
        const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        const __m128i by = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits & 0xffff)), spread);
        q = _mm_or_si128(q, _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(by, sel), sel), _mm_set1_epi8(0x10)));
    }
    if constexpr (kType == RowType::Q4_0) q = _mm_sub_epi8(q, _mm_set1_epi8(8));
    if constexpr (kType == RowType::Q5_0) q = _mm_sub_epi8(q, _mm_set1_epi8(16));
    if constexpr (kType == RowType::IQ4_NL)
        q = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kValuesIq4nl)), q);
    return q;
}

// Keeps the compiler from fusing a product with the addition after it: dequantize_row rounds q * d, then
// adds m.
template <class R>
inline R rounded(R x) {
    __asm__("" : "+v"(x));
    return x;
}

// Channel c's block of a Q8_0 row (block_q8_0: the f16 scale, then 32 codes): its scale as f32, and the
// codes from channel c on.
inline float q8_0_scale(const uint8_t *row, int c) {
    uint16_t d16;
    std::memcpy(&d16, row + (c / 32) * 34, sizeof d16);
    return _cvtsh_ss(d16);
}
inline const uint8_t *q8_0_codes(const uint8_t *row, int c) {
    return row + (c / 32) * 34 + 2 + c % 32;
}

// Cells per chunk: 128 rows of one KV head's values are 8 KiB (F16, head size 64) to 64 KiB (F32, 128).
constexpr int kWeightedChunk = 128;

// One group of NH heads over NV vectors of channels from c0, cells [j0, j1). Vec gives the vector type
// and its loads (V8 in ops_avx2.cpp, V16 in ops_avx512.cpp).
template <class Vec, int NH, int NV, RowType kType>
void weighted_rows_block(const float *p, int64_t ldp, const uint8_t *v, size_t row_bytes, int j0, int j1,
                         float *o, int64_t ldo, int c0, bool dense) {
    using R = typename Vec::Reg;
    constexpr int L = Vec::kLanes;
    R acc[NH][NV];
#pragma GCC unroll 8
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) acc[h][k] = Vec::load(o + h * ldo + c0 + L * k);
    if (dense) {
        for (int j = j0; j < j1; ++j) {
            const uint8_t *row = v + j * row_bytes;
            R ph[NH];
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) ph[h] = Vec::set1(p[h * ldp + j]);
#pragma GCC unroll 4
            for (int k = 0; k < NV; ++k) {
                const R x = Vec::template values<kType>(row, c0 + L * k);
#pragma GCC unroll 8
                for (int h = 0; h < NH; ++h) acc[h][k] = Vec::fmadd(ph[h], x, acc[h][k]);
            }
        }
    } else {
        for (int j = j0; j < j1; ++j) {
            float pj[NH];
            bool any = false;
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) {
                pj[h] = p[h * ldp + j];
                any |= pj[h] != 0.0f;
            }
            if (!any) continue;
            const uint8_t *row = v + j * row_bytes;
#pragma GCC unroll 4
            for (int k = 0; k < NV; ++k) {
                const R x = Vec::template values<kType>(row, c0 + L * k);
#pragma GCC unroll 8
                for (int h = 0; h < NH; ++h)
                    if (pj[h] != 0.0f) acc[h][k] = Vec::fmadd(Vec::set1(pj[h]), x, acc[h][k]);
            }
        }
    }
#pragma GCC unroll 8
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) Vec::store(o + h * ldo + c0 + L * k, acc[h][k]);
}

using WeightedBlock = void (*)(const float *, int64_t, const uint8_t *, size_t, int, int, float *, int64_t,
                               int, bool);

template <class Vec, int NV, RowType kType, int... H>
constexpr auto weighted_blocks(std::integer_sequence<int, H...>) {
    return std::array<WeightedBlock, sizeof...(H)>{&weighted_rows_block<Vec, H + 1, NV, kType>...};
}

// Whether none of p[0, n) is 0, 8 at a time (a test per element cost a fifth of a 512-token encoder pass's
// attention at the avx2 level: as much as half the products it chose between).
inline bool none_zero(const float *p, int n) {
    int i = 0, zero = 0;
    for (; i + 8 <= n; i += 8)
        zero |= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + i), _mm256_setzero_ps(), _CMP_EQ_OQ));
    for (; i < n; ++i) zero |= p[i] == 0.0f;
    return zero == 0;
}

// Heads [0, n_p) over channels [0, n_done), n_done the channels that whole vectors cover (the caller takes
// the rest): groups of up to Vec::kHeads heads, runs of Vec::kVectors vectors, then single vectors.
template <class Vec, RowType kType>
int weighted_rows_vectors(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes, int j0,
                          int j1, float *o, int64_t ldo, int n) {
    constexpr int L = Vec::kLanes, NV = Vec::kVectors, MH = Vec::kHeads;
    static constexpr auto wide = weighted_blocks<Vec, NV, kType>(std::make_integer_sequence<int, MH>{});
    static constexpr auto narrow = weighted_blocks<Vec, 1, kType>(std::make_integer_sequence<int, MH>{});
    const int n_wide = n / (L * NV) * (L * NV), n_done = n / L * L;
    for (int jc = j0; jc < j1; jc += kWeightedChunk) {
        const int jc1 = j1 - jc < kWeightedChunk ? j1 : jc + kWeightedChunk;
        for (int h0 = 0; h0 < n_p; h0 += MH) {
            const int nh = n_p - h0 < MH ? n_p - h0 : MH;
            const float *ph = p + h0 * ldp;
            float *oh = o + h0 * ldo;
            bool dense = true;
            for (int h = 0; h < nh && dense; ++h) dense = none_zero(ph + h * ldp + jc, jc1 - jc);
            int c = 0;
            for (; c < n_wide; c += L * NV) wide[nh - 1](ph, ldp, v, row_bytes, jc, jc1, oh, ldo, c, dense);
            for (; c < n_done; c += L) narrow[nh - 1](ph, ldp, v, row_bytes, jc, jc1, oh, ldo, c, dense);
        }
    }
    return n_done;
}

}  // namespace
}  // namespace lctx::kernels::detail
