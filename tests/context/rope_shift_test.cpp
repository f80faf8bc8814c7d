// The K-shift of models whose RoPE has a magnitude (YaRN's scale, LongRoPE's rope.scaling.attn_factor): after
// seq_add / seq_div the cached keys equal those a direct decode at the new positions computes, moved cells
// and unmoved ones alike, and so do the logits that follow. (b4748 multiplies every cached key by the
// magnitude again at each shift; lctx rotates by the angles alone: include/llama.h lists the difference.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../gguf_rewrite.h"
#include "context/context.h"
#include "model/model.h"
#include "tensor/fp16.h"
#include "tensor/types.h"

namespace lctx::rope_shift_test {
namespace {

std::string fixture(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

// llama-F16.gguf as a YaRN file: factor 4 over an original context of 32 (magnitude 1 + 0.1 ln 4).
std::string yarn_file() {
    testing::Rewrite r;
    r.add = [](gguf::Writer &w) {
        w.set_string("llama.rope.scaling.type", "yarn");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
        w.set_u32("llama.rope.scaling.original_context_length", 32);
    };
    return testing::rewrite_gguf(fixture("llama-F16"), r, "shift-yarn");
}

// phi3.gguf as a LongRoPE file: both factor tables, an original context of 64 and an attention factor
// of 1.19.
std::string longrope_file() {
    testing::Rewrite r;
    r.add = [](gguf::Writer &w) {
        w.set_u32("phi3.rope.scaling.original_context_length", 64);
        w.set_f32("phi3.rope.scaling.attn_factor", 1.19f);
        std::vector<float> long_f(16), short_f(16);
        for (int i = 0; i < 16; ++i) {
            long_f[size_t(i)] = 1.0f + 0.75f * static_cast<float>(i);
            short_f[size_t(i)] = 1.0f + 0.05f * static_cast<float>(i * i % 7);
        }
        w.add_tensor("rope_factors_long.weight", GgmlType::F32, {16}, long_f.data(), 16 * sizeof(float));
        w.add_tensor("rope_factors_short.weight", GgmlType::F32, {16}, short_f.data(), 16 * sizeof(float));
    };
    return testing::rewrite_gguf(fixture("phi3"), r, "shift-longrope");
}

struct Tok {
    int32_t token, pos, seq;
};

// Decodes the tokens as one batch, logits for every one; returns them [n][n_vocab].
std::vector<std::vector<float>> decode(Context &ctx, const std::vector<Tok> &toks) {
    const size_t n = toks.size();
    std::vector<int32_t> tok(n), pos(n), sid(n), nseq(n, 1);
    std::vector<int32_t *> sids(n);
    std::vector<int8_t> all(n, 1);
    for (size_t i = 0; i < n; ++i) {
        tok[i] = toks[i].token;
        pos[i] = toks[i].pos;
        sid[i] = toks[i].seq;
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
        if (l) out.emplace_back(l, l + n_vocab);
    }
    return out;
}

std::unique_ptr<Context> make(const Model &m, GgmlType type_k) {
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_seq_max = 3;
    cp.n_ubatch = 64;
    cp.type_k = type_k;
    cp.type_v = GgmlType::F32;
    return std::make_unique<Context>(m, cp);
}

// Layer 0's key row of a cell, as floats.
std::vector<float> key_row(const Context &ctx, uint32_t cell) {
    const KvView &v = ctx.kv().view();
    const HParams &hp = ctx.model().hparams();
    const size_t n = hp.n_embd_k_gqa();
    std::vector<float> out(n);
    const uint8_t *k = v.k[0] + cell * v.k_row_bytes;
    for (size_t i = 0; i < n; ++i) {
        if (v.type_k == GgmlType::F32) {
            std::memcpy(&out[i], k + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, k + 2 * i, 2);
            out[i] = fp16_to_fp32(h);
        }
    }
    return out;
}

// The prompt: 12 tokens of sequence 0 and 6 of sequence 1 (positions from 0), one token of sequence 2 at 20.
std::vector<Tok> prompt() {
    const std::vector<int32_t> t0 = {1, 313, 368, 303, 412, 425, 390, 340, 139, 41, 404, 181};
    const std::vector<int32_t> t1 = {1, 201, 153, 256, 294, 17};
    std::vector<Tok> toks;
    for (size_t i = 0; i < t0.size(); ++i) toks.push_back({t0[i], static_cast<int32_t>(i), 0});
    for (size_t i = 0; i < t1.size(); ++i) toks.push_back({t1[i], static_cast<int32_t>(i), 1});
    toks.push_back({99, 20, 2});
    return toks;
}

// The same tokens decoded directly at the positions the shifted context's cells hold now (the batch took
// cells 0, 1, ... in order in both contexts).
std::vector<Tok> at_new_positions(const Context &shifted, const std::vector<Tok> &toks) {
    std::vector<Tok> direct = toks;
    for (size_t i = 0; i < toks.size(); ++i) direct[i].pos = shifted.kv().cells()[i].pos;
    return direct;
}

// Every cell's layer-0 key (which depends on the token and its position only) against the direct decode's:
// within tol of the row's largest value.
void expect_same_keys(const Context &shifted, const Context &direct, size_t n_cells, float tol,
                      const std::string &what) {
    for (uint32_t c = 0; c < n_cells; ++c) {
        const std::vector<float> a = key_row(shifted, c), b = key_row(direct, c);
        float scale = 1.0f, diff = 0.0f;
        for (size_t i = 0; i < a.size(); ++i) {
            scale = std::max(scale, std::fabs(b[i]));
            diff = std::max(diff, std::fabs(a[i] - b[i]));
        }
        EXPECT_LT(diff, tol * scale) << what << ": cell " << c << " (pos " << shifted.kv().cells()[c].pos
                                     << ")";
    }
}

float max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// Key tolerances relative to a row's largest value: an F32 key rotated twice against once differs by float
// rounding (~1e-6); an F16 key is rounded twice (2^-11 each). A magnitude applied once more is 14% (YaRN
// here) or 19% (LongRoPE here) off.
constexpr float kKeyTolF32 = 1e-4f;
constexpr float kKeyTolF16 = 2e-3f;
// Logits with an F16 cache against another route to the same cache: fixtures/golden/FORMAT.md's f16-cache
// tolerance.
constexpr float kLogitTolF16 = 2e-2f;

class RopeMagnitudeShift : public ::testing::TestWithParam<const char *> {
  protected:
    void SetUp() override {
        path_ = std::string(GetParam()) == "yarn" ? yarn_file() : longrope_file();
        model_ = Model::load(path_);
        const kernels::RopeParams &r = model_->hparams().rope;
        // The files do give the rotation a magnitude (else this tests nothing).
        ASSERT_TRUE(r.attn_factor != 1.0f || r.ext_factor != 0.0f);
    }
    void TearDown() override { std::filesystem::remove(path_); }

    // Runs `op` on a context holding prompt(), then checks every cell's key against a direct decode.
    void check_keys(GgmlType type_k, float tol, const std::function<void(KvCache &)> &op, const char *what) {
        auto shifted = make(*model_, type_k), direct = make(*model_, type_k);
        const std::vector<Tok> toks = prompt();
        decode(*shifted, toks);
        op(shifted->kv());
        shifted->kv().apply_shift(*model_);
        decode(*direct, at_new_positions(*shifted, toks));
        expect_same_keys(*shifted, *direct, toks.size(), tol, what);
    }

    std::string path_;
    std::unique_ptr<Model> model_;
};

TEST_P(RopeMagnitudeShift, KeysAfterSeqAddEqualADirectDecode) {
    // Sequence 0's positions 5.. move by +7 (its first five cells stay), sequence 1 and 2 do not move.
    for (GgmlType t : {GgmlType::F32, GgmlType::F16})
        check_keys(
            t, t == GgmlType::F32 ? kKeyTolF32 : kKeyTolF16, [](KvCache &kv) { kv.seq_add(0, 5, -1, 7); },
            "seq_add");
    // Twice, and back down: two shifts apply no magnitude either.
    check_keys(
        GgmlType::F32, kKeyTolF32,
        [&](KvCache &kv) {
            kv.seq_add(1, 2, -1, 30);
            kv.apply_shift(*model_);
            kv.seq_add(1, 3, -1, -2);
        },
        "seq_add twice");
}

TEST_P(RopeMagnitudeShift, KeysAfterSeqDivEqualADirectDecode) {
    for (GgmlType t : {GgmlType::F32, GgmlType::F16})
        check_keys(
            t, t == GgmlType::F32 ? kKeyTolF32 : kKeyTolF16,
            [](KvCache &kv) { ASSERT_TRUE(kv.seq_div(0, 4, -1, 3)); }, "seq_div");
}

// Whole sequences moved (so every layer's keys and values are those of the new positions): sequence 0 by
// +9, sequence 2's single token divided down, sequence 1 unmoved; the next token of each, decoded together,
// gets the logits of a context that decoded everything at the new positions.
TEST_P(RopeMagnitudeShift, LogitsAfterShiftsEqualADirectDecode) {
    auto shifted = make(*model_, GgmlType::F16), direct = make(*model_, GgmlType::F16);
    const std::vector<Tok> toks = prompt();
    decode(*shifted, toks);
    shifted->kv().seq_add(0, 0, -1, 9);
    ASSERT_TRUE(shifted->kv().seq_div(2, 0, -1, 4));
    decode(*direct, at_new_positions(*shifted, toks));
    const std::vector<Tok> next = {{300, 21, 0}, {255, 6, 1}, {66, 6, 2}};
    const std::vector<std::vector<float>> a = decode(*shifted, next), b = decode(*direct, next);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (size_t i = 0; i < next.size(); ++i)
        EXPECT_LT(max_abs_diff(a[i], b[i]), kLogitTolF16) << "sequence " << next[i].seq;
}

INSTANTIATE_TEST_SUITE_P(Files, RopeMagnitudeShift, ::testing::Values("yarn", "longrope"));

}  // namespace
}  // namespace lctx::rope_shift_test
