#include "kernels/ssm.h"

#include <cmath>

namespace lctx::kernels {

namespace {
// Channels per thread chunk: a channel's work over a micro-batch is small, so chunks stay coarse.
constexpr int64_t kChannelGrain = 16;
}  // namespace

void ssm_conv(const SsmConvArgs &a, ThreadPool &pool) {
    const int nc = a.d_conv;
    const int ns = nc - 1;
    pool.parallel_for(a.d_inner, kChannelGrain, [&](int64_t c0, int64_t c1) {
        float window[64];  // d_conv <= 64 (checked when the model loads)
        for (int64_t t = 0; t < a.n_rows; ++t) {
            float *state = a.state[t];
            const float *x = a.x + t * a.ldx;
            float *y = a.y + t * a.ldy;
            for (int64_t c = c0; c < c1; ++c) {
                float *s = state + c * ns;
                const float *w = a.w + c * nc;
                for (int k = 0; k < ns; ++k) window[k] = s[k];
                window[ns] = x[c];
                float sum = 0.0f;
                for (int k = 0; k < nc; ++k) sum += window[k] * w[k];
                y[c] = sum + a.b[c];
                for (int k = 0; k < ns; ++k) s[k] = window[k + 1];
            }
        }
    });
}

void ssm_scan(const SsmScanArgs &a, ThreadPool &pool) {
    const int64_t n = a.d_state;
    pool.parallel_for(a.d_inner, kChannelGrain, [&](int64_t c0, int64_t c1) {
        for (int64_t t = 0; t < a.n_rows; ++t) {
            const float *x = a.x + t * a.ldx;
            const float *dt = a.dt + t * a.lddt;
            const float *B = a.bc + t * a.ldbc;
            const float *C = B + n;
            float *y = a.y + t * a.ldy;
            for (int64_t c = c0; c < c1; ++c) {
                // softplus, exact above 20 where log1p(exp(v)) == v in float
                const float dt_sp = dt[c] <= 20.0f ? std::log1p(std::exp(dt[c])) : dt[c];
                const float x_dt = x[c] * dt_sp;
                float *h = a.state[t] + c * n;
                const float *A = a.a + c * n;
                float sum = 0.0f;
                for (int64_t j = 0; j < n; ++j) {
                    const float v = h[j] * std::exp(dt_sp * A[j]) + B[j] * x_dt;
                    h[j] = v;
                    sum += v * C[j];
                }
                y[c] = a.d ? sum + x[c] * a.d[c] : sum;
            }
        }
    });
}

}  // namespace lctx::kernels
