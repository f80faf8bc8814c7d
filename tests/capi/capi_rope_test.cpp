// RoPE settings of llama_context_params as b4748 applies them (llama_init_from_model's rules): each override
// gives the logits of a file whose metadata says the same thing, an unset one takes the model's, a value that
// is not a setting makes creation fail; and n_ctx is padded to 256 with flash attention (32 without), which
// is what picks phi3's LongRoPE table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../gguf_rewrite.h"
#include "llama.h"

namespace capi_rope_test {
namespace {

std::string fixture(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

// A fixture with metadata set by `kv` (and tensors added there), written to a temporary file that goes with
// the object.
struct TempModel {
    TempModel(const std::string &name, const std::string &tag, std::function<void(lctx::gguf::Writer &)> kv) {
        lctx::testing::Rewrite r;
        r.add = std::move(kv);
        path = lctx::testing::rewrite_gguf(fixture(name), r, "capi-rope-" + tag);
        llama_model_params mp = llama_model_default_params();
        model = llama_model_load_from_file(path.c_str(), mp);
        EXPECT_NE(model, nullptr) << path;
    }
    ~TempModel() {
        llama_model_free(model);
        std::filesystem::remove(path);
    }
    std::string path;
    llama_model *model = nullptr;
};

void no_edit(lctx::gguf::Writer &) {}

const std::vector<llama_token> kTokens = {1, 403, 407, 261, 378, 10, 66, 300, 17, 255, 4, 99};

llama_context_params base_params() {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_threads = p.n_threads_batch = 1;
    p.type_k = p.type_v = GGML_TYPE_F32;
    return p;
}

// The last token's logits after decoding kTokens at positions 0.. in a context made with `edit`'s params.
std::vector<float> logits(llama_model *m, const std::function<void(llama_context_params &)> &edit = {}) {
    llama_context_params p = base_params();
    if (edit) edit(p);
    llama_context *ctx = llama_init_from_model(m, p);
    EXPECT_NE(ctx, nullptr);
    if (!ctx) return {};
    std::vector<llama_token> toks = kTokens;
    EXPECT_EQ(llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 0);
    const float *l = llama_get_logits_ith(ctx, -1);
    std::vector<float> out(l, l + llama_vocab_n_tokens(llama_model_get_vocab(m)));
    llama_free(ctx);
    return out;
}

float max_diff(const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() != b.size() || a.empty()) return INFINITY;
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// The same rotation reached by two routes (the same float angles): summation order at most.
constexpr float kSame = 1e-4f;
// A setting that is applied moves these logits by far more than this.
constexpr float kMatters = 0.05f;

void set_yarn(lctx::gguf::Writer &w, const char *type, uint32_t orig) {
    w.set_string("llama.rope.scaling.type", type);
    w.set_f32("llama.rope.scaling.factor", 4.0f);
    w.set_u32("llama.rope.scaling.original_context_length", orig);
}

TEST(CapiRope, FreqBaseOverride) {
    TempModel plain("llama-F16", "plain", no_edit);
    TempModel base("llama-F16", "base", [](auto &w) { w.set_f32("llama.rope.freq_base", 5000.0f); });
    const std::vector<float> got = logits(plain.model, [](auto &p) { p.rope_freq_base = 5000.0f; });
    EXPECT_LT(max_diff(got, logits(base.model)), kSame);
    EXPECT_GT(max_diff(got, logits(plain.model)), kMatters);
}

TEST(CapiRope, FreqScaleOverride) {
    TempModel plain("llama-F16", "plain", no_edit);
    TempModel linear("llama-F16", "linear", [](auto &w) {
        w.set_string("llama.rope.scaling.type", "linear");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
    });
    const std::vector<float> got = logits(plain.model, [](auto &p) { p.rope_freq_scale = 0.25f; });
    EXPECT_LT(max_diff(got, logits(linear.model)), kSame);
    EXPECT_GT(max_diff(got, logits(plain.model)), kMatters);
    // Scaling type none: no scaling, whatever the file's factor.
    EXPECT_LT(
        max_diff(logits(linear.model, [](auto &p) { p.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_NONE; }),
                 logits(plain.model)),
        kSame);
}

TEST(CapiRope, ScalingTypeAndYarnOverrides) {
    TempModel linear("llama-F16", "linear32", [](auto &w) { set_yarn(w, "linear", 32); });
    TempModel yarn("llama-F16", "yarn32", [](auto &w) { set_yarn(w, "yarn", 32); });
    TempModel yarn64("llama-F16", "yarn64", [](auto &w) { set_yarn(w, "yarn", 64); });
    const std::vector<float> want_yarn = logits(yarn.model);
    ASSERT_GT(max_diff(want_yarn, logits(linear.model)), kMatters);  // YaRN differs from linear here
    // YaRN asked of a linear file: the YaRN file's rotation (ext_factor then 1).
    EXPECT_LT(
        max_diff(logits(linear.model, [](auto &p) { p.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_YARN; }),
                 want_yarn),
        kSame);
    // yarn_ext_factor 0 on the YaRN file: plain linear interpolation, without YaRN's magnitude.
    EXPECT_LT(max_diff(logits(yarn.model, [](auto &p) { p.yarn_ext_factor = 0.0f; }), logits(linear.model)),
              kSame);
    // yarn_orig_ctx: the original context the ramp is computed from.
    const std::vector<float> orig64 = logits(yarn.model, [](auto &p) { p.yarn_orig_ctx = 64; });
    EXPECT_LT(max_diff(orig64, logits(yarn64.model)), kSame);
    EXPECT_GT(max_diff(orig64, want_yarn), kMatters);
    // yarn_beta_fast / yarn_beta_slow move the ramp (no file key says them).
    EXPECT_GT(max_diff(logits(yarn.model,
                              [](auto &p) {
                                  p.yarn_beta_fast = 4.0f;
                                  p.yarn_beta_slow = 0.5f;
                              }),
                       want_yarn),
              kMatters);
}

TEST(CapiRope, AttnFactorMultipliesTheFiles) {
    TempModel plain("llama-F16", "plain", no_edit);
    TempModel f119("llama-F16", "attn119",
                   [](auto &w) { w.set_f32("llama.rope.scaling.attn_factor", 1.19f); });
    TempModel f2("llama-F16", "attn2", [](auto &w) { w.set_f32("llama.rope.scaling.attn_factor", 2.0f); });
    const std::vector<float> got = logits(plain.model, [](auto &p) { p.yarn_attn_factor = 1.19f; });
    EXPECT_LT(max_diff(got, logits(f119.model)), kSame);
    EXPECT_GT(max_diff(got, logits(plain.model)), kMatters);
    // The context's factor times the file's: 1.19 * (2 / 1.19) = 2.
    EXPECT_LT(
        max_diff(logits(f119.model, [](auto &p) { p.yarn_attn_factor = 2.0f / 1.19f; }), logits(f2.model)),
        kSame);
}

// A shift in a context with its own settings re-rotates with them: the next logits equal a direct decode at
// the new positions in a context with the same settings.
TEST(CapiRope, ShiftUsesTheContextsSettings) {
    TempModel yarn("llama-F16", "yarn32", [](auto &w) { set_yarn(w, "yarn", 32); });
    auto run = [&](llama_pos pos0, bool shift) {
        llama_context_params p = base_params();
        p.rope_freq_base = 3000.0f;
        p.yarn_attn_factor = 1.3f;
        p.yarn_orig_ctx = 48;
        llama_context *ctx = llama_init_from_model(yarn.model, p);
        EXPECT_NE(ctx, nullptr);
        llama_batch b = llama_batch_init(static_cast<int32_t>(kTokens.size()), 0, 1);
        b.n_tokens = static_cast<int32_t>(kTokens.size());
        for (size_t i = 0; i < kTokens.size(); ++i) {
            b.token[i] = kTokens[i];
            b.pos[i] = pos0 + static_cast<llama_pos>(i);
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = false;
        }
        EXPECT_EQ(llama_decode(ctx, b), 0);
        if (shift) llama_kv_cache_seq_add(ctx, 0, 0, -1, 11);
        b.n_tokens = 1;
        b.token[0] = 300;
        b.pos[0] = static_cast<llama_pos>(kTokens.size()) + 11;
        b.logits[0] = true;
        EXPECT_EQ(llama_decode(ctx, b), 0);
        const float *l = llama_get_logits_ith(ctx, -1);
        std::vector<float> out(l, l + llama_vocab_n_tokens(llama_model_get_vocab(yarn.model)));
        llama_batch_free(b);
        llama_free(ctx);
        return out;
    };
    // A key rotated twice against once, in float (F32 cache): on this fixture's sharp attention the K-shift
    // tests measure 0.0014 - 0.0022 and bound it by 0.01 (tests/context/context_b4748_test.cpp); the model's
    // settings instead of the context's are off by far more.
    EXPECT_LT(max_diff(run(0, true), run(11, false)), 0.01f);
}

TEST(CapiRope, SettingsThatAreNotSettingsAreRefused) {
    TempModel plain("llama-F16", "plain", no_edit);
    const std::vector<std::function<void(llama_context_params &)>> bad = {
        [](auto &p) { p.rope_freq_base = NAN; },
        [](auto &p) { p.rope_freq_base = -10.0f; },
        [](auto &p) { p.rope_freq_scale = INFINITY; },
        [](auto &p) { p.rope_scaling_type = static_cast<llama_rope_scaling_type>(7); },
        [](auto &p) { p.yarn_attn_factor = 0.0f; },
        [](auto &p) { p.yarn_ext_factor = NAN; },
        [](auto &p) { p.yarn_beta_fast = INFINITY; },
    };
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    for (size_t i = 0; i < bad.size(); ++i) {
        llama_context_params p = base_params();
        bad[i](p);
        llama_context *ctx = llama_init_from_model(plain.model, p);
        EXPECT_EQ(ctx, nullptr) << "case " << i;
        llama_free(ctx);
    }
    llama_log_set(nullptr, nullptr);
}

// Overrides are applied, so nothing warns that they are not.
TEST(CapiRope, NoWarningForOverrides) {
    TempModel plain("llama-F16", "plain", no_edit);
    static std::string logged;
    logged.clear();
    llama_log_set([](enum ggml_log_level, const char *text, void *) { logged += text; }, nullptr);
    llama_context_params p = base_params();
    p.rope_freq_base = 5000.0f;
    p.rope_freq_scale = 0.5f;
    p.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_YARN;
    p.yarn_beta_fast = 16.0f;
    llama_context *ctx = llama_init_from_model(plain.model, p);
    llama_log_set(nullptr, nullptr);
    ASSERT_NE(ctx, nullptr);
    llama_free(ctx);
    EXPECT_EQ(logged.find("not supported"), std::string::npos) << logged;
}

// ---- n_ctx padding ----

TEST(CapiNCtx, PaddedTo256WithFlashAttentionAnd32Without) {
    TempModel plain("llama-F16", "plain", no_edit);
    for (bool fa : {false, true}) {
        llama_context_params p = base_params();
        p.n_ctx = 300;
        p.flash_attn = fa;
        llama_context *ctx = llama_init_from_model(plain.model, p);
        ASSERT_NE(ctx, nullptr);
        EXPECT_EQ(llama_n_ctx(ctx), fa ? 512u : 320u);
        llama_free(ctx);
    }
}

// phi3 LongRoPE with an original context of 64: n_ctx 64 with flash attention is 256 cells, beyond 64, so the
// long table; without, 64 cells and the short one.
TEST(CapiNCtx, PaddingPicksPhi3sTable) {
    TempModel phi3("phi3", "longrope", [](auto &w) {
        w.set_u32("phi3.rope.scaling.original_context_length", 64);
        std::vector<float> long_f(16), short_f(16);
        for (int i = 0; i < 16; ++i) {
            long_f[size_t(i)] = 1.0f + 0.75f * static_cast<float>(i);
            short_f[size_t(i)] = 1.0f + 0.05f * static_cast<float>(i * i % 7);
        }
        w.add_tensor("rope_factors_long.weight", lctx::GgmlType::F32, {16}, long_f.data(),
                     16 * sizeof(float));
        w.add_tensor("rope_factors_short.weight", lctx::GgmlType::F32, {16}, short_f.data(),
                     16 * sizeof(float));
    });
    const std::vector<float> fa64 = logits(phi3.model, [](auto &p) { p.flash_attn = true; });
    const std::vector<float> long_table = logits(phi3.model, [](auto &p) { p.n_ctx = 256; });
    const std::vector<float> short_table = logits(phi3.model);
    EXPECT_LT(max_diff(fa64, long_table), kSame);
    EXPECT_GT(max_diff(fa64, short_table), kMatters);
}

}  // namespace
}  // namespace capi_rope_test
