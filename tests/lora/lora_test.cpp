// LoRA adapters at run time: the adapter's product beside the base weights matches a model whose weights were
// merged with it (W' = W + s B A) on every kind of matrix (fused q|k|v and gate|up row ranges, the embedding
// lookup, the output head), removal is exact, and bad adapters are refused without changing anything.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "context/batch_builder.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "golden_runner.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::lora_test {
namespace {

std::string golden(const std::string &rel) {
    return testing::fixtures_dir() + "/golden/" + rel;
}
std::string golden_lora(const std::string &rel) {
    return testing::fixtures_dir() + "/golden-lora/" + rel;
}
std::string stories() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}
std::string temp_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() / ("lctx-lora-" + std::to_string(::getpid()) + "-" + tag))
        .string();
}

// A base tensor read as f32, row-major [ne[1]][ne[0]].
std::vector<float> tensor_f32(const gguf::File &f, const gguf::TensorInfo &t) {
    const int64_t cols = t.ne[0], rows = t.n_elements() / cols;
    std::vector<float> v(static_cast<size_t>(cols * rows));
    const size_t rb = row_size(t.type, cols);
    for (int64_t r = 0; r < rows; ++r)
        dequantize_row(t.type, f.tensor_data(t) + r * rb, v.data() + r * cols, cols);
    return v;
}

// A random adapter for some matrices of a base model, and the same base with the adapter merged in at a
// scale.
struct SyntheticLora {
    struct Pair {
        std::string name;
        int64_t rank;
        std::vector<float> a, b;  // as stored: a [rank][n_in] (token_embd: [n_vocab][rank]), b [n_out][rank]
        std::vector<int64_t> a_ne, b_ne;
    };
    std::vector<Pair> pairs;
    float alpha = 0.0f;
};

SyntheticLora make_lora(const std::string &base_path,
                        const std::vector<std::pair<std::string, int64_t>> &targets, float alpha,
                        uint32_t seed) {
    auto f = gguf::File::open(base_path);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    SyntheticLora l;
    l.alpha = alpha;
    for (const auto &[name, rank] : targets) {
        const gguf::TensorInfo *t = f->find_tensor(name);
        if (!t) throw std::runtime_error("no tensor " + name);
        const int64_t n_in = t->ne[0], n_out = t->ne[1];
        SyntheticLora::Pair p{name, rank, {}, {}, {}, {}};
        const bool embd = name == "token_embd.weight";
        // token_embd: A transposed [n_vocab rows][rank], B [n_embd rows][rank].
        p.a_ne = embd ? std::vector<int64_t>{rank, n_out} : std::vector<int64_t>{n_in, rank};
        p.b_ne = embd ? std::vector<int64_t>{rank, n_in} : std::vector<int64_t>{rank, n_out};
        p.a.resize(static_cast<size_t>(p.a_ne[0] * p.a_ne[1]));
        p.b.resize(static_cast<size_t>(p.b_ne[0] * p.b_ne[1]));
        const float sa = 1.0f / std::sqrt(static_cast<float>(embd ? rank : n_in));
        for (float &v : p.a) v = nd(rng) * sa;
        for (float &v : p.b) v = nd(rng) * 0.05f;
        l.pairs.push_back(std::move(p));
    }
    return l;
}

std::string write_lora(const SyntheticLora &l, const std::string &arch, const std::string &tag,
                       GgmlType type = GgmlType::F32) {
    gguf::Writer w;
    w.set_string("general.architecture", arch);
    w.set_string("general.type", "adapter");
    w.set_string("adapter.type", "lora");
    w.set_f32("adapter.lora.alpha", l.alpha);
    for (const SyntheticLora::Pair &p : l.pairs) {
        for (int ab = 0; ab < 2; ++ab) {
            const std::vector<float> &v = ab ? p.b : p.a;
            const std::vector<int64_t> &ne = ab ? p.b_ne : p.a_ne;
            std::vector<uint8_t> bytes(row_size(type, ne[0]) * static_cast<size_t>(ne[1]));
            for (int64_t r = 0; r < ne[1]; ++r)
                quantize_row(type, v.data() + r * ne[0], bytes.data() + r * row_size(type, ne[0]), ne[0]);
            w.add_tensor(p.name + (ab ? ".lora_b" : ".lora_a"), type, ne, bytes.data(), bytes.size());
        }
    }
    const std::string path = temp_path(tag + ".gguf");
    w.write_file(path);
    return path;
}

