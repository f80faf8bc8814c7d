// generate/embed_batch.h: many sequences embedded in packed passes through llama.h give each sequence the
// vectors it gets alone; the passes keep to the context's sequence and token limits; bad input is refused
// with a reason and leaves the output as it was.
#include "generate/embed_batch.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "generate/tokens.h"

namespace lctx::testing::embed_batch_test {
namespace {

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";

using Rows = std::vector<std::vector<float>>;

const std::vector<std::string> kTexts = {"hello world",
                                         "The quick brown fox jumps over the lazy dog.",
                                         "llama.cpp computes embeddings",
                                         "a",
                                         "embeddings of several texts in one pass",
                                         "the same vectors as each text alone",
                                         "short",
                                         "one more sentence to pack"};

using ModelPtr = std::unique_ptr<llama_model, decltype(&llama_model_free)>;
using CtxPtr = std::unique_ptr<llama_context, decltype(&llama_free)>;

ModelPtr load_model(const std::string &path = kBert) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    return ModelPtr(llama_model_load_from_file(path.c_str(), llama_model_default_params()),
                    &llama_model_free);
}

// An embeddings context of n_tokens a pass (n_ctx = n_batch = n_ubatch) and n_seq sequences.
CtxPtr make_ctx(llama_model *m, enum llama_pooling_type pooling, uint32_t n_tokens, uint32_t n_seq) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = p.n_batch = p.n_ubatch = n_tokens;
    p.n_seq_max = n_seq;
    p.n_threads = p.n_threads_batch = 1;
    p.embeddings = true;
    p.pooling_type = pooling;
    p.no_perf = true;
    p.type_k = p.type_v = GGML_TYPE_F32;  // a decoder's pass: no cache rounding
    return CtxPtr(llama_init_from_model(m, p), &llama_free);
}

std::vector<std::vector<llama_token>> tokenize_all(const llama_model *m) {
    std::vector<std::vector<llama_token>> out;
    for (const std::string &t : kTexts)
        out.push_back(generate::tokenize(llama_model_get_vocab(m), t, true, false));
    return out;
}

// The bound of the CLI's packing test (tests/cli/embed_cli_test.cpp, SeveralPassesGiveTheSameVectors).
void expect_same(const Rows &a, const Rows &b, const std::string &what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].size(), b[i].size()) << what;
        for (size_t k = 0; k < a[i].size(); ++k) EXPECT_NEAR(a[i][k], b[i][k], 2e-6) << what << " row " << i;
    }
}

// Each sequence alone, one pass each, on a context of one sequence.
Rows one_by_one(llama_model *m, enum llama_pooling_type pooling,
                const std::vector<std::vector<llama_token>> &seqs) {
    const CtxPtr ctx = make_ctx(m, pooling, 512, 1);
    Rows all;
    for (const std::vector<llama_token> &s : seqs) {
        Rows r;
        size_t passes = 0;
        EXPECT_EQ(generate::embed_sequences(ctx.get(), {s}, &r, &passes), "");
        EXPECT_EQ(passes, 1u);
        all.insert(all.end(), r.begin(), r.end());
    }
    return all;
}

