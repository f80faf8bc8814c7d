// A mamba context (recurrent state, one cell per sequence): a sequence goes on from its state across decode
// calls and micro-batches, sequences side by side in one batch each go on from their own state, and the
// sequence operations keep b4748's rules for recurrent state (seq_cp shares a state that is copied when the
// sequences diverge, seq_rm drops a whole sequence or refuses, seq_keep keeps one). Each result is checked
// against fresh contexts that decode the same tokens directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "context/state.h"
#include "model/model.h"
#include "state_snapshot.h"

namespace lctx::mamba_context_test {
namespace {

const std::string kMamba = std::string(LCTX_FIXTURES_DIR) + "/golden/models/mamba.gguf";

const Model &mamba() {
    static const std::unique_ptr<Model> m = Model::load(kMamba);
    return *m;
}

std::unique_ptr<Context> make(uint32_t n_seq_max = 1, uint32_t n_ubatch = 64) {
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_batch = 64;
    cp.n_ubatch = n_ubatch;
    cp.n_seq_max = n_seq_max;
    return std::make_unique<Context>(mamba(), cp);
}

struct Entry {
    int32_t token, pos;
    std::vector<int32_t> seqs;
};

// Decodes the entries as one batch with logits for every entry; returns them [n][n_vocab] (empty when the
// decode does not return Ok).
std::vector<std::vector<float>> decode(Context &ctx, const std::vector<Entry> &entries,
                                       DecodeStatus want = DecodeStatus::Ok) {
    const size_t n = entries.size();
    std::vector<int32_t> tok(n), pos(n), nseq(n);
    std::vector<int32_t *> sids(n);
    std::vector<std::vector<int32_t>> ids(n);
    std::vector<int8_t> all(n, 1);
    for (size_t i = 0; i < n; ++i) {
        tok[i] = entries[i].token;
        pos[i] = entries[i].pos;
        ids[i] = entries[i].seqs;
        nseq[i] = static_cast<int32_t>(ids[i].size());
        sids[i] = ids[i].data();
    }
    Batch b;
    b.n_tokens = static_cast<int32_t>(n);
    b.token = tok.data();
    b.pos = pos.data();
    b.n_seq_id = nseq.data();
    b.seq_id = sids.data();
    b.logits = all.data();
    const DecodeStatus st = ctx.decode(b);
    EXPECT_EQ(st, want);
    std::vector<std::vector<float>> out;
    if (st != DecodeStatus::Ok) return out;
    const uint32_t n_vocab = ctx.model().hparams().n_vocab;
    for (size_t i = 0; i < n; ++i) {
        const float *l = ctx.logits_ith(static_cast<int32_t>(i));
        out.emplace_back(l, l + n_vocab);
    }
    return out;
}

// tokens[i] at positions pos0 + i of sequence seq.
std::vector<Entry> run(const std::vector<int32_t> &tokens, int32_t pos0, int32_t seq = 0) {
    std::vector<Entry> e;
    for (size_t i = 0; i < tokens.size(); ++i)
        e.push_back({tokens[i], pos0 + static_cast<int32_t>(i), {seq}});
    return e;
}

std::vector<int32_t> tokens(int32_t n, int32_t seed) {
    std::vector<int32_t> t;
    for (int32_t i = 0; i < n; ++i) t.push_back(1 + (seed * 131 + i * 37 + i * i * 11) % 511);
    return t;
}

float max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// The logits of a sequence decoded alone in a fresh context, in one call.
std::vector<std::vector<float>> alone(const std::vector<int32_t> &toks) {
    auto ctx = make();
    return decode(*ctx, run(toks, 0));
}

std::vector<uint8_t> state_of(Context &ctx) {
    std::vector<uint8_t> bytes(ContextState::size(ctx));
    BufferStateWriter w(bytes.data(), bytes.size());
    ContextState::write(ctx, w);
    return bytes;
}

// The same token's logits computed through another split (calls, micro-batches, neighbours in the batch):
// the per-token arithmetic is the same; only a matrix product over another number of rows could take another
// kernel path and sum in another order. Measured (2026-12-01): identical logits at scalar, avx2 and avx512.
constexpr float kTol = 1e-4f;

TEST(MambaContext, ContinuesAcrossDecodeCallsAndMicroBatches) {
    const std::vector<int32_t> t = tokens(40, 1);
    const auto ref = alone(t);

    // Calls of 7, 1, 13, 19 tokens.
    auto calls = make();
    std::vector<std::vector<float>> got;
    int32_t p = 0;
    for (int32_t n : {7, 1, 13, 19}) {
        auto part = decode(*calls, run(std::vector<int32_t>(t.begin() + p, t.begin() + p + n), p));
        got.insert(got.end(), part.begin(), part.end());
        p += n;
    }
    EXPECT_EQ(calls->kv().seq_pos_max(0), 39);
    // One call in micro-batches of 3 tokens.
    auto ub = make(1, 3);
    const auto split = decode(*ub, run(t, 0));
    ASSERT_EQ(got.size(), ref.size());
    ASSERT_EQ(split.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
        EXPECT_LE(max_abs_diff(got[i], ref[i]), kTol) << "token " << i << " (decode calls)";
        EXPECT_LE(max_abs_diff(split[i], ref[i]), kTol) << "token " << i << " (micro-batches)";
    }
}

TEST(MambaContext, InterleavedSequencesEachGoOnFromTheirOwnState) {
    const std::vector<int32_t> a = tokens(21, 2), b = tokens(9, 3), c = tokens(14, 4);
    for (uint32_t n_ubatch : {64u, 16u, 5u, 1u}) {
        auto ctx = make(3, n_ubatch);
        std::vector<Entry> batch;
        for (size_t i = 0; i < 21; ++i) {
            batch.push_back({a[i], static_cast<int32_t>(i), {0}});
            if (i < b.size()) batch.push_back({b[i], static_cast<int32_t>(i), {1}});
            if (i < c.size()) batch.push_back({c[i], static_cast<int32_t>(i), {2}});
        }
        const auto got = decode(*ctx, batch);
        const std::vector<std::vector<std::vector<float>>> refs = {alone(a), alone(b), alone(c)};
        ASSERT_EQ(got.size(), batch.size());
        for (size_t i = 0; i < batch.size(); ++i) {
            const int32_t s = batch[i].seqs[0];
            EXPECT_LE(max_abs_diff(got[i], refs[s][batch[i].pos]), kTol)
                << "n_ubatch " << n_ubatch << ", batch index " << i << " (sequence " << s << ")";
        }
        EXPECT_EQ(ctx->kv().used(), 3u);
    }
}

TEST(MambaContext, SeqCpSharesTheStateUntilTheSequencesDiverge) {
    const std::vector<int32_t> prompt = tokens(12, 5), x = tokens(6, 6), y = tokens(6, 7);
    auto ctx = make(3, 4);
    decode(*ctx, run(prompt, 0));
    ctx->kv().seq_cp(0, 1, -1, -1);
    ctx->kv().seq_cp(0, 2, -1, -1);
    EXPECT_EQ(ctx->kv().used(), 1u) << "a copied sequence shares its source's cell";
    EXPECT_EQ(ctx->kv().seq_pos_max(1), 11);
    EXPECT_EQ(ctx->kv().seq_cell(1), ctx->kv().seq_cell(0));

    // Sequence 0 goes on with x, sequence 1 with y, interleaved (micro-batches of 4); 2 waits.
    std::vector<Entry> batch;
    for (size_t i = 0; i < x.size(); ++i) {
        batch.push_back({x[i], 12 + static_cast<int32_t>(i), {0}});
        batch.push_back({y[i], 12 + static_cast<int32_t>(i), {1}});
    }
    const auto got = decode(*ctx, batch);
    EXPECT_EQ(ctx->kv().used(), 3u) << "0 and 1 each went on in a copy of the shared state; 2 kept it";
    std::vector<int32_t> px = prompt, py = prompt;
    px.insert(px.end(), x.begin(), x.end());
    py.insert(py.end(), y.begin(), y.end());
    const auto rx = alone(px), ry = alone(py);
    ASSERT_EQ(got.size(), 2 * x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_LE(max_abs_diff(got[2 * i], rx[12 + i]), kTol) << "sequence 0, token " << i;
        EXPECT_LE(max_abs_diff(got[2 * i + 1], ry[12 + i]), kTol) << "sequence 1, token " << i;
    }
    // Sequence 2 still holds the prompt's state: it goes on like sequence 1 did.
    const auto z = decode(*ctx, run(y, 12, 2));
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_LE(max_abs_diff(z[i], ry[12 + i]), kTol) << "sequence 2, token " << i;
    EXPECT_EQ(ctx->kv().used(), 3u);
}

TEST(MambaContext, SeqRmDropsAWholeSequenceOnly) {
    const std::vector<int32_t> a = tokens(10, 8), b = tokens(10, 9), c = tokens(5, 10);
    auto ctx = make(2);
    std::vector<Entry> batch = run(a, 0, 0);
    for (const Entry &e : run(b, 0, 1)) batch.push_back(e);
    decode(*ctx, batch);
    const std::vector<uint8_t> before = state_of(*ctx);

    // Cutting into a state is refused and changes nothing (b4748's rules).
    KvCache &kv = ctx->kv();
    EXPECT_FALSE(kv.seq_rm(0, 3, 7)) << "a middle range";
    EXPECT_FALSE(kv.seq_rm(0, 5, -1)) << "a tail";
    EXPECT_FALSE(kv.seq_rm(0, 0, 9)) << "a head that ends before the last position";
    EXPECT_FALSE(kv.seq_rm(-1, 2, 5)) << "every sequence, a part";
    EXPECT_FALSE(kv.seq_rm(2, -1, -1)) << "an id without a state cell (n_seq_max 2)";
    EXPECT_EQ(state_of(*ctx), before);
    // A range after the last position changes nothing either, but is not refused.
    EXPECT_TRUE(kv.seq_rm(0, 10, -1));
    EXPECT_EQ(state_of(*ctx), before);

    // The whole sequence 1: its cell is freed, sequence 0 keeps its state.
    EXPECT_TRUE(kv.seq_rm(1, -1, -1));
    EXPECT_EQ(kv.seq_pos_max(1), -1);
    EXPECT_EQ(kv.used(), 1u);
    // Sequence 1 starts over from a zero state; sequence 0 goes on.
    std::vector<Entry> next = run(c, 0, 1);
    for (const Entry &e : run(c, 10, 0)) next.push_back(e);
    const auto got = decode(*ctx, next);
    std::vector<int32_t> ac = a;
    ac.insert(ac.end(), c.begin(), c.end());
    const auto r1 = alone(c), r0 = alone(ac);
    for (size_t i = 0; i < c.size(); ++i) {
        EXPECT_LE(max_abs_diff(got[i], r1[i]), kTol) << "sequence 1 restarted, token " << i;
        EXPECT_LE(max_abs_diff(got[c.size() + i], r0[10 + i]), kTol) << "sequence 0 went on, token " << i;
    }
    // [0, last + 1) is the whole sequence too; and with seq < 0 everything goes.
    EXPECT_TRUE(kv.seq_rm(0, 0, 15));
    EXPECT_EQ(kv.seq_pos_max(0), -1);
    EXPECT_TRUE(kv.seq_rm(-1, -1, -1));
    EXPECT_EQ(kv.used(), 0u);
}

TEST(MambaContext, SeqKeepKeepsOneSequence) {
    const std::vector<int32_t> a = tokens(8, 11), b = tokens(8, 12), c = tokens(4, 13);
    auto ctx = make(3);
    std::vector<Entry> batch = run(a, 0, 0);
    for (const Entry &e : run(b, 0, 1)) batch.push_back(e);
    for (const Entry &e : run(a, 0, 2)) batch.push_back(e);
    decode(*ctx, batch);
    ctx->kv().seq_keep(1);
    EXPECT_EQ(ctx->kv().used(), 1u);
    EXPECT_EQ(ctx->kv().seq_pos_max(0), -1);
    EXPECT_EQ(ctx->kv().seq_pos_max(2), -1);
    EXPECT_EQ(ctx->kv().seq_pos_max(1), 7);
    const auto got = decode(*ctx, run(c, 8, 1));
    std::vector<int32_t> bc = b;
    bc.insert(bc.end(), c.begin(), c.end());
    const auto ref = alone(bc);
    for (size_t i = 0; i < c.size(); ++i) EXPECT_LE(max_abs_diff(got[i], ref[8 + i]), kTol) << "token " << i;
}

TEST(MambaContext, TokensOfSeveralSequencesShareOneState) {
    // A prompt decoded once for sequences 0 and 1 (every token in both), then each goes on alone.
    const std::vector<int32_t> prompt = tokens(9, 14), x = tokens(4, 15), y = tokens(4, 16);
    auto ctx = make(2, 4);
    std::vector<Entry> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], static_cast<int32_t>(i), {0, 1}});
    // In the same batch: sequence 1 goes on first (its set differs, so a new micro-batch starts).
    for (size_t i = 0; i < y.size(); ++i) batch.push_back({y[i], 9 + static_cast<int32_t>(i), {1}});
    const auto got = decode(*ctx, batch);
    EXPECT_EQ(ctx->kv().used(), 2u);
    const auto more = decode(*ctx, run(x, 9, 0));
    std::vector<int32_t> px = prompt, py = prompt;
    px.insert(px.end(), x.begin(), x.end());
    py.insert(py.end(), y.begin(), y.end());
    const auto rx = alone(px), ry = alone(py);
    for (size_t i = 0; i < prompt.size(); ++i) EXPECT_LE(max_abs_diff(got[i], rx[i]), kTol) << "prompt " << i;
    for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_LE(max_abs_diff(got[prompt.size() + i], ry[9 + i]), kTol) << "sequence 1, token " << i;
        EXPECT_LE(max_abs_diff(more[i], rx[9 + i]), kTol) << "sequence 0, token " << i;
    }
}

