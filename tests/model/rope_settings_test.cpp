// RoPE metadata read as b4748 reads it (rope.scaling.factor of any type, meaning linear when no type is
// given; the older rope.scale_linear whatever the type), and a context's settings resolved from the model's
// and the context's parameters by b4748's rules (context_rope).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "../gguf_rewrite.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/error.h"

namespace lctx::rope_settings_test {
namespace {

const std::string kLlama = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf";
const std::string kQwen2 = std::string(LCTX_FIXTURES_DIR) + "/golden/models/qwen2.gguf";

// The hyper-parameters of `model` (llama-F16.gguf by default) with metadata set by `kv`.
HParams load_with(const std::function<void(gguf::Writer &)> &kv, const std::string &tag,
                  const std::string &model = kLlama) {
    testing::Rewrite r;
    r.add = kv;
    const std::string path = testing::rewrite_gguf(model, r, "rope-settings-" + tag);
    struct Remove {
        std::string p;
        ~Remove() { std::filesystem::remove(p); }
    } remove{path};
    return Model::load(path)->hparams();
}

void expect_refused(const std::function<void(gguf::Writer &)> &kv, const std::string &tag,
                    const std::string &what, const std::string &model = kLlama) {
    try {
        load_with(kv, tag, model);
        ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}

TEST(RopeMetadata, FactorWithoutTypeIsLinear) {
    const HParams hp = load_with([](gguf::Writer &w) { w.set_f32("llama.rope.scaling.factor", 4.0f); }, "f");
    EXPECT_EQ(hp.rope_scaling, RopeScaling::Linear);
    EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.25f);
    EXPECT_FLOAT_EQ(context_rope(hp, {}).freq_scale, 0.25f);
    EXPECT_EQ(context_rope(hp, {}).ext_factor, 0.0f);
}

TEST(RopeMetadata, ScaleLinearIsReadWhateverTheType) {
    for (const char *type : {"yarn", "linear", "longrope", ""}) {
        const HParams hp = load_with(
            [&](gguf::Writer &w) {
                if (*type) w.set_string("llama.rope.scaling.type", type);
                w.set_f32("llama.rope.scale_linear", 4.0f);
            },
            std::string("sl-") + type);
        EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.25f) << type;
        EXPECT_FLOAT_EQ(context_rope(hp, {}).freq_scale, 0.25f) << type;
        EXPECT_EQ(context_rope(hp, {}).ext_factor, std::string(type) == "yarn" ? 1.0f : 0.0f) << type;
    }
    // rope.scaling.factor comes first.
    const HParams hp = load_with(
        [](gguf::Writer &w) {
            w.set_f32("llama.rope.scaling.factor", 2.0f);
            w.set_f32("llama.rope.scale_linear", 4.0f);
        },
        "both");
    EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.5f);
}

TEST(RopeMetadata, TypeNoneKeepsTheFactorButDoesNotScale) {
    const HParams hp = load_with(
        [](gguf::Writer &w) {
            w.set_string("llama.rope.scaling.type", "none");
            w.set_f32("llama.rope.scaling.factor", 4.0f);
        },
        "none");
    EXPECT_EQ(hp.rope_scaling, RopeScaling::None);
    EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.25f);  // b4748's rope_freq_scale_train
    EXPECT_EQ(context_rope(hp, {}).freq_scale, 1.0f);
    RopeOverrides linear;
    linear.scaling_type = 1;
    EXPECT_FLOAT_EQ(context_rope(hp, linear).freq_scale, 0.25f);
}

TEST(RopeMetadata, BadValuesAreRefused) {
    expect_refused([](gguf::Writer &w) { w.set_string("llama.rope.scaling.type", "dynamic"); }, "type",
                   "rope.scaling.type");
    expect_refused([](gguf::Writer &w) { w.set_f32("llama.rope.scaling.factor", -2.0f); }, "neg",
                   "rope.scaling.factor");
    expect_refused([](gguf::Writer &w) { w.set_f32("llama.rope.freq_base", 0.0f); }, "base",
                   "rope.freq_base");
}

