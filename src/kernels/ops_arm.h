// Internal: NEON versions of the row ops (ops_neon.cpp, ARM64 only), entered only when use_neon_row_ops():
// the same functions, with the same contracts, as the AVX2 ones of ops_x86.h, and the same exp (exp_poly.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx::kernels::detail {

// True when the NEON row ops below may be entered (an ARM64 CPU and LCTX_ISA allows the neon level).
bool use_neon_row_ops();

float scale_mask_max_neon(float *x, const float *mask, int64_t n, float scale, float slope);
double exp_sum_neon(float *x, int64_t n, float max);
void scale_neon(float *x, float s, int64_t n);
void swiglu_neon(const float *g, const float *u, float *y, int64_t n);
void silu_neon(float *x, int64_t n);
void axpy_f32_neon(float a, const float *x, float *y, int64_t n);
void add_neon(float *y, const float *x, int64_t n);
void f16_to_f32_neon(const uint16_t *x, float *y, int64_t n);
double sum_sq_neon(const float *x, int64_t n);
void scale_mul_neon(const float *x, float s, const float *w, float *y, int64_t n);
// rope_apply's rotation (ops.h), pairs (2i, 2i + 1) or, neox, (i, i + n_rot / 2).
void rope_apply_neon(float *x, int n_head, int head_dim, const float *cos_sin, int n_rot, bool neox);

}  // namespace lctx::kernels::detail
