// Quantizing a matrix f32 -> a tensor type, its rows shared among threads. Rows are independent, so the
// bytes do not depend on the thread count.
#pragma once
#include <cstdint>

#include "tensor/types.h"

namespace lctx::quantize {

// src: nrows x n_per_row floats; dst: nrows * row_size(type, n_per_row) bytes. importance: n_per_row
// weights (an importance-matrix entry) or null; with it, types that have a weighted quantizer use it (see
// weighted_quants.h) and the others quantize as without.
void quantize_rows(GgmlType type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                   const float *importance, int n_threads);

// The same from rows stored as src_type (F32, F16, BF16 or a quantized type lctx reads): each thread converts
// its rows to f32 one at a time, so the whole matrix is never held in f32.
void convert_rows(GgmlType type, GgmlType src_type, const void *src, void *dst, int64_t nrows,
                  int64_t n_per_row, const float *importance, int n_threads);

// Whether quantize_rows uses the importance weights for this type.
bool takes_importance(GgmlType type);

}  // namespace lctx::quantize
