// Control vectors: the file reader (llama.cpp's control-vector GGUF: direction.N tensors read by the engine,
// several files summed with their scales), its refusals, llama_apply_adapter_cvec's semantics in every family
// b4748 applies it to (checked against a direct computation: the same direction added as the feed-forward
// output's bias), and the --control-vector options of lctx run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "generate/control_vector_file.h"
#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "llama.h"

namespace lctx::testing::control_vector_test {
namespace {

using generate::ControlVector;
using generate::ControlVectorSource;

const std::string kModels = std::string(LCTX_FIXTURES_DIR) + "/golden/models/";
const std::string kStories = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";

std::string temp_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() /
            ("lctx-cvec-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
        .string();
}

// A control-vector file: one F32 direction per layer given.
std::string write_cvec(const std::string &tag, const std::map<int, std::vector<float>> &dirs,
                       const std::function<void(gguf::Writer &)> &more = nullptr) {
    gguf::Writer w;
    w.set_string("general.architecture", "controlvector");
    w.set_string("controlvector.model_hint", "llama");
    w.set_i32("controlvector.layer_count", dirs.empty() ? 0 : dirs.rbegin()->first);
    for (const auto &[layer, v] : dirs)
        w.add_tensor("direction." + std::to_string(layer), GgmlType::F32, {static_cast<int64_t>(v.size())},
                     v.data(), v.size() * sizeof(float));
    if (more) more(w);
    const std::string path = temp_path(tag);
    w.write_file(path);
    return path;
}

std::vector<float> ramp(size_t n, float a, float b) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = a * std::sin(b * static_cast<float>(i + 1));
    return v;
}

// ---- the reader ----

TEST(ControlVectorFile, LaysOutLayersFromOneAndSumsScaledFiles) {
    const auto d1 = ramp(8, 0.5f, 0.7f), d3 = ramp(8, -1.5f, 0.3f), e3 = ramp(8, 2.0f, 1.1f),
               e4 = ramp(8, 0.25f, 2.3f);
    const std::string a = write_cvec("sum-a", {{1, d1}, {3, d3}});
    const std::string b = write_cvec("sum-b", {{3, e3}, {4, e4}});
    ControlVector cv;
    std::string why;
    ASSERT_TRUE(generate::control_vector_load({{a, 0.5f}, {b, -2.0f}}, &cv, &why)) << why;
    EXPECT_EQ(cv.n_embd, 8);
    EXPECT_EQ(cv.layer_count, 4);
    EXPECT_EQ(cv.model_hint, "llama");
    ASSERT_EQ(cv.data.size(), 4u * 8);
    for (size_t j = 0; j < 8; ++j) {
        EXPECT_EQ(cv.data[j], d1[j] * 0.5f);  // layer 1 at [0, 8)
        EXPECT_EQ(cv.data[8 + j], 0.0f);      // layer 2: in no file
        EXPECT_EQ(cv.data[16 + j], d3[j] * 0.5f + e3[j] * -2.0f);
        EXPECT_EQ(cv.data[24 + j], e4[j] * -2.0f);
    }
    std::filesystem::remove(a);
    std::filesystem::remove(b);
}

TEST(ControlVectorFile, RefusesMalformedFilesNamingTheProblem) {
    const std::vector<float> v(8, 0.1f);
    auto refused = [](const std::vector<ControlVectorSource> &src, const std::string &needle) {
        ControlVector cv;
        std::string why;
        if (!generate::control_vector_load(src, &cv, &why)) {
            EXPECT_NE(why.find(needle), std::string::npos) << why;
            return;
        }
        ADD_FAILURE() << "accepted; expected: " << needle;
    };
    refused({{"/nonexistent/cvec.gguf", 1.0f}}, "/nonexistent/cvec.gguf");
    const std::string empty = write_cvec("empty", {});
    refused({{empty, 1.0f}}, "no direction tensors");
    const std::string zero = write_cvec("zero", {{0, v}});
    refused({{zero, 1.0f}}, "tensor 'direction.0' is not a direction");
    const std::string other = write_cvec("other", {{1, v}}, [&](gguf::Writer &w) {
        w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {8}, v.data(), v.size() * sizeof(float));
    });
    refused({{other, 1.0f}}, "tensor 'blk.0.attn_q.weight' is not a direction");
    const std::string signed_name = write_cvec("signed", {}, [&](gguf::Writer &w) {
        w.add_tensor("direction.+1", GgmlType::F32, {8}, v.data(), v.size() * sizeof(float));
    });
    refused({{signed_name, 1.0f}}, "tensor 'direction.+1' is not a direction");
    const std::string huge = write_cvec("huge", {}, [&](gguf::Writer &w) {
        w.add_tensor("direction.99999999999", GgmlType::F32, {8}, v.data(), v.size() * sizeof(float));
    });
    refused({{huge, 1.0f}}, "is not a direction");
    const std::string f16 = write_cvec("f16", {}, [&](gguf::Writer &w) {
        const std::vector<uint16_t> h(8, 0x3c00);
        w.add_tensor("direction.1", GgmlType::F16, {8}, h.data(), h.size() * 2);
    });
    refused({{f16, 1.0f}}, "tensor 'direction.1' is not F32");
    const std::string two_d = write_cvec("2d", {}, [&](gguf::Writer &w) {
        w.add_tensor("direction.1", GgmlType::F32, {4, 2}, v.data(), v.size() * sizeof(float));
    });
    refused({{two_d, 1.0f}}, "tensor 'direction.1' is not one-dimensional");
    const std::string mixed = write_cvec("mixed", {{1, v}, {2, std::vector<float>(6, 0.1f)}});
    refused({{mixed, 1.0f}}, "tensor 'direction.2' has 6 values, the others 8");
    std::vector<float> nan = v;
    nan[3] = std::nanf("");
    const std::string bad_value = write_cvec("nan", {{2, nan}});
    refused({{bad_value, 1.0f}}, "tensor 'direction.2' holds a non-finite value at 3");
    const std::string good = write_cvec("good", {{1, v}});
    const std::string narrow = write_cvec("narrow", {{1, std::vector<float>(6, 0.1f)}});
    refused({{good, 1.0f}, {narrow, 1.0f}}, "its directions have 6 values, those of the files before it 8");
    refused({{good, std::nanf("")}}, "not a finite number");
    const std::string not_gguf = temp_path("text");
    {
        std::FILE *f = std::fopen(not_gguf.c_str(), "wb");
        std::fputs("hello, not a gguf file at all", f);
        std::fclose(f);
    }
    refused({{not_gguf, 1.0f}}, not_gguf);
    for (const std::string &p :
         {empty, zero, other, signed_name, huge, f16, two_d, mixed, bad_value, good, narrow, not_gguf})
        std::filesystem::remove(p);
}

