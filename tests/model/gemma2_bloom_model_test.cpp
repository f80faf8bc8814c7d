// The gemma2 and bloom fixtures load with the hyper-parameters their forward passes need (sliding window and
// its layers, soft-capping, ALiBi), and a file that lacks a tensor, has a mis-shaped or an extra one, or
// lacks a required key is refused with its name (rewritten fixtures through gguf::Writer).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "model/model.h"
#include "util/error.h"

namespace lctx::gemma2_bloom_model_test {
namespace {

std::string fixture(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

using testing::dropping;
using testing::Rewrite;

std::string rewritten(const std::string &name, const Rewrite &r, const std::string &tag) {
    return testing::rewrite_gguf(fixture(name), r, tag);
}

// Loading `path` throws an lctx::Error whose message contains `what`; the file is removed.
void expect_refused(const std::string &path, const std::string &what) {
    try {
        Model::load(path);
        ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
}

TEST(Gemma2Model, FixtureHyperParameters) {
    auto m = Model::load(fixture("gemma2"));
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Gemma2);
    EXPECT_EQ(hp.n_swa, 8u);
    ASSERT_EQ(hp.swa_layers.size(), 2u);
    EXPECT_TRUE(hp.layer_is_swa(0));  // b4748: the even layers
    EXPECT_FALSE(hp.layer_is_swa(1));
    EXPECT_EQ(hp.attn_softcap, 5.0f);
    EXPECT_EQ(hp.final_softcap, 10.0f);
    EXPECT_EQ(hp.rope.mode, kernels::RopeMode::Neox);
    EXPECT_FALSE(hp.use_alibi);
    EXPECT_EQ(m->weights().output.data, m->weights().token_embd.data);  // tied
    EXPECT_FALSE(m->weights().layers[1].attn_post_norm.empty());
    EXPECT_FALSE(m->weights().layers[1].ffn_post_norm.empty());
}

TEST(Gemma2Model, DefaultsOfGemma2) {
    // no window or caps in the file: Gemma 2's 4096, 50 and 30, as b4748
    const std::string path =
        rewritten("gemma2",
                  dropping({"gemma2.attention.sliding_window", "gemma2.attn_logit_softcapping",
                            "gemma2.final_logit_softcapping"}),
                  "defaults");
    auto m = Model::load(path);
    EXPECT_EQ(m->hparams().n_swa, 4096u);
    EXPECT_EQ(m->hparams().attn_softcap, 50.0f);
    EXPECT_EQ(m->hparams().final_softcap, 30.0f);
    std::filesystem::remove(path);
}

TEST(Gemma2Model, RefusesBadFiles) {
    expect_refused(rewritten("gemma2", dropping({"blk.1.post_ffw_norm.weight"}), "g-missing"),
                   "blk.1.post_ffw_norm.weight");
    expect_refused(rewritten("gemma2", dropping({"blk.0.attn_k.weight"}), "g-missing-k"),
                   "blk.0.attn_k.weight");
    Rewrite shape;
    shape.reshape = "blk.0.ffn_gate.weight";
    shape.reshape_ne = {128, 200};
    expect_refused(rewritten("gemma2", shape, "g-shape"), "blk.0.ffn_gate.weight");
    // gemma2's output is its embeddings: a file with an output matrix is not one b4748 loads
    Rewrite extra;
    extra.add = [](gguf::Writer &w) {
        static std::vector<float> zeros(128 * 512, 0.0f);
        w.add_tensor("output.weight", GgmlType::F32, {128, 512}, zeros.data(), zeros.size() * sizeof(float));
    };
    expect_refused(rewritten("gemma2", extra, "g-extra"), "output.weight");
    expect_refused(rewritten("gemma2", dropping({"gemma2.attention.layer_norm_rms_epsilon"}), "g-eps"),
                   "gemma2.attention.layer_norm_rms_epsilon");
    Rewrite cap;
    cap.drop = {"gemma2.attn_logit_softcapping"};
    cap.add = [](gguf::Writer &w) { w.set_f32("gemma2.attn_logit_softcapping", -5.0f); };
    expect_refused(rewritten("gemma2", cap, "g-cap"), "gemma2.attn_logit_softcapping");
}

TEST(BloomModel, FixtureHyperParameters) {
    auto m = Model::load(fixture("bloom"));
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Bloom);
    EXPECT_TRUE(hp.use_alibi);
    EXPECT_EQ(hp.max_alibi_bias, 8.0f);  // b4748's value for bloom
    EXPECT_EQ(hp.n_swa, 0u);
    EXPECT_FLOAT_EQ(hp.norm_eps, 1e-5f);
    const ModelWeights &w = m->weights();
    EXPECT_FALSE(w.token_embd_norm_b.empty());
    EXPECT_FALSE(w.output_norm_b.empty());
    EXPECT_NE(w.output.data, w.token_embd.data);  // the fixture has its own output matrix
    EXPECT_EQ(w.layers[0].bq.size(), 128u);       // attn_qkv.bias split into q | k | v
    EXPECT_EQ(w.layers[0].bv.size(), 128u);
    EXPECT_TRUE(w.layers[0].ffn_gate.data == nullptr);  // ungated feed-forward
}

TEST(BloomModel, RefusesBadFiles) {
    expect_refused(rewritten("bloom", dropping({"blk.0.attn_qkv.bias"}), "b-missing"), "blk.0.attn_qkv.bias");
    expect_refused(rewritten("bloom", dropping({"token_embd_norm.bias"}), "b-missing-tn"),
                   "token_embd_norm.bias");
    Rewrite shape;
    shape.reshape = "blk.1.attn_qkv.weight";
    shape.reshape_ne = {128, 320};
    expect_refused(rewritten("bloom", shape, "b-shape"), "blk.1.attn_qkv.weight");
    expect_refused(rewritten("bloom", dropping({"bloom.attention.layer_norm_epsilon"}), "b-eps"),
                   "bloom.attention.layer_norm_epsilon");
}

// b4748 gives bloom ALiBi's maximum bias 8 and never reads attention.max_alibi_bias: a file that carries
// another value (or a nonsensical one) loads with 8.
TEST(BloomModel, MaxAlibiBiasIsEightWhateverTheFileSays) {
    for (float file_bias : {4.0f, -1.0f}) {
        Rewrite bias;
        bias.add = [file_bias](gguf::Writer &w) { w.set_f32("bloom.attention.max_alibi_bias", file_bias); };
        const std::string path = rewritten("bloom", bias, "b-alibi");
        auto m = Model::load(path);
        EXPECT_EQ(m->hparams().max_alibi_bias, 8.0f) << file_bias;
        std::filesystem::remove(path);
    }
}

TEST(BloomModel, TiedOutputWithoutOutputMatrix) {
    const std::string path = rewritten("bloom", dropping({"output.weight"}), "b-tied");
    auto m = Model::load(path);
    EXPECT_EQ(m->weights().output.data, m->weights().token_embd.data);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lctx::gemma2_bloom_model_test
