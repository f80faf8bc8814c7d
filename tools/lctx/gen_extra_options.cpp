#include "tools/lctx/gen_extra_options.h"

namespace lctx::cli {

std::string rope_overrides(const RopeArgs &r, RopeOverrides *out) {
    if (std::string e = check_rope_args(r); !e.empty()) return e;
    RopeOverrides o;
    if (r.scaling == "none") o.scaling_type = 0;
    if (r.scaling == "linear") o.scaling_type = 1;
    if (r.scaling == "yarn") o.scaling_type = 2;
    o.freq_base = r.freq_base;
    o.freq_scale = r.scale > 0.0f ? 1.0f / r.scale : r.freq_scale;
    o.ext_factor = r.yarn_ext_factor;
    o.attn_factor = r.yarn_attn_factor;
    o.beta_fast = r.yarn_beta_fast;
    o.beta_slow = r.yarn_beta_slow;
    o.orig_ctx = static_cast<uint32_t>(r.yarn_orig_ctx);
    *out = o;
    return "";
}

}  // namespace lctx::cli
