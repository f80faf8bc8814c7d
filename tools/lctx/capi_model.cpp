#include "tools/lctx/capi_model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lctx/lctx_ext.h"
#include "tools/lctx/load_report.h"

namespace lctx::cli {

ModelPtr load_model_capi(const std::string &path, bool quiet,
                         const std::vector<llama_model_kv_override> &overrides) {
    llama_model_params mp = llama_model_default_params();
    std::vector<llama_model_kv_override> kvo = overrides;
    if (!kvo.empty()) kvo.push_back(llama_model_kv_override{});  // llama.h's end marker: an empty key
    if (!kvo.empty()) mp.kv_overrides = kvo.data();
    const bool progress = !quiet && isatty(STDERR_FILENO);
    if (progress) mp.progress_callback = draw_load_progress;
    ModelPtr model(llama_model_load_from_file(path.c_str(), mp));
    if (model) return model;
    report_load_failure(path, progress, capi_last_error());
    return nullptr;
}

bool check_generates_text(const llama_model *model, const std::string &path, const char *cmd) {
    if (lctx_model_has_output(model)) return true;
    char arch[128] = {0};
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
    std::fprintf(stderr,
                 "lctx %s: '%s' is an embedding model (%s, no output layer): it gives vectors, not text; "
                 "'lctx embed -m %s TEXT' prints them\n",
                 cmd, path.c_str(), arch, path.c_str());
    return false;
}

void note_context_size(const llama_model *model, int32_t n_ctx, ggml_type type_k, ggml_type type_v,
                       const char *cmd, bool quiet) {
    if (quiet) return;
    const int32_t n_train = llama_model_n_ctx_train(model);
    const uint64_t cells = n_ctx > 0 ? static_cast<uint64_t>(n_ctx) : static_cast<uint64_t>(n_train);
    const bool above = n_ctx > 0 && n_train > 0 && n_ctx > n_train;
    if (above)
        std::fprintf(
            stderr,
            "lctx %s: warning: -c %d is above the model's training context (%d tokens): the text may "
            "degrade past %d tokens\n",
            cmd, n_ctx, n_train, n_train);
    const uint64_t bytes = lctx_model_kv_cache_size(model, static_cast<uint32_t>(cells), type_k, type_v);
    if (above || bytes >= (uint64_t{1} << 30))
        std::fprintf(stderr, "lctx %s: the KV cache of %llu cells (%s K, %s V) will take %.1f MiB\n", cmd,
                     static_cast<unsigned long long>(cells), kv_cache_type_name(type_k),
                     kv_cache_type_name(type_v), static_cast<double>(bytes) / 1048576.0);
}

ContextShape context_shape(const llama_model *model, const GenOptions &o, int32_t n_batch_max) {
    ContextShape s;
    s.n_ctx = o.n_ctx > 0 ? o.n_ctx : llama_model_n_ctx_train(model);
    s.n_batch = std::max(1, std::min(s.n_ctx, n_batch_max));
    s.n_ubatch = std::max(1, std::min(o.n_ubatch, s.n_batch));
    return s;
}

ContextPtr make_context_capi(llama_model *model, const GenOptions &o, const ContextShape &shape) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = static_cast<uint32_t>(shape.n_ctx);
    p.n_batch = static_cast<uint32_t>(shape.n_batch);
    p.n_ubatch = static_cast<uint32_t>(shape.n_ubatch);
    const int n_threads = resolved_threads(o.n_threads);
    p.n_threads = n_threads;
    p.n_threads_batch = resolved_threads(o.n_threads_batch ? o.n_threads_batch : n_threads);
    p.type_k = o.type_k;
    p.type_v = o.type_v;
    p.flash_attn = o.flash_attn;
    p.no_perf = true;
    apply_rope_args(o.rope_args, &p);  // checked with the options
    ContextPtr ctx(llama_init_from_model(model, p));
    if (!ctx) std::fprintf(stderr, "lctx: cannot create the context: %s\n", capi_last_error().c_str());
    return ctx;
}

bool load_loras_capi(llama_model *model, const std::vector<LoraOption> &opts, const char *cmd,
                     std::vector<LoraPtr> &out) {
    for (const LoraOption &o : opts) {
        LoraPtr a(llama_adapter_lora_init(model, o.path.c_str()));
        if (!a) {
            std::fprintf(stderr, "lctx %s: --lora %s: %s\n", cmd, o.path.c_str(), capi_last_error().c_str());
            return false;
        }
        out.push_back(std::move(a));
    }
    return true;
}

void apply_loras_capi(llama_context *ctx, const std::vector<LoraOption> &opts,
                      const std::vector<LoraPtr> &adapters) {
    for (size_t i = 0; i < adapters.size() && i < opts.size(); ++i)
        llama_set_adapter_lora(ctx, adapters[i].get(), opts[i].scale);
}

}  // namespace lctx::cli