TEST(MambaContext, RefusedBatchesChangeNothing) {
    auto ctx = make(2);
    decode(*ctx, run(tokens(6, 17), 0));
    const std::vector<uint8_t> before = state_of(*ctx);
    // A sequence id without a state cell (n_seq_max 2: no cell, 1 as b4748), and positions that do not
    // increase.
    decode(*ctx, run(tokens(3, 18), 0, 2), DecodeStatus::NoKvSlot);
    decode(*ctx, {{5, 6, {0}}, {6, 6, {0}}}, DecodeStatus::Error);
    decode(*ctx, {{5, 7, {0}}, {6, 6, {0}}}, DecodeStatus::Error);
    EXPECT_EQ(state_of(*ctx), before);
    EXPECT_EQ(ctx->shift_context(0, 2), 0) << "a recurrent state cannot drop a part of its past";
    EXPECT_EQ(state_of(*ctx), before);
    // An id listed twice by one token is one sequence (as for attention models).
    const auto twice = decode(*ctx, {{5, 6, {0, 0}}, {6, 7, {0}}});
    std::vector<int32_t> all = tokens(6, 17);
    all.push_back(5);
    all.push_back(6);
    const auto ref = alone(all);
    ASSERT_EQ(twice.size(), 2u);
    EXPECT_LE(max_abs_diff(twice[0], ref[6]), kTol);
    EXPECT_LE(max_abs_diff(twice[1], ref[7]), kTol);
}

