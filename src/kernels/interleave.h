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

struct block_q8_0x8 {
    fp16_t d[8];
    int8_t qs[256];
};
static_assert(sizeof(block_q8_0x8) == 8 * sizeof(block_q8_0));

// True when a [rows, cols] matrix of type t can be kept interleaved (a type with an x8 layout and whole
// groups of 8 rows). The interleaved matrix has the same byte size and row_bytes as the plain one.
bool can_interleave(GgmlType t, int64_t rows, int64_t cols);

// Interleaves rows [0, rows) (rows % 8 == 0) of a plain matrix (rows row_bytes apart) into dst.
void interleave_rows(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t rows, int64_t cols, uint8_t *dst);

// Writes row `row` of an interleaved matrix back in the plain GGUF block layout (row_bytes bytes).
void deinterleave_row(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols, uint8_t *dst);

// The scalar gemm over interleaved weights: the same contract as GemmFn (dot.h) with w at the start of a
// group, n_rows a multiple of 8 and w_stride the plain row_bytes (a group is 8 * w_stride bytes).
void gemm_x8_ref(GgmlType t, int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                 size_t act_stride, int64_t n_act, float *y, int64_t ldy);

}  // namespace lctx::kernels
