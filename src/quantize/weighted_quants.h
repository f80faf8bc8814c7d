// Importance-weighted quantizers: the same block formats, but each block's scales are searched to minimize
// sum_j w_j (x_j - q_j)^2 with w_j = importance_j * sqrt(sigma^2 + x_j^2) (sigma^2: the row's mean square),
// the weighting published with ggml's k-quants and importance matrices. Without importance weights the
// reference quantizers (tensor/types.h) are used.
#pragma once
#include <cstdint>

#include "tensor/types.h"

namespace lctx::quantize {

// x: one row of n values; dst: its blocks; importance: n non-negative weights.
using WeightedRowFn = void (*)(const float *x, void *dst, int64_t n, const float *importance);

// Null for a type without a weighted quantizer (plain float types, Q8_0).
WeightedRowFn weighted_quantizer(GgmlType type);

}  // namespace lctx::quantize
