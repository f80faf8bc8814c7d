#include "tools/lctx/control_vector_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "generate/control_vector_file.h"
#include "tools/lctx/capi_handles.h"

namespace lctx::cli {

void add_control_vector_options(CLI::App &app, ControlVectorOptions &o) {
    app.add_option("--control-vector", o.files,
                   "add a control vector (GGUF of direction.N tensors), FILE or FILE:SCALE; repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false);  // one file per occurrence, as llama.cpp
    app.add_option("--control-vector-scaled", o.scaled,
                   "add a control vector times SCALE: FILE SCALE; repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--control-vector-layer-range", o.layer_range,
                   "apply the control vectors to layers START..END only (inclusive; default 1 to the last)")
        ->expected(2);
}

std::string plan_control_vector(const ControlVectorOptions &o, int32_t n_layer, int32_t n_embd, bool quiet,
                                const char *cmd, ControlVectorPlan *out) {
    if (!o.layer_range.empty() && o.layer_range.size() != 2)
        return "--control-vector-layer-range: takes two layers, START and END";
    if (!o.any()) {
        if (!o.layer_range.empty()) return "--control-vector-layer-range: no --control-vector given";
        out->data.clear();
        return "";
    }
    std::vector<generate::ControlVectorSource> sources;
    for (const std::string &f : o.files) {
        generate::ControlVectorSource s;
        std::string why;
        if (!generate::parse_control_vector_arg(f, &s, &why)) return "--control-vector: " + why;
        sources.push_back(s);
    }
    for (const auto &[file, scale] : o.scaled) {
        char *end = nullptr;
        const float v = std::strtof(scale.c_str(), &end);
        if (scale.empty() || end != scale.c_str() + scale.size() || !std::isfinite(v))
            return "--control-vector-scaled: '" + scale + "' (the scale of " + file +
                   ") is not a finite number";
        sources.push_back({file, v});
    }
    int32_t start = o.layer_range.size() == 2 ? o.layer_range[0] : 0;
    int32_t end = o.layer_range.size() == 2 ? o.layer_range[1] : 0;
    if (start <= 0) start = 1;
    if (end <= 0) end = n_layer;
    if (start > end)
        return "--control-vector-layer-range: START " + std::to_string(start) + " is after END " +
               std::to_string(end);
    generate::ControlVector cv;
    if (std::string why; !generate::control_vector_load(sources, &cv, &why))
        return "--control-vector: " + why;
    if (cv.n_embd != n_embd)
        return "--control-vector: the directions have " + std::to_string(cv.n_embd) +
               " values; the model's embedding has " + std::to_string(n_embd);
    if (!quiet && cv.layer_count >= n_layer)
        std::fprintf(stderr,
                     "lctx %s: note: the control vector has directions up to layer %lld; the model's layers "
                     "are 0..%d (layer 0 and the ones beyond are never applied)\n",
                     cmd, static_cast<long long>(cv.layer_count), n_layer - 1);
    out->data = std::move(cv.data);
    out->n_embd = cv.n_embd;
    out->start = start;
    out->end = end;
    return "";
}

std::string apply_control_vector_options(const ControlVectorOptions &o, const llama_model *model,
                                         llama_context *ctx, bool quiet, const char *cmd) {
    ControlVectorPlan p;
    if (std::string e =
            plan_control_vector(o, llama_model_n_layer(model), llama_model_n_embd(model), quiet, cmd, &p);
        !e.empty() || p.data.empty())
        return e;
    if (llama_apply_adapter_cvec(ctx, p.data.data(), p.data.size(), p.n_embd, p.start, p.end) != 0)
        return "--control-vector: " + capi_last_error();
    return "";
}

}  // namespace lctx::cli
