// lctx synth: synthesized models load in lctx with the right shapes and types and decode to finite logits;
// the type plan follows llama.cpp's mixture and fallback rules; generation is deterministic in the seed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "../../tools/lctx/synth_model.h"
#include "context/context.h"
#include "model/model.h"

namespace lctx::synth::synth_test {
namespace {

std::string vocab_path(const Shape &s) {
    return std::string(LCTX_FIXTURES_DIR) + "/vocab/" + s.vocab_file;
}

std::string temp_path(const std::string &name) {
    return (std::filesystem::temp_directory_path() / ("lctx_synth_" + std::to_string(getpid()) + "_" + name))
        .string();
}

std::vector<uint8_t> read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

GgmlType type_of(const Model &m, const std::string &name) {
    const gguf::TensorInfo *t = m.file().find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->type : GgmlType::F32;
}

class SynthTinyEachType : public ::testing::TestWithParam<std::string> {};

TEST_P(SynthTinyEachType, LoadsWithShapesAndTypesAndDecodes) {
    const Shape *shape = find_shape("tiny");
    ASSERT_NE(shape, nullptr);
    TypeChoice type;
    ASSERT_TRUE(parse_type(GetParam(), &type));
    Options opts;
    opts.vocab_path = vocab_path(*shape);
    opts.n_threads = 2;
    const std::string path = temp_path(GetParam() + ".gguf");
    const Summary sum = write_model(*shape, type, path, opts);
    EXPECT_EQ(sum.file_bytes, std::filesystem::file_size(path));
    EXPECT_EQ(sum.n_fallback, 0);  // rows of 256 fit every type

    std::unique_ptr<Model> m = Model::load(path);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch_name, "llama");
    EXPECT_EQ(hp.n_embd, 256u);
    EXPECT_EQ(hp.n_layer, 2u);
    EXPECT_EQ(hp.n_head, 4u);
    EXPECT_EQ(hp.n_head_kv, 2u);
    EXPECT_EQ(hp.n_ff, 512u);
    EXPECT_EQ(hp.n_vocab, 32000u);
    EXPECT_EQ(m->file().get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(m->file().get_int("general.file_type"), static_cast<int64_t>(type.file_type));
    EXPECT_EQ(m->n_params(), sum.n_params);

    // Matrices in the asked type (the mixture: Q6_K for output, and attn_v / ffn_down of layer 1 only:
    // llama.cpp's use_more_bits(i, 2) is i >= 7 * 2 / 8); norms in F32 and close to 1.
    const GgmlType big = type.k_mixture ? GgmlType::Q6_K : type.base;
    EXPECT_EQ(type_of(*m, "token_embd.weight"), type.base);
    EXPECT_EQ(type_of(*m, "output.weight"), big);
    for (int il = 0; il < 2; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        EXPECT_EQ(type_of(*m, p + "attn_q.weight"), type.base);
        EXPECT_EQ(type_of(*m, p + "attn_v.weight"), il == 1 ? big : type.base);
        EXPECT_EQ(type_of(*m, p + "ffn_down.weight"), il == 1 ? big : type.base);
        EXPECT_EQ(type_of(*m, p + "ffn_up.weight"), type.base);
        EXPECT_EQ(type_of(*m, p + "attn_norm.weight"), GgmlType::F32);
    }
    const std::vector<float> &norm = m->weights().layers[0].attn_norm;
    ASSERT_EQ(norm.size(), 256u);
    for (float v : norm) EXPECT_NEAR(v, 1.0f, 0.1f);

    ContextParams cp;
    cp.n_ctx = 16;
    Context ctx(*m, cp);
    const int32_t tok = 1;
    Batch b;
    b.n_tokens = 1;
    b.token = &tok;
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
    const float *logits = ctx.logits_ith(0);
    ASSERT_NE(logits, nullptr);
    float lo = logits[0], hi = logits[0];
    for (uint32_t i = 0; i < hp.n_vocab; ++i) {
        ASSERT_TRUE(std::isfinite(logits[i])) << i;
        lo = std::min(lo, logits[i]);
        hi = std::max(hi, logits[i]);
    }
    EXPECT_GT(hi - lo, 1e-4f);  // random weights give spread-out logits, not a constant
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, SynthTinyEachType,
                         ::testing::Values("F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "Q4_K_M", "Q3_K",
                                           "Q5_K"));

TEST(SynthPlan, SmollmFallsBackLikeLlamaCpp) {
    const Shape *s = find_shape("smollm-135m");
    ASSERT_NE(s, nullptr);
    TypeChoice t;
    ASSERT_TRUE(parse_type("q4_k_m", &t));
    const std::vector<TensorPlan> plan = plan_tensors(*s, 50257, t);
    uint64_t n_params = 0;
    std::set<std::string> names;
    for (const TensorPlan &p : plan) {
        names.insert(p.name);
        int64_t n = 1;
        for (int64_t d : p.ne) n *= d;
        n_params += static_cast<uint64_t>(n);
    }
    // SmolLM-135M has 134,515,008 parameters with its 49152-token vocabulary; the GPT-2 one adds 1105 rows
    // of 576 to the (tied) embedding.
    EXPECT_EQ(n_params, 134515008u + 1105u * 576u);
    EXPECT_EQ(names.count("output.weight"), 0u);  // tied
    auto find = [&](const std::string &n) {
        for (const TensorPlan &p : plan)
            if (p.name == n) return p;
        ADD_FAILURE() << n;
        return plan[0];
    };
    // Tied embedding is the output matrix: Q6_K wanted, but 576 is not a multiple of 256 -> Q8_0.
    EXPECT_EQ(find("token_embd.weight").type, GgmlType::Q8_0);
    EXPECT_EQ(find("blk.5.attn_q.weight").wanted, GgmlType::Q4_K);
    EXPECT_EQ(find("blk.5.attn_q.weight").type, GgmlType::Q5_0);
    EXPECT_EQ(find("blk.0.attn_v.weight").wanted, GgmlType::Q6_K);
    EXPECT_EQ(find("blk.0.attn_v.weight").type, GgmlType::Q8_0);
    // ffn_down rows are n_ff = 1536 = 6 * 256: no fallback.
    EXPECT_EQ(find("blk.0.ffn_down.weight").type, GgmlType::Q6_K);
    // use_more_bits for 30 layers: i < 3, i >= 26, (i - 3) % 3 == 2; so 5 gets Q6_K and 6 does not.
    EXPECT_EQ(find("blk.5.ffn_down.weight").type, GgmlType::Q6_K);
    EXPECT_EQ(find("blk.6.ffn_down.weight").type, GgmlType::Q4_K);
}

TEST(SynthPlan, TinyllamaQ4KMLayers) {
    const Shape *s = find_shape("tinyllama-1.1b");
    ASSERT_NE(s, nullptr);
    TypeChoice t;
    ASSERT_TRUE(parse_type("Q4_K_M", &t));
    const std::vector<TensorPlan> plan = plan_tensors(*s, 32000, t);
    uint64_t n_params = 0;
    std::set<int> q6_layers_v, q6_layers_down;
    for (const TensorPlan &p : plan) {
        int64_t n = 1;
        for (int64_t d : p.ne) n *= d;
        n_params += static_cast<uint64_t>(n);
        EXPECT_EQ(p.type, p.wanted) << p.name;  // 2048 and 5632 are multiples of 256
        int il = -1;
        if (std::sscanf(p.name.c_str(), "blk.%d.", &il) == 1 && p.type == GgmlType::Q6_K) {
            if (p.name.find("attn_v") != std::string::npos) {
                q6_layers_v.insert(il);
            } else if (p.name.find("ffn_down") != std::string::npos) {
                q6_layers_down.insert(il);
            } else {
                ADD_FAILURE() << p.name << " should not be Q6_K";
            }
        }
        if (p.name == "output.weight") {
            EXPECT_EQ(p.type, GgmlType::Q6_K);
        }
        if (p.name == "token_embd.weight") {
            EXPECT_EQ(p.type, GgmlType::Q4_K);
        }
    }
    EXPECT_EQ(n_params, 1100048384u);  // TinyLlama-1.1B
    // llama.cpp's use_more_bits for 22 layers: i < 2, i >= 19, and (i - 2) % 3 == 2.
    const std::set<int> expect = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};
    EXPECT_EQ(q6_layers_v, expect);
    EXPECT_EQ(q6_layers_down, expect);
}

// The qwen2 and phi3 shapes: their families' tensors, and parameter counts of the real models (less the
// vocabulary that stands in for Qwen2's).
TEST(SynthPlan, Qwen2AndPhi3MatchTheRealModels) {
    TypeChoice t;
    ASSERT_TRUE(parse_type("Q4_0", &t));
    auto count = [](const std::vector<TensorPlan> &plan, std::set<std::string> *names) {
        uint64_t n_params = 0;
        for (const TensorPlan &p : plan) {
            names->insert(p.name);
            int64_t n = 1;
            for (int64_t d : p.ne) n *= d;
            n_params += static_cast<uint64_t>(n);
        }
        return n_params;
    };
    std::set<std::string> qwen2;
    const Shape *q = find_shape("qwen2-0.5b");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->arch, "qwen2");
    // Qwen2-0.5B: 494,032,768 parameters with 151936 tokens; the GPT-2 vocabulary has 101679 fewer rows of
    // 896 in the tied embedding.
    EXPECT_EQ(count(plan_tensors(*q, 50257, t), &qwen2), 494032768u - 101679u * 896u);
    EXPECT_EQ(qwen2.count("blk.23.attn_k.bias"), 1u);
    EXPECT_EQ(qwen2.count("output.weight"), 0u);  // tied

