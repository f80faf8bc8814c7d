// The context's batching contract: sequences decoded together in one batch (split into micro-batches
// or not) give the logits of each sequence decoded alone; invalid batches change nothing; abort keeps
// only complete micro-batches.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "context/context.h"
#include "model/model.h"
#include "state_snapshot.h"

namespace lctx::batching_test {
namespace {

std::unique_ptr<Model> stories() {
    return Model::load(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
}

std::vector<std::vector<int32_t>> random_sequences(int n_seq, int len, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<int32_t>> seqs(n_seq);
    for (int s = 0; s < n_seq; ++s) {
        seqs[s].push_back(1);
        for (int i = 1; i < len + s * 3; ++i) seqs[s].push_back(3 + static_cast<int32_t>(rng() % 500));
    }
    return seqs;
}

// All logits of one sequence decoded alone in a fresh context.
std::vector<float> decode_alone(const Model &m, const std::vector<int32_t> &toks, GgmlType kv) {
    ContextParams p;
    p.n_ctx = 256;
    p.type_k = p.type_v = kv;
    Context ctx(m, p);
    std::vector<int32_t> pos(toks.size());
    std::vector<int8_t> out(toks.size(), 1);
    for (size_t i = 0; i < toks.size(); ++i) pos[i] = static_cast<int32_t>(i);
    Batch b;
    b.n_tokens = static_cast<int32_t>(toks.size());
    b.token = toks.data();
    b.pos = pos.data();
    b.logits = out.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    const float *l = ctx.logits();
    return std::vector<float>(l, l + toks.size() * m.hparams().n_vocab);
}

struct Case {
    uint32_t n_ubatch;
    GgmlType kv;
    // f32 cache: only summation order (1e-4). f16 cache: a different summation order (the SIMD dot over
    // n_kv cells blocks differently when other sequences' cells sit in between) can move a key across an
    // f16 rounding boundary (2^-11 relative), which shows in the logits at the 1e-3 level.
    float tol;
};

class Interleaved : public ::testing::TestWithParam<Case> {};

TEST_P(Interleaved, SameLogitsAsAlone) {
    const Case c = GetParam();
    auto m = stories();
    const int n_vocab = static_cast<int>(m->hparams().n_vocab);
    const auto seqs = random_sequences(3, 20, 7);

    ContextParams p;
    p.n_ctx = 256;
    p.n_seq_max = 3;
    p.n_ubatch = c.n_ubatch;
    p.type_k = p.type_v = c.kv;
    Context ctx(*m, p);
    // round-robin interleaving
    std::vector<int32_t> tok, pos, sid;
    std::vector<int32_t *> sids;
    std::vector<int8_t> out;
    std::vector<std::pair<int, int>> who;  // (seq, index) of each batch entry
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (int s = 0; s < 3; ++s) {
            if (i >= seqs[s].size()) continue;
            any = true;
            tok.push_back(seqs[s][i]);
            pos.push_back(static_cast<int32_t>(i));
            sid.push_back(s);
            who.emplace_back(s, static_cast<int>(i));
        }
        if (!any) break;
    }
    for (int32_t &s : sid) sids.push_back(&s);
    out.assign(tok.size(), 1);
    Batch b;
    b.n_tokens = static_cast<int32_t>(tok.size());
    b.token = tok.data();
    b.pos = pos.data();
    b.seq_id = sids.data();
    b.logits = out.data();
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);

    std::vector<std::vector<float>> alone;
    for (const auto &s : seqs) alone.push_back(decode_alone(*m, s, c.kv));
    float max_diff = 0;
    for (size_t i = 0; i < who.size(); ++i) {
        const float *got = ctx.logits_ith(static_cast<int32_t>(i));
        ASSERT_NE(got, nullptr);
        const float *want = alone[who[i].first].data() + static_cast<size_t>(who[i].second) * n_vocab;
        for (int v = 0; v < n_vocab; ++v) max_diff = std::max(max_diff, std::fabs(got[v] - want[v]));
    }
    EXPECT_LE(max_diff, c.tol);
}

INSTANTIATE_TEST_SUITE_P(Stories, Interleaved,
                         ::testing::Values(Case{512, GgmlType::F32, 1e-4f}, Case{7, GgmlType::F32, 1e-4f},
                                           Case{16, GgmlType::F16, 1e-2f}, Case{1, GgmlType::F16, 1e-2f}));

TEST(Batch, InvalidBatchChangesNothing) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    p.n_seq_max = 2;
    Context ctx(*m, p);
    int32_t tok[2] = {1, 100};
    Batch ok;
    ok.n_tokens = 2;
    ok.token = tok;
    ASSERT_EQ(ctx.decode(ok), DecodeStatus::Ok);
    const std::vector<uint8_t> before = state_test::snapshot(ctx);  // cells, K/V and the outputs

    int32_t bad_tok[2] = {1, 512};  // outside the 512-token vocabulary
    Batch b1 = ok;
    b1.token = bad_tok;
    EXPECT_EQ(ctx.decode(b1), DecodeStatus::Error);
    EXPECT_EQ(state_test::snapshot(ctx), before);

