// The LoRA functions of llama.h (b4748): llama_adapter_lora_init / _free, llama_set_adapter_lora,
// llama_rm_adapter_lora, llama_clear_adapter_lora.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llama.h"

namespace capi_lora_test {
namespace {

std::string fixture(const std::string &rel) {
    return std::string(LCTX_FIXTURES_DIR) + "/" + rel;
}

std::string g_log;
void capture_log(enum ggml_log_level, const char *text, void *) {
    g_log += text;
}

struct CapiLora : ::testing::Test {
    void SetUp() override {
        g_log.clear();
        llama_log_set(capture_log, nullptr);
        model = llama_model_load_from_file(fixture("golden/models/llama-F16.gguf").c_str(),
                                           llama_model_default_params());
        ASSERT_NE(model, nullptr);
    }
    void TearDown() override {
        llama_model_free(model);  // frees the adapters still loaded (ASan checks that nothing leaks)
        llama_log_set(nullptr, nullptr);
    }
    llama_context *make_ctx() {
        llama_context_params p = llama_context_default_params();
        p.n_ctx = 128;
        p.n_batch = 32;
        p.n_ubatch = 32;
        p.n_threads = p.n_threads_batch = 1;
        return llama_init_from_model(model, p);
    }
    // The last token's logits of a fixed prompt on a cleared cache.
    std::vector<float> logits(llama_context *ctx) {
        llama_kv_cache_clear(ctx);
        std::vector<llama_token> toks = {1, 120, 6, 22, 327, 61, 433, 285};
        llama_batch b = llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()));
        EXPECT_EQ(llama_decode(ctx, b), 0);
        const float *l = llama_get_logits_ith(ctx, -1);
        return std::vector<float>(l, l + 512);
    }
    llama_model *model = nullptr;
};

TEST_F(CapiLora, SetRmClear) {
    llama_adapter_lora *a =
        llama_adapter_lora_init(model, fixture("golden-lora/models/lora-llama-F16.gguf").c_str());
    ASSERT_NE(a, nullptr);
    llama_context *ctx = make_ctx();
    const std::vector<float> none = logits(ctx);
    EXPECT_EQ(llama_rm_adapter_lora(ctx, a), -1);  // not set
    EXPECT_EQ(llama_set_adapter_lora(ctx, a, 1.0f), 0);
    const std::vector<float> one = logits(ctx);
    EXPECT_NE(one, none);
    EXPECT_EQ(llama_set_adapter_lora(ctx, a, 0.5f), 0);  // updates the scale
    const std::vector<float> half = logits(ctx);
    EXPECT_NE(half, one);
    EXPECT_NE(half, none);
    EXPECT_EQ(llama_rm_adapter_lora(ctx, a), 0);
    EXPECT_EQ(logits(ctx), none);
    EXPECT_EQ(llama_rm_adapter_lora(ctx, a), -1);
    EXPECT_EQ(llama_set_adapter_lora(ctx, a, 1.0f), 0);
    EXPECT_EQ(logits(ctx), one);
    llama_clear_adapter_lora(ctx);
    EXPECT_EQ(logits(ctx), none);
    // Two contexts keep their own sets.
    llama_context *ctx2 = make_ctx();
    EXPECT_EQ(llama_set_adapter_lora(ctx2, a, 1.0f), 0);
    EXPECT_EQ(logits(ctx2), one);
    EXPECT_EQ(logits(ctx), none);
    llama_free(ctx2);
    llama_free(ctx);
    llama_adapter_lora_free(a);
}

TEST_F(CapiLora, FreedWhileSetIsDropped) {
    llama_adapter_lora *a =
        llama_adapter_lora_init(model, fixture("golden-lora/models/lora-llama-F16.gguf").c_str());
    ASSERT_NE(a, nullptr);
    llama_context *ctx = make_ctx();
    const std::vector<float> none = logits(ctx);
    ASSERT_EQ(llama_set_adapter_lora(ctx, a, 1.0f), 0);
    llama_adapter_lora_free(a);  // b4748 would read freed memory at the next decode
    EXPECT_EQ(logits(ctx), none);
    llama_free(ctx);
}

TEST_F(CapiLora, AdaptersAreFreedWithTheModel) {
    // Never freed by the caller: llama_model_free (TearDown) releases them; ASan reports a leak otherwise.
    for (int i = 0; i < 2; ++i)
        ASSERT_NE(
            llama_adapter_lora_init(model, fixture("golden-lora/models/lora-llama-F16-f16w.gguf").c_str()),
            nullptr);
}

TEST_F(CapiLora, MismatchIsNullWithTheReason) {
    llama_model *small = llama_model_load_from_file(
        (std::string(LCTX_MODELS_DIR) + "/stories260K.gguf").c_str(), llama_model_default_params());
    ASSERT_NE(small, nullptr);
    g_log.clear();
    EXPECT_EQ(llama_adapter_lora_init(small, fixture("golden-lora/models/lora-llama-F16.gguf").c_str()),
              nullptr);
    EXPECT_NE(g_log.find("tensor 'blk.0.attn_q.weight' has incorrect shape (hint: maybe wrong base model?)"),
              std::string::npos)
        << g_log;
    g_log.clear();
    EXPECT_EQ(llama_adapter_lora_init(small, "/nonexistent/adapter.gguf"), nullptr);
    EXPECT_FALSE(g_log.empty());
    // An adapter of another model is refused by a context.
    llama_adapter_lora *a =
        llama_adapter_lora_init(model, fixture("golden-lora/models/lora-llama-F16.gguf").c_str());
    ASSERT_NE(a, nullptr);
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    llama_context *other = llama_init_from_model(small, p);
    EXPECT_EQ(llama_set_adapter_lora(other, a, 1.0f), -1);
    llama_free(other);
    llama_model_free(small);
    EXPECT_EQ(llama_adapter_lora_init(nullptr, "x"), nullptr);
    EXPECT_EQ(llama_adapter_lora_init(model, nullptr), nullptr);
}

}  // namespace
}  // namespace capi_lora_test