    std::set<std::string> phi3;
    const Shape *p = find_shape("phi3-mini");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->arch, "phi3");
    EXPECT_EQ(count(plan_tensors(*p, 32064, t), &phi3), 3821079552u);  // Phi-3-mini
    EXPECT_EQ(phi3.count("blk.31.attn_qkv.weight"), 1u);
    EXPECT_EQ(phi3.count("blk.31.attn_q.weight"), 0u);
    EXPECT_EQ(phi3.count("blk.31.ffn_gate.weight"), 0u);  // in ffn_up
    EXPECT_EQ(phi3.count("output.weight"), 1u);
}

// The small qwen2 and phi3 shapes load as their families and decode to finite logits.
TEST(SynthFamilies, TinyQwen2AndPhi3LoadAndDecode) {
    for (const char *name : {"qwen2-tiny", "phi3-tiny"}) {
        const Shape *shape = find_shape(name);
        ASSERT_NE(shape, nullptr);
        TypeChoice type;
        ASSERT_TRUE(parse_type("Q8_0", &type));
        Options opts;
        opts.vocab_path = vocab_path(*shape);
        opts.n_threads = 2;
        const std::string path = temp_path(std::string(name) + ".gguf");
        write_model(*shape, type, path, opts);
        std::unique_ptr<Model> m = Model::load(path);
        EXPECT_EQ(m->hparams().arch_name, shape->arch);
        EXPECT_EQ(m->hparams().rope.mode, kernels::RopeMode::Neox);
        if (shape->arch == "phi3") {
            EXPECT_EQ(m->hparams().n_swa, 8u);
            EXPECT_TRUE(m->hparams().layer_is_swa(1));
        }
        if (shape->arch == "qwen2") {
            ASSERT_EQ(m->weights().layers[1].bk.size(), 128u);
            for (float v : m->weights().layers[1].bk) EXPECT_LT(std::fabs(v), 0.2f);  // a bias, not a norm
        }
        ContextParams cp;
        cp.n_ctx = 16;
        Context ctx(*m, cp);
        const int32_t toks[2] = {1, 2};
        Batch b;
        b.n_tokens = 2;
        b.token = toks;
        ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
        const float *logits = ctx.logits_ith(-1);
        ASSERT_NE(logits, nullptr);
        for (uint32_t i = 0; i < m->hparams().n_vocab; ++i)
            ASSERT_TRUE(std::isfinite(logits[i])) << name << " " << i;
        std::filesystem::remove(path);
    }
}