// The base with W' = W + s B A (s = scale * alpha / rank) written as F32 for each adapted matrix.
std::string write_merged(const std::string &base_path, const SyntheticLora &l, float scale,
                         const std::string &tag) {
    auto f = gguf::File::open(base_path);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    for (const gguf::TensorInfo &t : f->tensors()) {
        const SyntheticLora::Pair *p = nullptr;
        for (const SyntheticLora::Pair &q : l.pairs)
            if (q.name == t.name) p = &q;
        if (!p) {
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
            continue;
        }
        std::vector<float> m = tensor_f32(*f, t);
        const int64_t cols = t.ne[0], rows = t.ne[1], rank = p->rank;
        const float s = l.alpha != 0.0f ? scale * l.alpha / static_cast<float>(rank) : scale;
        const bool embd = p->name == "token_embd.weight";
        for (int64_t o = 0; o < rows; ++o)
            for (int64_t j = 0; j < cols; ++j) {
                double d = 0.0;
                for (int64_t k = 0; k < rank; ++k)
                    d += embd ? double{p->b[j * rank + k]} * p->a[o * rank + k]
                              : double{p->b[o * rank + k]} * p->a[k * cols + j];
                m[o * cols + j] += s * static_cast<float>(d);
            }
        w.add_tensor(t.name, GgmlType::F32, t.ne, m.data(), m.size() * sizeof(float));
    }
    const std::string path = temp_path(tag + "-merged.gguf");
    w.write_file(path);
    return path;
}

ContextParams f32_params(uint32_t n_seq = 1) {
    ContextParams p;
    p.n_ctx = 256;
    p.n_batch = 64;
    p.n_ubatch = 16;
    p.n_seq_max = n_seq;
    p.n_threads = p.n_threads_batch = 1;
    p.type_k = p.type_v = GgmlType::F32;
    return p;
}

// All logits of a prompt of n tokens (ids 1 + (7 i) % (n_vocab - 1)) decoded in one call.
std::vector<float> prompt_logits(const Model &m, Context &ctx, int n = 24, int32_t pos0 = 0) {
    BatchBuilder bb;
    const int32_t n_vocab = static_cast<int32_t>(m.hparams().n_vocab);
    for (int i = 0; i < n; ++i) bb.add(1 + (7 * (i + pos0)) % (n_vocab - 1), pos0 + i, 0, true);
    const Batch b = bb.view();
    if (ctx.decode(b) != DecodeStatus::Ok) throw std::runtime_error("decode failed");
    std::vector<float> out;
    for (int i = 0; i < n; ++i) {
        const float *l = ctx.logits_ith(i);
        out.insert(out.end(), l, l + n_vocab);
    }
    return out;
}

float max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float d = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// Adapter at run time vs merged weights, on F32 models with an f32 cache: summation order only (1e-3, as the
// f32 golden cases), while the adapter itself moves the logits by far more (checked too).
void expect_matches_merged(const std::string &base_path, const std::string &arch,
                           const std::vector<std::pair<std::string, int64_t>> &targets, float alpha,
                           float scale, const std::string &tag) {
    const SyntheticLora l = make_lora(base_path, targets, alpha, 1234);
    const std::string adapter_path = write_lora(l, arch, tag);
    const std::string merged_path = write_merged(base_path, l, scale, tag);
    auto base = Model::load(base_path);
    auto merged = Model::load(merged_path);
    std::shared_ptr<const LoraAdapter> a = LoraAdapter::load(*base, adapter_path);
    EXPECT_EQ(a->n_pairs(), targets.size());
    Context plain(*base, f32_params());
    const std::vector<float> none = prompt_logits(*base, plain);
    Context with(*base, f32_params());
    with.lora().set(a, scale);
    const std::vector<float> got = prompt_logits(*base, with);
    Context ref(*merged, f32_params());
    const std::vector<float> want = prompt_logits(*merged, ref);
    const float effect = max_abs_diff(none, want), diff = max_abs_diff(got, want);
    std::printf("[ %s ] adapter effect %.4g, |run time - merged| %.3g\n", tag.c_str(), effect, diff);
    EXPECT_GT(effect, 0.05f) << "the adapter changes too little for the test to mean anything";
    EXPECT_LE(diff, 1e-3f);
    std::filesystem::remove(adapter_path);
    std::filesystem::remove(merged_path);
}

