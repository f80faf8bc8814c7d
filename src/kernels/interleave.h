// Interleaved weights: a matrix kept as groups of G rows whose blocks are interleaved, so that one load of
// 4 G bytes (a "line") holds 4 consecutive elements of each of the G rows, one row per 32-bit lane. A
// dot-product kernel then keeps one output row per lane: no horizontal sums, the G rows' scales converted by
// one instruction, the activation's 4 matching bytes broadcast to every lane. G is the lane count of the
// kernels that read the layout: 8 for 256-bit registers (AVX2), 16 for 512-bit ones and AMX tiles (whose
// multiplier takes 16 rows x 4 bytes per operand line). This is what the matrix-vector product of
// generation and the tiles of prompt processing are limited by.
//
// The layouts are lctx's own in-memory formats, built once at model load from the GGUF rows (the file is
// not changed) and the same size: block b of a group holds block b of its G rows. Line g of a run is the
// 4 G bytes at 4 G g; byte 4 r + i of a line belongs to row r.
//
//   Q4_0: d[G] the rows' scales; qs: 4 lines, line g holds element 8 g + i of row r in the low nibble of
//         byte 4 r + i and element 8 g + 4 + i in the high nibble (unsigned codes 0..15, value d (code - 8)).
//   Q8_0: d[G]; qs: 8 lines, line g holds element 4 g + i of row r at byte 4 r + i.
//   Q5_0: d[G]; qh (one line): byte 4 r + i holds the fifth bits of step g at bit 2 g (the low nibble's
//         element) and 2 g + 1 (the high nibble's); qs as Q4_0's (the low 4 bits of the codes 0..31).
//   Q4_K: d[G], dmin[G]; the 6-bit scales and mins decoded to bytes, scales[j][r] and mins[j / 2][r][j % 2]
//         for sub-block j < 8; qs[j]: 4 lines as Q4_0's for the 32 elements of sub-block j. 148 bytes per row
//         and super-block instead of 144 (+2.8%).
//   Q6_K: d[G]; scales[k][r] of the 16-element groups k < 16; ql[j]: 4 lines, the low 4 bits as Q4_0's codes;
//         qh[j][h]: one line with the top 2 bits of the same elements of steps g = 2h (bits 0-1 the low
//         nibble's element, 2-3 the high nibble's) and g = 2h + 1 (bits 4-7).
//   F16, BF16 (G = 8 on every ISA): v[r][i] = element 8 b + i of row r for block b (8 elements per row):
//         the 8 rows of a tile read one contiguous 128-byte stream instead of 8 rows whose power-of-two
//         strides (4 KiB for 2048 columns) alias in the L1 cache.
//   F32 (G = 8 on every ISA): the same with 4-byte elements, 256 bytes per block. A decoded token's product
//         then reads one stream per thread instead of one per row of a tile: TinyLlama F32 tg at 2 threads
//         read its weights 14% faster that way (AMD EPYC, avx2 level), where a plain row alone is one chain
//         of dependent FMAs (32 bytes per FMA latency) and two or four rows side by side are as many streams.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/block_layouts.h"
#include "tensor/types.h"

