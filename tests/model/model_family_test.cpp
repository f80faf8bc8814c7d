// The qwen2 and phi3 families beyond their golden cases: what the loader refuses (by tensor name), the size
// classes, the separate-q/k/v form of phi3, phi3's sliding window, and phi3's LongRoPE (long or short
// frequency factors chosen by the context's cells per sequence, rope.scaling.attn_factor) against a reference
// forward pass in double.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../../tools/lctx/synth_model.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "kernels/interleave.h"
#include "model/forward.h"
#include "model/model.h"
#include "reference_compare.h"

namespace lctx::model_family_test {
namespace {

const std::string kQwen2 = std::string(LCTX_FIXTURES_DIR) + "/golden/models/qwen2.gguf";
const std::string kPhi3 = std::string(LCTX_FIXTURES_DIR) + "/golden/models/phi3.gguf";

std::string temp_model_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() /
            ("lctx-family-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
        .string();
}

// A tensor as the rewritten file holds it.
struct TensorOut {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
};

// Rewrites `src`: edit_kv changes its metadata; each tensor goes through edit_tensor, which may change it,
// drop it (return false) or add tensors to `extra`.
std::string rewrite(const std::string &src, const std::string &tag,
                    const std::function<void(gguf::Writer &)> &edit_kv,
                    const std::function<bool(TensorOut &, std::vector<TensorOut> &extra)> &edit_tensor) {
    auto f = gguf::File::open(src);
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    edit_kv(w);
    std::vector<TensorOut> out;
    for (const gguf::TensorInfo &t : f->tensors()) {
        TensorOut o{t.name, t.type, t.ne,
                    std::vector<uint8_t>(f->tensor_data(t), f->tensor_data(t) + t.nbytes)};
        std::vector<TensorOut> extra;
        if (edit_tensor(o, extra)) out.push_back(std::move(o));
        for (TensorOut &e : extra) out.push_back(std::move(e));
    }
    for (const TensorOut &o : out) w.add_tensor(o.name, o.type, o.ne, o.data.data(), o.data.size());
    const std::string path = temp_model_path(tag);
    w.write_file(path);
    return path;
}

void no_kv_edit(gguf::Writer &) {}

void expect_load_error(const std::string &path, const std::vector<std::string> &needles) {
    try {
        Model::load(path);
        ADD_FAILURE() << "loading " << path << " should fail";
    } catch (const Error &e) {
        for (const std::string &n : needles)
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

// The first rows of an F32 matrix as a smaller one (a mis-shaped tensor with consistent bytes).
void keep_rows(TensorOut &t, int64_t rows) {
    t.ne[1] = rows;
    t.data.resize(static_cast<size_t>(t.ne[0] * rows) * sizeof(float));
}

TensorOut f32_vector(const std::string &name, const std::vector<float> &v) {
    TensorOut t{name, GgmlType::F32, {static_cast<int64_t>(v.size())}, {}};
    t.data.resize(v.size() * sizeof(float));
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
}

// ---- loading ----

TEST(Qwen2Load, HyperParametersAndDescription) {
    auto m = Model::load(kQwen2);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Qwen2);
    EXPECT_EQ(hp.rope.mode, kernels::RopeMode::Neox);
    EXPECT_EQ(hp.rope.freq_base, 1e6f);
    EXPECT_EQ(hp.n_head_kv, 2u);
    EXPECT_EQ(hp.n_swa, 0u);
    EXPECT_FALSE(m->weights().layers[0].bq.empty());
    EXPECT_NE(m->weights().output.data, m->weights().token_embd.data);  // untied
    EXPECT_EQ(m->description(), "qwen2 ?B all F32 (guessed)");
}

TEST(Qwen2Load, MissingBiasIsNamed) {
    expect_load_error(
        rewrite(kQwen2, "qwen2-nobias", no_kv_edit,
                [](TensorOut &t, std::vector<TensorOut> &) { return t.name != "blk.1.attn_k.bias"; }),
        {"blk.1.attn_k.bias"});
}

TEST(Qwen2Load, MisShapedTensorIsNamed) {
    expect_load_error(rewrite(kQwen2, "qwen2-shape", no_kv_edit,
                              [](TensorOut &t, std::vector<TensorOut> &) {
                                  if (t.name == "blk.0.attn_v.weight") keep_rows(t, 32);
                                  return true;
                              }),
                      {"blk.0.attn_v.weight", "[128, 32]", "expected [128, 64]"});
}

TEST(Qwen2Load, TensorItDoesNotUseIsNamed) {
    expect_load_error(
        rewrite(kQwen2, "qwen2-extra", no_kv_edit,
                [](TensorOut &t, std::vector<TensorOut> &extra) {
                    if (t.name == "output_norm.weight")
                        extra.push_back(f32_vector("rope_freqs.weight", std::vector<float>(16, 1.0f)));
                    return true;
                }),
        {"rope_freqs.weight"});
}

TEST(Phi3Load, HyperParametersAndFusedRanges) {
    auto m = Model::load(kPhi3);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Phi3);
    EXPECT_EQ(hp.rope.mode, kernels::RopeMode::Neox);
    EXPECT_EQ(hp.rope.n_ctx_orig, 4096);
    EXPECT_EQ(hp.n_swa, 0u);  // no sliding_window key and not a Phi-3 release shape
    const LayerWeights &l = m->weights().layers[0];
    EXPECT_EQ(l.wq.rows, 128);
    EXPECT_EQ(l.wk.rows, 128);
    EXPECT_EQ(l.wv.rows, 128);
    EXPECT_EQ(l.ffn_gate.rows, 256);
    EXPECT_EQ(l.ffn_up.rows, 256);
    EXPECT_TRUE(m->weights().rope_long.empty());
}

TEST(Phi3Load, MissingFusedTensorIsNamed) {
    expect_load_error(
        rewrite(kPhi3, "phi3-noup", no_kv_edit,
                [](TensorOut &t, std::vector<TensorOut> &) { return t.name != "blk.1.ffn_up.weight"; }),
        {"blk.1.ffn_up.weight"});
    // Without attn_qkv the separate matrices are required, and the first is named.
    expect_load_error(
        rewrite(kPhi3, "phi3-noqkv", no_kv_edit,
                [](TensorOut &t, std::vector<TensorOut> &) { return t.name != "blk.0.attn_qkv.weight"; }),
        {"blk.0.attn_q.weight"});
}

TEST(Phi3Load, MisShapedFusedTensorsAreNamed) {
    expect_load_error(rewrite(kPhi3, "phi3-qkv", no_kv_edit,
                              [](TensorOut &t, std::vector<TensorOut> &) {
                                  if (t.name == "blk.1.attn_qkv.weight") keep_rows(t, 256);
                                  return true;
                              }),
                      {"blk.1.attn_qkv.weight", "expected [128, 384]"});
    // ffn_up must hold the gate and the up rows: n_ff rows alone are refused.
    expect_load_error(rewrite(kPhi3, "phi3-up", no_kv_edit,
                              [](TensorOut &t, std::vector<TensorOut> &) {
                                  if (t.name == "blk.0.ffn_up.weight") keep_rows(t, 256);
                                  return true;
                              }),
                      {"blk.0.ffn_up.weight", "expected [128, 512]"});
    expect_load_error(
        rewrite(kPhi3, "phi3-factors", no_kv_edit,
                [](TensorOut &t, std::vector<TensorOut> &extra) {
                    if (t.name == "output_norm.weight")
                        extra.push_back(f32_vector("rope_factors_long.weight", std::vector<float>(8, 1.0f)));
                    return true;
                }),
        {"rope_factors_long.weight", "expected 16"});
}

TEST(Phi3Load, SlidingWindowCoversEveryLayer) {
    auto hparams_of = [](const std::string &path) {
        const HParams hp = HParams::load(*gguf::File::open(path));
        std::remove(path.c_str());
        return hp;
    };
    const HParams hp = hparams_of(rewrite(
        kPhi3, "phi3-swa", [](gguf::Writer &w) { w.set_u32("phi3.attention.sliding_window", 16); },
        [](TensorOut &, std::vector<TensorOut> &) { return true; }));
    EXPECT_EQ(hp.n_swa, 16u);
    EXPECT_TRUE(hp.layer_is_swa(0));
    EXPECT_TRUE(hp.layer_is_swa(1));
    // Phi-3-mini-4k files from before the key: b4748 gives them a window of 2047.
    EXPECT_EQ(hparams_of(rewrite(
                             kPhi3, "phi3-swa-default",
                             [](gguf::Writer &w) {
                                 w.set_u32("phi3.block_count", 32);
                                 w.set_u32("phi3.context_length", 4096);
                             },
                             [](TensorOut &, std::vector<TensorOut> &) { return true; }))
                  .n_swa,
              2047u);
    // An explicit 0 is no window (Phi-4-mini's files).
    const HParams none = hparams_of(rewrite(
        kPhi3, "phi3-swa0", [](gguf::Writer &w) { w.set_u32("phi3.attention.sliding_window", 0); },
        [](TensorOut &, std::vector<TensorOut> &) { return true; }));
    EXPECT_EQ(none.n_swa, 0u);
    EXPECT_FALSE(none.layer_is_swa(0));
}

TEST(FamilySizeNames, AsB4748) {
    HParams hp;
    hp.arch = Arch::Qwen2;
    hp.n_layer = 24;
    hp.n_embd = 896;  // Qwen2-0.5B: b4748 calls it 1B (its 0.5B rule is Qwen1.5's n_embd 1024)
    EXPECT_STREQ(model_size_name(hp), "1B");
    hp.n_embd = 1024;
    EXPECT_STREQ(model_size_name(hp), "0.5B");
    hp.n_layer = 28;
    hp.n_embd = 1536;
    EXPECT_STREQ(model_size_name(hp), "1.5B");
    hp.n_layer = 40;
    hp.n_head = 20;
    EXPECT_STREQ(model_size_name(hp), "4B");
    hp.n_head = 40;
    EXPECT_STREQ(model_size_name(hp), "13B");
    hp.n_layer = 2;
    EXPECT_STREQ(model_size_name(hp), "?B");
    hp.arch = Arch::Phi3;
    hp.n_layer = 32;
    EXPECT_STREQ(model_size_name(hp), "3B");
    hp.n_layer = 40;
    EXPECT_STREQ(model_size_name(hp), "14B");
}

// The row ranges of phi3's fused tensors are matrices of their own to the repacking: each is interleaved
// where the level has a layout for its type, and the logits are those of the file's rows.
TEST(Phi3Load, FusedRangesAreRepackedLikeMatrices) {
    for (const char *type_name : {"Q8_0", "Q4_0"}) {
        const synth::Shape *shape = synth::find_shape("phi3-tiny");
        ASSERT_NE(shape, nullptr);
        synth::TypeChoice type;
        ASSERT_TRUE(synth::parse_type(type_name, &type));
        synth::Options opts;
        opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
        const std::string path = temp_model_path(std::string("phi3-tiny-") + type_name);
        synth::write_model(*shape, type, path, opts);
        auto packed = Model::load(path);
        ModelLoadOptions o;
        o.repack = false;
        auto plain = Model::load(path, o);
        for (const LayerWeights &l : packed->weights().layers)
            for (const kernels::WeightView *w : {&l.wq, &l.wk, &l.wv, &l.ffn_gate, &l.ffn_up, &l.ffn_down})
                EXPECT_EQ(w->interleaved(), kernels::can_interleave(w->type, w->rows, w->cols)) << type_name;
        const std::vector<int32_t> toks = {1, 450, 4996, 17354, 1701, 432, 29889};
        std::vector<float> a, b;
        for (auto [m, out] : {std::pair{packed.get(), &a}, std::pair{plain.get(), &b}}) {
            ContextParams cp;
            cp.n_ctx = 32;
            Context ctx(*m, cp);
            std::vector<int8_t> all(toks.size(), 1);
            Batch batch;
            batch.n_tokens = static_cast<int32_t>(toks.size());
            batch.token = toks.data();
            batch.logits = all.data();
            ASSERT_EQ(ctx.decode(batch), DecodeStatus::Ok);
            for (int32_t i = 0; i < batch.n_tokens; ++i)
                out->insert(out->end(), ctx.logits_ith(i), ctx.logits_ith(i) + m->hparams().n_vocab);
        }
        float diff = 0;
        for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(a[i] - b[i]));
        // The same integer dot products summed in another order: measured 2.4e-7 on logits of about 0.1.
        EXPECT_LT(diff, 1e-5f) << type_name;
        std::remove(path.c_str());
    }
}

// ---- phi3 against a reference in double ----

struct RefOptions {
    std::vector<float> factors;  // per-pair divisors (empty: none)
    double attn_factor = 1.0;
    size_t window = 0;  // > 0: a query at t sees the keys at j with t - j < window (every layer)
};

// The phi3 forward pass written plainly from the file's F32 tensors: tokens at positions 0.., one sequence,
// the logits of every position [n_tokens][n_vocab].
std::vector<double> phi3_reference(const std::string &path, const std::vector<int32_t> &tokens,
                                   const RefOptions &o) {
    auto m = Model::load(path);
    const HParams &hp = m->hparams();
    auto f = gguf::File::open(path);
    auto tensor = [&](const std::string &name) -> const float * {
        const gguf::TensorInfo *t = f->find_tensor(name);
        EXPECT_TRUE(t && t->type == GgmlType::F32) << name;
        return t ? reinterpret_cast<const float *>(f->tensor_data(*t)) : nullptr;
    };
    const int64_t n_embd = hp.n_embd, hd = hp.n_embd_head_k, n_head = hp.n_head, n_kv = hp.n_head_kv;
    const int64_t q_dim = n_head * hd, kv_dim = n_kv * hd, n_ff = hp.n_ff, n_rot = hp.rope.n_rot;
    const size_t T = tokens.size();
    auto linear = [](const float *w, const std::vector<double> &x, int64_t row0, int64_t rows, int64_t cols) {
        std::vector<double> y(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
            double s = 0.0;
            for (int64_t c = 0; c < cols; ++c) s += double(w[(row0 + r) * cols + c]) * x[size_t(c)];
            y[size_t(r)] = s;
        }
        return y;
    };
    auto rms_norm = [&](const std::vector<double> &x, const float *g) {
        double ss = 0.0;
        for (double v : x) ss += v * v;
        const double scale = 1.0 / std::sqrt(ss / double(x.size()) + double(hp.norm_rms_eps));
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * g[i];
        return y;
    };
    auto rope_neox = [&](std::vector<double> &v, int64_t heads, double pos) {  // pairs (i, i + n_rot / 2)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < n_rot / 2; ++i) {
                const double ff = o.factors.empty() ? 1.0 : double(o.factors[size_t(i)]);
                const double theta =
                    pos * std::pow(double(hp.rope.freq_base), -2.0 * double(i) / double(n_rot)) / ff;
                double &a = v[size_t(h * hd + i)], &b = v[size_t(h * hd + i + n_rot / 2)];
                const double a0 = a, b0 = b, c = std::cos(theta) * o.attn_factor,
                             s = std::sin(theta) * o.attn_factor;
                a = a0 * c - b0 * s;
                b = a0 * s + b0 * c;
            }
    };
    const float *embd = tensor("token_embd.weight");
    std::vector<std::vector<double>> x(T, std::vector<double>(size_t(n_embd)));
    for (size_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < n_embd; ++i) x[t][size_t(i)] = embd[tokens[t] * n_embd + i];
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const float *qkv = tensor(p + "attn_qkv.weight");
        std::vector<std::vector<double>> q(T), k(T), v(T);
        for (size_t t = 0; t < T; ++t) {
            const std::vector<double> h = rms_norm(x[t], tensor(p + "attn_norm.weight"));
            q[t] = linear(qkv, h, 0, q_dim, n_embd);
            k[t] = linear(qkv, h, q_dim, kv_dim, n_embd);
            v[t] = linear(qkv, h, q_dim + kv_dim, kv_dim, n_embd);
            rope_neox(q[t], n_head, double(t));
            rope_neox(k[t], n_kv, double(t));
        }
        for (size_t t = 0; t < T; ++t) {
            std::vector<double> att(size_t(q_dim), 0.0);
            for (int64_t h = 0; h < n_head; ++h) {
                const int64_t g = h / (n_head / n_kv);
                std::vector<double> s(t + 1);
                double mx = -1e300, sum = 0.0;
                for (size_t j = 0; j <= t; ++j) {
                    double d = 0.0;
                    for (int64_t i = 0; i < hd; ++i) d += q[t][size_t(h * hd + i)] * k[j][size_t(g * hd + i)];
                    s[j] = o.window > 0 && t - j >= o.window ? -INFINITY : d / std::sqrt(double(hd));
                    mx = std::max(mx, s[j]);
                }
                for (double &e : s) sum += (e = std::exp(e - mx));
                for (size_t j = 0; j <= t; ++j)
                    for (int64_t i = 0; i < hd; ++i)
                        att[size_t(h * hd + i)] += s[j] / sum * v[j][size_t(g * hd + i)];
            }
            const std::vector<double> out = linear(tensor(p + "attn_output.weight"), att, 0, n_embd, q_dim);
            for (int64_t i = 0; i < n_embd; ++i) x[t][size_t(i)] += out[size_t(i)];
            const std::vector<double> h = rms_norm(x[t], tensor(p + "ffn_norm.weight"));
            const float *up = tensor(p + "ffn_up.weight");
            std::vector<double> gate = linear(up, h, 0, n_ff, n_embd);  // the first n_ff rows gate
            const std::vector<double> u = linear(up, h, n_ff, n_ff, n_embd);
            for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * u[i];
            const std::vector<double> d = linear(tensor(p + "ffn_down.weight"), gate, 0, n_embd, n_ff);
            for (int64_t i = 0; i < n_embd; ++i) x[t][size_t(i)] += d[size_t(i)];
        }
    }
    std::vector<double> logits;
    for (size_t t = 0; t < T; ++t) {
        const std::vector<double> l = linear(
            tensor("output.weight"), rms_norm(x[t], tensor("output_norm.weight")), 0, hp.n_vocab, n_embd);
        logits.insert(logits.end(), l.begin(), l.end());
    }
    return logits;
}

