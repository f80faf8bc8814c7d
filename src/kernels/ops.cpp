#include "kernels/ops.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/dot.h"
#include "kernels/ops_arm.h"
#include "kernels/ops_x86.h"
#include "kernels/softmax_scalar_inl.h"
#include "tensor/fp16.h"

namespace lctx::kernels {

namespace {
// False off x86 (isa_active() is an ARM level or Scalar there).
bool active_at_least(Isa isa) {
    return isa_at_least(isa_active(), isa);
}
}  // namespace

bool detail::use_avx2_row_ops() {
    static const bool on = active_at_least(Isa::Avx2);
    return on;
}

bool detail::use_avx512_row_ops() {
    static const bool on = active_at_least(Isa::Avx512);
    return on;
}

bool detail::use_neon_row_ops() {
    static const bool on = active_at_least(Isa::Neon);
    return on;
}

namespace {
using detail::use_avx2_row_ops;
[[maybe_unused]] bool use_neon_row_ops() {
    return detail::use_neon_row_ops();
}
}  // namespace

void rms_norm(const float *x, const float *w, float *y, int64_t n, float eps) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) {
        const float mean = static_cast<float>(detail::sum_sq_avx2(x, n) / static_cast<double>(n));
        detail::scale_mul_avx2(x, 1.0f / std::sqrt(mean + eps), w, y, n);
        return;
    }
#elif defined(__aarch64__)
    if (use_neon_row_ops()) {
        const float mean = static_cast<float>(detail::sum_sq_neon(x, n) / static_cast<double>(n));
        detail::scale_mul_neon(x, 1.0f / std::sqrt(mean + eps), w, y, n);
        return;
    }
#endif
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    if (w) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
    } else {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
    }
}

namespace {

// Sums in double over 8 interleaved partial sums (the compiler turns them into vector adds; one chain of
// dependent adds made layer_norm 5% of a bge-small pass). Double keeps the order's effect far below a
// float's rounding, as the one-chain sum did. term(i) gives element i's term.
constexpr int kNormLanes = 8;

template <class Term>
double sum_in_parts(int64_t n, Term term) {
    double part[kNormLanes] = {};
    int64_t i = 0;
    for (; i + kNormLanes <= n; i += kNormLanes)
        for (int j = 0; j < kNormLanes; ++j) part[j] += term(i + j);
    for (; i < n; ++i) part[0] += term(i);
    double sum = 0.0;
    for (double p : part) sum += p;
    return sum;
}

// layer_norm's steps: the sum of x; y = x - mean and the sum of y^2; y = y * s * w + b. The avx2 level takes
// the same sums in the same order, vectorised (the steps were 3.7% of a bge-small pass, ~1% since), and one
// FMA for the last step.
double sum_of(const float *x, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::sum_parts_avx2(x, n);
#endif
    return sum_in_parts(n, [x](int64_t i) { return static_cast<double>(x[i]); });
}

double center_sum_sq(const float *x, float mean, float *y, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::center_sum_sq_avx2(x, mean, y, n);
#endif
    return sum_in_parts(n, [x, y, mean](int64_t i) {
        const float d = x[i] - mean;
        y[i] = d;
        return static_cast<double>(d) * d;
    });
}

void scale_affine(float *y, float s, const float *w, const float *b, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::scale_affine_avx2(y, s, w, b, n);
#endif
    for (int64_t i = 0; i < n; ++i) {
        float v = y[i] * s;
        if (w) v *= w[i];
        if (b) v += b[i];
        y[i] = v;
    }
}

}  // namespace

void layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps) {
    const float mean = static_cast<float>(sum_of(x, n) / static_cast<double>(n));
    const double var = center_sum_sq(x, mean, y, n);
    scale_affine(y, 1.0f / std::sqrt(static_cast<float>(var / static_cast<double>(n)) + eps), w, b, n);
}

namespace {

// YaRN ramp between the dimensions that keep their frequency and the ones that are interpolated.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(base));
}

// cos and sin of every rotated pair at one position (rope_angles' layout); n_rot is at most 1024.
struct RopeCache {
    float cos_sin[1024];
};