TEST(ControlVectorFile, ParsesFileColonScale) {
    ControlVectorSource s;
    std::string why;
    ASSERT_TRUE(generate::parse_control_vector_arg("a.gguf", &s, &why));
    EXPECT_EQ(s.path, "a.gguf");
    EXPECT_EQ(s.scale, 1.0f);
    ASSERT_TRUE(generate::parse_control_vector_arg("dir/a.gguf:-0.75", &s, &why));
    EXPECT_EQ(s.path, "dir/a.gguf");
    EXPECT_EQ(s.scale, -0.75f);
    ASSERT_TRUE(generate::parse_control_vector_arg("odd:name.gguf", &s, &why));  // not a number: a path
    EXPECT_EQ(s.path, "odd:name.gguf");
    EXPECT_FALSE(generate::parse_control_vector_arg("a.gguf:inf", &s, &why));
    EXPECT_NE(why.find("finite"), std::string::npos);
    // A file whose name ends in ":2" is taken whole when it exists.
    const std::string colon = temp_path("colon") + ":2";
    {
        std::FILE *f = std::fopen(colon.c_str(), "wb");
        std::fclose(f);
    }
    ASSERT_TRUE(generate::parse_control_vector_arg(colon, &s, &why));
    EXPECT_EQ(s.path, colon);
    EXPECT_EQ(s.scale, 1.0f);
    std::filesystem::remove(colon);
}

// ---- the engine (llama_apply_adapter_cvec) ----

struct Model {
    llama_model *m = nullptr;
    explicit Model(const std::string &path) {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        m = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    }
    ~Model() { llama_model_free(m); }
};

