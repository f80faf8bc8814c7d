#include "tools/lctx/gen_args.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace lctx::cli {

CLI::Validator non_empty_value() {
    return CLI::Validator([](std::string &v) { return v.empty() ? std::string("the value is empty") : ""; },
                          "");
}

bool parse_override_kv(const std::string &arg, llama_model_kv_override *out, std::string *why) {
    const size_t eq = arg.find('='), colon = arg.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || colon == std::string::npos) {
        *why = "expected KEY=TYPE:VALUE";
        return false;
    }
    const std::string key = arg.substr(0, eq), type = arg.substr(eq + 1, colon - eq - 1),
                      v = arg.substr(colon + 1);
    if (key.size() >= sizeof out->key) {
        *why = "key longer than 127 bytes";
        return false;
    }
    *out = llama_model_kv_override{};
    std::snprintf(out->key, sizeof out->key, "%s", key.c_str());
    char *end = nullptr;
    errno = 0;
    if (type == "int") {
        const long long i = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || i < INT32_MIN || i > INT32_MAX) {
            *why = "'" + v + "' is not a 32-bit integer";
            return false;
        }
        out->tag = LLAMA_KV_OVERRIDE_TYPE_INT;
        out->val_i64 = i;
    } else if (type == "float") {
        const double f = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || errno || !std::isfinite(f)) {
            *why = "'" + v + "' is not a finite number";
            return false;
        }
        out->tag = LLAMA_KV_OVERRIDE_TYPE_FLOAT;
        out->val_f64 = static_cast<double>(static_cast<float>(f));
    } else if (type == "bool") {
        if (v != "true" && v != "false") {
            *why = "a bool is true or false";
            return false;
        }
        out->tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
        out->val_bool = v == "true";
    } else if (type == "str") {
        if (v.size() >= sizeof out->val_str) {
            *why = "string longer than 127 bytes";
            return false;
        }
        out->tag = LLAMA_KV_OVERRIDE_TYPE_STR;
        std::snprintf(out->val_str, sizeof out->val_str, "%s", v.c_str());
    } else {
        *why = "type '" + type + "' is not int, float, bool or str";
        return false;
    }
    return true;
}

void add_rope_options(CLI::App &app, RopeArgs &r) {
    app.add_option("--rope-scaling", r.scaling,
                   "RoPE frequency scaling: none, linear or yarn (default: the model's)")
        ->check(CLI::IsMember({"none", "linear", "yarn"}));
    app.add_option("--rope-scale", r.scale,
                   "RoPE context scaling factor: expands the context N times (sets "
                   "--rope-freq-scale to 1/N)");
    app.add_option("--rope-freq-base", r.freq_base, "RoPE base frequency (0: the model's)");
    app.add_option("--rope-freq-scale", r.freq_scale,
                   "RoPE frequency scaling factor: expands the context 1/N times (0: the model's)");
    app.add_option("--yarn-orig-ctx", r.yarn_orig_ctx, "YaRN: the model's original context (0: the model's)");
    app.add_option("--yarn-ext-factor", r.yarn_ext_factor,
                   "YaRN: extrapolation mix factor (-1: 1 with YaRN, 0: full interpolation)");
    app.add_option("--yarn-attn-factor", r.yarn_attn_factor, "YaRN: scales sqrt(t), the attention magnitude");
    app.add_option("--yarn-beta-slow", r.yarn_beta_slow, "YaRN: high correction dimension, alpha");
    app.add_option("--yarn-beta-fast", r.yarn_beta_fast, "YaRN: low correction dimension, beta");
}

std::string check_rope_args(const RopeArgs &r) {
    auto positive = [](const char *name, float v, bool zero_ok) -> std::string {
        if (!std::isfinite(v) || v < 0.0f || (!zero_ok && v == 0.0f)) {
            std::ostringstream s;
            s << name << ": " << v << " is out of range ("
              << (zero_ok ? "0 for the model's, or more" : "above 0") << ")";
            return s.str();
        }
        return "";
    };
    for (const std::string &e :
         {positive("--rope-freq-base", r.freq_base, true), positive("--rope-freq-scale", r.freq_scale, true),
          positive("--rope-scale", r.scale, true), positive("--yarn-attn-factor", r.yarn_attn_factor, false),
          positive("--yarn-beta-slow", r.yarn_beta_slow, true),
          positive("--yarn-beta-fast", r.yarn_beta_fast, true)})
        if (!e.empty()) return e;
    if (!std::isfinite(r.yarn_ext_factor) || (r.yarn_ext_factor < 0.0f && r.yarn_ext_factor != -1.0f))
        return "--yarn-ext-factor: out of range (-1 for the default, or 0 and more)";
    if (r.yarn_orig_ctx < 0) return "--yarn-orig-ctx: " + std::to_string(r.yarn_orig_ctx) + " is below 0";
    if (r.scale > 0.0f && r.freq_scale > 0.0f && std::fabs(r.freq_scale * r.scale - 1.0f) > 1e-6f)
        return "--rope-scale and --rope-freq-scale disagree (--rope-scale N is --rope-freq-scale 1/N)";
    return "";
}

std::string apply_rope_args(const RopeArgs &r, llama_context_params *p) {
    if (std::string e = check_rope_args(r); !e.empty()) return e;
    if (r.scaling == "none") p->rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_NONE;
    if (r.scaling == "linear") p->rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_LINEAR;
    if (r.scaling == "yarn") p->rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_YARN;
    p->rope_freq_base = r.freq_base;
    p->rope_freq_scale = r.scale > 0.0f ? 1.0f / r.scale : r.freq_scale;
    p->yarn_ext_factor = r.yarn_ext_factor;
    p->yarn_attn_factor = r.yarn_attn_factor;
    p->yarn_beta_fast = r.yarn_beta_fast;
    p->yarn_beta_slow = r.yarn_beta_slow;
    p->yarn_orig_ctx = static_cast<uint32_t>(r.yarn_orig_ctx);
    return "";
}

}  // namespace lctx::cli