// bge-small's shape: BAAI/bge-small-en-v1.5 has 33,360,000 parameters, of which its pooler (a 384 x 384
// matrix and its bias, which llama.cpp's converter drops) is not in a GGUF. Q8_0 leaves the position and
// token-type tables F32, as llama-quantize does; the encoder loads and pools, and the reranker has its head.
TEST(SynthFamilies, BertShapes) {
    const Shape *bge = find_shape("bge-small");
    ASSERT_NE(bge, nullptr);
    EXPECT_EQ(bge->arch, "bert");
    TypeChoice t;
    ASSERT_TRUE(parse_type("Q8_0", &t));
    uint64_t n_params = 0;
    std::set<std::string> names;
    for (const TensorPlan &p : plan_tensors(*bge, 30522, t)) {
        int64_t n = 1;
        for (int64_t d : p.ne) n *= d;
        n_params += static_cast<uint64_t>(n);
        names.insert(p.name);
        const bool table = p.name == "position_embd.weight" || p.name == "token_types.weight";
        if (table || p.name == "blk.11.ffn_down.weight") {
            EXPECT_EQ(p.type, table ? GgmlType::F32 : GgmlType::Q8_0) << p.name;
        }
    }
    EXPECT_EQ(n_params, 33360000u - (384u * 384u + 384u));
    EXPECT_EQ(names.count("output.weight"), 0u);
    EXPECT_EQ(names.count("cls.weight"), 0u);
    // bge-rerank-small: bge-small's encoder with a classification head (rank pooling), nothing else
    const Shape *rr = find_shape("bge-rerank-small");
    ASSERT_NE(rr, nullptr);
    std::set<std::string> rr_names;
    for (const TensorPlan &p : plan_tensors(*rr, 30522, t)) rr_names.insert(p.name);
    for (const std::string &n : names) EXPECT_EQ(rr_names.count(n), 1u) << n;
    EXPECT_EQ(rr_names.count("cls.weight"), 1u);

    for (const char *name : {"bert-tiny", "bert-rerank-tiny"}) {
        const Shape *shape = find_shape(name);
        ASSERT_NE(shape, nullptr);
        Options opts;
        opts.vocab_path = vocab_path(*shape);
        opts.n_threads = 1;
        const std::string path = temp_path(std::string(name) + ".gguf");
        write_model(*shape, t, path, opts);
        std::unique_ptr<Model> m = Model::load(path);
        std::filesystem::remove(path);
        EXPECT_EQ(m->hparams().arch, Arch::Bert);
        EXPECT_FALSE(m->hparams().causal_attn);
        const bool rerank = std::string(name) == "bert-rerank-tiny";
        EXPECT_EQ(m->hparams().pooling_type, rerank ? 4 : 2);
        EXPECT_EQ(m->weights().cls.data != nullptr, rerank);
        ContextParams cp;
        cp.n_ctx = 16;
        cp.embeddings = true;
        cp.pooling = PoolingType::Mean;
        Context ctx(*m, cp);
        const int32_t toks[3] = {101, 7592, 102};
        Batch b;
        b.n_tokens = 3;
        b.token = toks;
        ASSERT_EQ(ctx.encode(b), DecodeStatus::Ok);
        const float *e = ctx.embeddings_seq(0);
        ASSERT_NE(e, nullptr);
        for (uint32_t i = 0; i < m->hparams().n_embd; ++i) ASSERT_TRUE(std::isfinite(e[i])) << name;
    }
}

