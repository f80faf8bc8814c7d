// Helpers shared by the tensor-type tests: random rows and whole-row quantize/dequantize wrappers.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tensor/types.h"

namespace lctx::test {

// n values of N(0, 1), each block of `block` elements multiplied by its own scale 10^U(-spread, spread)
// so that the per-block scales of a format are exercised independently (spread 0: one scale).
inline std::vector<float> random_row(int64_t n, uint32_t seed, int64_t block = 32, float spread = 0.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uni(-spread, spread);
    std::vector<float> v(static_cast<size_t>(n));
    float scale = 1.0f;
    for (int64_t i = 0; i < n; ++i) {
        if (i % block == 0) scale = std::pow(10.0f, uni(rng));
        v[static_cast<size_t>(i)] = normal(rng) * scale;
    }
    return v;
}

inline std::vector<uint8_t> quantize(GgmlType type, const std::vector<float> &x) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q(row_size(type, n));
    quantize_row(type, x.data(), q.data(), n);
    return q;
}

inline std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t> &q, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    dequantize_row(type, q.data(), x.data(), n);
    return x;
}

// Float dot of two float rows, in double.
inline double dot_double(const std::vector<float> &a, const std::vector<float> &b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
}

constexpr float kHalfRel = 1.0f / 2048.0f;  // 2^-11: relative rounding error of float -> half

// Absolute error of rounding d to half (relative 2^-11 in the normal range, 2^-25 below it).
inline float half_err(float d) {
    return std::max(std::fabs(d) * kHalfRel, std::ldexp(1.0f, -25));
}

// Error bound of one element, from the block's own statistics; why each holds:
//  *_0 (Q4_0 k=8, Q5_0 k=16): d = max/-k puts the extreme on level -k exactly and rounding is to the
//      nearest level, so |err| <= |d|/2; the opposite extreme (level +k) is clamped to k-1, |err| <= |d|.
//      Reconstruction uses d rounded to half: + |q| |d - d_h| <= k * half_err(d).
//  *_1 (Q4_1 15 steps, Q5_1 31): d = (max - min)/steps, nearest level: |err| <= d/2, plus the half
//      rounding of d (steps * half_err(d)) and of m (half_err(min)).
//  Q8_0/Q8_1: d = amax/127, nearest: |err| <= d/2 + 127 * half_err(d).
//  F16: round to nearest: relative 2^-11 (normal), 2^-25 absolute (subnormal). BF16: relative 2^-8.
//  Plus a float-arithmetic slack of a few ulps of the block's magnitude.
//  input_rel > 0: y was quantized from an original that differs from x by up to input_rel * |x| (a
//  model file made from an F32 original, compared against the F16 file): the block statistics move by
//  the same relative amount and each element by input_rel * |x|.
inline void check_round_trip(GgmlType type, const std::vector<float> &x, const std::vector<float> &y,
                             float input_rel = 0.0f, const std::string &what = "") {
    const int64_t bs = type_traits(type).block_size == 1 ? 32 : type_traits(type).block_size;
    double worst_ratio = 0;  // largest err / bound seen, to show the bounds are not vacuous
    for (size_t b = 0; b < x.size() / static_cast<size_t>(bs); ++b) {
        const float *xb = x.data() + b * bs;
        const float *yb = y.data() + b * bs;
        float amax = 0, mn = xb[0], mx = xb[0];
        float max = 0;  // the largest-magnitude element with its sign (the first on ties)
        for (int64_t j = 0; j < bs; ++j) {
            if (amax < std::fabs(xb[j])) {
                amax = std::fabs(xb[j]);
                max = xb[j];
            }
            mn = std::min(mn, xb[j]);
            mx = std::max(mx, xb[j]);
        }
        const float slack = 4e-7f * amax;
        for (int64_t j = 0; j < bs; ++j) {
            const float err = std::fabs(xb[j] - yb[j]);
            float bound = 0;
            switch (type) {
                case GgmlType::F32:
                    bound = 0;
                    break;
                case GgmlType::F16:
                    bound = std::max(std::fabs(xb[j]) * kHalfRel, std::ldexp(1.0f, -25));
                    break;
                case GgmlType::BF16:
                    bound = std::fabs(xb[j]) * std::ldexp(1.0f, -8);
                    break;
                case GgmlType::Q4_0:
                case GgmlType::Q5_0: {
                    const float k = type == GgmlType::Q4_0 ? 8.0f : 16.0f;
                    const float d = amax / k;
                    // Level coordinate of x with the extreme at -k; near +k the clamp applies.
                    const float u = xb[j] / (max / -k);
                    // With a perturbed input two near-equal extremes of opposite sign may have
                    // swapped, so either end may be the clamped one.
                    const bool maybe_clamped = u > k - 0.51f || (input_rel > 0 && u < -(k - 0.51f));
                    bound = (maybe_clamped ? d : 0.5f * d) + k * half_err(d) + slack;
                    break;
                }
                case GgmlType::Q4_1:
                case GgmlType::Q5_1: {
                    const float steps = type == GgmlType::Q4_1 ? 15.0f : 31.0f;
                    const float d = (mx - mn) / steps;
                    bound = 0.5f * d + steps * half_err(d) + half_err(mn) + slack;
                    break;
                }
                case GgmlType::Q8_0:
                case GgmlType::Q8_1: {
                    const float d = amax / 127.0f;
                    bound = 0.5f * d + 127.0f * half_err(d) + slack;
                    break;
                }
                default:
                    FAIL() << "no bound for " << type_name(type);
            }
            if (input_rel > 0) bound = bound * (1 + 4 * input_rel) + std::fabs(xb[j]) * input_rel;
            ASSERT_LE(err, bound) << what << " " << type_name(type) << " block " << b << " elem " << j
                                  << " x " << xb[j];
            if (bound > 0) worst_ratio = std::max(worst_ratio, static_cast<double>(err / bound));
        }
    }
    if (type != GgmlType::F32) {
        EXPECT_GT(worst_ratio, 0.3) << what << " " << type_name(type) << ": bound far from tight";
    }
}

}  // namespace lctx::test
