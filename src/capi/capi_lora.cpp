// C API: LoRA adapters (llama_adapter_lora_init / _free, llama_set_adapter_lora / _rm_ / _clear_).
#include <algorithm>

#include "capi/capi_internal.h"

using lctx::capi::guard;

extern "C" {

struct llama_adapter_lora *llama_adapter_lora_init(struct llama_model *model, const char *path_lora) {
    LCTX_CAPI_REQUIRE(model, nullptr);
    LCTX_CAPI_REQUIRE(path_lora, nullptr);
    return guard(__func__, static_cast<llama_adapter_lora *>(nullptr), [&] {
        auto a = std::make_unique<llama_adapter_lora>();
        a->model = model;
        a->impl = lctx::LoraAdapter::load(*model->impl, path_lora);
        LCTX_LOG_INFO("%s: loaded %zu LoRA pairs from '%s'", __func__, a->impl->n_pairs(), path_lora);
        model->lora_adapters.push_back(std::move(a));
        return model->lora_adapters.back().get();
    });
}

void llama_adapter_lora_free(struct llama_adapter_lora *adapter) {
    if (!adapter) return;
    // Contexts hold adapters weakly: one still set on a context is dropped from its set at the next decode.
    auto &owned = adapter->model->lora_adapters;
    std::erase_if(owned, [&](const std::unique_ptr<llama_adapter_lora> &a) { return a.get() == adapter; });
}

int32_t llama_set_adapter_lora(struct llama_context *ctx, struct llama_adapter_lora *adapter, float scale) {
    LCTX_CAPI_REQUIRE(ctx, -1);
    LCTX_CAPI_REQUIRE(adapter, -1);
    if (adapter->model != ctx->model) {
        LCTX_LOG_ERROR("%s: the adapter was loaded for another model", __func__);
        return -1;
    }
    return guard(__func__, -1, [&] {
        ctx->impl->lora().set(adapter->impl, scale);
        return 0;
    });
}

int32_t llama_rm_adapter_lora(struct llama_context *ctx, struct llama_adapter_lora *adapter) {
    LCTX_CAPI_REQUIRE(ctx, -1);
    if (!adapter) return -1;
    return ctx->impl->lora().remove(adapter->impl.get()) ? 0 : -1;
}

void llama_clear_adapter_lora(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->lora().clear();
}

}  // extern "C"
