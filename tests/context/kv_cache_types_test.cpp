// The KV cache types (kv_cache.h: llama.cpp's f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1) through
// whole models: the logits of each type against the f32 cache's on the golden models, the K-shift of each
// type against keys computed at the new positions, and what is refused (as b4748: a block-quantized V
// without flash attention; heads that are not whole blocks; types that are no cache type).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "context/context.h"
#include "golden_runner.h"
#include "llama.h"
#include "model/model.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::kv_cache_types_test {
namespace {

// Every cache type but f32 (the reference).
const GgmlType kTypes[] = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL};

std::string model_path(const std::string &name) {
    return testing::fixtures_dir() + "/golden/models/" + name + ".gguf";
}

// The type's rounding error on values like a cache's: sqrt(sum (x - Q(x))^2 / sum x^2) over 64 rows of 128
// N(0, 1) values (f16 ~2^-12, bf16 ~2^-9, q8_0 ~0.006, q5 ~0.03, q4 ~0.06-0.1).
double rel_rms_error(GgmlType t) {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double err = 0, norm = 0;
    std::vector<float> x(128), y(128);
    std::vector<uint8_t> q(row_size(t, 128));
    for (int r = 0; r < 64; ++r) {
        for (float &v : x) v = normal(rng);
        quantize_row(t, x.data(), q.data(), 128);
        dequantize_row(t, q.data(), y.data(), 128);
        for (int i = 0; i < 128; ++i) {
            err += static_cast<double>(x[i] - y[i]) * (x[i] - y[i]);
            norm += static_cast<double>(x[i]) * x[i];
        }
    }
    return std::sqrt(err / norm);
}

// ---- logits with each cache type against the f32 cache's ----

// A cache rounds every key and value by its type's relative error eps; attention passes that on to the
// layer's output about linearly (the scores through the softmax, the values directly), and the layers after
// it pass the perturbation on to the logits. To first order the logits' relative RMS difference from the f32
// cache's is then eps times a gain that belongs to the model (and to which of K and V is rounded), not to the
// type. The test measures that gain with the f16 cache (whose kernels the golden tests hold to llama.cpp's
// logits) and allows each other type kMargin times it: tolerance = kMargin * gain_f16 * eps_type.
// Measured (2026-12-03, AVX-512), each type's gain over f16's: 0.16-0.38 on llama (where the f16 cache moves
// the logits more than its eps alone predicts; f16 also rounds the queries), 0.65-1.06 on qwen2, phi3,
// gemma2, 0.66-1.18 on bloom; the 4- and 5-bit types sit lowest (a coarser rounding, the same first-order
// gain, and the softmax's curvature takes a little off). kMargin = 2 leaves room for the ISA's summation
// order and for a model whose values fit a type's blocks worse than N(0, 1) ones. A kernel that misreads a
// type's blocks moves the logits by O(1): 10 to 100 times that.
constexpr double kMargin = 2.0;
// f32 summation order alone (FORMAT.md: ~1e-3 absolute on logits of ~10 is far more than this needs)
constexpr double kFloor = 1e-5;

struct Case {
    const char *name;  // fixtures/golden/cases/NAME.json (head size 32: one block per head)
};
const Case kCases[] = {{"llama_F16"}, {"qwen2_3seq"}, {"phi3_3seq"}, {"gemma2_3seq"}, {"bloom_3seq"}};

class CacheTypeLogits : public ::testing::TestWithParam<Case> {};

// The case's steps with the given cache (flash attention: V by rows, as a block-quantized V needs).
testing::GoldenRun run_with(const Model &model, nlohmann::json c, GgmlType k, GgmlType v, bool fa) {
    c["ctx"]["type_k"] = type_name(k);
    c["ctx"]["type_v"] = type_name(v);
    c["ctx"]["flash_attn"] = fa;
    return testing::run_logits_case(model, c, 2);
}

double rel_rms_diff(const std::vector<float> &a, const std::vector<float> &ref) {
    double d = 0, n = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        d += static_cast<double>(a[i] - ref[i]) * (a[i] - ref[i]);
        n += static_cast<double>(ref[i]) * ref[i];
    }
    return std::sqrt(d / n);
}

