// C API: context parameters, creation, queries, threads, outputs (logits / embeddings) and perf counters.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "capi/capi_internal.h"
#include "gguf/gguf.h"

using lctx::capi::guard;

namespace {

// Reads a C enum field without loading it as the enum type (a value outside the enum is not UB then).
template <typename E>
int32_t enum_bits(const E &e) {
    static_assert(sizeof(E) == sizeof(int32_t));
    int32_t v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// UNSPECIFIED pooling: the model's `<arch>.pooling_type`, else NONE.
lctx::PoolingType resolve_pooling(const llama_model *model, enum llama_pooling_type requested) {
    if (requested != LLAMA_POOLING_TYPE_UNSPECIFIED) return static_cast<lctx::PoolingType>(requested);
    const lctx::gguf::File &f = model->impl->file();
    const auto v = f.get_int(model->impl->hparams().arch_name + ".pooling_type");
    if (v && *v >= 0 && *v <= 4) return static_cast<lctx::PoolingType>(*v);
    return lctx::PoolingType::None;
}

llama_context *init_context(const char *fn, llama_model *model, const llama_context_params &params) {
    LCTX_CAPI_REQUIRE(model, nullptr);
    if (model->vocab_only) {
        LCTX_LOG_ERROR("%s: the model was loaded with vocab_only; it has no weights to run", fn);
        return nullptr;
    }
    if (params.n_batch == 0 && params.n_ubatch == 0) {
        LCTX_LOG_ERROR("%s: n_batch and n_ubatch cannot both be 0", fn);
        return nullptr;
    }
    return guard(fn, static_cast<llama_context *>(nullptr), [&]() -> llama_context * {
        const lctx::HParams &hp = model->impl->hparams();
        // UNSPECIFIED: the model's own attention (causal for decoders); read as bits, any value may arrive.
        const int32_t attention_type = enum_bits(params.attention_type);
        if (attention_type < LLAMA_ATTENTION_TYPE_UNSPECIFIED ||
            attention_type > LLAMA_ATTENTION_TYPE_NON_CAUSAL)
            throw lctx::Error("unknown attention_type " + std::to_string(attention_type));
        const bool causal = attention_type == LLAMA_ATTENTION_TYPE_UNSPECIFIED
                                ? hp.causal_attn
                                : attention_type == LLAMA_ATTENTION_TYPE_CAUSAL;
        if (params.cb_eval)
            LCTX_LOG_WARN("%s: cb_eval is not supported (there is no compute graph); ignored", fn);

        // Sizes resolved as upstream: n_ctx padded to 256 with flash attention, 32 without (b4748's cache
        // padding; the padded size also decides LongRoPE's table), n_batch clamped to n_ctx (causal) and at
        // least 64, n_ubatch <= n_batch (0 = n_batch).
        lctx::ContextParams cp;
        uint32_t n_ctx = params.n_ctx ? params.n_ctx : hp.n_ctx_train;
        if (n_ctx == 0) throw lctx::Error("n_ctx is 0 and the model gives no training context");
        const uint32_t pad = params.flash_attn ? 256 : 32;
        if (n_ctx > UINT32_MAX - (pad - 1))
            throw lctx::Error("n_ctx " + std::to_string(n_ctx) + " is too large (at most " +
                              std::to_string(UINT32_MAX - (pad - 1)) + ")");
        n_ctx = (n_ctx + pad - 1) / pad * pad;
        uint32_t n_batch = causal ? std::min(n_ctx, params.n_batch) : params.n_batch;
        n_batch = std::max<uint32_t>(64, n_batch);
        const uint32_t n_ubatch = std::min(n_batch, params.n_ubatch == 0 ? params.n_batch : params.n_ubatch);
        cp.n_ctx = n_ctx;
        cp.n_batch = n_batch;
        cp.n_ubatch = std::max<uint32_t>(1, n_ubatch);
        cp.n_seq_max = std::max<uint32_t>(1, params.n_seq_max);
        cp.n_threads = params.n_threads > 0 ? params.n_threads : GGML_DEFAULT_N_THREADS;
        cp.n_threads_batch = params.n_threads_batch > 0 ? params.n_threads_batch : cp.n_threads;
        // The caller's enum may hold any 32-bit value: read its bits, the KV cache validates them.
        cp.type_k = static_cast<lctx::GgmlType>(enum_bits(params.type_k));
        cp.type_v = static_cast<lctx::GgmlType>(enum_bits(params.type_v));
        cp.embeddings = params.embeddings;
        cp.attention = causal ? lctx::AttentionType::Causal : lctx::AttentionType::NonCausal;
        // One attention kernel serves both; flash-attention contexts differ in the cache layout (V by rows,
        // so their state files have v_trans = 0, as b4748's).
        cp.flash_attn = params.flash_attn;
        cp.pooling = resolve_pooling(model, params.pooling_type);
        // RoPE settings as given; the context resolves them against the model's (context_rope) and refuses
        // a value that is not a setting.
        cp.rope.freq_base = params.rope_freq_base;
        cp.rope.freq_scale = params.rope_freq_scale;
        cp.rope.scaling_type = enum_bits(params.rope_scaling_type);
        cp.rope.ext_factor = params.yarn_ext_factor;
        cp.rope.attn_factor = params.yarn_attn_factor;
        cp.rope.beta_fast = params.yarn_beta_fast;
        cp.rope.beta_slow = params.yarn_beta_slow;
        cp.rope.orig_ctx = params.yarn_orig_ctx;
        cp.no_perf = false;  // counts always advance; llama_perf_context hides the times when no_perf
        cp.abort_callback = params.abort_callback;
        cp.abort_callback_data = params.abort_callback_data;

        auto ctx = std::make_unique<llama_context>();
        ctx->model = model;
        ctx->impl = std::make_unique<lctx::Context>(*model->impl, cp);
        ctx->pooling = cp.pooling;
        ctx->cparams = params;
        ctx->cparams.n_ctx = ctx->impl->params().n_ctx;
        ctx->cparams.n_batch = ctx->impl->params().n_batch;
        ctx->cparams.n_ubatch = ctx->impl->params().n_ubatch;
        ctx->cparams.n_seq_max = ctx->impl->params().n_seq_max;
        ctx->cparams.pooling_type = static_cast<enum llama_pooling_type>(cp.pooling);
        ctx->all_outputs.assign(ctx->cparams.n_batch, 1);
        return ctx.release();
    });
}

}  // namespace

extern "C" {

struct llama_context_params llama_context_default_params(void) {
    llama_context_params p{};
    p.n_ctx = 512;
    p.n_batch = 2048;
    p.n_ubatch = 512;
    p.n_seq_max = 1;
    p.n_threads = GGML_DEFAULT_N_THREADS;
    p.n_threads_batch = GGML_DEFAULT_N_THREADS;
    p.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED;
    p.pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    p.attention_type = LLAMA_ATTENTION_TYPE_UNSPECIFIED;
    p.rope_freq_base = 0.0f;
    p.rope_freq_scale = 0.0f;
    p.yarn_ext_factor = -1.0f;
    p.yarn_attn_factor = 1.0f;
    p.yarn_beta_fast = 32.0f;
    p.yarn_beta_slow = 1.0f;
    p.yarn_orig_ctx = 0;
    p.defrag_thold = -1.0f;
    p.cb_eval = nullptr;
    p.cb_eval_user_data = nullptr;
    p.type_k = GGML_TYPE_F16;
    p.type_v = GGML_TYPE_F16;
    p.logits_all = false;
    p.embeddings = false;
    p.offload_kqv = true;
    p.flash_attn = false;
    p.no_perf = true;
    p.abort_callback = nullptr;
    p.abort_callback_data = nullptr;
    return p;
}

struct llama_context *llama_init_from_model(struct llama_model *model, struct llama_context_params params) {
    return init_context(__func__, model, params);
}

struct llama_context *llama_new_context_with_model(struct llama_model *model,
                                                   struct llama_context_params params) {
    return init_context(__func__, model, params);
}

void llama_free(struct llama_context *ctx) {
    delete ctx;
}

uint32_t llama_n_ctx(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_ctx;
}
uint32_t llama_n_batch(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_batch;
}
uint32_t llama_n_ubatch(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_ubatch;
}
uint32_t llama_n_seq_max(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_seq_max;
}

const struct llama_model *llama_get_model(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    return ctx->model;
}

enum llama_pooling_type llama_pooling_type(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, LLAMA_POOLING_TYPE_NONE);
    return static_cast<enum llama_pooling_type>(ctx->pooling);
}

// ---- threads ----

void llama_attach_threadpool(struct llama_context *ctx, ggml_threadpool_t threadpool,
                             ggml_threadpool_t threadpool_batch) {
    LCTX_CAPI_REQUIRE(ctx, );
    LCTX_CAPI_REQUIRE(threadpool, );
    ctx->impl->attach_threadpools(lctx::capi::pool_of(threadpool), lctx::capi::pool_of(threadpool_batch));
}

void llama_detach_threadpool(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->attach_threadpools(nullptr, nullptr);
}

void llama_set_n_threads(struct llama_context *ctx, int32_t n_threads, int32_t n_threads_batch) {
    LCTX_CAPI_REQUIRE(ctx, );
    lctx::capi::guard_void(__func__, [&] { ctx->impl->set_n_threads(n_threads, n_threads_batch); });
}
int32_t llama_n_threads(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_threads;
}
int32_t llama_n_threads_batch(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->params().n_threads_batch;
}

// ---- modes and callbacks ----

void llama_set_embeddings(struct llama_context *ctx, bool embeddings) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->set_embeddings(embeddings);
    ctx->cparams.embeddings = embeddings;
}

