// C API: batches, decode / encode.
#include <cstdlib>
#include <cstring>

#include "capi/capi_internal.h"

using lctx::capi::guard;

namespace {

lctx::Batch to_batch(const llama_batch &batch) {
    lctx::Batch b;
    b.n_tokens = batch.n_tokens;
    b.token = batch.token;
    b.embd = batch.embd;
    b.pos = batch.pos;
    b.n_seq_id = batch.n_seq_id;
    b.seq_id = batch.seq_id;
    b.logits = batch.logits;
    return b;
}

}  // namespace

extern "C" {

struct llama_batch llama_batch_get_one(llama_token *tokens, int32_t n_tokens) {
    llama_batch b{};
    b.n_tokens = n_tokens;
    b.token = tokens;
    return b;
}

struct llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max) {
    llama_batch b{};
    if (n_tokens <= 0 || embd < 0 || n_seq_max <= 0) {
        LCTX_LOG_ERROR("llama_batch_init: invalid sizes (n_tokens %d, embd %d, n_seq_max %d)", n_tokens, embd,
                       n_seq_max);
        return b;
    }
    const size_t n = static_cast<size_t>(n_tokens);
    // malloc, so that callers that free fields themselves (as some upstream code does) stay correct.
    if (embd)
        b.embd = static_cast<float *>(std::malloc(sizeof(float) * n * static_cast<size_t>(embd)));
    else
        b.token = static_cast<llama_token *>(std::malloc(sizeof(llama_token) * n));
    b.pos = static_cast<llama_pos *>(std::malloc(sizeof(llama_pos) * n));
    b.n_seq_id = static_cast<int32_t *>(std::malloc(sizeof(int32_t) * n));
    b.seq_id = static_cast<llama_seq_id **>(std::calloc(n + 1, sizeof(llama_seq_id *)));  // NULL-terminated
    b.logits = static_cast<int8_t *>(std::malloc(n));
    bool ok = (b.embd || b.token) && b.pos && b.n_seq_id && b.seq_id && b.logits;
    for (size_t i = 0; ok && i < n; ++i) {
        b.seq_id[i] =
            static_cast<llama_seq_id *>(std::malloc(sizeof(llama_seq_id) * static_cast<size_t>(n_seq_max)));
        ok = b.seq_id[i] != nullptr;
    }
    if (!ok) {
        LCTX_LOG_ERROR("llama_batch_init: out of memory for %d tokens", n_tokens);
        llama_batch_free(b);
        return llama_batch{};
    }
    return b;
}

void llama_batch_free(struct llama_batch batch) {
    std::free(batch.token);
    std::free(batch.embd);
    std::free(batch.pos);
    std::free(batch.n_seq_id);
    if (batch.seq_id) {
        for (size_t i = 0; batch.seq_id[i]; ++i) std::free(batch.seq_id[i]);
        std::free(batch.seq_id);
    }
    std::free(batch.logits);
}

int32_t llama_decode(struct llama_context *ctx, struct llama_batch batch) {
    LCTX_CAPI_REQUIRE(ctx, -1);
    return guard(__func__, -1, [&]() -> int32_t {
        lctx::Batch b = to_batch(batch);
        // logits_all (deprecated) asks for every row when logits is NULL. (Pooling takes every row by
        // itself in the context.)
        if (ctx->cparams.logits_all && !batch.logits && batch.n_tokens > 0 &&
            static_cast<size_t>(batch.n_tokens) <= ctx->all_outputs.size())
            b.logits = ctx->all_outputs.data();
        if (ctx->defrag_pending) {
            ctx->impl->kv().defrag();
            ctx->defrag_pending = false;
        }
        const lctx::DecodeStatus st = ctx->impl->decode(b);
        return static_cast<int32_t>(st);
    });
}

int32_t llama_encode(struct llama_context *ctx, struct llama_batch batch) {
    LCTX_CAPI_REQUIRE(ctx, -1);
    return guard(__func__, -1, [&]() -> int32_t {
        // The encoder outputs every token whatever the logits flags say (as b4748).
        return static_cast<int32_t>(ctx->impl->encode(to_batch(batch)));
    });
}

}  // extern "C"