TEST_P(CacheTypeLogits, EachTypeIsWithinItsRoundingOfTheF32Cache) {
    const std::string dir = testing::fixtures_dir() + "/golden/";
    const nlohmann::json c = testing::read_json(dir + "cases/" + GetParam().name + ".json");
    auto model = Model::load(dir + c["model"].get<std::string>());
    const testing::GoldenRun ref = run_with(*model, c, GgmlType::F32, GgmlType::F32, true);
    // K and V of the type (V by rows), and K alone (V transposed, f32: the path without flash attention)
    for (bool both : {true, false}) {
        auto diff_of = [&](GgmlType t) {
            const testing::GoldenRun got = run_with(*model, c, t, both ? t : GgmlType::F32, /*fa=*/both);
            EXPECT_EQ(got.rows.size(), ref.rows.size());
            for (float x : got.rows) EXPECT_TRUE(std::isfinite(x)) << type_name(t);
            return got.rows.size() == ref.rows.size() ? rel_rms_diff(got.rows, ref.rows) : 1e30;
        };
        const double gain = diff_of(GgmlType::F16) / rel_rms_error(GgmlType::F16);
        EXPECT_GT(gain, 0.0);
        for (GgmlType t : kTypes) {
            if (t == GgmlType::F16) continue;
            const double eps = rel_rms_error(t), diff = diff_of(t);
            std::printf("[ %s ] %s%s: relative RMS difference %.3g, eps %.3g, gain %.3f (f16's %.3f)\n",
                        GetParam().name, type_name(t), both ? " K+V" : " K", diff, eps, diff / eps, gain);
            EXPECT_LE(diff, kMargin * gain * eps + kFloor) << type_name(t) << (both ? " K and V" : " K");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, CacheTypeLogits, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                             return std::string(info.param.name);
                         });

// ---- the K-shift of each type ----

struct Tok {
    int32_t token, pos, seq;
};

void decode(Context &ctx, const std::vector<Tok> &toks) {
    BatchBuilder bb;
    for (const Tok &t : toks) bb.add(t.token, t.pos, t.seq, true);
    ASSERT_EQ(ctx.decode(bb.view()), DecodeStatus::Ok);
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

// Layer `il`'s key row of a cell as floats (dequantize_row's values).
std::vector<float> key_row(const Context &ctx, uint32_t il, uint32_t cell) {
    const KvView &v = ctx.kv().view();
    std::vector<float> out(ctx.model().hparams().n_embd_k_gqa());
    dequantize_row(v.type_k, v.k[il] + cell * v.k_row_bytes, out.data(), static_cast<int64_t>(out.size()));
    return out;
}

// The largest difference of a cell's layer-0 keys from the reference's, relative to the reference row's
// largest value, over the first n cells. (Layer 0's keys depend on the token and its position only; a later
// layer's also on what the token saw, which a shift of part of a sequence changes.)
double key_error(const Context &a, const Context &ref, uint32_t n) {
    double worst = 0;
    for (uint32_t c = 0; c < n; ++c) {
        const std::vector<float> x = key_row(a, 0, c), r = key_row(ref, 0, c);
        double scale = 1e-30, diff = 0;
        for (size_t i = 0; i < r.size(); ++i) {
            scale = std::max(scale, static_cast<double>(std::fabs(r[i])));
            diff = std::max(diff, static_cast<double>(std::fabs(x[i] - r[i])));
        }
        worst = std::max(worst, diff / scale);
    }
    return worst;
}

// A shifted key is the old key rounded to the type, rotated, and rounded again; the key decoded directly at
// the new position is rounded once. Against the exact (f32) key at the new position the first is off by the
// rotated first rounding (a rotation mixes two elements: up to sqrt(2) times one rounding) plus the second
// rounding, the second by one rounding: the shifted error stays within (1 + sqrt(2)) ~ 2.4 times the
// direct one, 3 with the margin that the two roundings fall on different values. f32 keys: rotation's float
// rounding only (1e-5 of the row). A shift that does not rotate moves the keys by O(1).
TEST(CacheTypeShift, ShiftedKeysOfEachTypeEqualKeysDecodedAtTheNewPositions) {
    auto model = Model::load(model_path("llama-F16"));
    const std::vector<int32_t> t0 = {1, 313, 368, 303, 412, 425, 390, 340, 139, 41, 404, 181};
    const std::vector<int32_t> t1 = {1, 201, 153, 256, 294, 17};
    std::vector<Tok> toks;
    for (size_t i = 0; i < t0.size(); ++i) toks.push_back({t0[i], static_cast<int32_t>(i), 0});
    for (size_t i = 0; i < t1.size(); ++i) toks.push_back({t1[i], static_cast<int32_t>(i), 1});
    toks.push_back({99, 20, 2});
    const uint32_t n = static_cast<uint32_t>(toks.size());
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                       GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL}) {
        SCOPED_TRACE(type_name(t));
        auto shifted = make(*model, t);
        decode(*shifted, toks);
        shifted->kv().seq_add(0, 5, -1, 7);   // sequence 0's positions 5.. move by +7
        shifted->kv().seq_add(2, 0, -1, -9);  // sequence 2's token moves back
        shifted->kv().apply_shift(*model);
        std::vector<Tok> direct_toks = toks;
        for (uint32_t i = 0; i < n; ++i) direct_toks[i].pos = shifted->kv().cells()[i].pos;
        ASSERT_EQ(direct_toks[11].pos, 18);
        auto direct = make(*model, t), exact = make(*model, GgmlType::F32);
        decode(*direct, direct_toks);
        decode(*exact, direct_toks);
        const double e_direct = key_error(*direct, *exact, n), e_shifted = key_error(*shifted, *exact, n);
        std::printf("[ shift %s ] keys off by %.3g of a row shifted, %.3g decoded directly\n", type_name(t),
                    e_shifted, e_direct);
        EXPECT_LE(e_shifted, 3.0 * e_direct + 1e-5);
    }
}