TEST(EmbedBatch, PackedSequencesGiveTheVectorsOfEachAlone) {
    const ModelPtr model = load_model();
    ASSERT_TRUE(model);
    const std::vector<std::vector<llama_token>> seqs = tokenize_all(model.get());
    size_t n_tokens = 0;
    for (const auto &s : seqs) n_tokens += s.size();
    const size_t n_embd = static_cast<size_t>(llama_model_n_embd(model.get()));
    for (enum llama_pooling_type pooling : {LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_CLS,
                                            LLAMA_POOLING_TYPE_LAST, LLAMA_POOLING_TYPE_NONE}) {
        const std::string what = "pooling " + std::to_string(pooling);
        const CtxPtr ctx = make_ctx(model.get(), pooling, 512, 16);
        ASSERT_TRUE(ctx.get());
        Rows packed;
        size_t passes = 0;
        ASSERT_EQ(generate::embed_sequences(ctx.get(), seqs, &packed, &passes), "") << what;
        EXPECT_EQ(passes, 1u) << what;  // every sequence fits one pass
        // One row per sequence, or per token with pooling none; n_embd wide.
        ASSERT_EQ(packed.size(), pooling == LLAMA_POOLING_TYPE_NONE ? n_tokens : seqs.size()) << what;
        for (const std::vector<float> &r : packed) EXPECT_EQ(r.size(), n_embd) << what;
        expect_same(packed, one_by_one(model.get(), pooling, seqs), what);
        // The sequences are told apart: two different texts give different vectors.
        if (pooling != LLAMA_POOLING_TYPE_NONE) {
            EXPECT_NE(packed[0], packed[1]) << what;
        }
    }
}

