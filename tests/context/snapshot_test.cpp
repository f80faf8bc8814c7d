// tests/state_snapshot.h, the "nothing changed" check of many tests: it reads the whole context without
// changing it (a pending shift stays pending), and it sees every part a call may change.
#include <gtest/gtest.h>

#include <vector>

#include "context/context.h"
#include "model/model.h"
#include "state_snapshot.h"

namespace lctx::snapshot_test {
namespace {

std::unique_ptr<Model> stories() {
    return Model::load(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
}

void decode_tokens(Context &ctx, std::vector<int32_t> toks, int32_t pos0, int32_t seq) {
    std::vector<int32_t> pos(toks.size()), n_seq(toks.size(), 1);
    std::vector<int32_t> seq_ids(toks.size(), seq);
    std::vector<int32_t *> seq_ptr(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) {
        pos[i] = pos0 + static_cast<int32_t>(i);
        seq_ptr[i] = &seq_ids[i];
    }
    std::vector<int8_t> out(toks.size(), 0);
    out.back() = 1;
    Batch b;
    b.n_tokens = static_cast<int32_t>(toks.size());
    b.token = toks.data();
    b.pos = pos.data();
    b.n_seq_id = n_seq.data();
    b.seq_id = seq_ptr.data();
    b.logits = out.data();
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
}

TEST(Snapshot, LeavesAPendingShiftPending) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    Context ctx(*m, p);
    decode_tokens(ctx, {1, 50, 60, 70, 80, 90, 100, 110}, 0, 0);
    ctx.kv().seq_rm(0, 1, 3);
    ctx.kv().seq_add(0, 3, -1, -2);  // moves positions 3.. back by 2: keys re-rotate lazily
    ASSERT_TRUE(ctx.kv().has_shift());

    const std::vector<uint8_t> a = state_test::snapshot(ctx);
    EXPECT_TRUE(ctx.kv().has_shift()) << "taking a snapshot applied the pending shift";
    bool some_delta = false;
    for (const KvCell &c : ctx.kv().cells()) some_delta |= c.delta != 0;
    EXPECT_TRUE(some_delta);
    EXPECT_EQ(state_test::snapshot(ctx), a);

    // Settling the shift (what llama_state_get_data does first) is a change the snapshot sees.
    (void)state_test::state_image(ctx);
    EXPECT_FALSE(ctx.kv().has_shift());
    EXPECT_NE(state_test::snapshot(ctx), a);
}

TEST(Snapshot, SeesTheSearchHeadUsedCountAndOutputs) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    Context ctx(*m, p);
    decode_tokens(ctx, {1, 50, 60, 70}, 0, 0);
    const std::vector<uint8_t> a = state_test::snapshot(ctx);

    // The head alone moves: cells, K/V and outputs stay as they were.
    const uint32_t head = ctx.kv().head(), used = ctx.kv().used();
    ctx.kv().set_head_used(head + 1, used);
    EXPECT_NE(state_test::snapshot(ctx), a) << "the search head";
    ctx.kv().set_head_used(head, used + 1);
    EXPECT_NE(state_test::snapshot(ctx), a) << "the used count";
    ctx.kv().set_head_used(head, used);
    EXPECT_EQ(state_test::snapshot(ctx), a);

    // One more logit row of the last decode differs.
    ctx.logits()[0] += 1.0f;
    EXPECT_NE(state_test::snapshot(ctx), a) << "the logits";
    ctx.logits()[0] -= 1.0f;
}

TEST(Snapshot, SeesPooledEmbeddings) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    p.embeddings = true;
    p.pooling = PoolingType::Mean;
    Context ctx(*m, p);
    decode_tokens(ctx, {1, 50, 60, 70}, 0, 0);
    const std::vector<uint8_t> a = state_test::snapshot(ctx);
    float *e = ctx.embeddings_seq(0);
    ASSERT_NE(e, nullptr);
    e[0] += 1.0f;
    EXPECT_NE(state_test::snapshot(ctx), a) << "the pooled embedding of sequence 0";
}

}  // namespace
}  // namespace lctx::snapshot_test
