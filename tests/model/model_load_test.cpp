// Model loading: what is bound, and the clear errors for what cannot be.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "model/model.h"
#include "vocab/vocab.h"

namespace lctx::model_load_test {
namespace {

const std::string kStories = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";

// Rewrites stories260K with an edit applied to its metadata and tensors; returns the temp path.
// A file in the temp folder for this test process alone: ctest runs the model suite at several ISA levels
// side by side.
std::string temp_model_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() /
            ("lctx-model-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
        .string();
}

std::string rewrite(const std::string &tag, const std::function<bool(const std::string &)> &keep_tensor,
                    const std::function<void(gguf::Writer &)> &edit_kv) {
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    edit_kv(w);
    for (const gguf::TensorInfo &t : f->tensors())
        if (keep_tensor(t.name)) w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
    const std::string path = temp_model_path(tag);
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

TEST(ModelLoad, RepackCopiesEveryMatrixWithItsBytes) {
    // With repacking off, every matrix is a view into the mapped GGUF bytes in its stored type: no copy.
    // With it on (the default), every matrix is copied into the huge-page arena, interleaved where its type
    // has that layout and as it is otherwise (F32, Q5_K), and each of its rows reads back as the file's
    // bytes.
    for (const char *type : {"Q4_0", "Q5_0", "Q8_0", "Q4_K", "Q6_K", "Q5_K", "F16", "BF16"}) {
        SCOPED_TRACE(type);
        const std::string path = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-" + type + ".gguf";
        ModelLoadOptions plain_opts;
        plain_opts.repack = false;
        auto plain = Model::load(path, plain_opts);
        auto m = Model::load(path);
        auto inside = [&](const Model &model, const kernels::WeightView &w) {
            const uint8_t *b = model.file().bytes(), *e = b + model.file().size();
            return w.data >= b && w.data + w.rows * w.row_bytes <= e;
        };
        // This model's output matrix is untied: the embedding table is only looked up and stays mapped.
        ASSERT_NE(plain->weights().output.data, plain->weights().token_embd.data);
        EXPECT_TRUE(inside(*m, m->weights().token_embd));
        EXPECT_FALSE(m->weights().token_embd.interleaved());
        const kernels::WeightView &out = m->weights().output;
        EXPECT_EQ(out.interleaved(), kernels::can_interleave(out.type, out.rows, out.cols))
            << type_name(out.type);
        const std::string ts = type;
        const bool has_layout = ts == "Q4_0" || ts == "Q5_0" || ts == "Q8_0" || ts == "Q4_K" ||
                                ts == "Q6_K" || ts == "F16" || ts == "BF16";  // not Q5_K
        int n_packed = 0;
        for (size_t il = 0; il < m->weights().layers.size(); ++il) {
            const LayerWeights &l = m->weights().layers[il];
            const LayerWeights &pl = plain->weights().layers[il];
            const kernels::WeightView *ws[] = {&l.wq,       &l.wk,     &l.wv,      &l.wo,
                                               &l.ffn_gate, &l.ffn_up, &l.ffn_down};
            const kernels::WeightView *ps[] = {&pl.wq,       &pl.wk,     &pl.wv,      &pl.wo,
                                               &pl.ffn_gate, &pl.ffn_up, &pl.ffn_down};
            for (size_t i = 0; i < 7; ++i) {
                const kernels::WeightView &w = *ws[i], &p = *ps[i];
                EXPECT_TRUE(inside(*plain, p));
                EXPECT_FALSE(p.interleaved());
                EXPECT_STREQ(type_name(w.type), type_name(m->weights().layers[0].wq.type));
                EXPECT_EQ(w.interleaved(), has_layout);
                n_packed += w.interleaved();
                EXPECT_FALSE(inside(*m, w));
                // in the groups the active level's kernels read
                if (w.interleaved()) {
                    EXPECT_EQ(w.group_rows, kernels::type_kernels(w.type).group_rows);
                }
                std::vector<uint8_t> row(p.row_bytes);
                for (int64_t r = 0; r < w.rows; ++r) {
                    if (w.interleaved()) {
                        kernels::deinterleave_row(w.type, w.group_rows, w.data, w.row_bytes, r, w.cols,
                                                  row.data());
                    } else {
                        ASSERT_EQ(w.row_bytes, p.row_bytes);
                        std::memcpy(row.data(), w.data + r * w.row_bytes, p.row_bytes);
                    }
                    ASSERT_EQ(std::memcmp(row.data(), p.data + r * p.row_bytes, p.row_bytes), 0)
                        << "row " << r;
                }
            }
        }
        if (has_layout) {
            EXPECT_GT(n_packed, 0);
        }
    }
}

TEST(ModelLoad, UnsupportedArchitectureIsNamed) {
    const std::string p = rewrite(
        "arch", [](const std::string &) { return true; },
        [](gguf::Writer &w) { w.set_string("general.architecture", "frobnitz"); });
    expect_load_error(p, "frobnitz");
}

TEST(ModelLoad, MissingTensorIsNamed) {
    const std::string p = rewrite(
        "missing", [](const std::string &n) { return n != "blk.3.ffn_up.weight"; }, [](gguf::Writer &) {});
    expect_load_error(p, "blk.3.ffn_up.weight");
}

TEST(ModelLoad, WrongShapeIsNamed) {
    const std::string p = rewrite(
        "shape", [](const std::string &) { return true; },
        [](gguf::Writer &w) { w.set_u32("llama.feed_forward_length", 100); });
    expect_load_error(p, "ffn_gate");
}

TEST(ModelLoad, MatrixOfATypeNoWeightKernelReadsIsNamed) {
    // Q8_1 is computed as an activation format but no weight product reads it: refused at load, naming the
    // tensor, not loaded and then failing inside the first decode.
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (t.name != "blk.0.ffn_gate.weight") {
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
            continue;
        }
        std::vector<uint8_t> zeros(row_size(GgmlType::Q8_1, t.ne[0]) * static_cast<size_t>(t.ne[1]));
        w.add_tensor(t.name, GgmlType::Q8_1, t.ne, zeros.data(), zeros.size());
    }
    const std::string p = temp_model_path("q8_1");
    w.write_file(p);
    expect_load_error(p, "blk.0.ffn_gate.weight");
}

TEST(ModelLoad, MissingHyperParameterIsNamed) {
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata())
        if (kv.key != "llama.block_count") w.set(kv.key, kv.value);
    for (const gguf::TensorInfo &t : f->tensors())
        w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
    const std::string p = temp_model_path("nolayers");
    w.write_file(p);
    expect_load_error(p, "llama.block_count");
}

TEST(ModelLoad, HeadsThatDoNotDivideAreRefused) {
    const std::string p = rewrite(
        "heads", [](const std::string &) { return true; },
        [](gguf::Writer &w) { w.set_u32("llama.attention.head_count_kv", 3); });
    expect_load_error(p, "head_count");
}

TEST(ModelLoad, NotAGgufFile) {
    const std::string p = temp_model_path("text");
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

TEST(ModelLoad, VocabOnlyCountsTheFilesTensorsAndNeverReportsProgress) {
    // b4748 counts every tensor of the file (its loader's statistics), reads no hyper-parameter but the
    // vocabulary size, leaves the description empty and never calls the progress callback.
    auto full = Model::load(kStories);
    int calls = 0;
    ModelLoadOptions o;
    o.vocab_only = true;
    o.progress = [](float, void *ud) {
        ++*static_cast<int *>(ud);
        return false;  // would cancel a load that asked
    };
    o.progress_user_data = &calls;
    auto m = Model::load(kStories, o);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(m->n_params(), full->n_params());
    EXPECT_EQ(m->size_bytes(), full->size_bytes());
    uint64_t bytes = 0;
    for (const gguf::TensorInfo &t : full->file().tensors()) bytes += t.nbytes;
    EXPECT_EQ(m->size_bytes(), bytes);
    EXPECT_EQ(m->description(), "");
    EXPECT_EQ(m->hparams().n_layer, 0u);
    EXPECT_EQ(m->hparams().n_vocab, 512u);
    EXPECT_EQ(m->hparams().arch_name, "llama");
}

TEST(ModelLoad, VocabOnlyNeedsNoHyperParameters) {
    // No tensors and none of the sizes HParams::load requires.
    const std::string p = temp_model_path("vocabonly");
    {
        auto f = gguf::File::open(kStories);
        gguf::Writer w;
        for (const gguf::KeyValue &kv : f->metadata())
            if (kv.key.rfind("llama.", 0) != 0) w.set(kv.key, kv.value);
        w.write_file(p);
    }
    ModelLoadOptions o;
    o.vocab_only = true;
    auto m = Model::load(p, o);
    EXPECT_EQ(m->vocab().n_tokens(), 512);
    EXPECT_EQ(m->n_params(), 0u);
    std::remove(p.c_str());
}

// ---- the tensors a family binds ----------------------------------------------------------------------

TEST(ModelLoad, TensorsNoDeclarationBindsAreRefusedByName) {
    std::vector<float> junk(64, 1.0f);
    const std::string p = temp_model_path("junk");
    {
        auto f = gguf::File::open(kStories);
        gguf::Writer w;
        for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
        for (const gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        w.add_tensor("blk.0.junk.weight", GgmlType::F32, {64}, junk.data(), junk.size() * sizeof(float));
        w.add_tensor("blk.9.attn_q.weight", GgmlType::F32, {64}, junk.data(), junk.size() * sizeof(float));
        w.write_file(p);
    }
    try {
        Model::load(p);
        FAIL() << "a file with unused tensors must be refused";
    } catch (const Error &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("2 tensors"), std::string::npos) << msg;
        EXPECT_NE(msg.find("'blk.0.junk.weight'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("'blk.9.attn_q.weight'"), std::string::npos) << msg;
    }
    std::remove(p.c_str());
}

TEST(ModelLoad, MisShapedOptionalBiasIsNamed) {
    std::vector<float> b(5, 0.0f);
    const std::string p = temp_model_path("badbias");
    {
        auto f = gguf::File::open(kStories);
        gguf::Writer w;
        for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
        for (const gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        w.add_tensor("blk.2.attn_output.bias", GgmlType::F32, {5}, b.data(), b.size() * sizeof(float));
        w.write_file(p);
    }
    expect_load_error(p, "blk.2.attn_output.bias");
}

// ---- llama_model_desc: b4748's "<arch> <size class> <file type>" -------------------------------------

// stories260K with its layers repeated up to n_layer (the size class follows the layer count).
std::string with_layers(const std::string &tag, uint32_t n_layer,
                        const std::function<void(gguf::Writer &)> &edit) {
    auto f = gguf::File::open(kStories);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    w.set_u32("llama.block_count", n_layer);
    edit(w);
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (t.name.rfind("blk.", 0) != 0) {
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
            continue;
        }
        const size_t dot = t.name.find('.', 4);
        const int src = std::stoi(t.name.substr(4, dot - 4));
        for (uint32_t il = static_cast<uint32_t>(src); il < n_layer; il += 5)
            w.add_tensor("blk." + std::to_string(il) + t.name.substr(dot), t.type, t.ne, f->tensor_data(t),
                         t.nbytes);
    }
    const std::string path = temp_model_path(tag);
    w.write_file(path);
    return path;
}

TEST(ModelDesc, GuessedFileTypeAndUnknownSize) {
    // stories260K has no general.file_type and 5 layers: b4748 prints "llama ?B all F32 (guessed)".
    auto m = Model::load(kStories);
    EXPECT_EQ(m->description(), "llama ?B all F32 (guessed)");
    EXPECT_EQ(m->file_type(), 0 | 1024);
}

TEST(ModelDesc, SizeClassFromTheLayerCountAndDeclaredFileType) {
    struct Case {
        uint32_t n_layer;
        int64_t ftype;  // -1: none declared
        const char *want;
    };
    for (const Case &c :
         {Case{32, 15, "llama 7B Q4_K - Medium"}, Case{22, 2, "llama 1B Q4_0"},
          Case{40, -1, "llama 13B all F32 (guessed)"}, Case{26, 27, "llama 3B IQ3_S mix - 3.66 bpw"},
          Case{12, 99, "llama ?B unknown, may not work"}}) {
        const std::string p =
            with_layers("desc" + std::to_string(c.n_layer), c.n_layer, [&](gguf::Writer &w) {
                if (c.ftype >= 0) w.set_u32("general.file_type", static_cast<uint32_t>(c.ftype));
            });
        auto m = Model::load(p);
        EXPECT_EQ(m->description(), c.want);
        std::remove(p.c_str());
    }
}

}  // namespace
}  // namespace lctx::model_load_test
