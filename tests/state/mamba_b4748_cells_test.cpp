// A mamba context's state cells as b4748 leaves them: a sequence id of n_seq_max or more finds no state cell
// (llama_decode returns 1, nothing changed), and after seq_cp branching the cells sit in b4748's order, so a
// whole-state file lists them as b4748's does. The expected order follows b4748's find_slot for a recurrent
// cache: the batch's sequences are placed shortest first and, among equal lengths, highest id first; each
// that shares a cell moves to the next empty cell from the head, then the cells are swapped into a run from
// the lowest in that order (prompt in cell 0, seq_cp 0 -> 1, 0 -> 2, one token each: cells hold 2, 1, 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "llama.h"
#include "state/state_layout.h"

namespace mamba_b4748_cells_test {
namespace {

struct ModelDeleter {
    void operator()(llama_model *m) const { llama_model_free(m); }
};
struct CtxDeleter {
    void operator()(llama_context *c) const { llama_free(c); }
};
using Ctx = std::unique_ptr<llama_context, CtxDeleter>;

llama_model *mamba() {
    static const std::unique_ptr<llama_model, ModelDeleter> m(
        llama_model_load_from_file((std::string(LCTX_FIXTURES_DIR) + "/golden/models/mamba.gguf").c_str(),
                                   llama_model_default_params()));
    return m.get();
}

Ctx make(uint32_t n_seq_max) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 128;
    p.n_batch = 64;
    p.n_ubatch = 8;
    p.n_seq_max = n_seq_max;
    p.n_threads = p.n_threads_batch = 1;
    return Ctx(llama_init_from_model(mamba(), p));
}

// One batch: token tokens[k] at position pos in sequence seqs[k], all with logits.
int32_t decode_one_each(llama_context *ctx, const std::vector<llama_seq_id> &seqs,
                        const std::vector<llama_token> &tokens, llama_pos pos) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(seqs.size()), 0, 1);
    for (size_t k = 0; k < seqs.size(); ++k) {
        b.token[k] = tokens[k];
        b.pos[k] = pos;
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = seqs[k];
        b.logits[k] = 1;
    }
    b.n_tokens = static_cast<int32_t>(seqs.size());
    const int32_t r = llama_decode(ctx, b);
    llama_batch_free(b);
    return r;
}

// The sequence ids of each cell of a whole-state file, in cell order.
std::vector<std::vector<int32_t>> cell_seqs(const std::vector<uint8_t> &state) {
    const state_test::Layout l = state_test::parse_layout(state.data(), state.size(), false);
    std::vector<std::vector<int32_t>> out;
    for (size_t off : l.cell_nseq_off) {
        const uint32_t n = state_test::peek<uint32_t>(state, off);
        std::vector<int32_t> ids;
        for (uint32_t k = 0; k < n; ++k)
            ids.push_back(state_test::peek<int32_t>(state, off + sizeof(uint32_t) + k * sizeof(int32_t)));
        out.push_back(ids);
    }
    return out;
}

const std::vector<llama_token> kPrompt = {1, 403, 407, 261, 378, 432};

TEST(MambaB4748Cells, SequenceIdBeyondNSeqMaxFindsNoCell) {
    capi_test::quiet_log();
    Ctx ctx = make(2);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(capi_test::decode_seq(ctx.get(), kPrompt, 0, 0), 0);
    const std::vector<uint8_t> before = capi_test::state_bytes(ctx.get());
    EXPECT_EQ(decode_one_each(ctx.get(), {0, 2}, {50, 60}, 6), 1);  // b4748: find_slot fails, 1
    EXPECT_EQ(decode_one_each(ctx.get(), {5}, {50}, 0), 1);
    EXPECT_EQ(capi_test::state_bytes(ctx.get()), before) << "a refused batch changed the context";
    EXPECT_EQ(decode_one_each(ctx.get(), {1}, {50}, 0), 0);
}

TEST(MambaB4748Cells, BranchedSequencesSitInB4748sCellOrder) {
    capi_test::quiet_log();
    Ctx ctx = make(3);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(capi_test::decode_seq(ctx.get(), kPrompt, 0, 0), 0);
    EXPECT_EQ(cell_seqs(capi_test::state_bytes(ctx.get())), (std::vector<std::vector<int32_t>>{{0}}));
    llama_kv_cache_seq_cp(ctx.get(), 0, 1, -1, -1);
    llama_kv_cache_seq_cp(ctx.get(), 0, 2, -1, -1);
    EXPECT_EQ(cell_seqs(capi_test::state_bytes(ctx.get())), (std::vector<std::vector<int32_t>>{{0, 1, 2}}));

    const std::vector<llama_token> next = {70, 80, 90};
    ASSERT_EQ(decode_one_each(ctx.get(), {0, 1, 2}, next, 6), 0);
    EXPECT_EQ(cell_seqs(capi_test::state_bytes(ctx.get())),
              (std::vector<std::vector<int32_t>>{{2}, {1}, {0}}));

    // Each state moved with its sequence: one more token of each goes on as in a context that decoded that
    // sequence alone.
    for (llama_seq_id s = 0; s < 3; ++s) {
        Ctx alone = make(1);
        ASSERT_EQ(capi_test::decode_seq(alone.get(), kPrompt, 0, 0), 0);
        ASSERT_EQ(capi_test::decode_seq(alone.get(), {next[s]}, 6, 0), 0);
        ASSERT_EQ(capi_test::decode_seq(alone.get(), {33}, 7, 0), 0);
        ASSERT_EQ(capi_test::decode_seq(ctx.get(), {33}, 7, s), 0);
        const float *want = llama_get_logits_ith(alone.get(), -1), *got = llama_get_logits_ith(ctx.get(), -1);
        ASSERT_NE(want, nullptr);
        ASSERT_NE(got, nullptr);
        float worst = 0;
        for (int k = 0; k < 512; ++k) worst = std::max(worst, std::fabs(got[k] - want[k]));
        EXPECT_LE(worst, 1e-4f) << "sequence " << s;
    }
}

}  // namespace
}  // namespace mamba_b4748_cells_test
