// State of a mamba context (recurrent state: STATE-FORMAT.md, one cell per sequence, the "K" rows the
// convolution state and the "V" rows the SSM state, f32, v_trans 0), through the C API: whole and
// per-sequence round trips with several sequences (one state shared after seq_cp), the layout, and the
// refusals that leave the context as it was.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "state/state_layout.h"

namespace mamba_state_test {
namespace {

using capi_test::quiet_log;
using capi_test::seq_state_bytes;
using capi_test::state_bytes;

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

constexpr int32_t kVocab = 512;
// The fixture's sizes: d_conv 4, d_inner 128, d_state 16, 2 layers.
constexpr uint64_t kConvRow = 3 * 128 * sizeof(float), kSsmRow = 16 * 128 * sizeof(float);

std::vector<llama_token> tokens(int n, int seed) {
    std::vector<llama_token> t;
    for (int i = 0; i < n; ++i) t.push_back(1 + (seed * 97 + i * 53 + i * i * 7) % 511);
    return t;
}

// One batch: the sequences' tokens interleaved from position 0, logits for every token.
void decode_interleaved(llama_context *ctx, const std::vector<std::vector<llama_token>> &seqs,
                        const std::vector<llama_seq_id> &ids, llama_pos pos0 = 0) {
    size_t n = 0, longest = 0;
    for (const auto &s : seqs) {
        n += s.size();
        longest = std::max(longest, s.size());
    }
    llama_batch b = llama_batch_init(static_cast<int32_t>(n), 0, 1);
    for (size_t i = 0; i < longest; ++i)
        for (size_t s = 0; s < seqs.size(); ++s) {
            if (i >= seqs[s].size()) continue;
            const int32_t k = b.n_tokens++;
            b.token[k] = seqs[s][i];
            b.pos[k] = pos0 + static_cast<llama_pos>(i);
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = ids[s];
            b.logits[k] = 1;
        }
    EXPECT_EQ(llama_decode(ctx, b), 0);
    llama_batch_free(b);
}

std::vector<float> logits(llama_context *ctx, int32_t i) {
    const float *l = llama_get_logits_ith(ctx, i);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + kVocab) : std::vector<float>();
}

// Every sequence's next token (one batch, the same token for each) gives bit-identical logits in both.
void expect_same_continuation(llama_context *a, llama_context *b, const std::vector<llama_seq_id> &ids,
                              const std::vector<llama_pos> &next_pos) {
    for (size_t s = 0; s < ids.size(); ++s) {
        const std::vector<llama_token> t = {static_cast<llama_token>(100 + s)};
        ASSERT_EQ(capi_test::decode_seq(a, t, next_pos[s], ids[s]), 0);
        ASSERT_EQ(capi_test::decode_seq(b, t, next_pos[s], ids[s]), 0);
        EXPECT_EQ(logits(b, -1), logits(a, -1)) << "sequence " << ids[s];
    }
}

TEST(MambaState, WholeStateRoundTripsWithSeveralSequences) {
    Ctx a = make(4), b = make(4);
    ASSERT_NE(a, nullptr);
    decode_interleaved(a.get(), {tokens(13, 1), tokens(5, 2), tokens(9, 3)}, {0, 1, 2});
    llama_kv_cache_seq_cp(a.get(), 1, 3, -1, -1);  // sequences 1 and 3 share a state cell
    const std::vector<uint8_t> saved = state_bytes(a.get());

    // The layout: 3 cells (one holding two sequences), f32 rows of the convolution and SSM states.
    const state_test::Layout l = state_test::parse_layout(saved.data(), saved.size(), false);
    EXPECT_EQ(l.arch, "mamba");
    EXPECT_EQ(l.n_outputs, 27u);
    EXPECT_EQ(l.cell_count, 3u);
    EXPECT_EQ(l.v_trans, 0u);
    EXPECT_EQ(l.n_layer, 2u);
    EXPECT_EQ(l.k_row, kConvRow);
    for (uint32_t il = 0; il < l.n_layer; ++il) {
        EXPECT_EQ(state_test::peek<int32_t>(saved, l.k_type_off[il]), 0) << "F32";
        EXPECT_EQ(state_test::peek<int32_t>(saved, l.v_type_off[il]), 0) << "F32";
        EXPECT_EQ(l.v_data_bytes[il], 3 * kSsmRow);
    }
    uint32_t n_shared = 0;
    for (size_t off : l.cell_nseq_off) n_shared += state_test::peek<uint32_t>(saved, off) == 2;
    EXPECT_EQ(n_shared, 1u);
    EXPECT_EQ(l.end, saved.size());

    ASSERT_EQ(llama_state_set_data(b.get(), saved.data(), saved.size()), saved.size());
    EXPECT_EQ(state_bytes(b.get()), saved);  // restoring then saving reproduces the bytes
    EXPECT_EQ(logits(b.get(), 0), logits(a.get(), 0));
    EXPECT_EQ(llama_get_kv_cache_used_cells(b.get()), 3);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b.get(), 3), 4);
    // Each sequence goes on from the restored state as from the saved one (3 out of the shared cell).
    expect_same_continuation(a.get(), b.get(), {0, 1, 2, 3}, {13, 5, 9, 5});
}