// Every position's logits from a context of n_ctx cells shared by n_seq_max sequences (F32 cache).
std::vector<float> lctx_logits(const Model &m, const std::vector<int32_t> &tokens, uint32_t n_ctx,
                               uint32_t n_seq_max = 1, uint32_t n_ubatch = 512) {
    return testing::all_logits(m, tokens, n_ctx, n_seq_max, n_ubatch);
}
using testing::max_diff;
double max_diff(const std::vector<double> &a, const std::vector<double> &b) {
    return max_diff(std::vector<float>(a.begin(), a.end()), b);
}

const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 10, 66, 300, 17, 255, 4, 99};
// f32 weights and cache against double: summation order only (as tests/model/model_bias_test.cpp).
constexpr double kTol = 1e-3;

TEST(Phi3Reference, PlainFileAgrees) {
    auto m = Model::load(kPhi3);
    EXPECT_LT(max_diff(lctx_logits(*m, kTokens, 64), phi3_reference(kPhi3, kTokens, {})), kTol);
}

// phi3.gguf with a sliding window of 5: every layer's queries see only the last 5 positions, also across
// micro-batches of 4.
TEST(Phi3Reference, SlidingWindowInEveryLayer) {
    const std::string path = rewrite(
        kPhi3, "phi3-window", [](gguf::Writer &w) { w.set_u32("phi3.attention.sliding_window", 5); },
        [](TensorOut &, std::vector<TensorOut> &) { return true; });
    auto m = Model::load(path);
    RefOptions windowed;
    windowed.window = 5;
    const std::vector<double> want = phi3_reference(path, kTokens, windowed);
    EXPECT_GT(max_diff(phi3_reference(path, kTokens, {}), want), 50 * kTol);  // the window matters
    EXPECT_LT(max_diff(lctx_logits(*m, kTokens, 64), want), kTol);
    EXPECT_LT(max_diff(lctx_logits(*m, kTokens, 64, 1, 4), want), kTol);
    std::remove(path.c_str());
}

