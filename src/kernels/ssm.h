// The two sequential steps of a selective state-space layer (Mamba), each continuing a sequence's recurrent
// state token by token. The rows of a micro-batch may belong to different sequences: each row names its
// sequence's state, and rows of one sequence are taken in order. Work is split across threads by channel
// (every channel's state is its own), so any split gives the same values.
// The scalar level is the reference: ggml's CPU ssm_conv / ssm_scan arithmetic (the order of the sums, libm's
// expf and log1pf). The vector levels (ssm_isa.h; d_state 8, 16 or 32 and d_conv 4, else the reference runs)
// take channels outermost and rows inside, with fused multiply-adds, exp_poly.h's exp for the state's decay
// (within 1 ulp of exp, measured) and a softplus by log_poly.h's log (within 4 ulp of log1p(exp), measured;
// log1pf(expf) is within 1.5): a value moves from the reference's by a few ulp of its terms' magnitude per
// row, and a state carries the moves of the rows it continued (bounded in tests/kernels/ssm_isa_test.cpp).
#pragma once
#include <cstdint>

#include "kernels/dot.h"
#include "kernels/threadpool.h"

namespace lctx::kernels {

struct SsmConvArgs {
    const float *x = nullptr;  // [n_rows][ldx] inputs (d_inner used)
    int64_t ldx = 0;
    float *y = nullptr;  // [n_rows][ldy] outputs (d_inner written)
    int64_t ldy = 0;
    int64_t n_rows = 0;
    float *const *state =
        nullptr;  // [n_rows] -> [d_inner][d_conv - 1] the row's sequence's last inputs, oldest first
    const float *w = nullptr;  // [d_inner][d_conv] taps, oldest input first
    const float *b = nullptr;  // [d_inner] bias
    int64_t d_inner = 0;
    int d_conv = 0;
};
// Causal depthwise convolution: y[c] = sum_k w[c][k] * window[k] + b[c], window = the state's d_conv - 1
// inputs then x[c]; the window's last d_conv - 1 inputs become the state.
// isa: the level to run at (not above isa_detected(); Scalar: the reference).
void ssm_conv(const SsmConvArgs &a, ThreadPool &pool, Isa isa = isa_active());

struct SsmScanArgs {
    const float *x = nullptr;  // [n_rows][ldx] inputs (d_inner used)
    int64_t ldx = 0;
    const float *dt = nullptr;  // [n_rows][lddt] time steps before softplus (d_inner used)
    int64_t lddt = 0;
    const float *bc = nullptr;  // [n_rows][ldbc]: B at [0, d_state), C at [d_state, 2 d_state)
    int64_t ldbc = 0;
    float *y = nullptr;  // [n_rows][ldy] outputs (d_inner written)
    int64_t ldy = 0;
    int64_t n_rows = 0;
    float *const *state = nullptr;  // [n_rows] -> [d_inner][d_state] the row's sequence's SSM state
    const float *a = nullptr;       // [d_inner][d_state] A (negative)
    const float *d = nullptr;       // [d_inner] skip weights D, or null
    int64_t d_inner = 0;
    int64_t d_state = 0;
};
// Per channel c, with dt' = softplus(dt[c]):  h[c][j] = h[c][j] * exp(dt' A[c][j]) + B[j] x[c] dt'
// for every state dimension j, then y[c] = sum_j h[c][j] C[j] (+ D[c] x[c]).
void ssm_scan(const SsmScanArgs &a, ThreadPool &pool, Isa isa = isa_active());

}  // namespace lctx::kernels
