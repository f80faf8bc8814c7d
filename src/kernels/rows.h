// The per-row steps of a forward pass over a micro-batch (rows of n values, row-major), split across the
// pool's threads for prompts: on 2 cores, a step one thread runs alone while the other waits costs twice
// its time. Small batches (a decoded token) run on the caller, since waking a thread costs more than the
// work. Every row's values are those of the single-row functions in ops.h, whatever the split.
#pragma once
#include <cstdint>

#include "kernels/ops.h"
#include "kernels/threadpool.h"

namespace lctx::kernels {

// y[r] = rms_norm(x[r]) * w for n_rows rows
void rms_norm_rows(const float *x, const float *w, float *y, int64_t n_rows, int64_t n, float eps,
                   ThreadPool &pool);
// y[r] = layer_norm(x[r]) * w + b for n_rows rows (w, b may be null)
void layer_norm_rows(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t n,
                     float eps, ThreadPool &pool);
// y = silu(g) * u over n_rows rows of n
void swiglu_rows(const float *g, const float *u, float *y, int64_t n_rows, int64_t n, ThreadPool &pool);
// y = gelu(g) * u over n_rows rows of n
void geglu_rows(const float *g, const float *u, float *y, int64_t n_rows, int64_t n, ThreadPool &pool);
// x = gelu(x) over n_rows rows of n
void gelu_rows(float *x, int64_t n_rows, int64_t n, ThreadPool &pool);
// x = cap * tanh(x / cap) over n_rows rows of n
void softcap_rows(float *x, int64_t n_rows, int64_t n, float cap, ThreadPool &pool);
// y += x over n_rows rows of n
void add_rows(float *y, const float *x, int64_t n_rows, int64_t n, ThreadPool &pool);
// y[r] += b for n_rows rows of n, ldy floats apart (a projection's bias)
void add_row_to_rows(float *y, int64_t ldy, const float *b, int64_t n_rows, int64_t n, ThreadPool &pool);
// rope_apply to the n_head heads of each of n_rows rows (ld floats apart) with that row's angles
// (cos_sin: n_rows x n_rot, from rope_angles)
void rope_rows(float *x, int64_t n_rows, int64_t ld, int n_head, int head_dim, const float *cos_sin,
               const RopeParams &p, ThreadPool &pool);

}  // namespace lctx::kernels