// phi3.gguf with its q | k | v rows as three tensors: the same model, read through the other binding.
TEST(Phi3Reference, SeparateQkvMatchesTheFusedFile) {
    const std::string path =
        rewrite(kPhi3, "phi3-split", no_kv_edit, [](TensorOut &t, std::vector<TensorOut> &extra) {
            const std::string suffix = ".attn_qkv.weight";
            if (t.name.size() < suffix.size() ||
                t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix))
                return true;
            const std::string p = t.name.substr(0, t.name.size() - suffix.size());
            const size_t part = t.data.size() / 3;  // q, k and v have 128 rows each here
            for (int i = 0; i < 3; ++i) {
                const char *names[] = {".attn_q.weight", ".attn_k.weight", ".attn_v.weight"};
                extra.push_back(TensorOut{
                    p + names[i],
                    t.type,
                    {t.ne[0], t.ne[1] / 3},
                    std::vector<uint8_t>(t.data.begin() + i * part, t.data.begin() + (i + 1) * part)});
            }
            return false;
        });
    auto fused = Model::load(kPhi3);
    auto split = Model::load(path);
    EXPECT_EQ(lctx_logits(*split, kTokens, 64), lctx_logits(*fused, kTokens, 64));
    std::remove(path.c_str());
}

// phi3.gguf as a LongRoPE file: long and short factor tables, an original context of 64 and an attention
// factor, as Phi-3-mini-128k's converter writes them.
class Phi3LongRope : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        for (int i = 0; i < 16; ++i) {
            long_[size_t(i)] = 1.0f + 0.75f * static_cast<float>(i);
            short_[size_t(i)] = 1.0f + 0.05f * static_cast<float>(i * i % 7);
        }
        path_ = make("phi3-longrope", kAttnFactor);
        path_no_factor_ = make("phi3-longrope-1", 1.0f);
    }
    static void TearDownTestSuite() {
        std::remove(path_.c_str());
        std::remove(path_no_factor_.c_str());
    }
    static std::string make(const std::string &tag, float attn_factor) {
        return rewrite(
            kPhi3, tag,
            [&](gguf::Writer &w) {
                w.set_u32("phi3.rope.scaling.original_context_length", 64);
                w.set_f32("phi3.rope.scaling.attn_factor", attn_factor);
            },
            [](TensorOut &t, std::vector<TensorOut> &extra) {
                if (t.name == "output_norm.weight") {
                    extra.push_back(f32_vector("rope_factors_long.weight", long_));
                    extra.push_back(f32_vector("rope_factors_short.weight", short_));
                }
                return true;
            });
    }

    static constexpr float kAttnFactor = 1.19f;
    static inline std::vector<float> long_ = std::vector<float>(16), short_ = std::vector<float>(16);
    static inline std::string path_, path_no_factor_;
};