    int32_t s0 = 0, s_big = kMaxSeqs;  // no cell can hold it (ids >= n_seq_max below it are accepted)
    int32_t *seqs[2] = {&s0, &s_big};
    Batch b2 = ok;
    b2.seq_id = seqs;
    EXPECT_EQ(ctx.decode(b2), DecodeStatus::Error);
    EXPECT_EQ(state_test::snapshot(ctx), before);

    Batch empty;
    empty.token = tok;
    EXPECT_EQ(ctx.decode(empty), DecodeStatus::Error);
    EXPECT_EQ(state_test::snapshot(ctx), before);
    EXPECT_NE(ctx.logits_ith(-1), nullptr);  // the last good outputs are still there
}

TEST(Batch, TooLongForTheCacheReportsNoSlot) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 8;
    Context ctx(*m, p);
    const int32_t n_cells = static_cast<int32_t>(ctx.kv().size());
    std::vector<int32_t> tok(n_cells + 1, 1);
    Batch b;
    b.n_tokens = 3;
    b.token = tok.data();
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
    // The cache keeps every cell and its K/V bytes. (The outputs become those of the micro-batches that
    // completed, none here, as in llama.cpp: the last decode's are gone.)
    const std::vector<uint8_t> before = state_test::kv_snapshot(ctx);
    b.n_tokens = n_cells - 2;  // one more than the free cells
    EXPECT_EQ(ctx.decode(b), DecodeStatus::NoKvSlot);
    EXPECT_EQ(state_test::kv_snapshot(ctx), before);
    b.n_tokens = n_cells + 1;  // more than the whole cache
    EXPECT_EQ(ctx.decode(b), DecodeStatus::NoKvSlot);
    EXPECT_EQ(state_test::kv_snapshot(ctx), before);
}

TEST(Batch, LogitsIthRejectsBadIndices) {
    auto m = stories();
    Context ctx(*m, ContextParams{});
    int32_t tok[3] = {1, 50, 60};
    Batch b;
    b.n_tokens = 3;
    b.token = tok;  // only the last token has output
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
    EXPECT_NE(ctx.logits_ith(2), nullptr);
    EXPECT_EQ(ctx.logits_ith(2), ctx.logits_ith(-1));
    EXPECT_EQ(ctx.logits_ith(0), nullptr);   // no output asked
    EXPECT_EQ(ctx.logits_ith(3), nullptr);   // outside the batch
    EXPECT_EQ(ctx.logits_ith(-2), nullptr);  // before the first output
}

TEST(Abort, StopsBetweenMicroBatchesAndLeavesTheCacheAsBefore) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    p.n_ubatch = 4;
    int calls = 0;
    p.abort_callback = [](void *d) {
        return ++*static_cast<int *>(d) > 5;
    };  // 5 layers: the 2nd ubatch aborts
    p.abort_callback_data = &calls;
    Context ctx(*m, p);
    std::vector<int32_t> tok(12, 42);
    tok[0] = 1;
    Batch b;
    b.n_tokens = 12;
    b.token = tok.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Aborted);
    EXPECT_EQ(calls, 6);  // it did run the first micro-batch
    EXPECT_EQ(ctx.kv().used(), 0u);
    EXPECT_EQ(ctx.kv().seq_pos_max(0), -1);
}

}  // namespace
}  // namespace lctx::batching_test

namespace lctx::batching_test {
namespace {

TEST(Mask, NonCausalAttentionSeesLaterTokensOfTheSequence) {
    auto m = stories();
    int32_t tok[3] = {1, 200, 300};
    int8_t out[3] = {1, 1, 1};
    Batch b;
    b.n_tokens = 3;
    b.token = tok;
    b.logits = out;
    Context causal(*m, ContextParams{});
    ASSERT_EQ(causal.decode(b), DecodeStatus::Ok);
    Context full(*m, ContextParams{});
    full.set_causal_attn(false);
    ASSERT_EQ(full.decode(b), DecodeStatus::Ok);
    // Without the causal mask the first token sees the later ones, so its logits change.
    float diff = 0;
    for (int v = 0; v < 512; ++v)
        diff = std::max(diff, std::fabs(causal.logits_ith(0)[v] - full.logits_ith(0)[v]));
    EXPECT_GT(diff, 1e-2f);
    // A lone token has nothing later to see: both masks give the same logits.
    Batch one;
    one.n_tokens = 1;
    one.token = tok;
    Context c1(*m, ContextParams{}), f1(*m, ContextParams{});
    f1.set_causal_attn(false);
    ASSERT_EQ(c1.decode(one), DecodeStatus::Ok);
    ASSERT_EQ(f1.decode(one), DecodeStatus::Ok);
    for (int v = 0; v < 512; ++v) EXPECT_EQ(c1.logits_ith(0)[v], f1.logits_ith(0)[v]);
}

}  // namespace
}  // namespace lctx::batching_test