TEST(SynthGenerator, DeterministicInSeedAndRoughlyNormal) {
    const Shape *shape = find_shape("tiny");
    TypeChoice type;
    ASSERT_TRUE(parse_type("Q4_0", &type));
    Options opts;
    opts.vocab_path = vocab_path(*shape);
    const std::string a = temp_path("a.gguf"), b = temp_path("b.gguf"), c = temp_path("c.gguf");
    opts.n_threads = 1;
    write_model(*shape, type, a, opts);
    opts.n_threads = 2;  // threads split rows; the bytes must not depend on it
    write_model(*shape, type, b, opts);
    opts.seed = 7;
    write_model(*shape, type, c, opts);
    const std::vector<uint8_t> ba = read_all(a), bb = read_all(b), bc = read_all(c);
    EXPECT_EQ(ba, bb);
    ASSERT_EQ(ba.size(), bc.size());
    EXPECT_NE(ba, bc);
    for (const std::string &p : {a, b, c}) std::filesystem::remove(p);

    std::vector<float> row(1 << 16);
    double sum = 0, sum2 = 0;
    for (int r = 0; r < 4; ++r) {
        fill_row(tensor_seed(42, "blk.0.attn_q.weight"), r, false, row.data(),
                 static_cast<int64_t>(row.size()));
        for (float v : row) {
            sum += v;
            sum2 += static_cast<double>(v) * v;
        }
    }
    const double n = 4.0 * row.size();
    EXPECT_NEAR(sum / n, 0.0, 2e-4);
    EXPECT_NEAR(std::sqrt(sum2 / n), 0.02, 1e-3);
    fill_row(1, 0, true, row.data(), 1000);
    for (int i = 0; i < 1000; ++i) EXPECT_NEAR(row[i], 1.0f, 0.08f);
}