TEST_F(Phi3LongRope, LayerRopePicksTheTableByCellsPerSequence) {
    auto m = Model::load(path_);
    EXPECT_FLOAT_EQ(m->hparams().rope.attn_factor, kAttnFactor);
    KvView within, beyond;
    within.rope = beyond.rope = context_rope(m->hparams(), RopeOverrides{});
    within.n_ctx_per_seq = 64;
    beyond.n_ctx_per_seq = 65;
    for (uint32_t il = 0; il < 2; ++il) {
        EXPECT_EQ(layer_rope(*m, il, within).freq_factors, m->weights().rope_short.data());  // not beyond 64
        EXPECT_EQ(layer_rope(*m, il, beyond).freq_factors, m->weights().rope_long.data());
        EXPECT_FLOAT_EQ(layer_rope(*m, il, beyond).attn_factor, kAttnFactor);
    }
    // The table goes by the file's original context, not by the context's yarn_orig_ctx (b4748).
    RopeOverrides o;
    o.orig_ctx = 32;
    within.rope = context_rope(m->hparams(), o);
    EXPECT_EQ(within.rope.n_ctx_orig, 32);
    EXPECT_EQ(layer_rope(*m, 0, within).freq_factors, m->weights().rope_short.data());
}

TEST_F(Phi3LongRope, ShortFactorsWithinTheOriginalContext) {
    auto m = Model::load(path_);
    const std::vector<double> want = phi3_reference(path_, kTokens, {short_, kAttnFactor, 0});
    // 128 cells for 2 sequences: 64 per sequence, not beyond the original context.
    EXPECT_LT(max_diff(lctx_logits(*m, kTokens, 128, 2), want), kTol);
    // The table and the factor matter far beyond the tolerance: ignoring either cannot pass.
    EXPECT_GT(max_diff(phi3_reference(path_, kTokens, {long_, kAttnFactor, 0}), want), 50 * kTol);
    EXPECT_GT(max_diff(phi3_reference(path_, kTokens, {short_, 1.0, 0}), want), 50 * kTol);
}

