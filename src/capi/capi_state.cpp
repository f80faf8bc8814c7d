// C API: context and sequence state, in memory and in files (layout: STATE-FORMAT.md), over
// lctx::ContextState. Every failure logs its reason and returns 0 / false with the context unchanged.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "capi/capi_internal.h"
#include "context/state.h"

using lctx::ContextState;
using lctx::capi::guard;

namespace {

constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

size_t get_data(const char *fn, llama_context *ctx, uint8_t *dst, size_t size) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(dst, 0);
    return guard(fn, size_t{0}, [&] {
        lctx::BufferStateWriter w(dst, size);
        ContextState::write(*ctx->impl, w);
        return w.written();
    });
}

size_t set_data(const char *fn, llama_context *ctx, const uint8_t *src, size_t size) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(src, 0);
    return guard(fn, size_t{0}, [&] { return ContextState::read(*ctx->impl, src, size); });
}

bool load_file(const char *fn, llama_context *ctx, const char *path, llama_token *tokens_out, size_t capacity,
               size_t *n_token_count_out) {
    LCTX_CAPI_REQUIRE(ctx, false);
    LCTX_CAPI_REQUIRE(path, false);
    return guard(fn, false, [&] {
        const std::vector<int32_t> tokens =
            ContextState::load_file(*ctx->impl, path, tokens_out ? capacity : 0);
        std::copy(tokens.begin(), tokens.end(), tokens_out);
        if (n_token_count_out) *n_token_count_out = tokens.size();
        return true;
    });
}

bool save_file(const char *fn, llama_context *ctx, const char *path, const llama_token *tokens, size_t n) {
    LCTX_CAPI_REQUIRE(ctx, false);
    LCTX_CAPI_REQUIRE(path, false);
    return guard(fn, false, [&] {
        ContextState::save_file(*ctx->impl, path, tokens, n);
        return true;
    });
}

}  // namespace

extern "C" {

size_t llama_state_get_size(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return guard(__func__, size_t{0}, [&] { return ContextState::size(*ctx->impl); });
}

size_t llama_get_state_size(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return guard(__func__, size_t{0}, [&] { return ContextState::size(*ctx->impl); });
}

size_t llama_state_get_data(struct llama_context *ctx, uint8_t *dst, size_t size) {
    return get_data(__func__, ctx, dst, size);
}

size_t llama_copy_state_data(struct llama_context *ctx, uint8_t *dst) {
    return get_data(__func__, ctx, dst, kUnbounded);  // the caller promises room for llama_state_get_size
}

size_t llama_state_set_data(struct llama_context *ctx, const uint8_t *src, size_t size) {
    return set_data(__func__, ctx, src, size);
}

size_t llama_set_state_data(struct llama_context *ctx, const uint8_t *src) {
    return set_data(__func__, ctx, src, kUnbounded);
}

bool llama_state_load_file(struct llama_context *ctx, const char *path_session, llama_token *tokens_out,
                           size_t n_token_capacity, size_t *n_token_count_out) {
    return load_file(__func__, ctx, path_session, tokens_out, n_token_capacity, n_token_count_out);
}

bool llama_load_session_file(struct llama_context *ctx, const char *path_session, llama_token *tokens_out,
                             size_t n_token_capacity, size_t *n_token_count_out) {
    return load_file(__func__, ctx, path_session, tokens_out, n_token_capacity, n_token_count_out);
}

bool llama_state_save_file(struct llama_context *ctx, const char *path_session, const llama_token *tokens,
                           size_t n_token_count) {
    return save_file(__func__, ctx, path_session, tokens, n_token_count);
}

bool llama_save_session_file(struct llama_context *ctx, const char *path_session, const llama_token *tokens,
                             size_t n_token_count) {
    return save_file(__func__, ctx, path_session, tokens, n_token_count);
}

size_t llama_state_seq_get_size(struct llama_context *ctx, llama_seq_id seq_id) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return guard(__func__, size_t{0}, [&] { return ContextState::size_seq(*ctx->impl, seq_id); });
}

size_t llama_state_seq_get_data(struct llama_context *ctx, uint8_t *dst, size_t size, llama_seq_id seq_id) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(dst, 0);
    return guard(__func__, size_t{0}, [&] {
        lctx::BufferStateWriter w(dst, size);
        ContextState::write_seq(*ctx->impl, w, seq_id);
        return w.written();
    });
}

size_t llama_state_seq_set_data(struct llama_context *ctx, const uint8_t *src, size_t size,
                                llama_seq_id dest_seq_id) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(src, 0);
    return guard(__func__, size_t{0},
                 [&] { return ContextState::read_seq(*ctx->impl, src, size, dest_seq_id); });
}

size_t llama_state_seq_save_file(struct llama_context *ctx, const char *filepath, llama_seq_id seq_id,
                                 const llama_token *tokens, size_t n_token_count) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(filepath, 0);
    return guard(__func__, size_t{0}, [&] {
        return ContextState::save_seq_file(*ctx->impl, filepath, seq_id, tokens, n_token_count);
    });
}

size_t llama_state_seq_load_file(struct llama_context *ctx, const char *filepath, llama_seq_id dest_seq_id,
                                 llama_token *tokens_out, size_t n_token_capacity,
                                 size_t *n_token_count_out) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    LCTX_CAPI_REQUIRE(filepath, 0);
    return guard(__func__, size_t{0}, [&] {
        size_t n_read = 0;
        const std::vector<int32_t> tokens = ContextState::load_seq_file(
            *ctx->impl, filepath, dest_seq_id, tokens_out ? n_token_capacity : 0, &n_read);
        std::copy(tokens.begin(), tokens.end(), tokens_out);
        if (n_token_count_out) *n_token_count_out = tokens.size();
        return n_read;
    });
}

}  // extern "C"