// b4748's llama_init_from_model rules, one by one.
TEST(ContextRope, ResolvesAsB4748) {
    const HParams hp = load_with(
        [](gguf::Writer &w) {
            w.set_string("llama.rope.scaling.type", "yarn");
            w.set_f32("llama.rope.scaling.factor", 4.0f);
            w.set_f32("llama.rope.freq_base", 20000.0f);
            w.set_f32("llama.rope.scaling.attn_factor", 1.5f);
            w.set_u32("llama.rope.scaling.original_context_length", 48);
        },
        "yarn");
    const kernels::RopeParams d = context_rope(hp, {});  // llama_context_default_params
    EXPECT_EQ(d.freq_base, 20000.0f);
    EXPECT_FLOAT_EQ(d.freq_scale, 0.25f);
    EXPECT_EQ(d.ext_factor, 1.0f);
    EXPECT_FLOAT_EQ(d.attn_factor, 1.5f);
    EXPECT_EQ(d.beta_fast, 32.0f);
    EXPECT_EQ(d.beta_slow, 1.0f);
    EXPECT_EQ(d.n_ctx_orig, 48);
    EXPECT_EQ(d.n_rot, hp.rope.n_rot);
    EXPECT_EQ(d.mode, hp.rope.mode);

    RopeOverrides o;
    o.freq_base = 500.0f;
    o.freq_scale = 0.5f;
    o.ext_factor = 0.25f;
    o.attn_factor = 2.0f;
    o.beta_fast = 16.0f;
    o.beta_slow = 2.0f;
    o.orig_ctx = 100;
    const kernels::RopeParams r = context_rope(hp, o);
    EXPECT_EQ(r.freq_base, 500.0f);
    EXPECT_EQ(r.freq_scale, 0.5f);
    EXPECT_EQ(r.ext_factor, 0.25f);
    EXPECT_FLOAT_EQ(r.attn_factor, 3.0f);  // the context's times the file's
    EXPECT_EQ(r.beta_fast, 16.0f);
    EXPECT_EQ(r.beta_slow, 2.0f);
    EXPECT_EQ(r.n_ctx_orig, 100);

    RopeOverrides linear;  // a type other than YaRN: automatic ext_factor 0
    linear.scaling_type = 1;
    EXPECT_EQ(context_rope(hp, linear).ext_factor, 0.0f);
    RopeOverrides none;  // none: no scaling even with a scale given
    none.scaling_type = 0;
    none.freq_scale = 0.5f;
    EXPECT_EQ(context_rope(hp, none).freq_scale, 1.0f);

    // Original context 0 in the file: the training context.
    const HParams zero = load_with(
        [](gguf::Writer &w) { w.set_u32("llama.rope.scaling.original_context_length", 0); }, "orig0");
    EXPECT_EQ(context_rope(zero, {}).n_ctx_orig, static_cast<int>(zero.n_ctx_train));
}

// rope.dimension_count is the rotated part of each head, taken in pairs: an odd count (ggml's rope asserts
// an even one only when the graph runs) or one wider than the head is refused when the model loads, naming
// the key; an even count below the head (partial rotary) loads. qwen2, because b4748 lets its count differ
// from the head (it requires count == head for llama, deci and falcon only).
TEST(RopeMetadata, DimensionCountIsEvenAndWithinTheHead) {
    const uint32_t head = Model::load(kQwen2)->hparams().n_embd_head_k;
    ASSERT_GE(head, 4u);
    auto with_count = [](uint32_t n) {
        return [n](gguf::Writer &w) { w.set_u32("qwen2.rope.dimension_count", n); };
    };
    EXPECT_EQ(load_with(with_count(head - 2), "even", kQwen2).rope.n_rot, static_cast<int>(head - 2));
    EXPECT_EQ(load_with(with_count(2), "two", kQwen2).rope.n_rot, 2);
    for (uint32_t bad : {head - 1, 1u, 3u, head + 2, 0u})
        expect_refused(with_count(bad), "bad-" + std::to_string(bad),
                       "rope.dimension_count " + std::to_string(bad), kQwen2);
}

// llama rotates the whole head: b4748 refuses a llama file whose rope.dimension_count is not the head size
// ("invalid n_rot"), even an even one below it, which qwen2 takes (above).
TEST(RopeMetadata, LlamaRotatesTheWholeHead) {
    const uint32_t head = Model::load(kLlama)->hparams().n_embd_head_k;
    ASSERT_GE(head, 4u);
    EXPECT_EQ(load_with([&](gguf::Writer &w) { w.set_u32("llama.rope.dimension_count", head); }, "llama-head")
                  .rope.n_rot,
              static_cast<int>(head));
    expect_refused([&](gguf::Writer &w) { w.set_u32("llama.rope.dimension_count", head - 2); },
                   "llama-partial", "rope.dimension_count " + std::to_string(head - 2));
}

TEST(ContextRope, RefusesWhatIsNotASetting) {
    const HParams hp = load_with([](gguf::Writer &) {}, "plain");
    const std::vector<std::function<void(RopeOverrides &)>> bad = {
        [](RopeOverrides &o) { o.scaling_type = 4; },       [](RopeOverrides &o) { o.scaling_type = -2; },
        [](RopeOverrides &o) { o.freq_base = -1.0f; },      [](RopeOverrides &o) { o.freq_base = NAN; },
        [](RopeOverrides &o) { o.freq_scale = INFINITY; },  [](RopeOverrides &o) { o.attn_factor = 0.0f; },
        [](RopeOverrides &o) { o.ext_factor = NAN; },       [](RopeOverrides &o) { o.beta_slow = INFINITY; },
        [](RopeOverrides &o) { o.orig_ctx = 3000000000u; },
    };
    for (size_t i = 0; i < bad.size(); ++i) {
        RopeOverrides o;
        bad[i](o);
        EXPECT_THROW(context_rope(hp, o), Error) << "case " << i;
    }
}

}  // namespace
}  // namespace lctx::rope_settings_test
