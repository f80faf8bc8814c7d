// A BERT embedding model through llama.h as a llama.cpp program drives it: llama_encode (and llama_decode
// with embeddings on) of several texts in one batch, pooled vectors through llama_get_embeddings_seq,
// per-token ones through llama_get_embeddings_ith, against llama.cpp's golden rows (fixtures/golden,
// bert_embd_*); rank pooling through a synthetic reranker's classification head.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../tools/lctx/synth_model.h"
#include "llama.h"

namespace capi_bert_test {
namespace {

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";
const char *const kTexts[] = {"hello world", "The quick brown fox jumps over the lazy dog.",
                              "llama.cpp computes embeddings"};
// The model tests' bound (tests/model/golden_embd_test.cpp): a GELU input rounded to the neighbouring half
// by another summation order moves a text's rows by up to ~5e-4.
constexpr float kTol = 2e-3f;

std::vector<float> golden(const std::string &name) {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/golden/cases/" + name + ".embeddings.f32",
                    std::ios::binary);
    std::vector<float> v;
    float x;
    while (f.read(reinterpret_cast<char *>(&x), sizeof x)) v.push_back(x);
    return v;
}

struct Model {
    llama_model *m = nullptr;
    explicit Model(const std::string &path) {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        m = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    }
    ~Model() { llama_model_free(m); }
};

llama_context *make_ctx(llama_model *m, enum llama_pooling_type pooling) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 128;
    p.n_batch = p.n_ubatch = 128;
    p.n_seq_max = 4;
    p.n_threads = p.n_threads_batch = 1;
    p.embeddings = true;
    p.pooling_type = pooling;
    return llama_init_from_model(m, p);
}

// The texts back to back, text i in sequence i; n_tokens[i] = its length.
llama_batch texts_batch(llama_model *m, std::vector<int> &n_tokens) {
    const llama_vocab *v = llama_model_get_vocab(m);
    llama_batch b = llama_batch_init(128, 0, 1);
    for (int s = 0; s < 3; ++s) {
        llama_token ids[64];
        const int n =
            llama_tokenize(v, kTexts[s], static_cast<int32_t>(std::strlen(kTexts[s])), ids, 64, true, false);
        EXPECT_GT(n, 0);
        for (int i = 0; i < n; ++i) {
            b.token[b.n_tokens] = ids[i];
            b.pos[b.n_tokens] = i;
            b.n_seq_id[b.n_tokens] = 1;
            b.seq_id[b.n_tokens][0] = s;
            b.logits[b.n_tokens] = 1;
            ++b.n_tokens;
        }
        n_tokens.push_back(n);
    }
    return b;
}

TEST(CapiBert, EncodeAndDecodePoolAsLlamaCpp) {
    Model model(kBert);
    ASSERT_NE(model.m, nullptr);
    EXPECT_FALSE(llama_model_has_encoder(model.m));  // as b4748 says of bert: llama_decode runs it too
    for (bool use_encode : {true, false}) {
        llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_UNSPECIFIED);
        ASSERT_NE(ctx, nullptr);
        EXPECT_EQ(llama_pooling_type(ctx), LLAMA_POOLING_TYPE_CLS);  // the model's bert.pooling_type
        std::vector<int> n_tokens;
        llama_batch b = texts_batch(model.m, n_tokens);
        ASSERT_EQ(use_encode ? llama_encode(ctx, b) : llama_decode(ctx, b), 0);
        const std::vector<float> want = golden("bert_embd_cls");
        for (int s = 0; s < 3; ++s) {
            const float *e = llama_get_embeddings_seq(ctx, s);
            ASSERT_NE(e, nullptr);
            for (int k = 0; k < 32; ++k) EXPECT_NEAR(e[k], want[s * 32 + k], kTol) << "seq " << s;
        }
        EXPECT_EQ(llama_get_embeddings_ith(ctx, 0), nullptr);  // pooled: no per-token rows
        EXPECT_EQ(llama_get_embeddings_seq(ctx, 3), nullptr);  // not in the batch
        llama_batch_free(b);
        llama_free(ctx);
    }
}

TEST(CapiBert, NonePoolingGivesEveryTokensRow) {
    Model model(kBert);
    llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_NONE);
    ASSERT_NE(ctx, nullptr);
    std::vector<int> n_tokens;
    llama_batch b = texts_batch(model.m, n_tokens);
    ASSERT_EQ(llama_encode(ctx, b), 0);
    const std::vector<float> want = golden("bert_embd_none");
    ASSERT_EQ(want.size(), static_cast<size_t>(b.n_tokens) * 32);
    for (int i = 0; i < b.n_tokens; ++i) {
        const float *e = llama_get_embeddings_ith(ctx, i);
        ASSERT_NE(e, nullptr);
        for (int k = 0; k < 32; ++k) EXPECT_NEAR(e[k], want[i * 32 + k], kTol) << "token " << i;
    }
    EXPECT_EQ(llama_get_embeddings_seq(ctx, 0), nullptr);
    llama_batch_free(b);
    llama_free(ctx);
}

TEST(CapiBert, RankGivesOneScorePerSequence) {
    {
        Model model(kBert);  // no classification head: no rank context
        EXPECT_EQ(make_ctx(model.m, LLAMA_POOLING_TYPE_RANK), nullptr);
    }
    const lctx::synth::Shape *shape = lctx::synth::find_shape("bert-rerank-tiny");
    ASSERT_NE(shape, nullptr);
    lctx::synth::TypeChoice type;
    ASSERT_TRUE(lctx::synth::parse_type("F32", &type));
    lctx::synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-bert-bge.gguf";
    opts.n_threads = 1;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("lctx-capi-rerank-" + std::to_string(::getpid()) + ".gguf"))
                                 .string();
    lctx::synth::write_model(*shape, type, path, opts);
    Model model(path);
    std::filesystem::remove(path);
    ASSERT_NE(model.m, nullptr);
    llama_context *ctx = make_ctx(model.m, LLAMA_POOLING_TYPE_UNSPECIFIED);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_pooling_type(ctx), LLAMA_POOLING_TYPE_RANK);
    std::vector<int> n_tokens;
    llama_batch b = texts_batch(model.m, n_tokens);
    ASSERT_EQ(llama_encode(ctx, b), 0);
    float scores[3];
    for (int s = 0; s < 3; ++s) {
        const float *e = llama_get_embeddings_seq(ctx, s);
        ASSERT_NE(e, nullptr);
        EXPECT_TRUE(std::isfinite(e[0]));
        scores[s] = e[0];
    }
    EXPECT_NE(scores[0], scores[1]);
    // The same text alone scores the same.
    llama_batch one = llama_batch_init(64, 0, 1);
    for (int i = 0; i < n_tokens[0]; ++i) {
        one.token[i] = b.token[i];
        one.pos[i] = i;
        one.n_seq_id[i] = 1;
        one.seq_id[i][0] = 0;
        one.logits[i] = 1;
    }
    one.n_tokens = n_tokens[0];
    ASSERT_EQ(llama_encode(ctx, one), 0);
    EXPECT_NEAR(llama_get_embeddings_seq(ctx, 0)[0], scores[0], 1e-6f);
    llama_batch_free(one);
    llama_batch_free(b);
    llama_free(ctx);
}

}  // namespace
}  // namespace capi_bert_test
