// Matrix multiplication of a weight matrix in its stored GGUF type with f32 activations.
// The activations are first converted to the weight type's dot-product type (Q8_0 / Q8_1 / Q8_K
// blocks for quantized weights, F16 / BF16 for half weights) once per call; then each thread takes a
// range of weight rows and takes dot products with every activation row, so every weight byte is
// read from memory once per call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/threadpool.h"
#include "tensor/types.h"

namespace lctx::kernels {

// A read-only view of a 2-D weight: `rows` rows of `cols` elements, each row `row_bytes` apart.
struct WeightView {
    GgmlType type = GgmlType::F32;
    const uint8_t *data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    size_t row_bytes = 0;
    // 0: the GGUF rows. Otherwise the rows are kept in groups of group_rows interleaved rows
    // (kernels/interleave.h; row_bytes = interleaved_row_bytes, a group is group_rows * row_bytes, the last
    // group zero-padded when rows % group_rows != 0), as type_kernels(type).group_rows reads them. A view
    // of a row range of such a matrix must start at a group boundary.
    int group_rows = 0;
    bool interleaved() const { return group_rows > 0; }
};

// Scratch memory reused across calls (the converted activations).
struct MatmulScratch {
    std::vector<uint8_t> act;
};

// y[t * ldy + r] = dot(W[r, :], x[t * ldx + :]) for t < n_tokens, r < w.rows.
// x: [n_tokens][ldx] (cols used), y: [n_tokens][ldy] (rows written).
void matmul(const WeightView &w, const float *x, int64_t ldx, int64_t n_tokens, float *y, int64_t ldy,
            ThreadPool &pool, MatmulScratch &scratch);

// Several weights applied to the same input (q/k/v, gate/up): the activations are converted once and all
// outputs share one parallel section. Weights whose columns or activation type differ are run one by one.
struct MatmulOutput {
    const WeightView *w;
    float *y;  // [n_tokens][ldy]
    int64_t ldy;
};
constexpr int kMaxSharedOutputs = 4;
void matmul_shared_input(const MatmulOutput *outs, int n_outs, const float *x, int64_t ldx, int64_t n_tokens,
                         ThreadPool &pool, MatmulScratch &scratch);

// Copies row `row` of w into dst as f32 (embedding lookup of a quantized table).
void weight_row_to_f32(const WeightView &w, int64_t row, float *dst);

}  // namespace lctx::kernels
