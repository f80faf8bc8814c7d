// The two sequential steps of a selective state-space layer (Mamba), each continuing a sequence's recurrent
// state token by token. The rows of a micro-batch may belong to different sequences: each row names its
// sequence's state, and rows of one sequence are taken in order. Work is split across threads by channel
// (every channel's state is its own), so any split gives the same values.
// The arithmetic follows ggml's CPU ssm_conv / ssm_scan (the order of the sums, expf, log1pf), so that a
// state continued here matches one continued by llama.cpp.
#pragma once
#include <cstdint>

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
void ssm_conv(const SsmConvArgs &a, ThreadPool &pool);

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
void ssm_scan(const SsmScanArgs &a, ThreadPool &pool);

}  // namespace lctx::kernels