// rope_angles' values; with_magnitude false leaves out the magnitude (attn_factor and YaRN's scale).
void angles(float pos, const RopeParams &p, float *cos_sin, bool with_magnitude) {
    float *cos_v = cos_sin, *sin_v = cos_sin + p.n_rot / 2;
    const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
    float corr_lo = 0.0f, corr_hi = 0.0f;
    if (p.ext_factor != 0.0f) {
        const int n_ctx = p.n_ctx_orig > 0 ? p.n_ctx_orig : 4096;
        corr_lo = std::max(0.0f, std::floor(yarn_corr_dim(p.n_rot, n_ctx, p.beta_fast, p.freq_base)));
        corr_hi = std::min(static_cast<float>(p.n_rot - 1),
                           std::ceil(yarn_corr_dim(p.n_rot, n_ctx, p.beta_slow, p.freq_base)));
    }
    float theta = pos;
    for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
        const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
        const float theta_extrap = theta / ff;
        float theta_final = p.freq_scale * theta_extrap;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = (i0 / 2 - corr_lo) / std::max(0.001f, corr_hi - corr_lo);
            const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            theta_final = theta_final * (1 - ramp_mix) + theta_extrap * ramp_mix;
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        if (!with_magnitude) mscale = 1.0f;
        cos_v[i0 / 2] = std::cos(theta_final) * mscale;
        sin_v[i0 / 2] = std::sin(theta_final) * mscale;
        theta *= theta_scale;
    }
}

}  // namespace

void rope_angles(float pos, const RopeParams &p, float *cos_sin) {
    angles(pos, p, cos_sin, true);
}

void rope_apply(float *x, int n_head, int head_dim, const float *cos_sin, const RopeParams &p) {
#if defined(__aarch64__)
    if (use_neon_row_ops())
        return detail::rope_apply_neon(x, n_head, head_dim, cos_sin, p.n_rot, p.mode == RopeMode::Neox);
#endif
    const int half = p.n_rot / 2;
    const float *cos_v = cos_sin, *sin_v = cos_sin + half;
    for (int h = 0; h < n_head; ++h) {
        float *v = x + static_cast<int64_t>(h) * head_dim;
        for (int i = 0; i < half; ++i) {
            const int a = p.mode == RopeMode::Normal ? 2 * i : i;
            const int b = p.mode == RopeMode::Normal ? 2 * i + 1 : i + half;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cos_v[i] - x1 * sin_v[i];
            v[b] = x0 * sin_v[i] + x1 * cos_v[i];
        }
    }
}

void rope(float *x, int n_head, int head_dim, float pos, const RopeParams &p) {
    RopeCache c;
    rope_angles(pos, p, c.cos_sin);
    rope_apply(x, n_head, head_dim, c.cos_sin, p);
}

void rope_shift(float *x, int n_head, int head_dim, float delta, const RopeParams &p) {
    RopeCache c;
    angles(delta, p, c.cos_sin, false);
    rope_apply(x, n_head, head_dim, c.cos_sin, p);
}

void rope_shift_f16(uint16_t *x, int n_head, int head_dim, float delta, const RopeParams &p) {
    RopeCache c;
    angles(delta, p, c.cos_sin, false);
    const int half = p.n_rot / 2;
    const float *cos_v = c.cos_sin, *sin_v = c.cos_sin + half;
    for (int h = 0; h < n_head; ++h) {
        uint16_t *v = x + static_cast<int64_t>(h) * head_dim;
        for (int i = 0; i < half; ++i) {
            const int a = p.mode == RopeMode::Normal ? 2 * i : i;
            const int b = p.mode == RopeMode::Normal ? 2 * i + 1 : i + half;
            const float x0 = fp16_to_fp32(v[a]), x1 = fp16_to_fp32(v[b]);
            v[a] = fp32_to_fp16(x0 * cos_v[i] - x1 * sin_v[i]);
            v[b] = fp32_to_fp16(x0 * sin_v[i] + x1 * cos_v[i]);
        }
    }
}

void softmax(float *x, const float *mask, int64_t n, float scale, float slope) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) {  // the AVX-512 steps give the AVX2 ones' bits
        const bool wide = detail::use_avx512_row_ops();
        const float max = wide ? detail::scale_mask_max_avx512(x, mask, n, scale, slope)
                               : detail::scale_mask_max_avx2(x, mask, n, scale, slope);
        if (max == -std::numeric_limits<float>::infinity()) {
            for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;  // nothing visible
            return;
        }
        const double sum = wide ? detail::exp_sum_avx512(x, n, max) : detail::exp_sum_avx2(x, n, max);
        (wide ? detail::scale_avx512 : detail::scale_avx2)(x, static_cast<float>(1.0 / sum), n);
        return;
    }
