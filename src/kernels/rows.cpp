#include "kernels/rows.h"

namespace lctx::kernels {

namespace {

// Below this many values a step stays on the caller (a decoded token's rows: a few thousand values).
constexpr int64_t kMinParallelValues = int64_t{1} << 15;

// fn(r0, r1) over row ranges: split across the pool for big batches, on the caller otherwise.
template <class F>
void for_rows(int64_t n_rows, int64_t n, ThreadPool &pool, F &&fn) {
    if (n_rows * n < kMinParallelValues || pool.n_active() == 1) {
        fn(int64_t{0}, n_rows);
        return;
    }
    pool.parallel_for(n_rows, 1, fn);
}

}  // namespace

void rms_norm_rows(const float *x, const float *w, float *y, int64_t n_rows, int64_t n, float eps,
                   ThreadPool &pool) {
    for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) rms_norm(x + r * n, w, y + r * n, n, eps);
    });
}

void layer_norm_rows(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t n,
                     float eps, ThreadPool &pool) {
    for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) layer_norm(x + r * n, w, b, y + r * n, n, eps);
    });
}

void swiglu_rows(const float *g, const float *u, float *y, int64_t n_rows, int64_t n, ThreadPool &pool) {
    for_rows(n_rows, n, pool,
             [&](int64_t r0, int64_t r1) { swiglu(g + r0 * n, u + r0 * n, y + r0 * n, (r1 - r0) * n); });
}

void geglu_rows(const float *g, const float *u, float *y, int64_t n_rows, int64_t n, ThreadPool &pool) {
    for_rows(n_rows, n, pool,
             [&](int64_t r0, int64_t r1) { geglu(g + r0 * n, u + r0 * n, y + r0 * n, (r1 - r0) * n); });
}

void gelu_rows(float *x, int64_t n_rows, int64_t n, ThreadPool &pool) {
    for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1) { gelu_inplace(x + r0 * n, (r1 - r0) * n); });
}

void softcap_rows(float *x, int64_t n_rows, int64_t n, float cap, ThreadPool &pool) {
    for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1) { softcap(x + r0 * n, (r1 - r0) * n, cap); });
}

void add_rows(float *y, const float *x, int64_t n_rows, int64_t n, ThreadPool &pool) {
    for_rows(n_rows, n, pool,
             [&](int64_t r0, int64_t r1) { add_inplace(y + r0 * n, x + r0 * n, (r1 - r0) * n); });
}

void add_row_to_rows(float *y, int64_t ldy, const float *b, int64_t n_rows, int64_t n, ThreadPool &pool) {
    for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) add_inplace(y + r * ldy, b, n);
    });
}

void rope_rows(float *x, int64_t n_rows, int64_t ld, int n_head, int head_dim, const float *cos_sin,
               const RopeParams &p, ThreadPool &pool) {
    for_rows(n_rows, ld, pool, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) rope_apply(x + r * ld, n_head, head_dim, cos_sin + r * p.n_rot, p);
    });
}

}  // namespace lctx::kernels