TEST(LoraMerged, LlamaEveryMatrixKind) {
    // stories260K: F32 llama with its own output matrix; the lookup, the four attention matrices, the three
    // feed-forward ones and the output head.
    expect_matches_merged(stories(), "llama",
                          {{"token_embd.weight", 4},
                           {"blk.0.attn_q.weight", 4},
                           {"blk.1.attn_k.weight", 8},
                           {"blk.2.attn_v.weight", 4},
                           {"blk.3.attn_output.weight", 2},
                           {"blk.4.ffn_gate.weight", 4},
                           {"blk.0.ffn_up.weight", 3},
                           {"blk.1.ffn_down.weight", 4},
                           {"output.weight", 4}},
                          8.0f, 0.75f, "stories");
}

TEST(LoraMerged, AlphaZeroMeansScaleAlone) {
    expect_matches_merged(stories(), "llama", {{"blk.0.attn_q.weight", 4}, {"blk.2.ffn_down.weight", 4}},
                          0.0f, 1.5f, "alpha0");
}

TEST(LoraMerged, Phi3FusedRowRanges) {
    // phi3 binds attn_qkv as row ranges q | k | v and ffn_up as gate | up: each range reads its rows of B.
    expect_matches_merged(
        golden("models/phi3.gguf"), "phi3",
        {{"blk.0.attn_qkv.weight", 4}, {"blk.0.ffn_up.weight", 4}, {"blk.1.attn_output.weight", 4}}, 8.0f,
        1.0f, "phi3");
}

TEST(LoraMerged, QuantizedAdapter) {
    // A Q8_0 adapter (rank 32: B's rows are one block) against the merge of its own dequantized values.
    const std::string base_path = stories();
    SyntheticLora l =
        make_lora(base_path, {{"blk.0.ffn_gate.weight", 32}, {"blk.1.attn_output.weight", 32}}, 32.0f, 7);
    const std::string q_path = write_lora(l, "llama", "q8", GgmlType::Q8_0);
    for (SyntheticLora::Pair &p : l.pairs)
        for (std::vector<float> *v : {&p.a, &p.b}) {
            const int64_t cols = v == &p.a ? p.a_ne[0] : p.b_ne[0];
            std::vector<uint8_t> q(row_size(GgmlType::Q8_0, cols));
            for (size_t r = 0; r < v->size() / cols; ++r) {
                quantize_row(GgmlType::Q8_0, v->data() + r * cols, q.data(), cols);
                dequantize_row(GgmlType::Q8_0, q.data(), v->data() + r * cols, cols);
            }
        }
    const std::string merged_path = write_merged(base_path, l, 1.0f, "q8");
    auto base = Model::load(base_path);
    auto merged = Model::load(merged_path);
    std::shared_ptr<const LoraAdapter> a = LoraAdapter::load(*base, q_path);
    Context plain(*base, f32_params()), with(*base, f32_params()), ref(*merged, f32_params());
    with.lora().set(a, 1.0f);
    const std::vector<float> none = prompt_logits(*base, plain), got = prompt_logits(*base, with),
                             want = prompt_logits(*merged, ref);
    // The Q8_0 products quantize their activations to Q8_0 blocks (as llama.cpp's): about 0.4% of a value.
    EXPECT_GT(max_abs_diff(none, want), 0.05f);
    EXPECT_LE(max_abs_diff(got, want), 2e-2f);
    std::filesystem::remove(q_path);
    std::filesystem::remove(merged_path);
}

