// Linear projections with an optional bias, shared by the families' forward passes: y = W x (+ b).
// Several projections of one input (q/k/v, gate/up) share the input's conversion; an absent bias (an
// empty ParamVector) costs nothing. Active LoRA adapters (model/lora_adapter.h) add their low-rank product
// beside the base one, before the bias; with none active the only cost is one test of an empty span.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/threadpool.h"
#include "model/weight_binder.h"

namespace lctx {

struct LoraActive;

struct Projection {
    const kernels::WeightView *w;
    const ParamVector *bias;  // empty (or null): none
    float *y;                 // [n_rows][ldy]
    int64_t ldy;
};

// What project() reuses across calls: the kernels' scratch, and the LoRA adapters active for this pass
// (set by the context before each forward pass; empty: none) with the buffers of their products.
struct ProjectionScratch {
    kernels::MatmulScratch mm;
    std::span<const LoraActive> lora;
    std::vector<float> lora_ax, lora_bax;  // [n_rows][rank] A x, [n_rows][n_out] B (A x)
};

// y_i = x W_i^T (+ b_i) for each projection, over n_rows input rows of x (ldx floats apart), plus the active
// adapters' s B_i (A_i x) for the weights they adapt.
void project(std::initializer_list<Projection> outs, const float *x, int64_t ldx, int64_t n_rows,
             kernels::ThreadPool &pool, ProjectionScratch &scratch);

}  // namespace lctx