// Every output of one sequence (logits, or embeddings with `embd`), with `setup` run on the fresh context.
std::vector<float> outputs(llama_model *m, const std::function<void(llama_context *)> &setup,
                           bool embd = false) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_threads = p.n_threads_batch = 1;
    p.embeddings = embd;
    llama_context *ctx = llama_init_from_model(m, p);
    EXPECT_NE(ctx, nullptr);
    if (!ctx) return {};
    if (setup) setup(ctx);
    std::vector<llama_token> toks = {1, 45, 78, 201, 33, 9, 120, 64};
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    for (llama_token &t : toks) t %= n_vocab;
    llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
    for (size_t i = 0; i < toks.size(); ++i) {
        b.token[i] = toks[i];
        b.pos[i] = static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = static_cast<int32_t>(toks.size());
    if (llama_model_has_encoder(m))
        EXPECT_EQ(llama_encode(ctx, b), 0);
    else
        EXPECT_EQ(llama_decode(ctx, b), 0);
    std::vector<float> out;
    const int32_t width = embd ? llama_model_n_embd(m) : n_vocab;
    for (size_t i = 0; i < toks.size(); ++i) {
        const float *o = embd ? llama_get_embeddings_ith(ctx, static_cast<int32_t>(i))
                              : llama_get_logits_ith(ctx, static_cast<int32_t>(i));
        if (o) out.insert(out.end(), o, o + width);
    }
    if (embd && out.empty()) {  // a pooled model: one vector for the sequence
        const float *o = llama_get_embeddings_seq(ctx, 0);
        if (o) out.assign(o, o + width);
    }
    llama_batch_free(b);
    llama_free(ctx);
    return out;
}

float max_diff(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float d = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// A direction per layer 1 .. n_layer - 1 (the buffer starts at layer 1).
std::vector<float> directions(llama_model *m, float amplitude) {
    const int32_t n_embd = llama_model_n_embd(m), n_layer = llama_model_n_layer(m);
    return ramp(static_cast<size_t>(n_embd) * static_cast<size_t>(n_layer - 1), amplitude, 0.37f);
}

// In each family b4748 applies control vectors to: zeros change nothing, a range without layers changes
// nothing, a vector in range changes the output, NULL switches it off; a wrong width is refused.
TEST(ControlVectorApply, EveryDecoderFamilyAppliesItInRangeOnly) {
    for (const std::string name : {"llama-F16", "qwen2", "phi3", "gemma2", "bloom", "mamba"}) {
        SCOPED_TRACE(name);
        Model model(kModels + name + ".gguf");
        ASSERT_NE(model.m, nullptr);
        llama_model *m = model.m;
        const int32_t n_embd = llama_model_n_embd(m), n_layer = llama_model_n_layer(m);
        const std::vector<float> plain = outputs(m, nullptr);
        const std::vector<float> zeros(static_cast<size_t>(n_embd) * (n_layer - 1), 0.0f);
        const std::vector<float> v = directions(m, 0.5f);
        EXPECT_EQ(outputs(m,
                          [&](llama_context *c) {
                              EXPECT_EQ(
                                  llama_apply_adapter_cvec(c, zeros.data(), zeros.size(), n_embd, 1, n_layer),
                                  0);
                          }),
                  plain);
        EXPECT_EQ(
            outputs(m,
                    [&](llama_context *c) {
                        EXPECT_EQ(
                            llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, n_layer, n_layer + 5), 0);
                    }),
            plain);
        EXPECT_GT(max_diff(outputs(m,
                                   [&](llama_context *c) {
                                       EXPECT_EQ(llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1,
                                                                          n_layer - 1),
                                                 0);
                                   }),
                           plain),
                  1e-3f);
        EXPECT_EQ(outputs(m,
                          [&](llama_context *c) {
                              llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1, n_layer - 1);
                              EXPECT_EQ(llama_apply_adapter_cvec(c, nullptr, 0, 0, 0, 0), 0);
                          }),
                  plain);
        outputs(m, [&](llama_context *c) {
            EXPECT_EQ(llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd + 1, 1, n_layer - 1), 1);
        });
    }
}

