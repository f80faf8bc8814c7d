// Interleaved weights ("x8"): a matrix kept as groups of 8 rows whose blocks are interleaved, so that one
// 32-byte load holds 4 consecutive elements of each of the 8 rows, one row per 32-bit lane. A dot-product
// kernel then keeps one output row per lane: no horizontal sums, the 8 rows' scales converted by one
// instruction, int8 products summed in int16 across a block before one widening step. This is what the
// matrix-vector product of generation and the tiles of prompt processing are limited by on AVX2.
//
// The layouts are lctx's own in-memory formats, built once at model load from the GGUF rows (the file is
// not changed) and the same size: block b of a group holds block b of its 8 rows.
//
//   block_q4_0x8 (Q4_0): d[8] the rows' scales; qs[32 g + 4 r + i] (g < 4, r < 8, i < 4) holds element
//                        8 g + i of row r in its low nibble and element 8 g + 4 + i in its high nibble
//                        (unsigned codes 0..15, value = d * (code - 8)).
//   block_q8_0x8 (Q8_0): d[8]; qs[32 g + 4 r + i] (g < 8) = element 4 g + i of row r.
//   block_q5_0x8 (Q5_0): d[8]; qs as Q4_0's (low 4 bits of the codes 0..31); qh[4 r + i] holds the fifth bits
//                        of step g at bit 2 g (low nibble's element) and 2 g + 1 (high nibble's). Same size.
//   block_q4_Kx8 (Q4_K): d[8], dmin[8]; the 6-bit scales and mins decoded to bytes, scales[j][r] and
//                        mins[j / 2][r][j % 2] for sub-block j < 8; qs[j][g][4 r + i] as Q4_0's for the 32
//                        elements of sub-block j. 1184 bytes for 8 rows instead of 1152 (+2.8%).
//   block_q6_Kx8 (Q6_K): d[8]; scales[k][r] of the 16-element groups k < 16; ql[j][g][4 r + i] the low 4 bits
//                        as Q4_0's codes; qh[j][h][4 r + i] the top 2 bits of the same elements of steps
//                        g = 2h (bits 0-1 low nibble's element, 2-3 high nibble's) and g = 2h + 1 (bits 4-7).
//                        Same size as the plain rows.
//   block_f16x8 (F16, BF16): v[r][i] = element 8 b + i of row r for the x8 block b (8 elements per row): the
//                        8 rows of a tile read one contiguous 128-byte stream instead of 8 rows whose
//                        power-of-two strides (4 KiB for 2048 columns) alias in the L1 cache. Same size.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/block_layouts.h"
#include "tensor/types.h"

namespace lctx::kernels {

constexpr int kInterleaveRows = 8;

struct block_q4_0x8 {
    fp16_t d[8];
    uint8_t qs[128];
};
static_assert(sizeof(block_q4_0x8) == 8 * sizeof(block_q4_0));

struct block_q5_0x8 {
    fp16_t d[8];
    uint8_t qh[32];
    uint8_t qs[128];
};
static_assert(sizeof(block_q5_0x8) == 8 * sizeof(block_q5_0));

struct block_q8_0x8 {
    fp16_t d[8];
    int8_t qs[256];
};
static_assert(sizeof(block_q8_0x8) == 8 * sizeof(block_q8_0));

struct block_q4_Kx8 {
    fp16_t d[8];
    fp16_t dmin[8];
    uint8_t scales[8][8];
    uint8_t mins[4][8][2];
    uint8_t qs[8][4][32];
};
static_assert(sizeof(block_q4_Kx8) == 1184);

struct block_q6_Kx8 {
    fp16_t d[8];
    int8_t scales[16][8];
    uint8_t ql[8][4][32];
    uint8_t qh[8][2][32];
};
static_assert(sizeof(block_q6_Kx8) == 8 * sizeof(block_q6_K));
struct block_f16x8 {
    uint16_t v[8][8];
};
static_assert(sizeof(block_f16x8) == 8 * 8 * sizeof(uint16_t));

// Elements of each row in one x8 block of type t: the block size, 8 for F16 / BF16; 0 without a layout.
int64_t interleave_block_elems(GgmlType t);

// True when a [rows, cols] matrix of type t can be kept interleaved (a type with an x8 layout, whole x8
// blocks).
// A row count that is not a multiple of 8 gets a last group padded with zero rows.
bool can_interleave(GgmlType t, int64_t rows, int64_t cols);

// Rows an interleaved matrix stores: rows rounded up to a whole group.
inline int64_t interleaved_rows(int64_t rows) {
    return (rows + kInterleaveRows - 1) / kInterleaveRows * kInterleaveRows;
}

// Bytes per row of an interleaved matrix (a group of 8 rows is 8 times this): the plain row size, except for
// Q4_K (decoded scales).
size_t interleaved_row_bytes(GgmlType t, int64_t cols);

// Interleaves rows [0, rows) of a plain matrix (rows src_row_bytes apart) into dst
// (interleaved_row_bytes(t, cols) * interleaved_rows(rows) bytes).
void interleave_rows(GgmlType t, const uint8_t *src, size_t src_row_bytes, int64_t rows, int64_t cols,
                     uint8_t *dst);

// Writes row `row` of an interleaved matrix (row_bytes = interleaved_row_bytes) back in the plain GGUF block
// layout (row_size(t, cols) bytes).
void deinterleave_row(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols,
                      uint8_t *dst);

// A per-thread buffer of at least n int32 for the activation sums of the x8 kernels (defined in a baseline
// translation unit, so that the ISA files instantiate no library code).
int32_t *x8_sums_scratch(size_t n);
// A per-thread buffer of at least n bytes, 64-byte aligned, for the AMX tiles' staging (same reason).
uint8_t *x8_tile_scratch(size_t n);

// The scalar gemm over interleaved weights: the same contract as GemmFn (dot.h) with w at the start of a
// group, n_rows a multiple of 8 and w_stride the interleaved row bytes (a group is 8 * w_stride bytes).
void gemm_x8_ref(GgmlType t, int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                 size_t act_stride, int64_t n_act, float *y, int64_t ldy);

}  // namespace lctx::kernels