namespace lctx::kernels {

// The group sizes the kernels use.
constexpr int kGroupRows256 = 8;
constexpr int kGroupRows512 = 16;
constexpr int kMaxGroupRows = 16;

template <int G>
struct block_q4_0xG {
    fp16_t d[G];
    uint8_t qs[16 * G];
};
template <int G>
struct block_q5_0xG {
    fp16_t d[G];
    uint8_t qh[4 * G];
    uint8_t qs[16 * G];
};
template <int G>
struct block_q8_0xG {
    fp16_t d[G];
    int8_t qs[32 * G];
};
template <int G>
struct block_q4_KxG {
    fp16_t d[G];
    fp16_t dmin[G];
    uint8_t scales[8][G];
    uint8_t mins[4][G][2];
    uint8_t qs[8][4][4 * G];
};
// The lines of each 16-element half h of sub-block j lie together, in the order the tiles read them: two
// lines of low nibbles (lines 2h and 2h + 1 of the sub-block), then the half's top bits. So a block is read
// front to back, which the hardware prefetcher follows. With the low and the top bits in two arrays, the
// reads alternated between regions 1 KiB apart: tinyllama Q6_K tg at 1 thread read 5-6 GB/s without
// software prefetch and 13-15 with it; now 20-22 without (AMD EPYC, avx2 level).
template <int G>
struct block_q6_KxG {
    fp16_t d[G];
    int8_t scales[16][G];
    struct Half {
        uint8_t ql[2][4 * G];
        uint8_t qh[4 * G];
    } half[8][2];
};
// F16 / BF16 (T = uint16_t) and F32 (T = float): 8 elements of each of 8 rows.
template <class T>
struct block_x8 {
    T v[8][8];
};
using block_f16x8 = block_x8<uint16_t>;
using block_f32x8 = block_x8<float>;

static_assert(sizeof(block_q4_0xG<8>) == 8 * sizeof(block_q4_0) &&
              sizeof(block_q4_0xG<16>) == 16 * sizeof(block_q4_0));
static_assert(sizeof(block_q5_0xG<8>) == 8 * sizeof(block_q5_0) &&
              sizeof(block_q5_0xG<16>) == 16 * sizeof(block_q5_0));
static_assert(sizeof(block_q8_0xG<8>) == 8 * sizeof(block_q8_0) &&
              sizeof(block_q8_0xG<16>) == 16 * sizeof(block_q8_0));
static_assert(sizeof(block_q4_KxG<8>) == 8 * 148 && sizeof(block_q4_KxG<16>) == 16 * 148);
static_assert(sizeof(block_q6_KxG<8>) == 8 * sizeof(block_q6_K) &&
              sizeof(block_q6_KxG<16>) == 16 * sizeof(block_q6_K));
static_assert(sizeof(block_f16x8) == 8 * 8 * sizeof(uint16_t) &&
              sizeof(block_f32x8) == 8 * 8 * sizeof(float));

// Elements of each row in one interleaved block of type t: the block size, 8 for F32 / F16 / BF16; 0 without
// a layout.
int64_t interleave_block_elems(GgmlType t);

// True when a [rows, cols] matrix of type t can be kept interleaved (a type with a layout, whole blocks).
// A row count that is not a multiple of the group gets a last group padded with zero rows.
bool can_interleave(GgmlType t, int64_t rows, int64_t cols);

// True when type t has a layout for groups of `group` rows (F32 / F16 / BF16: 8 only; the others: 8 and 16).
bool has_group_layout(GgmlType t, int group);

// Rows an interleaved matrix stores: rows rounded up to a whole group.
inline int64_t interleaved_rows(int64_t rows, int group) {
    return (rows + group - 1) / group * group;
}

// Bytes per row of an interleaved matrix (a group is `group` times this): the plain row size, except for
// Q4_K (decoded scales). The same for every group size.
size_t interleaved_row_bytes(GgmlType t, int64_t cols);

// Interleaves rows [0, rows) of a plain matrix (rows src_row_bytes apart) into dst
// (interleaved_row_bytes(t, cols) * interleaved_rows(rows, group) bytes).
void interleave_rows(GgmlType t, int group, const uint8_t *src, size_t src_row_bytes, int64_t rows,
                     int64_t cols, uint8_t *dst);

// Writes row `row` of an interleaved matrix (row_bytes = interleaved_row_bytes) back in the plain GGUF block
// layout (row_size(t, cols) bytes).
void deinterleave_row(GgmlType t, int group, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols,
                      uint8_t *dst);

// Per-thread buffers for the interleaved kernels (defined in a baseline translation unit, so that the ISA
// files instantiate no library code): at least n int32 for activation sums; at least n bytes, 64-byte
// aligned, for staged operands.
int32_t *kernel_sums_scratch(size_t n);
uint8_t *kernel_tile_scratch(size_t n);

// The scalar gemm over interleaved weights: the contract of GemmFn (dot.h) with w at the start of a group,
// n_rows a multiple of `group` and w_stride the interleaved row bytes (a group is group * w_stride bytes).
void gemm_interleaved_ref(GgmlType t, int group, int64_t n, const void *w, size_t w_stride, int64_t n_rows,
                          const void *act, size_t act_stride, int64_t n_act, float *y, int64_t ldy);

}  // namespace lctx::kernels
