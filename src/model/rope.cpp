// One place that says how a layer rotates its queries and keys (see forward.h): the context's settings,
// resolved from the model's and the context's parameters as b4748 resolves them, with the family's frequency
// factors. The context's K-shift uses the same answer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "model/forward.h"
#include "model/model.h"
#include "util/error.h"

namespace lctx {

namespace {

void check_finite(float v, const char *name) {
    if (!std::isfinite(v))
        throw Error(std::string(name) + " = " + std::to_string(v) + " is not a finite number");
}

void check_positive(float v, const char *name) {
    if (!(v > 0.0f) || !std::isfinite(v))
        throw Error(std::string(name) + " = " + std::to_string(v) + " is not a positive number");
}

}  // namespace

kernels::RopeParams context_rope(const HParams &hp, const RopeOverrides &o) {
    if (o.scaling_type < -1 || o.scaling_type > static_cast<int32_t>(RopeScaling::LongRope))
        throw Error("rope_scaling_type " + std::to_string(o.scaling_type) +
                    " is not a RoPE scaling type (-1 unspecified, 0 none, 1 linear, 2 yarn, 3 longrope)");
    if (o.freq_base != 0.0f) check_positive(o.freq_base, "rope_freq_base");
    if (o.freq_scale != 0.0f) check_positive(o.freq_scale, "rope_freq_scale");
    check_finite(o.ext_factor, "yarn_ext_factor");
    check_positive(o.attn_factor, "yarn_attn_factor");
    check_finite(o.beta_fast, "yarn_beta_fast");
    check_finite(o.beta_slow, "yarn_beta_slow");

    kernels::RopeParams r = hp.rope;
    r.freq_factors = nullptr;
    r.freq_base = o.freq_base != 0.0f ? o.freq_base : hp.rope.freq_base;
    r.freq_scale = o.freq_scale != 0.0f ? o.freq_scale : hp.rope.freq_scale;
    const RopeScaling type = o.scaling_type < 0 ? hp.rope_scaling : static_cast<RopeScaling>(o.scaling_type);
    if (type == RopeScaling::None) r.freq_scale = 1.0f;  // b4748: never scale with type none
    r.ext_factor = o.ext_factor >= 0.0f ? o.ext_factor : (type == RopeScaling::Yarn ? 1.0f : 0.0f);
    r.attn_factor = o.attn_factor * hp.rope.attn_factor;
    r.beta_fast = o.beta_fast;
    r.beta_slow = o.beta_slow;
    const uint32_t n_ctx_orig = o.orig_ctx != 0          ? o.orig_ctx
                                : hp.rope.n_ctx_orig > 0 ? static_cast<uint32_t>(hp.rope.n_ctx_orig)
                                                         : hp.n_ctx_train;
    if (n_ctx_orig > static_cast<uint32_t>(INT32_MAX))
        throw Error("yarn_orig_ctx " + std::to_string(n_ctx_orig) + " is out of range (at most " +
                    std::to_string(INT32_MAX) + ")");
    r.n_ctx_orig = static_cast<int>(n_ctx_orig);
    return r;
}

kernels::RopeParams layer_rope(const Model &model, uint32_t il, const KvView &kv) {
    (void)il;  // every family lctx runs rotates all its layers alike
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    kernels::RopeParams rope = kv.rope;
    // b4748's choice of frequency factors: the file's rope_freqs; else LongRoPE's long factors when a
    // sequence's share of the context exceeds the file's original training context, its short ones otherwise
    // (either may be absent: no factors then).
    const ParamVector *ff = &w.rope_freqs;
    if (ff->empty())
        ff = kv.n_ctx_per_seq > static_cast<uint32_t>(std::max(hp.rope.n_ctx_orig, 0)) ? &w.rope_long
                                                                                       : &w.rope_short;
    if (!ff->empty()) rope.freq_factors = ff->data();
    return rope;
}

}  // namespace lctx
