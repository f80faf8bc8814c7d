// llama_decode on an encoder-only model (BERT) as b4748 runs it: within the batch, keys and values in f32,
// the KV cache untouched ("non-causal masks do not use the KV cache"). So the default f16 cache changes
// nothing, decodes never fill the cache, a NULL-position batch starts at position 0 on every call, and a
// batch must fit one micro-batch (b4748 asserts n_ubatch >= n_tokens for non-causal attention).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "llama.h"

namespace capi_encoder_cache_test {
namespace {

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";
constexpr int kEmbd = 32;  // bert.gguf's n_embd

struct Model {
    llama_model *m = nullptr;
    Model() {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        m = llama_model_load_from_file(kBert.c_str(), llama_model_default_params());
    }
    ~Model() { llama_model_free(m); }
};

// The default f16 cache unless type says otherwise.
llama_context *make_ctx(llama_model *m, enum llama_pooling_type pooling, uint32_t n_ubatch = 64,
                        ggml_type type = GGML_TYPE_F16) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_batch = 64;
    p.n_ubatch = n_ubatch;
    p.n_seq_max = 4;
    p.n_threads = p.n_threads_batch = 1;
    p.embeddings = true;
    p.pooling_type = pooling;
    p.type_k = p.type_v = type;
    return llama_init_from_model(m, p);
}

// n tokens of sequence seq at positions 0..n-1 (ids from a fixed pattern inside the WPM vocabulary), every
// token an output; appended to b.
void add_seq(llama_batch &b, int n, llama_seq_id seq, int seed) {
    for (int i = 0; i < n; ++i) {
        const int k = b.n_tokens++;
        b.token[k] = 1000 + (seed * 131 + i * 37) % 20000;
        b.pos[k] = i;
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = seq;
        b.logits[k] = 1;
    }
}

std::vector<float> rows(llama_context *ctx, int n) {
    std::vector<float> out;
    for (int i = 0; i < n; ++i) {
        const float *e = llama_get_embeddings_ith(ctx, i);
        EXPECT_NE(e, nullptr) << "token " << i;
        if (e) out.insert(out.end(), e, e + kEmbd);
    }
    return out;
}

// b4748: 0, 0, 0, 0 and the cache empty; writing the batches into the cells gave 0, 0, 1, 1 (no room) and
// rows that drift as the earlier batches' cells stay visible to the same positions.
TEST(CapiEncoderCache, DecodesNeverFillTheCache) {
    Model model;
    ASSERT_NE(model.m, nullptr);
    llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_NONE);
    ASSERT_NE(ctx, nullptr);
    llama_batch b = llama_batch_init(64, 0, 1);
    add_seq(b, 24, 0, 1);
    std::vector<float> first;
    for (int call = 0; call < 4; ++call) {
        ASSERT_EQ(llama_decode(ctx, b), 0) << "call " << call;
        EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 0) << "call " << call;
        EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), -1) << "call " << call;
        const std::vector<float> r = rows(ctx, 24);
        if (call == 0)
            first = r;
        else
            EXPECT_EQ(r, first) << "call " << call << " saw an earlier batch";
    }
    llama_batch_free(b);
    llama_free(ctx);
}

// The decode's rows are the encode's, bit for bit, whatever the cache type: both attend in f32 within the
// batch (an f16 cache moved every row by about 1e-3).
TEST(CapiEncoderCache, DecodeEqualsEncodeWithTheDefaultF16Cache) {
    Model model;
    for (ggml_type type : {GGML_TYPE_F16, GGML_TYPE_F32}) {
        llama_context *dec = make_ctx(model.m, LLAMA_POOLING_TYPE_NONE, 64, type);
        llama_context *enc = make_ctx(model.m, LLAMA_POOLING_TYPE_NONE, 64, type);
        ASSERT_NE(dec, nullptr);
        ASSERT_NE(enc, nullptr);
        llama_batch b = llama_batch_init(64, 0, 1);
        add_seq(b, 9, 0, 2);
        add_seq(b, 14, 1, 3);
        add_seq(b, 5, 2, 4);
        ASSERT_EQ(llama_decode(dec, b), 0);
        ASSERT_EQ(llama_encode(enc, b), 0);
        EXPECT_EQ(rows(dec, b.n_tokens), rows(enc, b.n_tokens)) << "cache type " << type;
        llama_batch_free(b);
        llama_free(dec);
        llama_free(enc);
    }
}

// llama_batch_get_one leaves the positions to the context: with the cache unused they are 0..n-1 on every
// call, so CLS pooling finds position 0 each time (continuing at 5..9 gave NULL).
TEST(CapiEncoderCache, BatchGetOneStartsAtZeroOnEveryCall) {
    Model model;
    llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_CLS);
    ASSERT_NE(ctx, nullptr);
    llama_token tokens[5] = {101, 7592, 2088, 1012, 102};
    std::vector<float> first;
    for (int call = 0; call < 2; ++call) {
        ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(tokens, 5)), 0) << "call " << call;
        const float *e = llama_get_embeddings_seq(ctx, 0);
        ASSERT_NE(e, nullptr) << "call " << call;
        if (call == 0)
            first.assign(e, e + kEmbd);
        else
            EXPECT_EQ(std::vector<float>(e, e + kEmbd), first);
    }
    // The same through llama_encode.
    ASSERT_EQ(llama_encode(ctx, llama_batch_get_one(tokens, 5)), 0);
    const float *e = llama_get_embeddings_seq(ctx, 0);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(std::vector<float>(e, e + kEmbd), first);
    llama_free(ctx);
}

// More tokens than one micro-batch is refused (-1), even when each sequence alone would fit, and the
// outputs of the last good call stay.
TEST(CapiEncoderCache, ABatchLargerThanAMicroBatchIsRefused) {
    Model model;
    llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_MEAN, 16);
    ASSERT_NE(ctx, nullptr);
    llama_batch small = llama_batch_init(64, 0, 1);
    add_seq(small, 12, 0, 5);
    ASSERT_EQ(llama_decode(ctx, small), 0);
    const std::vector<float> pooled(llama_get_embeddings_seq(ctx, 0),
                                    llama_get_embeddings_seq(ctx, 0) + kEmbd);

    llama_batch two = llama_batch_init(64, 0, 1);
    add_seq(two, 10, 1, 6);
    add_seq(two, 10, 2, 7);
    EXPECT_EQ(llama_decode(ctx, two), -1);
    EXPECT_EQ(llama_encode(ctx, two), -1);
    const float *e = llama_get_embeddings_seq(ctx, 0);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(std::vector<float>(e, e + kEmbd), pooled);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 0);
    llama_batch_free(small);
    llama_batch_free(two);
    llama_free(ctx);
}

}  // namespace
}  // namespace capi_encoder_cache_test
