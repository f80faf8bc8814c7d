// Internal: the AVX-512 scores of attention over an F16 or Q8_0 key cache, or an encoder's F32 keys
// (attention_avx512.cpp; Q8_0 keys are turned from their f32 values in attention.cpp), entered when
// use_avx512_row_ops() (ops_x86.h); at the avx2 level, an encoder's F32 keys only (attention_avx2.cpp).
//
// The keys are read in blocks of 16 cells turned on their side (f32, kt[d][16]: element d of the 16 cells'
// keys), so that a query head's 16 scores are one register accumulated over d: a multiply-add per element
// and no horizontal sums, where a dot per (cell, head) spent as much on reducing its 16 partial sums (and
// on converting the keys from F16) as on the products. A prompt turns each block once for all its query
// rows; one decoded token would spend more on turning than it saves, and keeps the dot products. Each score
// adds its products in order d = 0, 1, ... in one chain, however the heads and blocks are grouped.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx::kernels::detail {

constexpr int kKeyBlock = 16;  // cells per turned block

// The keys of cells [0, n) (n <= 16; the rest of the block zero) of one head (dk F16 values at k, rows
// row_bytes apart) turned into kt[d * 16 + c], d < dk.
void turn_key_block_f16(const uint8_t *k, size_t row_bytes, int n, int dk, float *kt);
// The same for F32 keys (an encoder's pass, AttentionArgs::encoder_pass).
void turn_key_block_f32(const uint8_t *k, size_t row_bytes, int n, int dk, float *kt);

// scores[h * lds + 16 b + c] = sum over d of q[h * dk + d] * kt[b * block_stride + d * 16 + c], for n_q query
// heads (f32 values) and n_blocks turned blocks (block_stride floats apart) of 16 cells each.
void key_block_scores(const float *q, int n_q, int dk, const float *kt, size_t block_stride, int64_t n_blocks,
                      float *scores, int64_t lds);
// The same scores, bit for bit, with AVX2 (attention_avx2.cpp): an encoder's F32 keys where the CPU has no
// AVX-512 (the keys turned by dequantize_row and a plain transposition in attention.cpp).
void key_block_scores_avx2(const float *q, int n_q, int dk, const float *kt, size_t block_stride,
                           int64_t n_blocks, float *scores, int64_t lds);

}  // namespace lctx::kernels::detail