void llama_set_causal_attn(struct llama_context *ctx, bool causal_attn) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->set_causal_attn(causal_attn);
}

void llama_set_abort_callback(struct llama_context *ctx, ggml_abort_callback abort_callback,
                              void *abort_callback_data) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->set_abort_callback(abort_callback, abort_callback_data);
    ctx->cparams.abort_callback = abort_callback;
    ctx->cparams.abort_callback_data = abort_callback_data;
}

void llama_synchronize(struct llama_context *ctx) {
    (void)ctx;
}  // decode is synchronous

// ---- outputs ----

float *llama_get_logits(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    if (ctx->impl->params().embeddings) return nullptr;
    return ctx->impl->n_outputs() > 0 ? ctx->impl->logits() : nullptr;
}

float *llama_get_logits_ith(struct llama_context *ctx, int32_t i) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    return guard(__func__, static_cast<float *>(nullptr), [&] { return ctx->impl->logits_ith(i); });
}

float *llama_get_embeddings(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    if (!ctx->impl->params().embeddings || ctx->pooling != lctx::PoolingType::None) return nullptr;
    return ctx->impl->n_outputs() > 0 ? ctx->impl->embeddings() : nullptr;
}

float *llama_get_embeddings_ith(struct llama_context *ctx, int32_t i) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    if (ctx->pooling != lctx::PoolingType::None) {
        LCTX_LOG_ERROR("%s: pooling is on; per-token embeddings are not kept (use llama_get_embeddings_seq)",
                       __func__);
        return nullptr;
    }
    return guard(__func__, static_cast<float *>(nullptr), [&] { return ctx->impl->embeddings_ith(i); });
}

