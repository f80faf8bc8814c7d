#include "kernels/ssm.h"

#include <cmath>

#include "kernels/ssm_isa.h"

namespace lctx::kernels {

namespace {
// Channels per thread chunk: a channel's work over a micro-batch is small, so chunks stay coarse.
constexpr int64_t kChannelGrain = 16;

// The reference (ssm.h): rows outermost, ggml's order of operations.
void conv_scalar(const SsmConvArgs &a, int64_t c0, int64_t c1) {
    const int nc = a.d_conv;
    const int ns = nc - 1;
    for (int64_t t = 0; t < a.n_rows; ++t) {
        float *state = a.state[t];
        const float *x = a.x + t * a.ldx;
        float *y = a.y + t * a.ldy;
        for (int64_t c = c0; c < c1; ++c) {
            float *s = state + c * ns;
            const float *w = a.w + c * nc;
            float sum = 0.0f;
            for (int k = 0; k < ns; ++k) sum += s[k] * w[k];
            sum += x[c] * w[ns];
            y[c] = sum + a.b[c];
            // the window moves on by one: x in at the end (a rotation, not a copy the compiler makes a call
            // of)
            float in = x[c];
            for (int k = ns - 1; k >= 0; --k) {
                const float out = s[k];
                s[k] = in;
                in = out;
            }
        }
    }
}

void scan_scalar(const SsmScanArgs &a, int64_t c0, int64_t c1) {
    const int64_t n = a.d_state;
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
}

// The kernels of the highest level at or below isa that has one for the shape, else the reference.
detail::SsmScanFn scan_kernel([[maybe_unused]] Isa isa, [[maybe_unused]] int64_t d_state) {
    detail::SsmScanFn fn = nullptr;
#if defined(__x86_64__)
    if (isa_at_least(isa, Isa::Avx512)) fn = detail::ssm_scan_avx512(d_state);
    if (!fn && isa_at_least(isa, Isa::Avx2)) fn = detail::ssm_scan_avx2(d_state);
#elif defined(__aarch64__)
    if (isa_at_least(isa, Isa::Neon)) fn = detail::ssm_scan_neon(d_state);
#endif
    return fn ? fn : scan_scalar;
}

detail::SsmConvFn conv_kernel([[maybe_unused]] Isa isa, [[maybe_unused]] int d_conv) {
    detail::SsmConvFn fn = nullptr;
#if defined(__x86_64__)
    if (isa_at_least(isa, Isa::Avx512)) fn = detail::ssm_conv_avx512(d_conv);
    if (!fn && isa_at_least(isa, Isa::Avx2)) fn = detail::ssm_conv_avx2(d_conv);
#elif defined(__aarch64__)
    if (isa_at_least(isa, Isa::Neon)) fn = detail::ssm_conv_neon(d_conv);
#endif
    return fn ? fn : conv_scalar;
}
}  // namespace

void ssm_conv(const SsmConvArgs &a, ThreadPool &pool, Isa isa) {
    const detail::SsmConvFn fn = conv_kernel(isa, a.d_conv);
    pool.parallel_for(a.d_inner, kChannelGrain, [&](int64_t c0, int64_t c1) { fn(a, c0, c1); });
}

void ssm_scan(const SsmScanArgs &a, ThreadPool &pool, Isa isa) {
    const detail::SsmScanFn fn = scan_kernel(isa, a.d_state);
    pool.parallel_for(a.d_inner, kChannelGrain, [&](int64_t c0, int64_t c1) { fn(a, c0, c1); });
}

}  // namespace lctx::kernels
