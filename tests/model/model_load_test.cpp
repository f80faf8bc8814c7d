// Model loading: what is bound, and the clear errors for what cannot be.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "gguf/gguf.h"
#include "model/model.h"
#include "vocab/vocab.h"

namespace lctx {
namespace {

const std::string kStories = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";

// Rewrites stories260K with an edit applied to its metadata and tensors; returns the temp path.
std::string rewrite(const std::string &tag, const std::function<bool(const std::string &)> &keep_tensor,
                    const std::function<void(gguf::Writer &)> &edit_kv) {
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    edit_kv(w);
    for (const gguf::TensorInfo &t : f->tensors())
        if (keep_tensor(t.name)) w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
    const std::string path = (std::filesystem::temp_directory_path() / ("lctx-model-" + tag + ".gguf")).string();
    w.write_file(path);
    return path;
}

void expect_load_error(const std::string &path, const std::string &needle) {
    try {
        Model::load(path);
        FAIL() << "loading " << path << " should fail";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

TEST(ModelLoad, StoriesHyperParameters) {
    auto m = Model::load(kStories);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch_name, "llama");
    EXPECT_EQ(hp.n_embd, 64u);
    EXPECT_EQ(hp.n_layer, 5u);
    EXPECT_EQ(hp.n_head, 8u);
    EXPECT_EQ(hp.n_head_kv, 4u);
    EXPECT_EQ(hp.n_ff, 172u);
    EXPECT_EQ(hp.n_vocab, 512u);
    EXPECT_EQ(hp.rope.n_rot, 8);
    EXPECT_EQ(m->vocab().n_tokens(), 512);
    EXPECT_GT(m->n_params(), 200000u);
    EXPECT_EQ(m->description().rfind("llama ", 0), 0u);
}

TEST(ModelLoad, WeightsStayInTheMappedFile) {
    // Every matrix is a view into the mapped GGUF bytes in its stored type: no f32 copy.
    for (const char *type : {"Q4_0", "Q6_K", "F16"}) {
        auto m = Model::load(std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-" + type + ".gguf");
        const uint8_t *lo = m->file().bytes();
        const uint8_t *hi = lo + m->file().size();
        auto inside = [&](const kernels::WeightView &w) {
            return w.data >= lo && w.data + w.rows * w.row_bytes <= hi;
        };
        EXPECT_TRUE(inside(m->weights().token_embd));
        EXPECT_TRUE(inside(m->weights().output));
        for (const LayerWeights &l : m->weights().layers) {
            for (const kernels::WeightView *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
                EXPECT_TRUE(inside(*w));
                EXPECT_STREQ(type_name(w->type), type_name(m->weights().layers[0].wq.type));
            }
        }
    }
}

TEST(ModelLoad, UnsupportedArchitectureIsNamed) {
    const std::string p = rewrite("arch", [](const std::string &) { return true; },
                                  [](gguf::Writer &w) { w.set_string("general.architecture", "frobnitz"); });
    expect_load_error(p, "frobnitz");
}

TEST(ModelLoad, MissingTensorIsNamed) {
    const std::string p = rewrite("missing", [](const std::string &n) { return n != "blk.3.ffn_up.weight"; },
                                  [](gguf::Writer &) {});
    expect_load_error(p, "blk.3.ffn_up.weight");
}

TEST(ModelLoad, WrongShapeIsNamed) {
    const std::string p = rewrite("shape", [](const std::string &) { return true; },
                                  [](gguf::Writer &w) { w.set_u32("llama.feed_forward_length", 100); });
    expect_load_error(p, "ffn_gate");
}

TEST(ModelLoad, MissingHyperParameterIsNamed) {
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata())
        if (kv.key != "llama.block_count") w.set(kv.key, kv.value);
    for (const gguf::TensorInfo &t : f->tensors()) w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
    const std::string p = (std::filesystem::temp_directory_path() / "lctx-model-nolayers.gguf").string();
    w.write_file(p);
    expect_load_error(p, "llama.block_count");
}

TEST(ModelLoad, HeadsThatDoNotDivideAreRefused) {
    const std::string p = rewrite("heads", [](const std::string &) { return true; },
                                  [](gguf::Writer &w) { w.set_u32("llama.attention.head_count_kv", 3); });
    expect_load_error(p, "head_count");
}

TEST(ModelLoad, NotAGgufFile) {
    const std::string p = (std::filesystem::temp_directory_path() / "lctx-model-text.gguf").string();
    FILE *f = std::fopen(p.c_str(), "wb");
    std::fputs("this is not a model", f);
    std::fclose(f);
    EXPECT_THROW(Model::load(p), Error);
    std::remove(p.c_str());
    EXPECT_THROW(Model::load("/nonexistent/model.gguf"), Error);
}

TEST(ModelLoad, VocabOnlySkipsWeights) {
    ModelLoadOptions o;
    o.vocab_only = true;
    auto m = Model::load(kStories, o);
    EXPECT_EQ(m->vocab().n_tokens(), 512);
    EXPECT_TRUE(m->weights().layers.empty());
}

}  // namespace
}  // namespace lctx
