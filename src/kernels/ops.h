// Element-wise and row operations of a transformer layer (f32 activations). The arithmetic follows
// the usual definitions (and ggml's accumulation choices where they change results measurably:
// norms and softmax sum in double).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx::kernels {

// y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]   (w may be null: no weight)
void rms_norm(const float *x, const float *w, float *y, int64_t n, float eps);
// y[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i]   (w, b may be null)
void layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps);

enum class RopeMode { Normal, Neox };  // Normal: pairs (2i, 2i+1); NeoX: pairs (i, i + n_rot/2)

struct RopeParams {
    int n_rot = 0;  // rotated dimensions of each head (<= head_dim)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;   // 1 / linear scaling factor
    float ext_factor = 0.0f;   // YaRN extrapolation mix (0: off)
    float attn_factor = 1.0f;  // YaRN magnitude scale
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    int n_ctx_orig = 0;  // training context (YaRN)
    RopeMode mode = RopeMode::Normal;
    const float *freq_factors = nullptr;  // optional per-pair divisors (n_rot / 2 values)
};

// Rotates n_head heads of head_dim values each, in place, for position pos.
void rope(float *x, int n_head, int head_dim, float pos, const RopeParams &p);
// The same in two steps, so that a forward pass computes each position's angles once for q, k and every
// layer: rope_angles writes cos_sin[0, n_rot / 2) = the pairs' cosines, [n_rot / 2, n_rot) their sines
// (the values rope uses); rope_apply rotates with them.
void rope_angles(float pos, const RopeParams &p, float *cos_sin);
void rope_apply(float *x, int n_head, int head_dim, const float *cos_sin, const RopeParams &p);
// Re-rotates keys that rope already rotated, by the angles of position delta and nothing else: the magnitude
// (attn_factor, YaRN's scale) was applied once, when the key was computed, so a key moved by delta equals
// the key computed at its new position. (rope's angles are linear in the position, so rotations compose.)
void rope_shift(float *x, int n_head, int head_dim, float delta, const RopeParams &p);
void rope_shift_f16(uint16_t *x, int n_head, int head_dim, float delta, const RopeParams &p);

// In place: x = softmax(x * scale + slope * mask) over n values (mask may be null; -inf entries give 0).
// slope is 1 but for ALiBi, whose mask holds -|pos_q - pos_k| and whose heads each have a slope.
void softmax(float *x, const float *mask, int64_t n, float scale, float slope = 1.0f);
// In place: x = cap * tanh(x * scale / cap) (logit soft-capping; the scale is applied first, once).
void softcap(float *x, int64_t n, float cap, float scale = 1.0f);

// y = silu(g) * u   (SwiGLU)
void swiglu(const float *g, const float *u, float *y, int64_t n);
// GELU as ggml computes it on the CPU (llama.cpp's gelu and geglu): the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) read from a table of halves indexed by x rounded to half,
// for -10 < x < 10; 0 at or below -10 and x at or above 10. So a value carries a half's rounding (relative
// 2^-11) twice; an exact GELU would differ from llama.cpp's logits by that much.
float gelu(float x);
// y = gelu(g) * u   (GeGLU)
void geglu(const float *g, const float *u, float *y, int64_t n);
void gelu_inplace(float *x, int64_t n);
void silu_inplace(float *x, int64_t n);
void relu_inplace(float *x, int64_t n);  // x = max(x, 0)
// y += x
void add_inplace(float *y, const float *x, int64_t n);
// y = the n halves at x as f32 (exact: dequantize_row's values for F16)
void f16_to_f32(const void *x, float *y, int64_t n);
void scale_inplace(float *x, float s, int64_t n);
// y = x * w (element-wise)
void mul_inplace(float *y, const float *w, int64_t n);

// Asks the caches, for writing, for n_rows rows of row_bytes bytes `stride` bytes apart, without waiting for
// them (a hint: it changes no value).
void prefetch_rows_for_write(const void *base, int64_t n_rows, size_t stride, size_t row_bytes);

}  // namespace lctx::kernels