float *llama_get_embeddings_seq(struct llama_context *ctx, llama_seq_id seq_id) {
    LCTX_CAPI_REQUIRE(ctx, nullptr);
    if (ctx->pooling == lctx::PoolingType::None) return nullptr;
    return guard(__func__, static_cast<float *>(nullptr), [&] { return ctx->impl->embeddings_seq(seq_id); });
}

// ---- perf ----

struct llama_perf_context_data llama_perf_context(const struct llama_context *ctx) {
    llama_perf_context_data d{};
    if (!ctx) return d;
    const lctx::PerfCounters p = ctx->impl->perf();
    d.t_start_ms = p.t_start_ms;
    d.t_load_ms = ctx->model->t_load_ms;
    d.t_p_eval_ms = ctx->cparams.no_perf ? 0.0 : p.t_p_eval_ms;
    d.t_eval_ms = ctx->cparams.no_perf ? 0.0 : p.t_eval_ms;
    d.n_p_eval = std::max(1, p.n_p_eval);
    d.n_eval = std::max(1, p.n_eval);
    return d;
}

void llama_perf_context_print(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    const llama_perf_context_data d = llama_perf_context(ctx);
    const double t_end_ms = lctx::capi::now_ms();
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s:        load time = %10.2f ms\n", __func__, d.t_load_ms);
    lctx::capi::print_info(buf);
    std::snprintf(
        buf, sizeof buf,
        "%s: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n",
        __func__, d.t_p_eval_ms, d.n_p_eval, d.t_p_eval_ms / d.n_p_eval, 1e3 / d.t_p_eval_ms * d.n_p_eval);
    lctx::capi::print_info(buf);
    std::snprintf(
        buf, sizeof buf,
        "%s:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)\n",
        __func__, d.t_eval_ms, d.n_eval, d.t_eval_ms / d.n_eval, 1e3 / d.t_eval_ms * d.n_eval);
    lctx::capi::print_info(buf);
    std::snprintf(buf, sizeof buf, "%s:       total time = %10.2f ms / %5d tokens\n", __func__,
                  t_end_ms - d.t_start_ms, d.n_p_eval + d.n_eval);
    lctx::capi::print_info(buf);
}

void llama_perf_context_reset(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->impl->perf_reset();
}

}  // extern "C"