// ---- refusals ----

std::string context_error(const Model &m, GgmlType k, GgmlType v, bool fa) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.type_k = k;
    cp.type_v = v;
    cp.flash_attn = fa;
    try {
        Context ctx(m, cp);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(CacheTypeRefusals, AQuantizedVNeedsFlashAttentionAsInB4748) {
    auto model = Model::load(model_path("llama-F16"));
    for (GgmlType t : kTypes) {
        const bool blocks = type_traits(t).is_quantized;
        EXPECT_EQ(context_error(*model, t, t, true), "") << type_name(t);
        EXPECT_EQ(context_error(*model, t, GgmlType::F16, false), "") << type_name(t);  // K alone: any
        const std::string e = context_error(*model, GgmlType::F16, t, false);
        if (blocks)
            EXPECT_EQ(e, "V cache quantization requires flash_attn") << type_name(t);
        else
            EXPECT_EQ(e, "") << type_name(t);
    }
    // through the C API: NULL, as b4748's llama_init_from_model
    llama_model_params mp = llama_model_default_params();
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_model *m = llama_model_load_from_file(model_path("llama-F16").c_str(), mp);
    ASSERT_NE(m, nullptr);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.type_k = GGML_TYPE_Q4_0;
    cp.type_v = GGML_TYPE_Q4_1;
    EXPECT_EQ(llama_init_from_model(m, cp), nullptr);
    cp.flash_attn = true;
    llama_context *ctx = llama_init_from_model(m, cp);
    EXPECT_NE(ctx, nullptr);
    llama_free(ctx);
    llama_model_free(m);
    llama_log_set(nullptr, nullptr);
}

TEST(CacheTypeRefusals, HeadsMustBeWholeBlocksAndTheTypeACacheType) {
    auto stories = Model::load(model_path("stories260K"));  // head size 8
    EXPECT_EQ(context_error(*stories, GgmlType::Q4_0, GgmlType::F16, false),
              "KV cache type q4_0 for K needs a head size that is a multiple of 32 (this model's is 8)");
    EXPECT_EQ(context_error(*stories, GgmlType::F16, GgmlType::IQ4_NL, true),
              "KV cache type iq4_nl for V needs a head size that is a multiple of 32 (this model's is 8)");
    EXPECT_EQ(context_error(*stories, GgmlType::BF16, GgmlType::BF16, false), "");  // elementwise: any size
    const std::string e = context_error(*stories, GgmlType::Q4_K, GgmlType::F16, false);
    EXPECT_NE(
        e.find("KV cache type q4_K is not supported (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)"),
        std::string::npos)
        << e;
}

}  // namespace
}  // namespace lctx::kv_cache_types_test
