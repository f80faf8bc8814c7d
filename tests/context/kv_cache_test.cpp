// KV cache behaviour beyond the golden cases: q8_0 storage, defragmentation, sequence operations.
#include <gtest/gtest.h>

#include <cmath>

#include "context/batch_builder.h"
#include "context/context.h"
#include "context/state.h"
#include "model/model.h"

namespace lctx::kv_cache_test {
namespace {

std::unique_ptr<Model> stories() {
    return Model::load(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
}

std::vector<float> last_logits(Context &ctx, const std::vector<int32_t> &toks, int32_t pos0) {
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) pos[i] = pos0 + static_cast<int32_t>(i);
    Batch b;
    b.n_tokens = static_cast<int32_t>(toks.size());
    b.token = toks.data();
    b.pos = pos.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    const float *l = ctx.logits_ith(-1);
    return std::vector<float>(l, l + 512);
}

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395};

TEST(KvCache, Q8_0CacheStaysCloseToF16) {
    // Head size 8 (stories) cannot hold 32-element q8_0 blocks: refused with a message.
    auto m = stories();
    ContextParams p;
    p.type_k = p.type_v = GgmlType::Q8_0;
    EXPECT_THROW(Context(*m, p), Error);

    // The synthetic llama model has head size 32: q8_0 works there and stays within its rounding.
    auto big = Model::load(std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf");
    ContextParams pf, pq;
    pq.type_k = pq.type_v = GgmlType::Q8_0;
    pq.flash_attn = true;  // a quantized V is stored by rows (b4748 needs flash attention for it too)
    Context cf(*big, pf), cq(*big, pq);
    const std::vector<float> a = last_logits(cf, kPrompt, 0), b = last_logits(cq, kPrompt, 0);
    float max_diff = 0, max_abs = 0;
    for (int v = 0; v < 512; ++v) {
        max_diff = std::max(max_diff, std::fabs(a[v] - b[v]));
        max_abs = std::max(max_abs, std::fabs(a[v]));
    }
    // 8-bit keys and values: relative rounding ~1/254 per element, averaged over the attention sum.
    EXPECT_LT(max_diff, 0.05f * max_abs);
    EXPECT_GT(max_diff, 0.0f);  // it really is another storage
}

TEST(KvCache, DefragKeepsEveryCellsMeaning) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    p.n_seq_max = 2;
    p.type_k = p.type_v = GgmlType::F32;
    Context a(*m, p), b(*m, p);
    for (Context *c : {&a, &b}) {
        last_logits(*c, kPrompt, 0);  // seq 0 at cells 0..13
        c->kv().seq_cp(0, 1, -1, -1);
        c->kv().seq_rm(0, 4, 10);  // holes in the middle of seq 0 only
        c->kv().seq_rm(1, 0, -1);
    }
    b.kv().defrag();
    // After defrag the used cells are contiguous from 0.
    uint32_t used = 0;
    for (const KvCell &c : b.kv().cells()) used += c.pos >= 0;
    for (uint32_t i = 0; i < used; ++i) EXPECT_GE(b.kv().cells()[i].pos, 0) << i;
    const std::vector<int32_t> next = {432, 358};
    const std::vector<float> la = last_logits(a, next, 14), lb = last_logits(b, next, 14);
    for (int v = 0; v < 512; ++v) EXPECT_NEAR(la[v], lb[v], 1e-5f);
}

TEST(KvCache, SequenceOperations) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 32;
    p.n_seq_max = 3;
    Context ctx(*m, p);
    last_logits(ctx, kPrompt, 0);
    KvCache &kv = ctx.kv();
    EXPECT_EQ(kv.seq_pos_max(0), 13);
    EXPECT_EQ(kv.seq_pos_max(1), -1);  // empty sequence: -1 (llama.cpp b4748 said 0)
    kv.seq_cp(0, 1, 0, 5);
    EXPECT_EQ(kv.seq_pos_max(1), 4);
    EXPECT_EQ(kv.n_tokens(), 14 + 5);
    kv.seq_add(1, 0, -1, 10);
    EXPECT_EQ(kv.seq_pos_max(1), 14);  // shared cells 0..4 moved to 10..14 (for seq 0 too: same cells)
    kv.seq_div(0, 0, -1, 2);
    EXPECT_TRUE(kv.has_shift());
    kv.seq_keep(0);
    EXPECT_EQ(kv.seq_pos_max(1), -1);
    EXPECT_EQ(kv.used(), 14u);
    kv.clear();
    EXPECT_EQ(kv.used(), 0u);
    EXPECT_EQ(kv.seq_pos_max(0), -1);
}