// A decoder-only model (stories260K, with embeddings on) runs each pass on an empty cache: several passes
// give each sequence the vector it gets alone on a fresh context.
TEST(EmbedBatch, DecoderPassesStartOnAnEmptyCache) {
    const ModelPtr model = load_model(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
    ASSERT_TRUE(model);
    ASSERT_FALSE(llama_model_has_encoder(model.get()));
    const std::vector<std::vector<llama_token>> seqs = tokenize_all(model.get());
    for (enum llama_pooling_type pooling : {LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_LAST}) {
        const std::string what = "pooling " + std::to_string(pooling);
        const CtxPtr ctx = make_ctx(model.get(), pooling, 64, 3);
        ASSERT_TRUE(ctx) << what;
        Rows packed;
        size_t passes = 0;
        ASSERT_EQ(generate::embed_sequences(ctx.get(), seqs, &packed, &passes), "") << what;
        EXPECT_GE(passes, 3u) << what;
        Rows alone;
        for (const std::vector<llama_token> &s : seqs) {
            const CtxPtr fresh = make_ctx(model.get(), pooling, 64, 1);
            Rows r;
            ASSERT_EQ(generate::embed_sequences(fresh.get(), {s}, &r), "") << what;
            alone.insert(alone.end(), r.begin(), r.end());
        }
        expect_same(packed, alone, what);
    }
}

// Each pass holds whole sequences, in order, within both limits, and as many as fit (the next sequence
// would break a limit).
void expect_plan(const std::vector<size_t> &len, size_t max_seqs, size_t max_tokens) {
    const std::vector<size_t> ends = generate::embed_pass_ends(len, max_seqs, max_tokens);
    ASSERT_FALSE(ends.empty());
    EXPECT_EQ(ends.back(), len.size());
    size_t first = 0;
    for (size_t last : ends) {
        ASSERT_GT(last, first);
        size_t n = 0;
        for (size_t i = first; i < last; ++i) n += len[i];
        EXPECT_LE(last - first, max_seqs);
        EXPECT_LE(n, max_tokens);
        if (last < len.size()) {
            EXPECT_TRUE(last - first == max_seqs || n + len[last] > max_tokens);
        }
        first = last;
    }
}

TEST(EmbedBatch, PassesKeepToTheContextsLimits) {
    expect_plan({3, 4, 5, 2, 6, 1, 1, 1, 8}, 2, 8);
    expect_plan({3, 4, 5, 2, 6, 1, 1, 1, 8}, 3, 9);
    expect_plan({1, 1, 1, 1, 1, 1, 1}, 3, 100);
    expect_plan({5, 5, 5}, 10, 5);
    EXPECT_TRUE(generate::embed_pass_ends({3, 9}, 4, 8).empty());  // a sequence longer than a pass
    EXPECT_TRUE(generate::embed_pass_ends({3, 0}, 4, 8).empty());  // an empty one

    // On a context of 2 sequences and 24 tokens a pass: several passes, the vectors of one big pass.
    const ModelPtr model = load_model();
    ASSERT_TRUE(model);
    const std::vector<std::vector<llama_token>> seqs = tokenize_all(model.get());
    std::vector<size_t> len;
    for (const auto &s : seqs) len.push_back(s.size());
    const CtxPtr small = make_ctx(model.get(), LLAMA_POOLING_TYPE_MEAN, 24, 2);
    const CtxPtr big = make_ctx(model.get(), LLAMA_POOLING_TYPE_MEAN, 512, 16);
    ASSERT_TRUE(small.get());
    ASSERT_TRUE(big.get());
    EXPECT_EQ(generate::embed_pass_tokens(small.get()), 24u);
    Rows a, b;
    size_t pa = 0, pb = 0;
    ASSERT_EQ(generate::embed_sequences(small.get(), seqs, &a, &pa), "");
    ASSERT_EQ(generate::embed_sequences(big.get(), seqs, &b, &pb), "");
    EXPECT_EQ(pa, generate::embed_pass_ends(len, 2, 24).size());
    EXPECT_GE(pa, seqs.size() / 2);
    EXPECT_EQ(pb, 1u);
    expect_same(a, b, "24-token passes of 2 sequences");
}

TEST(EmbedBatch, RefusesBadInputAndLeavesTheOutput) {
    const ModelPtr model = load_model();
    ASSERT_TRUE(model);
    const CtxPtr ctx = make_ctx(model.get(), LLAMA_POOLING_TYPE_MEAN, 16, 4);
    ASSERT_TRUE(ctx.get());
    const std::vector<llama_token> ok =
        generate::tokenize(llama_model_get_vocab(model.get()), "hello", true, false);
    const Rows before = {{42.0f}};
    auto refused = [&](const std::vector<std::vector<llama_token>> &seqs, const std::string &reason) {
        Rows out = before;
        const std::string why = generate::embed_sequences(ctx.get(), seqs, &out);
        EXPECT_NE(why.find(reason), std::string::npos) << why;
        EXPECT_EQ(out, before) << reason;
    };
    refused({}, "no sequence");
    refused({ok, {}}, "sequence 1 has no tokens");
    refused({ok, std::vector<llama_token>(17, ok[1])}, "sequence 1 has 17 tokens; one pass takes at most 16");
    const llama_token outside = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    refused({ok, ok, ok, ok, {ok[0], outside}}, "the pass over sequences 4..4 failed");
    // The context still works afterwards.
    Rows out;
    EXPECT_EQ(generate::embed_sequences(ctx.get(), {ok}, &out), "");
    EXPECT_EQ(out.size(), 1u);
}

// llama-server's rerank layout: [BOS] query [EOS] [SEP] document [EOS], the texts without special tokens.
TEST(EmbedBatch, RerankTokensLayout) {
    const ModelPtr model = load_model();
    ASSERT_TRUE(model);
    const llama_vocab *v = llama_model_get_vocab(model.get());
    const std::vector<llama_token> q = generate::tokenize(v, "what is a fox", false, false);
    const std::vector<llama_token> d = generate::tokenize(v, "a quick brown fox", false, false);
    std::vector<llama_token> want;
    for (llama_token t : {llama_vocab_bos(v)})
        if (t >= 0) want.push_back(t);
    want.insert(want.end(), q.begin(), q.end());
    for (llama_token t : {llama_vocab_eos(v), llama_vocab_sep(v)})
        if (t >= 0) want.push_back(t);
    want.insert(want.end(), d.begin(), d.end());
    if (llama_vocab_eos(v) >= 0) want.push_back(llama_vocab_eos(v));
    ASSERT_FALSE(q.empty());
    EXPECT_EQ(generate::rerank_tokens(v, "what is a fox", "a quick brown fox"), want);
}

}  // namespace
}  // namespace lctx::testing::embed_batch_test
