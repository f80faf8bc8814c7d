// Helpers for tests that drive lctx through the C API (llama.h) on models/stories260K.gguf.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"

namespace capi_test {

inline std::string model_path() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}
inline std::string state_fixture(const char *name) {
    return std::string(LCTX_FIXTURES_DIR) + "/state/" + name;
}

// Silences the library's log lines (the refusal tests produce many on purpose).
inline void quiet_log() {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
}

// One model for the whole test binary (loading is cheap, but there is no reason to repeat it).
inline llama_model *model() {
    static llama_model *m = [] {
        llama_model_params p = llama_model_default_params();
        return llama_model_load_from_file(model_path().c_str(), p);
    }();
    return m;
}

inline const llama_vocab *vocab() {
    return llama_model_get_vocab(model());
}

struct CtxOptions {
    uint32_t n_ctx = 256;
    uint32_t n_batch = 64;
    uint32_t n_ubatch = 8;
    uint32_t n_seq_max = 1;
    ggml_type type_k = GGML_TYPE_F16;
    ggml_type type_v = GGML_TYPE_F16;
    bool embeddings = false;
    enum llama_pooling_type pooling = LLAMA_POOLING_TYPE_UNSPECIFIED;
};

// The settings of the llama.cpp fixtures (fixtures/state/README.md) unless told otherwise.
inline llama_context *make_ctx(const CtxOptions &o = {}) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = o.n_ctx;
    p.n_batch = o.n_batch;
    p.n_ubatch = o.n_ubatch;
    p.n_seq_max = o.n_seq_max;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    p.type_k = o.type_k;
    p.type_v = o.type_v;
    p.embeddings = o.embeddings;
    p.pooling_type = o.pooling;
    return llama_init_from_model(model(), p);
}

inline std::vector<llama_token> tokenize(const std::string &text, bool add_special = true) {
    const int32_t n = -llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), nullptr, 0,
                                      add_special, false);
    std::vector<llama_token> out(n);
    EXPECT_EQ(llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), out.data(), n,
                             add_special, false),
              n);
    return out;
}

inline llama_token argmax(const float *logits) {
    const int32_t n = llama_vocab_n_tokens(vocab());
    llama_token best = 0;
    for (int32_t i = 1; i < n; ++i)
        if (logits[i] > logits[best]) best = i;
    return best;
}

// Decodes tokens at positions pos0.. on one sequence; only the last one produces logits.
inline int32_t decode_seq(llama_context *ctx, const std::vector<llama_token> &tokens, llama_pos pos0,
                          llama_seq_id seq) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    b.n_tokens = static_cast<int32_t>(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = pos0 + static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i + 1 == tokens.size();
    }
    const int32_t rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

// Greedy continuation: the first token is the argmax of the current last logits; each next one comes from
// decoding the previous at the next position. Returns n tokens.
inline std::vector<llama_token> greedy(llama_context *ctx, llama_pos pos, llama_seq_id seq, int n) {
    std::vector<llama_token> out;
    const float *logits = llama_get_logits_ith(ctx, -1);
    EXPECT_NE(logits, nullptr);
    if (!logits) return out;
    llama_token t = argmax(logits);
    for (int i = 0; i < n; ++i) {
        out.push_back(t);
        if (i + 1 == n) break;
        EXPECT_EQ(decode_seq(ctx, {t}, pos++, seq), 0);
        t = argmax(llama_get_logits_ith(ctx, -1));
    }
    return out;
}

inline std::vector<uint8_t> state_bytes(llama_context *ctx) {
    std::vector<uint8_t> buf(llama_state_get_size(ctx));
    EXPECT_EQ(llama_state_get_data(ctx, buf.data(), buf.size()), buf.size());
    return buf;
}

inline std::vector<uint8_t> seq_state_bytes(llama_context *ctx, llama_seq_id seq) {
    std::vector<uint8_t> buf(llama_state_seq_get_size(ctx, seq));
    EXPECT_EQ(llama_state_seq_get_data(ctx, buf.data(), buf.size(), seq), buf.size());
    return buf;
}

// The run of fixtures/state/README.md: the prompt (16 tokens with BOS) in one batch, then 4 greedy steps.
// Leaves the context after those 4 decodes (20 tokens consumed) and returns them.
inline std::vector<llama_token> fixture_run(llama_context *ctx, llama_seq_id seq = 0) {
    std::vector<llama_token> tokens = tokenize("Once upon a time, there was a little girl named Lily.");
    EXPECT_EQ(decode_seq(ctx, tokens, 0, seq), 0);
    for (int i = 0; i < 4; ++i) {
        const llama_token t = argmax(llama_get_logits_ith(ctx, -1));
        EXPECT_EQ(decode_seq(ctx, {t}, static_cast<llama_pos>(tokens.size()), seq), 0);
        tokens.push_back(t);
    }
    return tokens;
}

inline const std::vector<llama_token> &fixture_tokens() {
    static const std::vector<llama_token> t = {1,   403, 407, 261, 378, 432, 383, 286, 261, 376,
                                               298, 315, 421, 395, 317, 426, 338, 401, 396, 267};
    return t;
}

inline const std::vector<llama_token> &fixture_continuation() {
    static const std::vector<llama_token> t = {337, 410, 408, 419, 292, 411, 322, 265,
                                               282, 295, 433, 426, 385, 328, 432, 358};
    return t;
}

}  // namespace capi_test