#elif defined(__aarch64__)
    if (use_neon_row_ops()) {
        const float max = detail::scale_mask_max_neon(x, mask, n, scale, slope);
        if (max == -std::numeric_limits<float>::infinity()) {
            for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;  // nothing visible
            return;
        }
        detail::scale_neon(x, static_cast<float>(1.0 / detail::exp_sum_neon(x, n, max)), n);
        return;
    }
#endif
    const float max =
        detail::scale_mask_max_scalar(x, mask, 0, n, scale, slope, -std::numeric_limits<float>::infinity());
    if (max == -std::numeric_limits<float>::infinity()) {
        for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;  // nothing visible
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float e = x[i] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(x[i] - max);
        x[i] = e;
        sum += e;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softcap(float *x, int64_t n, float cap, float scale) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::softcap_avx2(x, n, cap, scale);
#endif
    const float pre = scale / cap;
    for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * pre);
}

void swiglu(const float *g, const float *u, float *y, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::swiglu_avx2(g, u, y, n);
#elif defined(__aarch64__)
    if (use_neon_row_ops()) return detail::swiglu_neon(g, u, y, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

namespace {

// ggml's GELU table: entry h is the tanh-approximation GELU of the half with bits h, rounded to a half (kept
// as f32 here so that a lookup needs no conversion). Built once, on first use (a few ms).
const float *gelu_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(1 << 16);
        for (uint32_t h = 0; h < t.size(); ++h) {
            const double x = fp16_to_fp32(static_cast<fp16_t>(h));
            const double g =
                0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * x * (1.0 + 0.044715 * x * x)));
            t[h] = fp16_to_fp32(fp32_to_fp16(static_cast<float>(g)));
        }
        return t;
    }();
    return table.data();
}

inline float gelu_from(const float *table, float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return table[fp32_to_fp16(x)];
}

}  // namespace

float gelu(float x) {
    return gelu_from(gelu_table(), x);
}

void geglu(const float *g, const float *u, float *y, int64_t n) {
    const float *table = gelu_table();
#if defined(__x86_64__)
    if (detail::use_avx512_row_ops()) return detail::geglu_avx512(g, u, y, n, table);
    if (use_avx2_row_ops()) return detail::geglu_avx2(g, u, y, n, table);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_from(table, g[i]) * u[i];
}
void gelu_inplace(float *x, int64_t n) {
    const float *table = gelu_table();
#if defined(__x86_64__)
    if (detail::use_avx512_row_ops()) return detail::gelu_avx512(x, n, table);
    if (use_avx2_row_ops()) return detail::gelu_avx2(x, n, table);
#endif
    for (int64_t i = 0; i < n; ++i) x[i] = gelu_from(table, x[i]);
}
void relu_inplace(float *x, int64_t n) {
#if defined(__x86_64__)
    // (the plain loop compiles to a compare and branch per element: half of them mispredicted on a
    // projection's output, 14% of t5-small's encoder)
    if (use_avx2_row_ops()) return detail::relu_avx2(x, n);
#endif
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
void silu_inplace(float *x, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::silu_avx2(x, n);
#elif defined(__aarch64__)
    if (use_neon_row_ops()) return detail::silu_neon(x, n);
#endif
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}
void add_inplace(float *y, const float *x, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::add_avx2(y, x, n);
#elif defined(__aarch64__)
    if (use_neon_row_ops()) return detail::add_neon(y, x, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}
void f16_to_f32(const void *x, float *y, int64_t n) {
    const auto *h = static_cast<const uint16_t *>(x);
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::f16_to_f32_avx2(h, y, n);
#elif defined(__aarch64__)
    if (use_neon_row_ops()) return detail::f16_to_f32_neon(h, y, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(h[i]);
}
void scale_inplace(float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}
void mul_inplace(float *y, const float *w, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] *= w[i];
}

void prefetch_rows_for_write(const void *base, int64_t n_rows, size_t stride, size_t row_bytes) {
    const auto *row = static_cast<const char *>(base);
    for (int64_t r = 0; r < n_rows; ++r, row += stride) {
        // every line the row touches: from the line of its first byte to that of its last
        const uintptr_t end = reinterpret_cast<uintptr_t>(row) + row_bytes;
        for (uintptr_t a = reinterpret_cast<uintptr_t>(row) & ~uintptr_t{63}; a < end; a += 64)
            __builtin_prefetch(reinterpret_cast<const void *>(a), 1, 3);
    }
}

}  // namespace lctx::kernels
