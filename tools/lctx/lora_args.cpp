#include "tools/lctx/lora_args.h"

#include <cmath>
#include <cstdlib>

namespace lctx::cli {

namespace {

// A finite float spelled whole, or false.
bool parse_scale(const std::string &s, float &out) {
    if (s.empty()) return false;
    char *end = nullptr;
    const float v = std::strtof(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
    out = v;
    return true;
}

}  // namespace

void add_lora_options(CLI::App &app, LoraArgs &a) {
    app.add_option("--lora", a.lora,
                   "LoRA adapter FILE[:SCALE] applied at run time (scale 1 by default; repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--lora-scaled", a.lora_scaled, "LoRA adapter FILE SCALE (repeatable)")
        ->expected(2)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::vector<LoraOption> parse_lora_options(const LoraArgs &a, std::string &error) {
    std::vector<LoraOption> out;
    for (const std::string &s : a.lora) {
        LoraOption o{s, 1.0f};
        // FILE:SCALE when what follows the last ':' is a number; otherwise the whole text is the file.
        const size_t colon = s.rfind(':');
        if (colon != std::string::npos && parse_scale(s.substr(colon + 1), o.scale))
            o.path = s.substr(0, colon);
        if (o.path.empty()) {
            error = "--lora: no file in '" + s + "'";
            return {};
        }
        out.push_back(o);
    }
    if (a.lora_scaled.size() % 2 != 0) {
        error = "--lora-scaled: expects FILE SCALE";
        return {};
    }
    for (size_t i = 0; i < a.lora_scaled.size(); i += 2) {
        LoraOption o{a.lora_scaled[i], 1.0f};
        if (!parse_scale(a.lora_scaled[i + 1], o.scale)) {
            error = "--lora-scaled: '" + a.lora_scaled[i + 1] + "' is not a finite number";
            return {};
        }
        out.push_back(o);
    }
    return out;
}

}  // namespace lctx::cli