// One token per sequence in each of `steps` batches (sequence s gets token ids[s] at position pos0 + step);
// returns the logits of every sequence's last token, sequence by sequence.
std::vector<std::vector<float>> step_sequences(Context &ctx, const std::vector<int32_t> &seqs, int32_t pos0,
                                               int steps) {
    std::vector<std::vector<float>> out(seqs.size());
    for (int k = 0; k < steps; ++k) {
        BatchBuilder bb;
        for (int32_t s : seqs) bb.add(kPrompt[(s * 3 + k) % kPrompt.size()], pos0 + k, s, true);
        EXPECT_EQ(ctx.decode(bb.view()), DecodeStatus::Ok);
        for (size_t i = 0; i < seqs.size(); ++i) {
            const float *l = ctx.logits_ith(static_cast<int32_t>(i));
            out[i].assign(l, l + 512);
        }
    }
    return out;
}

// The cells of seq, in cell order.
std::vector<uint32_t> cells_of(const KvCache &kv, int32_t seq) {
    std::vector<uint32_t> out;
    for (uint32_t j = 0; j < kv.size(); ++j)
        if (kv.cells()[j].pos >= 0 && kv.cells()[j].seq.test(seq)) out.push_back(j);
    return out;
}

// Placement by sequence (the server's): each sequence's cells in a region of its own, a full region
// spilling into the next free cells, a restored sequence in its region; every sequence computes what it
// computes with llama.cpp's placement (the same dot products; sums over other spans of masked cells).
TEST(KvCache, PlacementBySequenceKeepsEachSequenceTogether) {
    auto m = stories();
    ContextParams p;
    p.n_ctx = 64;
    p.n_seq_max = 4;
    p.type_k = p.type_v = GgmlType::F32;
    Context a(*m, p), b(*m, p);
    b.kv().set_place_by_sequence(true);
    EXPECT_FALSE(a.kv().place_by_sequence());
    const std::vector<int32_t> seqs = {0, 1, 2, 3};
    auto close = [](const std::vector<std::vector<float>> &x, const std::vector<std::vector<float>> &y) {
        ASSERT_EQ(x.size(), y.size());
        for (size_t i = 0; i < x.size(); ++i)
            for (int v = 0; v < 512; ++v)
                ASSERT_NEAR(x[i][v], y[i][v], 1e-4f) << "sequence " << i << " " << v;
    };
    close(step_sequences(a, seqs, 0, 6), step_sequences(b, seqs, 0, 6));
    for (int32_t s : seqs) {
        const std::vector<uint32_t> cb = cells_of(b.kv(), s), ca = cells_of(a.kv(), s);
        ASSERT_EQ(cb.size(), 6u);
        for (size_t i = 0; i < cb.size(); ++i) EXPECT_EQ(cb[i], 16u * s + i) << "sequence " << s;
        EXPECT_EQ(ca[1] - ca[0], 4u) << "llama.cpp's placement interleaves the sequences";
    }
    // Sequence 0 outgrows its 16 cells: the rest go to the next free cells (after sequence 1's).
    close(step_sequences(a, {0}, 6, 14), step_sequences(b, {0}, 6, 14));
    const std::vector<uint32_t> c0 = cells_of(b.kv(), 0);
    ASSERT_EQ(c0.size(), 20u);
    EXPECT_EQ(c0[15], 15u);
    EXPECT_EQ(c0[16], 22u);
    close(step_sequences(a, seqs, 20, 2), step_sequences(b, {0, 1, 2, 3}, 20, 2));

    // A sequence's state restored into a context placing by sequence lands in the sequence's region, and goes
    // on as the original.
    std::vector<uint8_t> st(ContextState::size_seq(b, 2));
    BufferStateWriter w(st.data(), st.size());
    ContextState::write_seq(b, w, 2);
    Context c(*m, p);
    c.kv().set_place_by_sequence(true);
    ContextState::read_seq(c, st.data(), st.size(), 2, /*exact=*/true);
    const std::vector<uint32_t> c2 = cells_of(c.kv(), 2);
    ASSERT_EQ(c2.size(), 8u);  // 6 + 2 steps
    EXPECT_EQ(c2.front(), 32u);
    EXPECT_EQ(c2.back(), 39u);
    close(step_sequences(b, {2}, 22, 1), step_sequences(c, {2}, 22, 1));
}

}  // namespace
}  // namespace lctx::kv_cache_test