TEST_F(Phi3LongRope, LongFactorsBeyondIt) {
    auto m = Model::load(path_);
    EXPECT_LT(
        max_diff(lctx_logits(*m, kTokens, 128, 1), phi3_reference(path_, kTokens, {long_, kAttnFactor, 0})),
        kTol);
}

// A shift re-rotates the cached keys with the same table as the forward pass (layer_rope with the cache's
// cells per sequence): shifted keys then match keys computed at their new positions, with an attention
// factor of 1 or not (the shift rotates by the angles alone; b4748 applies the factor again).
TEST_F(Phi3LongRope, ShiftRotatesKeysWithTheContextsTable) {
    for (const std::string &path : {path_no_factor_, path_}) {
        SCOPED_TRACE(path);
        auto m = Model::load(path);
        for (uint32_t n_seq_max : {1u, 2u}) {  // long, then short factors
            ContextParams cp;
            cp.n_ctx = 128;
            cp.n_seq_max = n_seq_max;
            cp.type_k = cp.type_v = GgmlType::F32;
            Context shifted(*m, cp), direct(*m, cp);
            const int32_t n = static_cast<int32_t>(kTokens.size()), shift = 23;
            auto decode = [&](Context &ctx, int32_t pos0) {
                std::vector<int32_t> pos(kTokens.size());
                for (int32_t i = 0; i < n; ++i) pos[size_t(i)] = pos0 + i;
                std::vector<int8_t> last(kTokens.size(), 0);
                last.back() = 1;
                Batch b;
                b.n_tokens = n;
                b.token = kTokens.data();
                b.pos = pos.data();
                b.logits = last.data();
                ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
            };
            decode(shifted, 0);
            shifted.kv().seq_add(0, 0, -1, shift);
            const int32_t next_tok = 300, next_pos = n + shift;
            int8_t want = 1;
            Batch one;
            one.n_tokens = 1;
            one.token = &next_tok;
            one.pos = &next_pos;
            one.logits = &want;
            ASSERT_EQ(shifted.decode(one), DecodeStatus::Ok);
            decode(direct, shift);
            ASSERT_EQ(direct.decode(one), DecodeStatus::Ok);
            const float *a = shifted.logits_ith(-1), *b = direct.logits_ith(-1);
            float diff = 0;
            for (uint32_t i = 0; i < m->hparams().n_vocab; ++i) diff = std::max(diff, std::fabs(a[i] - b[i]));
            // Float rounding of one extra rotation (as the llama K-shift tests); another table gives ~1.
            EXPECT_LT(diff, 0.01f) << "n_seq_max " << n_seq_max;
        }
    }
}

