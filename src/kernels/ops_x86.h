// Internal: AVX2 versions of the row ops (ops_avx2.cpp), entered only when isa_active() >= Avx2, and AVX-512
// ones (ops_avx512.cpp) that give the same bits, entered only when isa_active() >= Avx512.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx::kernels::detail {

// True when the AVX2 row ops below may be entered (the CPU has AVX2 and LCTX_ISA allows it).
bool use_avx2_row_ops();
// True when the AVX-512 row ops may be entered (the CPU has AVX-512 and LCTX_ISA allows it).
bool use_avx512_row_ops();

// max over x[0..n) of x * scale + slope * mask (mask may be null); writes the masked, scaled values back.
// slope == 1 adds the mask as it is (the same bits as without a slope).
float scale_mask_max_avx2(float *x, const float *mask, int64_t n, float scale, float slope);
// x[i] = exp(x[i] - max) (0 for -inf), returns the sum in double.
double exp_sum_avx2(float *x, int64_t n, float max);
double exp_sum_avx512(float *x, int64_t n, float max);
// 16 lanes, the same values (and maximum) as the AVX2 versions
float scale_mask_max_avx512(float *x, const float *mask, int64_t n, float scale, float slope);
void scale_avx512(float *x, float s, int64_t n);
void scale_avx2(float *x, float s, int64_t n);
// x = cap * tanh(x * (scale / cap))
void softcap_avx2(float *x, int64_t n, float cap, float scale);
// y = gelu(g) * u and x = gelu(x) with ggml's half table (ops.h): table[h] = gelu of the half h, as f32
void geglu_avx2(const float *g, const float *u, float *y, int64_t n, const float *table);
void gelu_avx2(float *x, int64_t n, const float *table);
void geglu_avx512(const float *g, const float *u, float *y, int64_t n, const float *table);
void gelu_avx512(float *x, int64_t n, const float *table);
// y = silu(g) * u
void swiglu_avx2(const float *g, const float *u, float *y, int64_t n);
void silu_avx2(float *x, int64_t n);
// x = x > 0 ? x : 0 (max(x, 0) with 0 second: a NaN or -0 gives +0, as the plain loop)
void relu_avx2(float *x, int64_t n);
// y += a * x, x in F32 or F16
void axpy_f32_avx2(float a, const float *x, float *y, int64_t n);
void axpy_f16_avx2(float a, const uint16_t *x, float *y, int64_t n);
// o[h][c] += sum over j in [j0, j1) of p[h * ldp + j] * v_j[c], for h < n_p and c < n, with v_j the n values
// at v + j * row_bytes (F32, F16, BF16, or blocks of 32 of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL with n a
// multiple of 32): attention's product with V stored by rows. Each output takes its products in order
// j0, ..., j1 - 1 by fused multiply-adds on the values as dequantize_row gives them (axpy's arithmetic,
// axpy's bits); a zero probability adds nothing (a cell whose probabilities are all 0 is not read). The
// AVX-512 version gives the same bits (weighted_rows_x86_inl.h).
enum class RowType { F32, F16, Q8_0, BF16, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL };
void weighted_rows_avx2(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes,
                        RowType type, int j0, int j1, float *o, int64_t ldo, int n);
void weighted_rows_avx512(const float *p, int64_t ldp, int n_p, const uint8_t *v, size_t row_bytes,
                          RowType type, int j0, int j1, float *o, int64_t ldo, int n);
void add_avx2(float *y, const float *x, int64_t n);
// y = the halves x as f32 (exact, as fp16_to_fp32)
void f16_to_f32_avx2(const uint16_t *x, float *y, int64_t n);
// sum of x[i]^2 in double (the products of floats are exact in double; 8 partial sums)
double sum_sq_avx2(const float *x, int64_t n);
// y = x * s * w (w may be null: y = x * s)
void scale_mul_avx2(const float *x, float s, const float *w, float *y, int64_t n);
// layer_norm's steps (ops.cpp), its sums in the scalar code's order: 8 partial sums in double, element i in
// part i % 8 (a tail in part 0), added part by part. The sum of x; y = x - mean and the sum of y^2; y = y * s
// * w + b (one FMA: w, b may be null).
double sum_parts_avx2(const float *x, int64_t n);
double center_sum_sq_avx2(const float *x, float mean, float *y, int64_t n);
void scale_affine_avx2(float *y, float s, const float *w, const float *b, int64_t n);

}  // namespace lctx::kernels::detail
