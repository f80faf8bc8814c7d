// Embeddings from a decoder model: per-token (pooling none) and pooled per sequence (mean, cls, last),
// for many sequences in one batch and across micro-batches; and the context shift of long generations.
#include <gtest/gtest.h>

#include <cmath>

#include "context/context.h"
#include "model/model.h"

namespace lctx::embeddings_test {
namespace {

std::unique_ptr<Model> stories() { return Model::load(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf"); }

struct TwoSeqBatch {
    std::vector<int32_t> tok, pos, sid;
    std::vector<int32_t *> sids;
    Batch b;
    TwoSeqBatch(const std::vector<int32_t> &a, const std::vector<int32_t> &c) {
        for (size_t i = 0; i < a.size(); ++i) tok.push_back(a[i]), pos.push_back(int32_t(i)), sid.push_back(0);
        for (size_t i = 0; i < c.size(); ++i) tok.push_back(c[i]), pos.push_back(int32_t(i)), sid.push_back(1);
        for (int32_t &s : sid) sids.push_back(&s);
        b.n_tokens = static_cast<int32_t>(tok.size());
        b.token = tok.data();
        b.pos = pos.data();
        b.seq_id = sids.data();
    }
};

const std::vector<int32_t> kA = {1, 403, 407, 261, 378, 432, 383};
const std::vector<int32_t> kB = {1, 85, 290, 300, 46};

std::vector<std::vector<float>> token_rows(const Model &m, const std::vector<int32_t> &toks) {
    ContextParams p;
    p.n_ctx = 64;
    p.embeddings = true;
    p.pooling = PoolingType::None;
    Context ctx(m, p);
    std::vector<int8_t> out(toks.size(), 1);
    Batch b;
    b.n_tokens = static_cast<int32_t>(toks.size());
    b.token = toks.data();
    b.logits = out.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    std::vector<std::vector<float>> rows;
    for (size_t i = 0; i < toks.size(); ++i) {
        const float *e = ctx.embeddings_ith(static_cast<int32_t>(i));
        EXPECT_NE(e, nullptr);
        rows.emplace_back(e, e + m.hparams().n_embd);
    }
    return rows;
}

class Pooling : public ::testing::TestWithParam<std::tuple<PoolingType, uint32_t>> {};

TEST_P(Pooling, EachSequenceOfOneBatchIsPooledAlone) {
    const auto [pooling, n_ubatch] = GetParam();
    auto m = stories();
    const size_t n_embd = m->hparams().n_embd;
    ContextParams p;
    p.n_ctx = 64;
    p.n_seq_max = 2;
    p.n_ubatch = n_ubatch;
    p.embeddings = true;
    p.pooling = pooling;
    Context ctx(*m, p);
    TwoSeqBatch tb(kA, kB);
    ASSERT_EQ(ctx.decode(tb.b), DecodeStatus::Ok);
    for (int seq = 0; seq < 2; ++seq) {
        const auto rows = token_rows(*m, seq == 0 ? kA : kB);
        std::vector<float> want(n_embd, 0.0f);
        if (pooling == PoolingType::Mean) {
            for (const auto &r : rows)
                for (size_t k = 0; k < n_embd; ++k) want[k] += r[k] / static_cast<float>(rows.size());
        } else if (pooling == PoolingType::Cls) {
            want = rows.front();
        } else {
            want = rows.back();
        }
        const float *got = ctx.embeddings_seq(seq);
        ASSERT_NE(got, nullptr);
        for (size_t k = 0; k < n_embd; ++k) EXPECT_NEAR(got[k], want[k], 1e-4f) << "seq " << seq << " dim " << k;
    }
    EXPECT_EQ(ctx.embeddings_seq(5), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Stories, Pooling,
                         ::testing::Combine(::testing::Values(PoolingType::Mean, PoolingType::Cls, PoolingType::Last),
                                            ::testing::Values(512u, 3u)));

TEST(Embeddings, LogitsAreNotProducedInEmbeddingMode) {
    auto m = stories();
    ContextParams p;
    p.embeddings = true;
    Context ctx(*m, p);
    int32_t t[2] = {1, 50};
    Batch b;
    b.n_tokens = 2;
    b.token = t;
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
    EXPECT_EQ(ctx.logits_ith(-1), nullptr);
    EXPECT_NE(ctx.embeddings_ith(-1), nullptr);
}

TEST(ContextShift, LongGenerationContinuesPastTheContextSize) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 32;
    Context ctx(*m, p);
    int32_t tok = 1;
    int32_t pos = 0;
    int shifts = 0;
    for (int step = 0; step < 100; ++step) {
        if (ctx.kv().used() == ctx.kv().size()) {
            const int32_t dropped = ctx.shift_context(0, 4);
            ASSERT_GT(dropped, 0);
            pos -= dropped;
            ++shifts;
            EXPECT_EQ(ctx.kv().seq_pos_max(0), pos - 1);
        }
        Batch b;
        b.n_tokens = 1;
        b.token = &tok;
        b.pos = &pos;
        ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok) << "step " << step;
        const float *l = ctx.logits_ith(-1);
        ASSERT_NE(l, nullptr);
        int32_t best = 0;
        for (int32_t v = 1; v < 512; ++v)
            if (l[v] > l[best]) best = v;
        tok = best;
        ++pos;
    }
    EXPECT_GE(shifts, 3);
    EXPECT_LE(ctx.kv().used(), ctx.kv().size());
    // The kept prefix is still there at its positions.
    EXPECT_EQ(ctx.kv().seq_pos_min(0), 0);
}

}  // namespace
}  // namespace lctx::embeddings_test
