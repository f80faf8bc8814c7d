// What the C API (include/llama.h) wraps: the definitions of its opaque handles, and the guard that keeps
// exceptions from crossing the C boundary. Private to src/capi/.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "context/context.h"
#include "llama.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "util/log.h"
#include "vocab/vocab.h"

// A LoRA adapter of one model (src/capi/capi_lora.cpp). The model owns it; contexts hold it weakly.
struct llama_adapter_lora {
    llama_model *model = nullptr;
    std::shared_ptr<const lctx::LoraAdapter> impl;
};

struct llama_model {
    std::unique_ptr<lctx::Model> impl;
    // Adapters loaded for this model (llama_adapter_lora_init), freed with it as the header promises (b4748
    // leaked them) unless llama_adapter_lora_free came first; declared after impl, so freed before it.
    std::vector<std::unique_ptr<llama_adapter_lora>> lora_adapters;
    bool vocab_only = false;
    double t_load_ms = 0.0;
    // Scalar metadata in file order: (key, value rendered as text). Arrays are not visible (as upstream).
    std::vector<std::pair<std::string, std::string>> meta;
};

struct llama_context {
    llama_model *model = nullptr;
    std::unique_ptr<lctx::Context> impl;
    llama_context_params cparams{};  // as requested, with the resolved sizes written back
    lctx::PoolingType pooling = lctx::PoolingType::None;
    bool defrag_pending = false;
    std::vector<int8_t> all_outputs;  // [n_batch] all ones: batch.logits when every token must output
};

namespace lctx::capi {

// The lctx pool behind a ggml_threadpool handle (null for null).
kernels::ThreadPool *pool_of(ggml_threadpool *tp);

// llama_vocab is never defined: the handle is the model's lctx::Vocab.
inline const Vocab &vocab_of(const llama_vocab *v) {
    return *reinterpret_cast<const Vocab *>(v);
}
inline const llama_vocab *vocab_handle(const Vocab &v) {
    return reinterpret_cast<const llama_vocab *>(&v);
}

// Runs f(); any exception is logged with the function name and turned into `err`.
template <typename R, typename F>
R guard(const char *fn, R err, F &&f) {
    try {
        return f();
    } catch (const std::exception &e) {
        LCTX_LOG_ERROR("%s: %s", fn, e.what());
    } catch (...) {
        LCTX_LOG_ERROR("%s: unknown error", fn);
    }
    return err;
}

template <typename F>
void guard_void(const char *fn, F &&f) {
    try {
        f();
    } catch (const std::exception &e) {
        LCTX_LOG_ERROR("%s: %s", fn, e.what());
    } catch (...) {
        LCTX_LOG_ERROR("%s: unknown error", fn);
    }
}

// Loads a model for llama_model_load_from_file (parts == nullptr: a split model's other parts found by
// name) or llama_model_load_from_splits (parts: every file in order); logs the error under fn and returns
// NULL on failure.
llama_model *load_model(const char *fn, const char *path, const std::vector<std::string> *parts,
                        const llama_model_params &params);

// snprintf-style copy: always NUL-terminated when buf_size > 0; returns the full length of s.
int32_t copy_out(const std::string &s, char *buf, size_t buf_size);

// Output the caller asked for explicitly (llama_perf_*_print): to the llama_log_set callback at INFO
// level when one is installed, else to stderr (the default sink would hide INFO lines).
void print_info(const char *text);

// Milliseconds on the clock the perf counters use.
double now_ms();

}  // namespace lctx::capi

// Null handles are refused with a log line and the function's error value.
#define LCTX_CAPI_REQUIRE(ptr, err)                           \
    do {                                                      \
        if (!(ptr)) {                                         \
            LCTX_LOG_ERROR("%s: %s is NULL", __func__, #ptr); \
            return err;                                       \
        }                                                     \
    } while (0)