TEST(MambaState, SequenceStateMovesToAnotherSequence) {
    Ctx a = make(3), b = make(3);
    decode_interleaved(a.get(), {tokens(11, 4), tokens(7, 5)}, {0, 1});
    decode_interleaved(b.get(), {tokens(6, 6), tokens(8, 7)}, {0, 2});
    llama_kv_cache_seq_cp(b.get(), 2, 1, -1, -1);  // the destination shares a cell with sequence 2
    const std::vector<uint8_t> b_seq2 = seq_state_bytes(b.get(), 2);

    const std::vector<uint8_t> saved = seq_state_bytes(a.get(), 1);
    const state_test::Layout l = state_test::parse_layout(saved.data(), saved.size(), true);
    EXPECT_EQ(l.cell_count, 1u) << "one state cell per sequence";
    EXPECT_EQ(l.k_row, kConvRow);
    EXPECT_EQ(l.end, saved.size());

    ASSERT_EQ(llama_state_seq_set_data(b.get(), saved.data(), saved.size(), 1), saved.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b.get(), 1), 6);
    EXPECT_EQ(seq_state_bytes(b.get(), 1), saved);
    EXPECT_EQ(seq_state_bytes(b.get(), 2), b_seq2) << "the sequence that shared the cell keeps its state";
    EXPECT_EQ(llama_get_kv_cache_used_cells(b.get()), 3);

    const std::vector<llama_token> t = {42};
    ASSERT_EQ(capi_test::decode_seq(a.get(), t, 7, 1), 0);
    ASSERT_EQ(capi_test::decode_seq(b.get(), t, 7, 1), 0);
    EXPECT_EQ(logits(b.get(), -1), logits(a.get(), -1));

    // An empty sequence saves as no cell and restores as a removal.
    const std::vector<uint8_t> empty = seq_state_bytes(a.get(), 2);
    ASSERT_EQ(llama_state_seq_set_data(b.get(), empty.data(), empty.size(), 0), empty.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b.get(), 0), -1);
}

TEST(MambaState, RefusedLoadsChangeNothing) {
    quiet_log();
    Ctx a = make(3), b = make(2);
    decode_interleaved(a.get(), {tokens(5, 8), tokens(6, 9)}, {0, 2});
    decode_interleaved(b.get(), {tokens(4, 10)}, {0});
    const std::vector<uint8_t> before = state_bytes(b.get());

    // Sequence 2 has no state cell in a context of n_seq_max 2: the whole state and a load into 2 are
    // refused.
    const std::vector<uint8_t> whole = state_bytes(a.get());
    EXPECT_EQ(llama_state_set_data(b.get(), whole.data(), whole.size()), 0u);
    const std::vector<uint8_t> seq0 = seq_state_bytes(a.get(), 0);
    EXPECT_EQ(llama_state_seq_set_data(b.get(), seq0.data(), seq0.size(), 2), 0u);
    // Two cells holding the state of one sequence (the second cell's id patched from 1 to 0).
    {
        Ctx c = make(2);
        decode_interleaved(c.get(), {tokens(5, 8), tokens(6, 9)}, {0, 1});
        std::vector<uint8_t> two = state_bytes(c.get());
        const state_test::Layout l = state_test::parse_layout(two.data(), two.size(), false);
        ASSERT_EQ(l.cell_count, 2u);
        state_test::poke<int32_t>(two, l.cell_nseq_off[1] + sizeof(uint32_t), 0);
        EXPECT_EQ(llama_state_set_data(b.get(), two.data(), two.size()), 0u);
        // The same two cells as one sequence's state (the sequence layout: no ids).
        std::vector<uint8_t> seq;
        auto put = [&](auto v) {
            const auto *p = reinterpret_cast<const uint8_t *>(&v);
            seq.insert(seq.end(), p, p + sizeof v);
        };
        put(uint32_t{2});
        for (uint32_t i = 0; i < 2; ++i) {
            put(state_test::peek<int32_t>(two, l.cell_pos_off[i]));
            put(uint32_t{0});
        }
        seq.insert(seq.end(), two.begin() + static_cast<std::ptrdiff_t>(l.v_trans_off), two.end());
        ASSERT_EQ(state_test::parse_layout(seq.data(), seq.size(), true).end, seq.size());
        EXPECT_EQ(llama_state_seq_set_data(b.get(), seq.data(), seq.size(), 1), 0u);
    }
    EXPECT_EQ(state_bytes(b.get()), before);
    llama_log_set(nullptr, nullptr);
}

TEST(MambaState, SequenceOperationsKeepTheRecurrentRules) {
    quiet_log();
    Ctx a = make(2);
    decode_interleaved(a.get(), {tokens(9, 11)}, {0});
    const std::vector<uint8_t> before = state_bytes(a.get());
    EXPECT_FALSE(llama_kv_cache_can_shift(a.get()));
    EXPECT_FALSE(llama_kv_cache_seq_rm(a.get(), 0, 2, 5)) << "a middle range of a recurrent state";
    EXPECT_EQ(state_bytes(a.get()), before);
    llama_kv_cache_defrag(a.get());
    llama_kv_cache_update(a.get());
    EXPECT_EQ(state_bytes(a.get()), before);
    EXPECT_TRUE(llama_kv_cache_seq_rm(a.get(), 0, -1, -1));
    EXPECT_EQ(llama_get_kv_cache_used_cells(a.get()), 0);
    llama_log_set(nullptr, nullptr);
}

}  // namespace
}  // namespace mamba_state_test
