// The generating commands' model and context through llama.h: loading with a progress line and the
// --override-kv values, the checks and notes the user sees before generating, the context from the options
// (its sizes as the user gave them: llama.h may round the cache up, the command keeps to -c), LoRA
// adapters.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/gen_options.h"

namespace lctx::cli {

// Loads the model (a progress line on a terminal unless quiet); prints the error, saying so when the file
// holds no weights (a vocabulary-only GGUF), and returns null on failure.
ModelPtr load_model_capi(const std::string &path, bool quiet,
                         const std::vector<llama_model_kv_override> &overrides);

// An embedding model (no output layer) gives vectors, not text: false, with one line on stderr saying so
// and what to run instead.
bool check_generates_text(const llama_model *model, const std::string &path, const char *cmd);

// Before the context is made: warns when -c is above the model's training context, and then, or when the
// KV cache would take 1 GiB or more, says what it will take. Nothing when quiet.
void note_context_size(const llama_model *model, int32_t n_ctx, ggml_type type_k, ggml_type type_v,
                       const char *cmd, bool quiet);

// The sizes a command works with: n_ctx cells (-c, or the training context), batches of n_batch tokens
// (capped by n_ctx), micro-batches of n_ubatch (capped by the batch).
struct ContextShape {
    int32_t n_ctx = 0, n_batch = 0, n_ubatch = 0;
};
ContextShape context_shape(const llama_model *model, const GenOptions &o, int32_t n_batch_max);

// The context for those sizes and the options' threads, cache types, flash attention and RoPE; prints the
// error and returns null on failure.
ContextPtr make_context_capi(llama_model *model, const GenOptions &o, const ContextShape &shape);

struct LoraFree {
    void operator()(llama_adapter_lora *a) const { llama_adapter_lora_free(a); }
};
using LoraPtr = std::unique_ptr<llama_adapter_lora, LoraFree>;
// Loads each adapter for the model; on a bad file prints "lctx CMD: --lora FILE: reason" and returns false.
bool load_loras_capi(llama_model *model, const std::vector<LoraOption> &opts, const char *cmd,
                     std::vector<LoraPtr> &out);
// Sets the loaded adapters on the context with their scales.
void apply_loras_capi(llama_context *ctx, const std::vector<LoraOption> &opts,
                      const std::vector<LoraPtr> &adapters);

}  // namespace lctx::cli
