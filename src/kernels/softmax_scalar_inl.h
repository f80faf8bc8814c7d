// softmax's first step one element at a time: the scalar path (ops.cpp) and the tails of the vector versions
// (ops_avx2.cpp, ops_avx512.cpp, ops_neon.cpp). Each includer compiles it with its own flags, so where the
// vector code fuses slope * mask into the sum (x86 with FMA), this loop does too.
#pragma once
#include <cstdint>

namespace lctx::kernels::detail {

// x[j] = x[j] * scale, plus slope * mask[j] where there is a mask (slope 1: the mask's own bits), for j in
// [i, n); returns the largest of mx and those values.
inline float scale_mask_max_scalar(float *x, const float *mask, int64_t i, int64_t n, float scale,
                                   float slope, float mx) {
    for (; i < n; ++i) {
        float v = x[i] * scale;
        if (mask) v += slope * mask[i];
        x[i] = v;
        if (v > mx) mx = v;
    }
    return mx;
}

}  // namespace lctx::kernels::detail