TEST(Lora, RemovedIsExactlyNeverApplied) {
    auto model = Model::load(golden("models/llama-F16.gguf"));
    std::shared_ptr<const LoraAdapter> a =
        LoraAdapter::load(*model, golden_lora("models/lora-llama-F16.gguf"));
    Context fresh(*model, f32_params());
    const std::vector<float> never = prompt_logits(*model, fresh);
    Context ctx(*model, f32_params());
    ctx.lora().set(a, 1.0f);
    const std::vector<float> with = prompt_logits(*model, ctx);
    EXPECT_GT(max_abs_diff(with, never), 0.5f);
    ctx.kv().seq_rm(-1, -1, -1);
    EXPECT_TRUE(ctx.lora().remove(a.get()));
    EXPECT_EQ(prompt_logits(*model, ctx), never);  // bit for bit
    // The golden case that does the same through the fixture's steps: rows 49-97 equal the no-adapter run.
    const nlohmann::json set_rm = testing::read_json(golden_lora("cases/lora_F16_set_rm.json"));
    const nlohmann::json none = testing::read_json(golden_lora("cases/lora_F16_none.json"));
    const nlohmann::json s1 = testing::read_json(golden_lora("cases/lora_F16_s1.json"));
    const testing::GoldenRun r = testing::run_logits_case(*model, set_rm, 1, golden_lora(""));
    const testing::GoldenRun n = testing::run_logits_case(*model, none, 1, golden_lora(""));
    const testing::GoldenRun w = testing::run_logits_case(*model, s1, 1, golden_lora(""));
    ASSERT_EQ(r.rows.size(), n.rows.size() + w.rows.size());
    EXPECT_TRUE(std::equal(w.rows.begin(), w.rows.end(), r.rows.begin()));
    EXPECT_TRUE(std::equal(n.rows.begin(), n.rows.end(), r.rows.begin() + static_cast<long>(w.rows.size())));
}

TEST(Lora, ScaleZeroAndClearAreNone) {
    auto model = Model::load(golden("models/llama-F16.gguf"));
    std::shared_ptr<const LoraAdapter> a =
        LoraAdapter::load(*model, golden_lora("models/lora-llama-F16.gguf"));
    Context fresh(*model, f32_params());
    const std::vector<float> never = prompt_logits(*model, fresh);
    Context ctx(*model, f32_params());
    ctx.lora().set(a, 0.0f);
    EXPECT_EQ(prompt_logits(*model, ctx), never);
    ctx.kv().seq_rm(-1, -1, -1);
    ctx.lora().set(a, 1.0f);  // updates the scale, adds nothing
    EXPECT_EQ(ctx.lora().list().size(), 1u);
    EXPECT_NE(prompt_logits(*model, ctx), never);
    ctx.kv().seq_rm(-1, -1, -1);
    ctx.lora().clear();
    EXPECT_EQ(prompt_logits(*model, ctx), never);
    EXPECT_FALSE(ctx.lora().remove(a.get()));
}

TEST(Lora, TwoAdaptersAdd) {
    // The F32 adapter at 0.5 plus its F16-valued copy at 0.5 is the F32 adapter at 1.0, up to the F16
    // rounding of the copy (FORMAT-LORA-PPL.md: 0.0048 between the two at 1.0).
    auto model = Model::load(golden("models/llama-F16.gguf"));
    std::shared_ptr<const LoraAdapter> a =
        LoraAdapter::load(*model, golden_lora("models/lora-llama-F16.gguf"));
    std::shared_ptr<const LoraAdapter> h =
        LoraAdapter::load(*model, golden_lora("models/lora-llama-F16-f16w.gguf"));
    Context one(*model, f32_params()), two(*model, f32_params());
    one.lora().set(a, 1.0f);
    two.lora().set(a, 0.5f);
    two.lora().set(h, 0.5f);
    EXPECT_EQ(two.lora().list().size(), 2u);
    EXPECT_LE(max_abs_diff(prompt_logits(*model, one), prompt_logits(*model, two)), 1e-2f);
}

TEST(Lora, FreedAdapterIsDropped) {
    auto model = Model::load(golden("models/llama-F16.gguf"));
    std::shared_ptr<const LoraAdapter> a =
        LoraAdapter::load(*model, golden_lora("models/lora-llama-F16.gguf"));
    Context fresh(*model, f32_params());
    const std::vector<float> never = prompt_logits(*model, fresh);
    Context ctx(*model, f32_params());
    ctx.lora().set(a, 1.0f);
    a.reset();  // freed while set: the context drops it instead of reading it
    EXPECT_EQ(prompt_logits(*model, ctx), never);
    EXPECT_TRUE(ctx.lora().list().empty());
}

