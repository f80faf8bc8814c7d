// Scalar reference for the plain float types (F32, F16, BF16) and the 32-element block types
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL). Block layouts: tensor/block_layouts.h.
// All n are element counts and multiples of the type's block size (the dispatchers in quants.cpp
// check this); x is the weight row, y the activation row in the type's vec_dot_type.
#pragma once
#include <cstdint>

namespace lctx {

// ---- plain types ----
void dequantize_row_f32(const void *src, float *dst, int64_t n);
void dequantize_row_f16(const void *src, float *dst, int64_t n);
void dequantize_row_bf16(const void *src, float *dst, int64_t n);
void quantize_row_f32_ref(const float *src, void *dst, int64_t n);
void quantize_row_f16_ref(const float *src, void *dst, int64_t n);
void quantize_row_bf16_ref(const float *src, void *dst, int64_t n);
// Products are formed in float and summed in double, as ggml's generic path does.
float vec_dot_f32_ref(int64_t n, const void *x, const void *y);
float vec_dot_f16_ref(int64_t n, const void *x, const void *y);
float vec_dot_bf16_ref(int64_t n, const void *x, const void *y);

// ---- 32-element blocks ----
void dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void dequantize_row_q4_1(const void *src, float *dst, int64_t n);
void dequantize_row_q5_0(const void *src, float *dst, int64_t n);
void dequantize_row_q5_1(const void *src, float *dst, int64_t n);
void dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void dequantize_row_q8_1(const void *src, float *dst, int64_t n);
void dequantize_row_iq4_nl(const void *src, float *dst, int64_t n);

void quantize_row_q4_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q4_1_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_1_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_1_ref(const float *src, void *dst, int64_t n);
void quantize_row_iq4_nl_ref(const float *src, void *dst, int64_t n);

// Integer sum per block, then scaled by the two block scales in float.
float vec_dot_q4_0_q8_0_ref(int64_t n, const void *x, const void *y);
float vec_dot_q4_1_q8_1_ref(int64_t n, const void *x, const void *y);
float vec_dot_q5_0_q8_0_ref(int64_t n, const void *x, const void *y);
float vec_dot_q5_1_q8_1_ref(int64_t n, const void *x, const void *y);
float vec_dot_q8_0_q8_0_ref(int64_t n, const void *x, const void *y);
float vec_dot_iq4_nl_q8_0_ref(int64_t n, const void *x, const void *y);

// Index of the IQ4_NL level (kValuesIq4nl) nearest to x; a tie goes to the upper level.
// Shared with the IQ4_XS quantizer.
int iq4nl_nearest_index(float x);

}  // namespace lctx
