// Positions left out of a batch (pos = NULL): as b4748, token i of the batch gets the largest position in the
// cache over every sequence, plus 1 + i, whatever sequences the tokens belong to.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/model.h"

namespace lctx::batch_positions_test {
namespace {

const Model &llama() {
    static const std::unique_ptr<Model> m =
        Model::load(std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf");
    return *m;
}

std::unique_ptr<Context> make() {
    ContextParams cp;
    cp.n_ctx = 128;
    cp.n_seq_max = 2;
    return std::make_unique<Context>(llama(), cp);
}

// Decodes tokens of one sequence; positions pos0.., or none (NULL) when pos0 < 0.
DecodeStatus decode(Context &ctx, const std::vector<int32_t> &tokens, int32_t seq, int32_t pos0) {
    const size_t n = tokens.size();
    std::vector<int32_t> pos(n), sid(n, seq), nseq(n, 1);
    std::vector<int32_t *> sids(n);
    for (size_t i = 0; i < n; ++i) {
        pos[i] = pos0 + static_cast<int32_t>(i);
        sids[i] = &sid[i];
    }
    Batch b;
    b.n_tokens = static_cast<int32_t>(n);
    b.token = tokens.data();
    b.pos = pos0 < 0 ? nullptr : pos.data();
    b.n_seq_id = nseq.data();
    b.seq_id = sids.data();
    return ctx.decode(b);
}

TEST(BatchPositions, MissingPositionsContinueFromTheLargestInTheCache) {
    auto ctx = make();
    ASSERT_EQ(decode(*ctx, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0, 0), DecodeStatus::Ok);  // sequence 0: 0..9
    ASSERT_EQ(decode(*ctx, {11, 12, 13}, 1, 0), DecodeStatus::Ok);                     // sequence 1: 0..2
    // Sequence 1 without positions: 10 and 11 (after sequence 0's 9), not 3 and 4.
    ASSERT_EQ(decode(*ctx, {14, 15}, 1, -1), DecodeStatus::Ok);
    EXPECT_EQ(ctx->kv().seq_pos_max(1), 11);
    EXPECT_EQ(ctx->kv().seq_pos_min(1), 0);
    EXPECT_EQ(ctx->kv().seq_pos_max(0), 9);
}

TEST(BatchPositions, OnePerBatchIndexWhateverTheSequence) {
    auto ctx = make();
    ASSERT_EQ(decode(*ctx, {1, 2, 3, 4}, 0, 0), DecodeStatus::Ok);  // 0..3
    // Two tokens of sequence 1 and one of sequence 0, no positions: 4, 5, 6 by batch index.
    const std::vector<int32_t> tok = {20, 21, 22};
    int32_t s0 = 0, s1 = 1;
    std::vector<int32_t *> sids = {&s1, &s1, &s0};
    std::vector<int32_t> nseq(3, 1);
    Batch b;
    b.n_tokens = 3;
    b.token = tok.data();
    b.n_seq_id = nseq.data();
    b.seq_id = sids.data();
    ASSERT_EQ(ctx->decode(b), DecodeStatus::Ok);
    EXPECT_EQ(ctx->kv().seq_pos_min(1), 4);
    EXPECT_EQ(ctx->kv().seq_pos_max(1), 5);
    EXPECT_EQ(ctx->kv().seq_pos_max(0), 6);
}

TEST(BatchPositions, EmptyCacheStartsAtZeroAndRemovedCellsDoNotCount) {
    auto ctx = make();
    ASSERT_EQ(decode(*ctx, {1, 2, 3}, 0, -1), DecodeStatus::Ok);
    EXPECT_EQ(ctx->kv().seq_pos_min(0), 0);
    EXPECT_EQ(ctx->kv().seq_pos_max(0), 2);
    ASSERT_EQ(decode(*ctx, {4, 5}, 1, 40), DecodeStatus::Ok);
    ASSERT_TRUE(ctx->kv().seq_rm(1, -1, -1));
    ASSERT_EQ(decode(*ctx, {6}, 0, -1), DecodeStatus::Ok);  // after 2: sequence 1's 41 is gone
    EXPECT_EQ(ctx->kv().seq_pos_max(0), 3);
}

}  // namespace
}  // namespace lctx::batch_positions_test