// Loading `adapter` onto `base_path` fails with an Error containing `what`.
void expect_refused(const std::string &base_path, const std::string &adapter, const std::string &what) {
    auto model = Model::load(base_path);
    try {
        LoraAdapter::load(*model, adapter);
        ADD_FAILURE() << "accepted " << adapter;
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}

TEST(Lora, RefusesMismatchedAdapters) {
    const std::string lora = golden_lora("models/lora-llama-F16.gguf");
    // FORMAT-LORA-PPL.md's example: this adapter on stories260K (n_embd 64).
    expect_refused(stories(), lora,
                   "tensor 'blk.0.attn_q.weight' has incorrect shape (hint: maybe wrong base model?)");
    expect_refused(golden("models/phi3.gguf"), lora, "architecture 'llama' is not the model's 'phi3'");
    expect_refused(golden("models/llama-F16.gguf"), stories(), "general.type");
    const std::string base = golden("models/llama-F16.gguf");
    const std::string half =
        testing::rewrite_gguf(lora, testing::dropping({"blk.1.attn_v.weight.lora_b"}), "half");
    expect_refused(base, half, "LoRA tensor pair for 'blk.1.attn_v.weight' is missing one component");
    const std::string no_type = testing::rewrite_gguf(lora, testing::dropping({"adapter.type"}), "notype");
    expect_refused(base, no_type, "adapter.type");
    testing::Rewrite extra;
    extra.add = [](gguf::Writer &w) {
        std::vector<float> z(256 * 4, 0.0f);
        w.add_tensor("blk.9.attn_k.weight.lora_a", GgmlType::F32, {256, 4}, z.data(),
                     z.size() * sizeof(float));
        w.add_tensor("blk.9.attn_k.weight.lora_b", GgmlType::F32, {4, 64}, z.data(), 4 * 64 * sizeof(float));
    };
    const std::string ghost = testing::rewrite_gguf(lora, extra, "ghost");
    expect_refused(base, ghost, "LoRA base tensor 'blk.9.attn_k.weight' not found in base model");
    testing::Rewrite stray;
    stray.add = [](gguf::Writer &w) {
        const float z[4] = {};
        w.add_tensor("blk.0.attn_k.weight", GgmlType::F32, {4}, z, sizeof z);
    };
    const std::string odd = testing::rewrite_gguf(lora, stray, "stray");
    expect_refused(base, odd, "unexpected tensor 'blk.0.attn_k.weight'");
    for (const std::string &p : {half, no_type, ghost, odd}) std::filesystem::remove(p);
}

TEST(Lora, RefusesATypeNoWeightKernelReads) {
    // Q8_1 is a block type the tensor layer knows (an activation format) but no weight product reads: the
    // adapter is refused at load, naming the tensor, not accepted and then failing inside a decode.
    auto f = gguf::File::open(stories());
    const gguf::TensorInfo *t = f->find_tensor("blk.0.ffn_gate.weight");
    ASSERT_NE(t, nullptr);
    const int64_t rank = 32;
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.type", "adapter");
    w.set_string("adapter.type", "lora");
    w.set_f32("adapter.lora.alpha", 32.0f);
    const std::vector<int64_t> a_ne = {t->ne[0], rank}, b_ne = {rank, t->ne[1]};
    std::vector<uint8_t> a(row_size(GgmlType::Q8_1, a_ne[0]) * a_ne[1]),
        b(row_size(GgmlType::Q8_1, b_ne[0]) * b_ne[1]);
    w.add_tensor("blk.0.ffn_gate.weight.lora_a", GgmlType::Q8_1, a_ne, a.data(), a.size());
    w.add_tensor("blk.0.ffn_gate.weight.lora_b", GgmlType::Q8_1, b_ne, b.data(), b.size());
    const std::string path = temp_path("q8_1.gguf");
    w.write_file(path);
    expect_refused(stories(), path, "LoRA tensor 'blk.0.ffn_gate.weight.lora_a' has type q8_1");
    std::filesystem::remove(path);
}

TEST(Lora, RefusalChangesNothing) {
    auto model = Model::load(golden("models/llama-F16.gguf"));
    Context before(*model, f32_params());
    const std::vector<float> want = prompt_logits(*model, before);
    EXPECT_THROW(LoraAdapter::load(*model, stories()), Error);
    Context after(*model, f32_params());
    EXPECT_EQ(prompt_logits(*model, after), want);
}

}  // namespace
}  // namespace lctx::lora_test
