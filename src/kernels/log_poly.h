// The constants of the vectorized softplus's log (vmath_x86_inl.h, vmath_neon_inl.h): log(u) for u >= 1 as
// k ln2 + log(m), u = 2^k m with m in [sqrt(1/2), sqrt(2)), and log(m) = 2 atanh(s), s = (m - 1) / (m + 1),
// by its odd series in s to s^9: |s| <= 0.1716, so the first term left out, 2 s^11 / 11, is below 2.1e-9 of
// the sum.
#pragma once
#include <cstdint>

namespace lctx::kernels::detail::log_poly {

constexpr int32_t kSqrtHalfBits = 0x3f3504f3;  // the bits of sqrt(1/2) as a float
constexpr float kLn2Hi = 0.693359375f;         // ln 2 in two parts, the high one exact in few bits
constexpr float kLn2Lo = -2.12194440e-4f;
// Horner coefficients in z = s^2 from the highest degree: log(m) = s (2 + 2/3 z + 2/5 z^2 + 2/7 z^3 + 2/9
// z^4)
constexpr float kCoeffs[5] = {2.0f / 9.0f, 2.0f / 7.0f, 2.0f / 5.0f, 2.0f / 3.0f, 2.0f};
// softplus(x) = x above this (log1p(exp(x)) rounds to x in float there; ggml's threshold)
constexpr float kSoftplusLinear = 20.0f;

}  // namespace lctx::kernels::detail::log_poly
