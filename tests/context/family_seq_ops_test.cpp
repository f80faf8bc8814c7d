// Sequence operations on a qwen2 context (NeoX rotation, q/k/v biases): a shift re-rotates the cached keys as
// a direct decode at the new positions would have rotated them, and a copied / truncated sequence continues
// as a fresh decode of the same tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/model.h"

namespace lctx::family_seq_ops_test {
namespace {

const std::string kQwen2 = std::string(LCTX_FIXTURES_DIR) + "/golden/models/qwen2.gguf";

const Model &qwen2() {
    static const std::unique_ptr<Model> m = Model::load(kQwen2);
    return *m;
}

// F32 cache: a shifted or copied key then differs from a fresh one by float rounding only.
std::unique_ptr<Context> make(uint32_t n_seq_max = 1) {
    ContextParams cp;
    cp.n_ctx = 128;
    cp.n_seq_max = n_seq_max;
    cp.n_ubatch = 16;
    cp.type_k = cp.type_v = GgmlType::F32;
    return std::make_unique<Context>(qwen2(), cp);
}

struct Entry {
    int32_t token, pos, seq;
};

// Decodes the entries as one batch with logits for every entry; returns them [n][n_vocab].
std::vector<std::vector<float>> decode(Context &ctx, const std::vector<Entry> &entries) {
    const size_t n = entries.size();
    std::vector<int32_t> tok(n), pos(n), sid(n), nseq(n, 1);
    std::vector<int32_t *> sids(n);
    std::vector<int8_t> all(n, 1);
    for (size_t i = 0; i < n; ++i) {
        tok[i] = entries[i].token;
        pos[i] = entries[i].pos;
        sid[i] = entries[i].seq;
        sids[i] = &sid[i];
    }
    Batch b;
    b.n_tokens = static_cast<int32_t>(n);
    b.token = tok.data();
    b.pos = pos.data();
    b.n_seq_id = nseq.data();
    b.seq_id = sids.data();
    b.logits = all.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    std::vector<std::vector<float>> out;
    const uint32_t n_vocab = ctx.model().hparams().n_vocab;
    for (size_t i = 0; i < n; ++i) {
        const float *l = ctx.logits_ith(static_cast<int32_t>(i));
        out.emplace_back(l, l + n_vocab);
    }
    return out;
}

// tokens[i] at positions pos0 + i of one sequence.
std::vector<Entry> run(const std::vector<int32_t> &tokens, int32_t pos0, int32_t seq = 0) {
    std::vector<Entry> e;
    for (size_t i = 0; i < tokens.size(); ++i) e.push_back({tokens[i], pos0 + static_cast<int32_t>(i), seq});
    return e;
}

float max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

const std::vector<int32_t> kPrompt = {1,   313, 368, 303, 412, 425, 390, 340,
                                      139, 41,  404, 181, 129, 4,   73,  21};

// A key rotated twice (to its old position, then by the shift) against once, in float: measured 1.4e-6 in the
// logits here (this model's attention is far less sharp than the llama fixture's); a shift without
// re-rotation, or with llama's pairing, is off by about 1.
constexpr float kShiftTol = 1e-4f;
// The same keys and values by another route (another batch split): summation order only (measured 1.9e-6).
constexpr float kSameTol = 1e-4f;

TEST(Qwen2SeqOps, SeqAddMatchesADirectDecode) {
    auto shifted = make(), direct = make();
    const int32_t shift = 37, n = static_cast<int32_t>(kPrompt.size());
    decode(*shifted, run(kPrompt, 0));
    shifted->kv().seq_add(0, 0, -1, shift);
    const std::vector<float> a = decode(*shifted, {{300, n + shift, 0}})[0];
    decode(*direct, run(kPrompt, shift));
    const std::vector<float> b = decode(*direct, {{300, n + shift, 0}})[0];
    EXPECT_LT(max_abs_diff(a, b), kShiftTol);
}

// seq_cp 0 -> 1, seq_rm(0, 8, -1), then both continue in one interleaved batch: each continues as a fresh
// context decoding its tokens from the start.
TEST(Qwen2SeqOps, CopyAndRemoveThenContinueAsFreshDecodes) {
    auto ctx = make(2);
    decode(*ctx, run(kPrompt, 0));
    ctx->kv().seq_cp(0, 1, -1, -1);
    ASSERT_TRUE(ctx->kv().seq_rm(0, 8, -1));
    EXPECT_EQ(ctx->kv().seq_pos_max(0), 7);
    EXPECT_EQ(ctx->kv().seq_pos_max(1), 15);
    const std::vector<int32_t> more0 = {201, 153, 256, 294}, more1 = {148, 275, 311};
    std::vector<Entry> both;
    for (size_t i = 0; i < 4; ++i) {
        both.push_back({more0[i], 8 + static_cast<int32_t>(i), 0});
        if (i < 3) both.push_back({more1[i], 16 + static_cast<int32_t>(i), 1});
    }
    const std::vector<std::vector<float>> got = decode(*ctx, both);

    std::vector<int32_t> all0(kPrompt.begin(), kPrompt.begin() + 8), all1 = kPrompt;
    all0.insert(all0.end(), more0.begin(), more0.end());
    all1.insert(all1.end(), more1.begin(), more1.end());
    auto fresh0 = make(), fresh1 = make();
    const std::vector<std::vector<float>> want0 = decode(*fresh0, run(all0, 0));
    const std::vector<std::vector<float>> want1 = decode(*fresh1, run(all1, 0));
    size_t i0 = 8, i1 = 16;
    for (size_t i = 0; i < both.size(); ++i) {
        const std::vector<float> &want = both[i].seq == 0 ? want0[i0++] : want1[i1++];
        EXPECT_LT(max_abs_diff(got[i], want), kSameTol) << "batch entry " << i;
    }
}

}  // namespace
}  // namespace lctx::family_seq_ops_test