// b4748 builds BERT without control vectors: an encoder's embeddings ignore it.
TEST(ControlVectorApply, BertIgnoresItAsB4748) {
    Model model(kModels + "bert.gguf");
    ASSERT_NE(model.m, nullptr);
    llama_model *m = model.m;
    const int32_t n_embd = llama_model_n_embd(m), n_layer = llama_model_n_layer(m);
    const std::vector<float> v = directions(m, 0.5f);
    const std::vector<float> plain = outputs(m, nullptr, true);
    ASSERT_FALSE(plain.empty());
    EXPECT_EQ(outputs(
                  m,
                  [&](llama_context *c) {
                      EXPECT_EQ(llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1, n_layer), 0);
                  },
                  true),
              plain);
}

// The direct computation: a direction added to the residual stream after layer il's feed-forward block is
// the same sum as that direction added to the feed-forward output's bias (ffn_down.bias, which llama and
// bloom read; the model file is rewritten with it). Only the order of two float additions differs.
TEST(ControlVectorApply, EqualsTheDirectionAddedAfterTheFeedForward) {
    for (const std::string &path : {kStories, kModels + "llama-F16.gguf", kModels + "bloom.gguf"}) {
        SCOPED_TRACE(path);
        Model base(path);
        ASSERT_NE(base.m, nullptr);
        const int32_t n_embd = llama_model_n_embd(base.m), n_layer = llama_model_n_layer(base.m);
        const std::vector<float> v = directions(base.m, 0.3f);
        // Layers 2 .. n_layer - 1 in range (the range's start counts; the two-layer synthetic models: layer
        // 1), scaled by 1.5 through a file.
        const int32_t start = std::min(2, n_layer - 1);
        std::map<int, std::vector<float>> dirs;
        for (int32_t il = 1; il < n_layer; ++il)
            dirs[il] = std::vector<float>(v.begin() + (il - 1) * n_embd, v.begin() + il * n_embd);
        const std::string cvec_path = write_cvec("direct", dirs);
        ControlVector cv;
        std::string why;
        ASSERT_TRUE(generate::control_vector_load({{cvec_path, 1.5f}}, &cv, &why)) << why;
        std::filesystem::remove(cvec_path);
        const std::vector<float> with_cvec = outputs(base.m, [&](llama_context *c) {
            EXPECT_EQ(
                llama_apply_adapter_cvec(c, cv.data.data(), cv.data.size(), cv.n_embd, start, n_layer - 1),
                0);
        });

        auto file = gguf::File::open(path);
        Rewrite rw;
        std::vector<std::vector<float>> biases(static_cast<size_t>(n_layer));
        for (int32_t il = start; il < n_layer; ++il) {
            const std::string name = "blk." + std::to_string(il) + ".ffn_down.bias";
            std::vector<float> &bias = biases[static_cast<size_t>(il)];
            bias.assign(static_cast<size_t>(n_embd), 0.0f);
            if (const gguf::TensorInfo *t = file->find_tensor(name)) {
                ASSERT_EQ(t->type, GgmlType::F32);
                std::memcpy(bias.data(), file->tensor_data(*t), bias.size() * sizeof(float));
                rw.drop.push_back(name);
            }
            for (int32_t j = 0; j < n_embd; ++j) bias[j] += 1.5f * v[(il - 1) * n_embd + j];
        }
        rw.add = [&](gguf::Writer &w) {
            for (int32_t il = start; il < n_layer; ++il)
                w.add_tensor("blk." + std::to_string(il) + ".ffn_down.bias", GgmlType::F32, {n_embd},
                             biases[static_cast<size_t>(il)].data(),
                             static_cast<size_t>(n_embd) * sizeof(float));
        };
        const std::string biased_path = rewrite_gguf(path, rw, "cvec-bias");
        Model biased(biased_path);
        std::filesystem::remove(biased_path);
        ASSERT_NE(biased.m, nullptr);
        const std::vector<float> with_bias = outputs(biased.m, nullptr);
        const std::vector<float> plain = outputs(base.m, nullptr);
        EXPECT_GT(max_diff(with_cvec, plain), 0.05f);      // the direction matters ...
        EXPECT_LT(max_diff(with_cvec, with_bias), 2e-4f);  // ... exactly as the biased model says
    }
}

