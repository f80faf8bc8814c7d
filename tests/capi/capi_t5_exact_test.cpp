// T5 details where b4748 is the reference: the decoder's cross-attention mask lets a token see the encoder
// rows of any of its sequence ids (not only its first), and a control vector (llama_apply_adapter_cvec)
// is added after each layer of the encoder and of the decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "llama.h"

namespace capi_t5_exact_test {
namespace {

struct T5 {
    llama_model *model = nullptr;
    T5() {
        capi_test::quiet_log();
        model =
            llama_model_load_from_file((std::string(LCTX_FIXTURES_DIR) + "/golden-t5/models/t5.gguf").c_str(),
                                       llama_model_default_params());
    }
    ~T5() { llama_model_free(model); }
    int32_t n_embd() const { return llama_model_n_embd(model); }
    int32_t n_vocab() const { return llama_vocab_n_tokens(llama_model_get_vocab(model)); }
};

llama_context *make_ctx(const T5 &t5) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = cp.n_ubatch = 64;
    cp.n_seq_max = 2;
    cp.n_threads = cp.n_threads_batch = 1;
    return llama_init_from_model(t5.model, cp);
}

std::vector<llama_token> prompt_tokens() {
    return {13959, 1566, 12, 2968, 10, 37, 1969, 19, 1245, 469, 5, 1};  // the golden t5_greedy case's prompt
}

// Encodes the prompt in sequence 0; returns the encoder rows.
std::vector<float> encode(llama_context *ctx, const T5 &t5) {
    std::vector<llama_token> toks = prompt_tokens();
    EXPECT_EQ(llama_encode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 0);
    std::vector<float> rows;
    for (size_t i = 0; i < toks.size(); ++i) {
        const float *e = llama_get_embeddings_ith(ctx, static_cast<int32_t>(i));
        EXPECT_NE(e, nullptr);
        if (e) rows.insert(rows.end(), e, e + t5.n_embd());
    }
    return rows;
}

// Decodes the decoder start token at position 0 in the given sequences; returns its logits.
std::vector<float> decode_start(llama_context *ctx, const T5 &t5, const std::vector<llama_seq_id> &seqs) {
    llama_batch b = llama_batch_init(1, 0, static_cast<int32_t>(seqs.size()));
    b.n_tokens = 1;
    b.token[0] = llama_model_decoder_start_token(t5.model);
    b.pos[0] = 0;
    b.n_seq_id[0] = static_cast<int32_t>(seqs.size());
    for (size_t s = 0; s < seqs.size(); ++s) b.seq_id[0][s] = seqs[s];
    b.logits[0] = 1;
    EXPECT_EQ(llama_decode(ctx, b), 0);
    llama_batch_free(b);
    const float *l = llama_get_logits_ith(ctx, 0);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + t5.n_vocab()) : std::vector<float>();
}

float max_diff(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float d = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// A token in sequences {1, 0} over an encoder output of sequence 0 attends to it (b4748 tests every id of
// the token); it computes exactly what the token in sequence 0 alone does. Reading only the first id left it
// no encoder row at all (logits 16 off).
TEST(CapiT5Exact, CrossAttentionTakesEverySequenceOfAToken) {
    T5 t5;
    ASSERT_NE(t5.model, nullptr);
    llama_context *a = make_ctx(t5), *b = make_ctx(t5);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    encode(a, t5);
    encode(b, t5);
    const std::vector<float> both = decode_start(a, t5, {1, 0});
    const std::vector<float> alone = decode_start(b, t5, {0});
    EXPECT_LE(max_diff(both, alone), 1e-5f);
    llama_free(a);
    llama_free(b);
}

// A control vector on layers [1, n_layer - 1] moves the encoder output (applied in the encoder), and, with
// the same encoder output, the decoder's logits (applied in the decoder); switched off, everything is as
// without it.
TEST(CapiT5Exact, ControlVectorAppliesInEncoderAndDecoder) {
    T5 t5;
    ASSERT_NE(t5.model, nullptr);
    const int32_t n_layer = llama_model_n_layer(t5.model), n_embd = t5.n_embd();
    ASSERT_GE(n_layer, 2) << "layer 0 takes no control vector; the test needs another";
    std::vector<float> cvec(static_cast<size_t>(n_embd) * (n_layer - 1));
    for (size_t i = 0; i < cvec.size(); ++i) cvec[i] = 0.5f * std::sin(0.37f * static_cast<float>(i));

    llama_context *plain = make_ctx(t5);
    const std::vector<float> enc0 = encode(plain, t5);
    const std::vector<float> dec0 = decode_start(plain, t5, {0});

    llama_context *steered = make_ctx(t5);
    ASSERT_EQ(llama_apply_adapter_cvec(steered, cvec.data(), cvec.size(), n_embd, 1, n_layer - 1), 0);
    EXPECT_GT(max_diff(encode(steered, t5), enc0), 1e-3f) << "the encoder ignored the control vector";

    llama_context *dec_only = make_ctx(t5);
    EXPECT_EQ(encode(dec_only, t5), enc0);
    ASSERT_EQ(llama_apply_adapter_cvec(dec_only, cvec.data(), cvec.size(), n_embd, 1, n_layer - 1), 0);
    EXPECT_GT(max_diff(decode_start(dec_only, t5, {0}), dec0), 1e-3f) << "the decoder ignored it";

    // Switched off (null data): as without one.
    ASSERT_EQ(llama_apply_adapter_cvec(steered, nullptr, 0, n_embd, 0, 0), 0);
    EXPECT_EQ(encode(steered, t5), enc0);
    EXPECT_EQ(decode_start(steered, t5, {0}), dec0);
    llama_free(plain);
    llama_free(steered);
    llama_free(dec_only);
}

}  // namespace
}  // namespace capi_t5_exact_test
