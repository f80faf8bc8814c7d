#include "tools/lctx/gen_extra_options.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace lctx::cli {

namespace {

struct SamplerName {
    const char *name;
    SamplerKind kind;
};

// llama.cpp's names first (one per kind), then the other spellings its --samplers accepts.
constexpr SamplerName kSamplerNames[] = {
    {"penalties", SamplerKind::Penalties},
    {"dry", SamplerKind::Dry},
    {"top_k", SamplerKind::TopK},
    {"typ_p", SamplerKind::TypicalP},
    {"top_p", SamplerKind::TopP},
    {"min_p", SamplerKind::MinP},
    {"xtc", SamplerKind::Xtc},
    {"temperature", SamplerKind::Temperature},
    {"infill", SamplerKind::Infill},
    {"top-k", SamplerKind::TopK},
    {"top-p", SamplerKind::TopP},
    {"nucleus", SamplerKind::TopP},
    {"typical-p", SamplerKind::TypicalP},
    {"typical", SamplerKind::TypicalP},
    {"typ-p", SamplerKind::TypicalP},
    {"typ", SamplerKind::TypicalP},
    {"min-p", SamplerKind::MinP},
    {"temp", SamplerKind::Temperature},
};

constexpr std::pair<char, SamplerKind> kSamplerLetters[] = {
    {'e', SamplerKind::Penalties}, {'d', SamplerKind::Dry},         {'k', SamplerKind::TopK},
    {'y', SamplerKind::TypicalP},  {'p', SamplerKind::TopP},        {'m', SamplerKind::MinP},
    {'x', SamplerKind::Xtc},       {'t', SamplerKind::Temperature}, {'i', SamplerKind::Infill},
};

}  // namespace

CLI::Validator non_empty_value() {
    return CLI::Validator([](std::string &v) { return v.empty() ? std::string("the value is empty") : ""; },
                          "");
}

std::vector<SamplerKind> default_sampler_order() {
    return {SamplerKind::Penalties, SamplerKind::Dry,  SamplerKind::TopK, SamplerKind::TypicalP,
            SamplerKind::TopP,      SamplerKind::MinP, SamplerKind::Xtc,  SamplerKind::Temperature};
}

bool parse_sampler_names(const std::string &s, std::vector<SamplerKind> *out, std::string *why) {
    out->clear();
    std::stringstream in(s);
    std::string name;
    while (std::getline(in, name, ';')) {
        if (name.empty()) continue;  // "top_k;;temp" or a trailing ';'
        bool found = false;
        for (const SamplerName &n : kSamplerNames)
            if (name == n.name) {
                out->push_back(n.kind);
                found = true;
                break;
            }
        if (!found) {
            *why =
                "unknown sampler '" + name +
                "' (penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature, infill; separated by ';')";
            return false;
        }
    }
    if (out->empty()) {
        *why = "no sampler named (e.g. 'top_k;top_p;temperature')";
        return false;
    }
    return true;
}

bool parse_sampler_letters(const std::string &s, std::vector<SamplerKind> *out, std::string *why) {
    out->clear();
    for (char c : s) {
        bool found = false;
        for (const auto &[letter, kind] : kSamplerLetters)
            if (c == letter) {
                out->push_back(kind);
                found = true;
                break;
            }
        if (!found) {
            *why =
                std::string("unknown sampler letter '") + c +
                "' (e penalties, d dry, k top_k, y typ_p, p top_p, m min_p, x xtc, t temperature, i infill)";
            return false;
        }
    }
    if (out->empty()) {
        *why = "no sampler given (e.g. 'kpt')";
        return false;
    }
    return true;
}

bool parse_override_kv(const std::string &arg, gguf::KeyValue *out, std::string *why) {
    const size_t eq = arg.find('='), colon = arg.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || colon == std::string::npos) {
        *why = "expected KEY=TYPE:VALUE";
        return false;
    }
    const std::string key = arg.substr(0, eq), type = arg.substr(eq + 1, colon - eq - 1),
                      v = arg.substr(colon + 1);
    if (key.size() >= 128) {
        *why = "key longer than 127 bytes";
        return false;
    }
    using gguf::Value, gguf::ValueType;
    out->key = key;
    char *end = nullptr;
    errno = 0;
    if (type == "int") {
        const long long i = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || i < INT32_MIN || i > INT32_MAX) {
            *why = "'" + v + "' is not a 32-bit integer";
            return false;
        }
        out->value = Value::from_int(ValueType::INT32, i);
    } else if (type == "float") {
        const double f = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || errno || !std::isfinite(f)) {
            *why = "'" + v + "' is not a finite number";
            return false;
        }
        out->value = Value::from_float(ValueType::FLOAT32, f);
    } else if (type == "bool") {
        if (v != "true" && v != "false") {
            *why = "a bool is true or false";
            return false;
        }
        out->value = Value::from_bool(v == "true");
    } else if (type == "str") {
        if (v.size() >= 128) {
            *why = "string longer than 127 bytes";
            return false;
        }
        out->value = Value::from_string(v);
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

std::string rope_overrides(const RopeArgs &r, RopeOverrides *out) {
    auto positive = [](const char *name, float v, bool zero_ok) -> std::string {
        if (!std::isfinite(v) || v < 0.0f || (!zero_ok && v == 0.0f)) {
            std::ostringstream s;
            s << name << ": " << v << " is out of range ("
              << (zero_ok ? "0 for the model's, or more" : "above 0") << ")";
            return s.str();
        }
        return "";
    };
    RopeOverrides o;
    if (r.scaling == "none") o.scaling_type = 0;
    if (r.scaling == "linear") o.scaling_type = 1;
    if (r.scaling == "yarn") o.scaling_type = 2;
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
