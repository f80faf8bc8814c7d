// Scalar reference for the 256-element "K" super-block types and their activation type Q8_K:
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (and Q8_K itself).
#pragma once
#include <cstdint>

namespace lctx {

void dequantize_row_q2_K(const void *src, float *dst, int64_t n);
void dequantize_row_q3_K(const void *src, float *dst, int64_t n);
void dequantize_row_q4_K(const void *src, float *dst, int64_t n);
void dequantize_row_q5_K(const void *src, float *dst, int64_t n);
void dequantize_row_q6_K(const void *src, float *dst, int64_t n);
void dequantize_row_q8_K(const void *src, float *dst, int64_t n);
void dequantize_row_iq4_xs(const void *src, float *dst, int64_t n);

void quantize_row_q2_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_q3_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_q4_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_q6_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_K_ref(const float *src, void *dst, int64_t n);
void quantize_row_iq4_xs_ref(const float *src, void *dst, int64_t n);

// x: weight row; y: activation row in Q8_K.
float vec_dot_q2_K_q8_K_ref(int64_t n, const void *x, const void *y);
float vec_dot_q3_K_q8_K_ref(int64_t n, const void *x, const void *y);
float vec_dot_q4_K_q8_K_ref(int64_t n, const void *x, const void *y);
float vec_dot_q5_K_q8_K_ref(int64_t n, const void *x, const void *y);
float vec_dot_q6_K_q8_K_ref(int64_t n, const void *x, const void *y);
float vec_dot_iq4_xs_q8_K_ref(int64_t n, const void *x, const void *y);

}  // namespace lctx
