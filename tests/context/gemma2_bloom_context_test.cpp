// The context with the gemma2 fixture (sliding window of 8 in layer 0, soft-caps) and the bloom fixture
// (ALiBi): sequences decoded together, split into micro-batches of any size, give each sequence's logits
// decoded alone; the window hides exactly the positions n_swa and more back; sequence copies, removals and
// shifts give what a direct decode gives (for ALiBi, whose keys hold no position, bit for bit).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "context/context.h"
#include "gguf_rewrite.h"
#include "model/model.h"

namespace lctx::gemma2_bloom_context_test {
namespace {

std::string fixture(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t = {1};
    while (static_cast<int>(t.size()) < n) t.push_back(3 + static_cast<int32_t>(rng() % 500));
    return t;
}

ContextParams params(uint32_t n_ubatch = 512, uint32_t n_seq_max = 1) {
    ContextParams p;
    p.n_ctx = 256;
    p.n_seq_max = n_seq_max;
    p.n_ubatch = n_ubatch;
    p.type_k = p.type_v = GgmlType::F32;  // only the summation order differs between the ways compared
    return p;
}

// One batch: the tokens of each (seq, tokens, pos0) entry, round-robin, every token with logits. Returns
// the logits of each entry's tokens, [entry][token][n_vocab].
struct Seq {
    int32_t id;
    std::vector<int32_t> tokens;
    int32_t pos0 = 0;
};
std::vector<std::vector<float>> decode_interleaved(Context &ctx, std::vector<Seq> seqs) {
    std::vector<int32_t> tok, pos, sid;
    std::vector<std::pair<size_t, size_t>> who;
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (size_t s = 0; s < seqs.size(); ++s) {
            if (i >= seqs[s].tokens.size()) continue;
            any = true;
            tok.push_back(seqs[s].tokens[i]);
            pos.push_back(seqs[s].pos0 + static_cast<int32_t>(i));
            sid.push_back(seqs[s].id);
            who.emplace_back(s, i);
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
    const size_t n_vocab = ctx.model().hparams().n_vocab;
    std::vector<std::vector<float>> res(seqs.size());
    for (size_t s = 0; s < seqs.size(); ++s) res[s].resize(seqs[s].tokens.size() * n_vocab);
    for (size_t i = 0; i < who.size(); ++i) {
        const float *l = ctx.logits_ith(static_cast<int32_t>(i));
        if (!l) {
            ADD_FAILURE() << "no logits for batch index " << i;
            continue;
        }
        std::copy(l, l + n_vocab, res[who[i].first].begin() + who[i].second * n_vocab);
    }
    return res;
}

std::vector<float> decode_alone(const Model &m, const std::vector<int32_t> &tokens, int32_t pos0 = 0) {
    Context ctx(m, params());
    return decode_interleaved(ctx, {{0, tokens, pos0}})[0];
}

// What a different summation order alone moves these logits by. The two synthetic models are sensitive to it:
// one sequence decoded at the scalar, AVX2 and AVX-512 levels differs by up to 6.4e-4 (gemma2) and 3.5e-4
// (bloom) with an f32 cache (stories260K: 1e-5), and decoding it among other sequences moves the SIMD lanes
// its cells fall in as much. A wrong mask (another sequence's cells, a position outside the window) moves
// them by far more than this.
constexpr float kOrderTol = 2e-3f;

float max_diff(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float d = 0.0f;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

class Families : public ::testing::TestWithParam<const char *> {};

// Three sequences longer than the window, decoded together in micro-batches of 64, 16, 5 and 1 tokens.
TEST_P(Families, InterleavedMicroBatchesGiveEachSequenceAlone) {
    auto m = Model::load(fixture(GetParam()));
    const std::vector<std::vector<int32_t>> toks = {random_tokens(30, 1), random_tokens(14, 2),
                                                    random_tokens(9, 3)};
    std::vector<std::vector<float>> alone;
    for (const auto &t : toks) alone.push_back(decode_alone(*m, t));
    for (uint32_t n_ubatch : {64u, 16u, 5u, 1u}) {
        SCOPED_TRACE(n_ubatch);
        Context ctx(*m, params(n_ubatch, 3));
        const auto got = decode_interleaved(ctx, {{0, toks[0]}, {1, toks[1]}, {2, toks[2]}});
        for (size_t s = 0; s < toks.size(); ++s)
            EXPECT_LE(max_diff(got[s], alone[s]), kOrderTol) << "seq " << s;
    }
}

// Copy a prompt to a second sequence, cut the first one short, and continue both in one batch: each gives
// what its own tokens decoded directly give.
TEST_P(Families, SequenceCopyAndRemove) {
    auto m = Model::load(fixture(GetParam()));
    const std::vector<int32_t> prompt = random_tokens(20, 4), more0 = random_tokens(7, 5),
                               more1 = random_tokens(5, 6);
    Context ctx(*m, params(8, 2));
    decode_interleaved(ctx, {{0, prompt}});
    ctx.kv().seq_cp(0, 1, -1, -1);
    ctx.kv().seq_rm(0, 12, -1);
    const auto got = decode_interleaved(ctx, {{0, {more0.begin() + 1, more0.end()}, 12}, {1, more1, 20}});

    std::vector<int32_t> direct0(prompt.begin(), prompt.begin() + 12), direct1 = prompt;
    direct0.insert(direct0.end(), more0.begin() + 1, more0.end());
    direct1.insert(direct1.end(), more1.begin(), more1.end());
    const size_t n_vocab = m->hparams().n_vocab;
    const std::vector<float> want0 = decode_alone(*m, direct0), want1 = decode_alone(*m, direct1);
    EXPECT_LE(max_diff(got[0], {want0.begin() + 12 * n_vocab, want0.end()}), kOrderTol);
    EXPECT_LE(max_diff(got[1], {want1.begin() + 20 * n_vocab, want1.end()}), kOrderTol);
}

// A context shift: the first 8 positions dropped and the rest moved back by 8. The next tokens then see the
// same tokens at the same distances as without the shift, so their logits are those of a cache that only
// dropped the 8 positions. ALiBi keys hold no position: bit for bit; RoPE keys are re-rotated: rounding only.
TEST_P(Families, ShiftKeepsRelativePositions) {
    auto m = Model::load(fixture(GetParam()));
    const bool alibi = m->hparams().use_alibi;
    const std::vector<int32_t> prompt = random_tokens(24, 7), next = random_tokens(6, 8);
    Context shifted(*m, params(16)), plain(*m, params(16));
    decode_interleaved(shifted, {{0, prompt}});
    decode_interleaved(plain, {{0, prompt}});
    shifted.kv().seq_rm(0, 0, 8);
    shifted.kv().seq_add(0, 8, -1, -8);
    plain.kv().seq_rm(0, 0, 8);
    EXPECT_EQ(shifted.kv().seq_pos_max(0), 15);
    const auto a = decode_interleaved(shifted, {{0, {next.begin() + 1, next.end()}, 16}});
    const auto b = decode_interleaved(plain, {{0, {next.begin() + 1, next.end()}, 24}});
    if (alibi)
        EXPECT_EQ(a[0], b[0]);
    else
        EXPECT_LE(max_diff(a[0], b[0]), kOrderTol);
    // and a whole sequence moved forward: the same again
    Context moved(*m, params(16));
    decode_interleaved(moved, {{0, prompt}});
    moved.kv().seq_add(0, 0, -1, 100);
    const auto c = decode_interleaved(moved, {{0, {next.begin() + 1, next.end()}, 124}});
    Context direct(*m, params(16));
    decode_interleaved(direct, {{0, prompt}});
    const auto d = decode_interleaved(direct, {{0, {next.begin() + 1, next.end()}, 24}});
    if (alibi)
        EXPECT_EQ(c[0], d[0]);
    else
        EXPECT_LE(max_diff(c[0], d[0]), kOrderTol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Families, ::testing::Values("gemma2", "bloom"));

// ALiBi sees only distances: a sequence decoded at positions 1000.. gives the logits of positions 0.., bit
// for bit.
TEST(BloomContext, PositionsOnlyCountAsDistances) {
    auto m = Model::load(fixture("bloom"));
    const std::vector<int32_t> t = random_tokens(25, 9);
    EXPECT_EQ(decode_alone(*m, t, 0), decode_alone(*m, t, 1000));
}

// The window of gemma2's even layers, on the fixture cut to its first layer (a window of 8 in every layer):
// the last token's logits depend on exactly the 8 positions up to its own (one layer: a cell's key and value
// depend only on its token and position). A token changed 8 positions back changes nothing, not a bit; one
// changed 7 back changes them.
TEST(Gemma2Context, WindowHidesEightPositionsBack) {
    testing::Rewrite r;
    for (const char *t : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "post_attention_norm",
                          "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"})
        r.drop.push_back(std::string("blk.1.") + t + ".weight");
    r.drop.push_back("gemma2.block_count");
    r.add = [](gguf::Writer &w) { w.set_u32("gemma2.block_count", 1); };
    const std::string path = testing::rewrite_gguf(fixture("gemma2"), r, "gemma2-one-layer");
    auto m = Model::load(path);
    std::filesystem::remove(path);
    ASSERT_EQ(m->hparams().n_layer, 1u);
    ASSERT_TRUE(m->hparams().layer_is_swa(0));

    const size_t n_vocab = m->hparams().n_vocab;
    const std::vector<int32_t> base = random_tokens(20, 10);  // the last token at position 19
    auto last = [&](const std::vector<int32_t> &t) {
        const std::vector<float> all = decode_alone(*m, t);
        return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(n_vocab), all.end());
    };
    const std::vector<float> want = last(base);
    for (int p : {3, 11}) {  // 16 and 8 positions back: outside the window
        std::vector<int32_t> t = base;
        t[p] = t[p] == 7 ? 8 : 7;
        EXPECT_EQ(last(t), want) << "changed position " << p;  // the same keys and values in the window
    }
    std::vector<int32_t> t = base;
    t[12] = t[12] == 7 ? 8 : 7;  // 7 positions back: inside
    EXPECT_GT(max_diff(last(t), want), 1e-3f);
}

}  // namespace
}  // namespace lctx::gemma2_bloom_context_test
