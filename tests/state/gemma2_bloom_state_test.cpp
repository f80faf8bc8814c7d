// State save and restore on the gemma2 (sliding window) and bloom (ALiBi) fixtures: three sequences decoded
// together, the whole state (memory and file) and one sequence's state restored into fresh contexts; decoding
// on from there gives what decoding on from the original gives, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "context/context.h"
#include "context/state.h"
#include "model/model.h"
#include "state_snapshot.h"

namespace lctx::gemma2_bloom_state_test {
namespace {

std::string fixture(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

ContextParams params() {
    ContextParams p;
    p.n_ctx = 256;
    p.n_seq_max = 3;
    p.n_ubatch = 16;  // the goldens' split
    return p;
}

// Decodes each (seq, tokens, pos0) round-robin in one batch, logits for every token; returns the logits of
// the batch's last token of each sequence, in sequence order.
struct Seq {
    int32_t id;
    std::vector<int32_t> tokens;
    int32_t pos0;
};
std::vector<std::vector<float>> decode(Context &ctx, const std::vector<Seq> &seqs) {
    std::vector<int32_t> tok, pos, sid;
    std::vector<int32_t> last(seqs.size(), -1);
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (size_t s = 0; s < seqs.size(); ++s) {
            if (i >= seqs[s].tokens.size()) continue;
            any = true;
            last[s] = static_cast<int32_t>(tok.size());
            tok.push_back(seqs[s].tokens[i]);
            pos.push_back(seqs[s].pos0 + static_cast<int32_t>(i));
            sid.push_back(seqs[s].id);
        }
        if (!any) break;
    }
    std::vector<int32_t *> sids;
    for (int32_t &s : sid) sids.push_back(&s);
    std::vector<int8_t> out(tok.size(), 1);
    Batch b;
    b.n_tokens = static_cast<int32_t>(tok.size());
    b.token = tok.data();
    b.pos = pos.data();
    b.seq_id = sids.data();
    b.logits = out.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    std::vector<std::vector<float>> res;
    const size_t n_vocab = ctx.model().hparams().n_vocab;
    for (int32_t i : last) {
        const float *l = ctx.logits_ith(i);
        res.emplace_back(l, l + n_vocab);
    }
    return res;
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t = {1};
    while (static_cast<int>(t.size()) < n) t.push_back(3 + static_cast<int32_t>(rng() % 500));
    return t;
}

class FamilyState : public ::testing::TestWithParam<const char *> {};

TEST_P(FamilyState, WholeStateRoundTrip) {
    auto m = Model::load(fixture(GetParam()));
    Context a(*m, params());
    // longer than the window of 8, so the window's mask is what the continuation depends on
    decode(a, {{0, random_tokens(32, 1), 0}, {1, random_tokens(10, 2), 0}, {2, random_tokens(7, 3), 0}});
    const std::vector<uint8_t> saved = state_test::state_image(a);

    Context b(*m, params());
    EXPECT_EQ(ContextState::read(b, saved.data(), saved.size(), true), saved.size());
    EXPECT_EQ(state_test::state_image(b), saved);
    const std::vector<Seq> next = {{0, {5, 6, 7}, 32}, {1, {8, 9}, 10}, {2, {10, 11, 12, 13}, 7}};
    EXPECT_EQ(decode(a, next), decode(b, next));

    // the same through a session file
    const std::string path = ::testing::TempDir() + "lctx_state_" + GetParam() + ".bin";
    const std::vector<int32_t> toks = {1, 2, 3};
    ContextState::save_file(a, path, toks.data(), toks.size());
    Context c(*m, params());
    EXPECT_EQ(ContextState::load_file(c, path, 16), toks);
    std::remove(path.c_str());
    const std::vector<Seq> more = {{0, {14}, 35}, {2, {15, 16}, 11}};
    EXPECT_EQ(decode(a, more), decode(c, more));
}

// One sequence's state into another context's sequence: the continuation matches the original's.
TEST_P(FamilyState, SequenceStateRoundTrip) {
    auto m = Model::load(fixture(GetParam()));
    Context a(*m, params());
    decode(a, {{0, random_tokens(20, 4), 0}, {1, random_tokens(26, 5), 0}});
    std::vector<uint8_t> seq1(ContextState::size_seq(a, 1));
    BufferStateWriter w(seq1.data(), seq1.size());
    ContextState::write_seq(a, w, 1);

    // into sequence 2 of a context whose own cells come first, and into sequence 0 of an empty one
    Context b(*m, params());
    decode(b, {{0, random_tokens(12, 6), 0}});
    EXPECT_EQ(ContextState::read_seq(b, seq1.data(), seq1.size(), 2), seq1.size());
    Context c(*m, params());
    EXPECT_EQ(ContextState::read_seq(c, seq1.data(), seq1.size(), 0), seq1.size());

    const std::vector<int32_t> next = {21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
    const auto want = decode(a, {{1, next, 26}});
    const auto got_b = decode(b, {{2, next, 26}});
    const auto got_c = decode(c, {{0, next, 26}});
    // The restored cells sit elsewhere than the original's (which had sequence 0's in between): that moves
    // them within the SIMD lanes of the attention sums, summation order only (see the context tests'
    // kOrderTol).
    ASSERT_EQ(want[0].size(), got_c[0].size());
    float d = 0.0f;
    for (size_t i = 0; i < want[0].size(); ++i) d = std::max(d, std::fabs(want[0][i] - got_b[0][i]));
    EXPECT_LE(d, 2e-3f);
    float dc = 0.0f;
    for (size_t i = 0; i < want[0].size(); ++i) dc = std::max(dc, std::fabs(want[0][i] - got_c[0][i]));
    EXPECT_LE(dc, 2e-3f);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FamilyState, ::testing::Values("gemma2", "bloom"));

}  // namespace
}  // namespace lctx::gemma2_bloom_state_test