TEST(SynthErrors, UnknownNamesAndMissingVocab) {
    TypeChoice t;
    EXPECT_FALSE(parse_type("Q3_K_XL", &t));
    EXPECT_EQ(find_shape("gpt-5"), nullptr);
    ASSERT_TRUE(parse_type("F16", &t));
    Options opts;
    opts.vocab_path = "/nonexistent/vocab.gguf";
    EXPECT_THROW(write_model(*find_shape("tiny"), t, temp_path("x.gguf"), opts), Error);
}

}  // namespace
}  // namespace lctx::synth::synth_test

namespace lctx::synth::synth_test {
namespace {

// A write that fails at its last step (the rename onto a directory) leaves no partial file behind.
TEST(SynthFailure, FailedWriteRemovesThePartialFile) {
    const Shape *shape = find_shape("tiny");
    ASSERT_NE(shape, nullptr);
    TypeChoice type;
    ASSERT_TRUE(parse_type("Q4_0", &type));
    Options opts;
    opts.vocab_path = vocab_path(*shape);
    opts.n_threads = 1;
    const std::string dir = temp_path("dir");
    std::filesystem::create_directories(dir + "/inside");  // not empty: rename cannot replace it
    EXPECT_THROW(write_model(*shape, type, dir, opts), std::exception);
    EXPECT_FALSE(std::filesystem::exists(dir + ".part"));
    EXPECT_TRUE(std::filesystem::is_directory(dir + "/inside"));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lctx::synth::synth_test

namespace lctx::synth::synth_test {
namespace {

const TensorPlan *planned(const std::vector<TensorPlan> &plan, const std::string &name) {
    for (const TensorPlan &t : plan)
        if (t.name == name) return &t;
    return nullptr;
}

// Gemma-2-2B's tensors: 8 heads of 256 on a 2304 stream (q is 2048 wide), the two post norms, no output
// matrix.
TEST(SynthFamilies, Gemma2PlanHasGemma2Shapes) {
    const Shape *s = find_shape("gemma2-2b");
    ASSERT_NE(s, nullptr);
    TypeChoice type;
    ASSERT_TRUE(parse_type("Q4_0", &type));
    const std::vector<TensorPlan> plan = plan_tensors(*s, 32000, type);
    EXPECT_EQ(plan.size(), 2u + 26u * 11u);
    ASSERT_NE(planned(plan, "blk.25.attn_q.weight"), nullptr);
    EXPECT_EQ(planned(plan, "blk.25.attn_q.weight")->ne, (std::vector<int64_t>{2304, 2048}));
    EXPECT_EQ(planned(plan, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{2304, 1024}));
    EXPECT_EQ(planned(plan, "blk.0.attn_output.weight")->ne, (std::vector<int64_t>{2048, 2304}));
    EXPECT_EQ(planned(plan, "blk.0.ffn_down.weight")->ne, (std::vector<int64_t>{9216, 2304}));
    EXPECT_NE(planned(plan, "blk.7.post_attention_norm.weight"), nullptr);
    EXPECT_NE(planned(plan, "blk.7.post_ffw_norm.weight"), nullptr);
    EXPECT_EQ(planned(plan, "output.weight"), nullptr);
}

// The small gemma2 and bloom shapes load as their families with the file's settings, and decode.
TEST(SynthFamilies, TinyGemma2AndBloomLoadAndDecode) {
    TypeChoice type;
    ASSERT_TRUE(parse_type("Q8_0", &type));
    for (const char *name : {"gemma2-tiny", "bloom-tiny"}) {
        SCOPED_TRACE(name);
        const Shape *s = find_shape(name);
        ASSERT_NE(s, nullptr);
        Options opts;
        opts.vocab_path = vocab_path(*s);
        opts.n_threads = 2;
        const std::string path = temp_path(std::string(name) + ".gguf");
        write_model(*s, type, path, opts);
        std::unique_ptr<Model> m = Model::load(path);
        const HParams &hp = m->hparams();
        EXPECT_EQ(hp.arch_name, s->arch);
        if (s->arch == "gemma2") {
            EXPECT_EQ(hp.n_embd_head_k, 128u);
            EXPECT_EQ(hp.n_swa, 16u);
            EXPECT_EQ(hp.attn_softcap, 50.0f);
            EXPECT_EQ(hp.final_softcap, 30.0f);
        } else {
            EXPECT_TRUE(hp.use_alibi);
            EXPECT_EQ(m->weights().layers[1].bv.size(), 256u);
        }
        ContextParams p;
        p.n_ctx = 64;
        Context ctx(*m, p);
        std::vector<int32_t> toks = {1, 100, 200, 300, 400};
        Batch b;
        b.n_tokens = static_cast<int32_t>(toks.size());
        b.token = toks.data();
        ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
        const float *l = ctx.logits_ith(-1);
        ASSERT_NE(l, nullptr);
        for (uint32_t i = 0; i < hp.n_vocab; ++i) ASSERT_TRUE(std::isfinite(l[i])) << i;
        std::filesystem::remove(path);
    }
}

// The small mamba shape: the state-space tensors (llama.cpp's quantize keeps the small ones in F32, A is
// negative), and it loads as the mamba family and decodes.
TEST(SynthFamilies, TinyMambaLoadsAndDecodes) {
    TypeChoice type;
    ASSERT_TRUE(parse_type("Q8_0", &type));
    const Shape *s = find_shape("mamba-tiny");
    ASSERT_NE(s, nullptr);
    const std::vector<TensorPlan> plan = plan_tensors(*s, 32000, type);
    EXPECT_EQ(planned(plan, "blk.1.ssm_in.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(planned(plan, "blk.1.ssm_in.weight")->ne, (std::vector<int64_t>{256, 1024}));
    EXPECT_EQ(planned(plan, "blk.1.ssm_x.weight")->type, GgmlType::F32);
    EXPECT_EQ(planned(plan, "blk.1.ssm_x.weight")->ne, (std::vector<int64_t>{512, 48}));
    EXPECT_EQ(planned(plan, "blk.0.ssm_conv1d.weight")->ne, (std::vector<int64_t>{4, 512}));
    EXPECT_TRUE(planned(plan, "blk.0.ssm_a")->negate);
    EXPECT_EQ(planned(plan, "output.weight"), nullptr);  // tied
    Options opts;
    opts.vocab_path = vocab_path(*s);
    opts.n_threads = 2;
    const std::string path = temp_path("mamba-tiny.gguf");
    write_model(*s, type, path, opts);
    std::unique_ptr<Model> m = Model::load(path);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Mamba);
    EXPECT_EQ(hp.ssm_d_inner, 512u);
    EXPECT_EQ(hp.ssm_dt_rank, 16u);
    for (float a : m->weights().layers[0].ssm_a) ASSERT_LT(a, 0.0f);
    ContextParams p;
    p.n_ctx = 64;
    Context ctx(*m, p);
    std::vector<int32_t> toks = {1, 100, 200, 300, 400};
    Batch b;
    b.n_tokens = static_cast<int32_t>(toks.size());
    b.token = toks.data();
    ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
    const float *l = ctx.logits_ith(-1);
    ASSERT_NE(l, nullptr);
    for (uint32_t i = 0; i < hp.n_vocab; ++i) ASSERT_TRUE(std::isfinite(l[i])) << i;
    m.reset();
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lctx::synth::synth_test

namespace lctx::synth::synth_test {
namespace {

// The T5 shapes: t5-small has t5-small's parameter count (60.5M, the output tied) and the ReLU
// feed-forward; t5-tiny (gated) loads with the T5 vocabulary, encodes, and its decoder gives finite logits.
TEST(SynthFamilies, T5ShapesLoadEncodeAndDecode) {
    const Shape *small = find_shape("t5-small");
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(small->arch, "t5");
    TypeChoice t;
    ASSERT_TRUE(parse_type("Q8_0", &t));
    uint64_t n_params = 0;
    std::set<std::string> names;
    for (const TensorPlan &p : plan_tensors(*small, 32128, t)) {
        int64_t n = 1;
        for (int64_t d : p.ne) n *= d;
        n_params += static_cast<uint64_t>(n);
        names.insert(p.name);
        if (p.name.find("rel_b") != std::string::npos) {
            EXPECT_EQ(p.type, GgmlType::F32) << p.name;
        }
    }
    EXPECT_EQ(n_params, 60506624u);  // HF's count for t5-small
    EXPECT_EQ(names.count("output.weight"), 0u);
    EXPECT_EQ(names.count("enc.blk.5.ffn_gate.weight"), 0u);
    EXPECT_EQ(names.count("dec.blk.5.cross_attn_o.weight"), 1u);
    EXPECT_EQ(names.count("dec.blk.1.attn_rel_b.weight"), 0u);

    const Shape *tiny = find_shape("t5-tiny");
    ASSERT_NE(tiny, nullptr);
    Options opts;
    opts.vocab_path = vocab_path(*tiny);
    opts.n_threads = 1;
    const std::string path = temp_path("t5-tiny.gguf");
    write_model(*tiny, t, path, opts);
    std::unique_ptr<Model> m = Model::load(path);
    std::filesystem::remove(path);
    EXPECT_EQ(m->hparams().arch, Arch::T5);
    EXPECT_EQ(m->hparams().n_vocab, 32128u);
    EXPECT_EQ(m->hparams().n_layer, 2u);
    EXPECT_EQ(m->hparams().n_layer_dec, 2u);
    EXPECT_EQ(m->hparams().n_rel_buckets, 32u);
    EXPECT_EQ(m->hparams().dec_start_token, 0);
    ASSERT_NE(m->weights().layers[1].ffn_gate.data, nullptr);
    ContextParams cp;
    cp.n_ctx = 32;
    Context ctx(*m, cp);
    ASSERT_TRUE(ctx.is_encoder_decoder());
    const int32_t enc[5] = {13959, 1566, 12, 2968, 1};
    Batch b;
    b.n_tokens = 5;
    b.token = enc;
    ASSERT_EQ(ctx.encode(b), DecodeStatus::Ok);
    int32_t tok = m->hparams().dec_start_token;
    for (int32_t pos = 0; pos < 3; ++pos) {
        Batch d;
        d.n_tokens = 1;
        d.token = &tok;
        d.pos = &pos;
        ASSERT_EQ(ctx.decode(d), DecodeStatus::Ok);
        const float *logits = ctx.logits_ith(-1);
        ASSERT_NE(logits, nullptr);
        int32_t best = 0;
        for (uint32_t i = 0; i < m->hparams().n_vocab; ++i) {
            ASSERT_TRUE(std::isfinite(logits[i])) << i;
            if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
        }
        tok = best;
    }
}

}  // namespace
}  // namespace lctx::synth::synth_test