// b4748 kept the previous call's values for the layers a shorter buffer does not cover; lctx gives them
// none (the call installs exactly the vector it is given).
TEST(ControlVectorApply, AShorterBufferLeavesNoStaleLayers) {
    Model model(kStories);
    ASSERT_NE(model.m, nullptr);
    llama_model *m = model.m;
    const int32_t n_embd = llama_model_n_embd(m), n_layer = llama_model_n_layer(m);
    const std::vector<float> v = directions(m, 0.5f);
    const std::vector<float> layer1(v.begin(), v.begin() + n_embd);
    const std::vector<float> fresh = outputs(m, [&](llama_context *c) {
        EXPECT_EQ(llama_apply_adapter_cvec(c, layer1.data(), layer1.size(), n_embd, 1, n_layer - 1), 0);
    });
    const std::vector<float> after_long = outputs(m, [&](llama_context *c) {
        EXPECT_EQ(llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1, n_layer - 1), 0);
        EXPECT_EQ(llama_apply_adapter_cvec(c, layer1.data(), layer1.size(), n_embd, 1, n_layer - 1), 0);
    });
    EXPECT_EQ(after_long, fresh);
}

// ---- lctx run --control-vector ----

TEST(ControlVectorCli, RunTakesTheFileOptions) {
    Model model(kStories);
    ASSERT_NE(model.m, nullptr);
    const int32_t n_embd = llama_model_n_embd(model.m), n_layer = llama_model_n_layer(model.m);
    std::map<int, std::vector<float>> dirs, zeros;
    for (int32_t il = 1; il < n_layer; ++il) {
        dirs[il] = ramp(static_cast<size_t>(n_embd), 2.0f, 0.1f * static_cast<float>(il));
        zeros[il] = std::vector<float>(static_cast<size_t>(n_embd), 0.0f);
    }
    const std::string strong = write_cvec("cli-strong", dirs), zero = write_cvec("cli-zero", zeros);
    const std::string run =
        "run -m " + kStories + " -p 'Once upon a time' -n 24 --temp 0 -s 42 --json -q -t 1 ";
    auto text_of = [&](const std::string &extra) {
        const CliResult r = run_cli(run + extra, true);
        EXPECT_EQ(r.status, 0) << extra << ": " << r.out;
        return r.out;
    };
    const std::string plain = text_of("");
    EXPECT_EQ(text_of("--control-vector " + zero), plain);
    EXPECT_NE(text_of("--control-vector " + strong), plain);
    EXPECT_EQ(text_of("--control-vector " + strong + ":0"), plain);
    EXPECT_EQ(text_of("--control-vector-scaled " + strong + " 0"), plain);
    // A strong file cancelled by the same file at -1: the sum is zero.
    EXPECT_EQ(text_of("--control-vector " + strong + " --control-vector-scaled " + strong + " -1"), plain);
    EXPECT_EQ(text_of("--control-vector " + strong + ":2"),
              text_of("--control-vector-scaled " + strong + " 2"));
    // Layers outside the model's: nothing applied.
    EXPECT_EQ(text_of("--control-vector " + strong + " --control-vector-layer-range 9 12"), plain);
    EXPECT_NE(text_of("--control-vector " + strong + " --control-vector-layer-range 1 1"), plain);

    auto refused = [&](const std::string &extra, const std::string &needle) {
        const CliResult r = run_cli(run + extra, true);
        EXPECT_EQ(r.status, 1) << extra;
        EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
    };
    const std::string narrow = write_cvec("cli-narrow", {{1, std::vector<float>(8, 0.1f)}});
    refused("--control-vector " + narrow, "the directions have 8 values; the model's embedding has 64");
    refused("--control-vector /nonexistent/cv.gguf", "--control-vector: control vector /nonexistent/cv.gguf");
    refused("--control-vector-scaled " + strong + " abc", "--control-vector-scaled: 'abc'");
    refused("--control-vector-layer-range 1 2", "no --control-vector given");
    refused("--control-vector " + strong + " --control-vector-layer-range 3 2", "START 3 is after END 2");
    for (const std::string &p : {strong, zero, narrow}) std::filesystem::remove(p);
    // chat takes the same options.
    const CliResult help = run_cli("chat --help");
    for (const char *opt : {"--control-vector ", "--control-vector-scaled", "--control-vector-layer-range"})
        EXPECT_NE(help.out.find(opt), std::string::npos) << opt;
}

}  // namespace
}  // namespace lctx::testing::control_vector_test