// phi3 with partial rotary dimensions (rope.dimension_count half the head): b4748 sizes the LongRoPE tables
// by the head (head_dim / 2 entries), and the rotation reads their first n_rot / 2.
TEST_F(Phi3LongRope, PartialRotaryDimsTakeTablesOfHalfTheHead) {
    const uint32_t head_dim = Model::load(kPhi3)->hparams().n_embd_head_k;
    ASSERT_EQ(long_.size(), head_dim / 2);
    const auto make_partial = [&](size_t entries, const std::string &tag) {
        return rewrite(
            kPhi3, tag,
            [&](gguf::Writer &w) {
                w.set_u32("phi3.rope.dimension_count", head_dim / 2);
                w.set_u32("phi3.rope.scaling.original_context_length", 64);
                w.set_f32("phi3.rope.scaling.attn_factor", kAttnFactor);
            },
            [&](TensorOut &t, std::vector<TensorOut> &extra) {
                if (t.name == "output_norm.weight") {
                    extra.push_back(f32_vector("rope_factors_long.weight",
                                               std::vector<float>(long_.begin(), long_.begin() + entries)));
                    extra.push_back(f32_vector("rope_factors_short.weight",
                                               std::vector<float>(short_.begin(), short_.begin() + entries)));
                }
                return true;
            });
    };
    const std::string path = make_partial(head_dim / 2, "phi3-partial");
    auto m = Model::load(path);
    EXPECT_EQ(m->hparams().rope.n_rot, static_cast<int>(head_dim / 2));
    EXPECT_EQ(m->weights().rope_long.size(), head_dim / 2);
    // 128 cells for one sequence: the long table, of which the rotation reads the first head_dim / 4.
    const std::vector<double> want = phi3_reference(path, kTokens, {long_, kAttnFactor, 0});
    EXPECT_LT(max_diff(lctx_logits(*m, kTokens, 128, 1), want), kTol);
    EXPECT_GT(max_diff(phi3_reference(path, kTokens, {short_, kAttnFactor, 0}), want), 50 * kTol);
    std::remove(path.c_str());
    // Tables of n_rot / 2 entries do not have b4748's shape: refused, naming the tensor.
    expect_load_error(make_partial(head_dim / 4, "phi3-partial-short"), {"rope_factors_long.weight"});
}

}  // namespace
}  // namespace lctx::model_family_test