TEST(MambaContext, AnAbortedDecodePutsTheStatesBack) {
    const std::vector<int32_t> a = tokens(10, 19), more = tokens(11, 20);
    auto ctx = make(2, 4);
    decode(*ctx, run(a, 0));
    ctx->kv().seq_cp(0, 1, -1, -1);
    const std::vector<uint8_t> before = state_test::kv_part(state_of(*ctx));
    // Stops after two micro-batches of 4 (polled after each layer and between micro-batches): they moved
    // sequence 1 into a cell of its own and went on with both states.
    int polls = 0;
    ctx->set_abort_callback([](void *p) { return ++*static_cast<int *>(p) > 5; }, &polls);
    std::vector<Entry> batch = {{7, 10, {1}}};
    for (const Entry &e : run(more, 10, 0)) batch.push_back(e);
    decode(*ctx, batch, DecodeStatus::Aborted);
    ctx->set_abort_callback(nullptr, nullptr);
    EXPECT_EQ(ctx->n_outputs(), 8) << "the outputs of the completed micro-batches stay readable";
    EXPECT_EQ(state_test::kv_part(state_of(*ctx)), before) << "cells and states as before the call";
    EXPECT_EQ(ctx->kv().used(), 1u);

    std::vector<int32_t> full = a;
    full.insert(full.end(), more.begin(), more.end());
    const auto ref = alone(full);
    const auto got = decode(*ctx, run(more, 10, 0));
    for (size_t i = 0; i < more.size(); ++i)
        EXPECT_LE(max_abs_diff(got[i], ref[10 + i]), kTol) << "token " << i;
}

}  // namespace
}  // namespace lctx::mamba_context_test
