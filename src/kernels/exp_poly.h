// The constants of the vectorized exp (ops_avx2.cpp, ops_avx512.cpp): one set, so that both widths give the
// same bits. exp(x) = 2^n e^r with n = round(x log2 e), r = x - n ln2 (ln2 in two parts, the high one exact
// in few bits), e^r by its degree-7 Taylor polynomial in Horner form (truncation below 6e-9 relative).
#pragma once

namespace lctx::kernels::detail::exp_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
// Horner coefficients from the highest degree: p = c[0]; p = p r + c[i] for i = 1..7
constexpr float kCoeffs[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                              1.0f / 6.0f,    0.5f,          1.0f,          1.0f};
// Below kMin the result is 0 (the scalar expf gives denormals there), above kMax +inf.
constexpr float kMin = -87.3f;
constexpr float kMax = 88.0f;

}  // namespace lctx::kernels::detail::exp_poly
