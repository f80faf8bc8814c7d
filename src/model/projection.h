// Linear projections with an optional bias, shared by the families' forward passes: y = W x (+ b).
// Several projections of one input (q/k/v, gate/up) share the input's conversion; an absent bias (an
// empty ParamVector) costs nothing.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "kernels/matmul.h"
#include "kernels/threadpool.h"
#include "model/weight_binder.h"

namespace lctx {

struct Projection {
    const kernels::WeightView *w;
    const ParamVector *bias;  // empty (or null): none
    float *y;                 // [n_rows][ldy]
    int64_t ldy;
};

// y_i = x W_i^T (+ b_i) for each projection, over n_rows input rows of x (ldx floats apart).
void project(std::initializer_list<Projection> outs, const float *x, int64_t ldx, int64_t n_rows,
             kernels::ThreadPool &pool, kernels::MatmulScratch &scratch);

}  // namespace lctx
