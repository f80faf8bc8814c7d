// No function of llama.h is a stub: each one that used to log "not supported" (LoRA adapters, control
// vectors, quantization, split models, metadata overrides, RoPE overrides) is called here the way an app
// calls it, must succeed, and must log no "not supported" line. The library's detailed behaviour is tested
// beside each feature (tests/lora, tests/quantize, tests/split, tests/generate, capi_rope_test); this
// list is the one place that fails if any of them regresses to a stub.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_split.h"
#include "llama.h"

namespace fs = std::filesystem;

namespace no_stub_test {
namespace {

std::mutex g_log_mutex;
std::vector<std::string> g_log;

void capture(enum ggml_log_level, const char *text, void *) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log.emplace_back(text ? text : "");
}

std::string golden_model(const char *name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name;
}

class NoStub : public ::testing::Test {
  protected:
    void SetUp() override {
        {
            std::lock_guard<std::mutex> lock(g_log_mutex);
            g_log.clear();
        }
        llama_log_set(capture, nullptr);
        dir_ = fs::temp_directory_path() / ("lctx-no-stub-" + std::to_string(getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override {
        llama_log_set(nullptr, nullptr);
        std::error_code ec;
        fs::remove_all(dir_, ec);
        std::lock_guard<std::mutex> lock(g_log_mutex);
        for (const std::string &line : g_log)
            EXPECT_EQ(line.find("not supported"), std::string::npos) << "a stub's log line: " << line;
    }
    fs::path dir_;
};

llama_model *load(const std::string &path) {
    llama_model_params p = llama_model_default_params();
    return llama_model_load_from_file(path.c_str(), p);
}

llama_context *context(llama_model *m) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_ubatch = 16;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    return llama_init_from_model(m, cp);
}

// The logits of one short prompt at positions 0.. (the KV cache cleared first).
std::vector<float> logits_of(llama_context *ctx, const llama_model *m) {
    llama_kv_cache_clear(ctx);
    std::vector<llama_token> toks = {1, 17, 42, 99};
    if (llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))) != 0) return {};
    const float *l = llama_get_logits_ith(ctx, -1);
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    return l ? std::vector<float>(l, l + n_vocab) : std::vector<float>{};
}

TEST_F(NoStub, LoraAdapters) {
    llama_model *m = load(golden_model("llama-F16.gguf"));
    ASSERT_NE(m, nullptr);
    llama_context *ctx = context(m);
    ASSERT_NE(ctx, nullptr);
    const std::vector<float> plain = logits_of(ctx, m);
    ASSERT_FALSE(plain.empty());

    const std::string path = std::string(LCTX_FIXTURES_DIR) + "/golden-lora/models/lora-llama-F16.gguf";
    llama_adapter_lora *a = llama_adapter_lora_init(m, path.c_str());
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(llama_set_adapter_lora(ctx, a, 1.0f), 0);
    const std::vector<float> adapted = logits_of(ctx, m);
    ASSERT_EQ(adapted.size(), plain.size());
    EXPECT_NE(adapted, plain) << "an adapter set at scale 1 changed nothing";
    EXPECT_EQ(llama_rm_adapter_lora(ctx, a), 0);
    EXPECT_EQ(llama_rm_adapter_lora(ctx, a), -1);  // no longer set
    EXPECT_EQ(logits_of(ctx, m), plain);
    EXPECT_EQ(llama_set_adapter_lora(ctx, a, 0.5f), 0);
    llama_clear_adapter_lora(ctx);
    EXPECT_EQ(logits_of(ctx, m), plain);
    llama_adapter_lora_free(a);
    llama_free(ctx);
    llama_model_free(m);
}

TEST_F(NoStub, ControlVectors) {
    llama_model *m = load(golden_model("llama-F16.gguf"));
    ASSERT_NE(m, nullptr);
    llama_context *ctx = context(m);
    ASSERT_NE(ctx, nullptr);
    const std::vector<float> plain = logits_of(ctx, m);
    const int32_t n_embd = llama_model_n_embd(m), n_layer = llama_model_n_layer(m);
    std::vector<float> dir(static_cast<size_t>(n_embd) * n_layer, 0.05f);
    EXPECT_EQ(llama_apply_adapter_cvec(ctx, dir.data(), dir.size(), n_embd, 1, n_layer), 0);
    EXPECT_NE(logits_of(ctx, m), plain);
    EXPECT_EQ(llama_apply_adapter_cvec(ctx, nullptr, 0, n_embd, 0, 0), 0);
    EXPECT_EQ(logits_of(ctx, m), plain);
    llama_free(ctx);
    llama_model_free(m);
}

TEST_F(NoStub, Quantize) {
    const std::string out = (dir_ / "q8_0.gguf").string();
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
    qp.nthread = 1;
    ASSERT_EQ(llama_model_quantize(golden_model("llama-F16.gguf").c_str(), out.c_str(), &qp), 0u);
    llama_model *m = load(out);
    ASSERT_NE(m, nullptr);
    char desc[128] = {};
    llama_model_desc(m, desc, sizeof desc);
    EXPECT_NE(std::string(desc).find("Q8_0"), std::string::npos) << desc;
    llama_model_free(m);
}

TEST_F(NoStub, SplitModels) {
    char buf[256];
    const std::string prefix = (dir_ / "model").string();
    ASSERT_GT(llama_split_path(buf, sizeof buf, prefix.c_str(), 1, 3), 0);
    EXPECT_EQ(std::string(buf), prefix + "-00002-of-00003.gguf");
    char pre[256];
    ASSERT_GT(llama_split_prefix(pre, sizeof pre, buf, 1, 3), 0);
    EXPECT_EQ(std::string(pre), prefix);

    // Three parts of a fixture model, loaded by explicit paths and by the first part's name.
    std::unique_ptr<lctx::gguf::File> whole = lctx::gguf::File::open(golden_model("llama-F16.gguf"));
    lctx::gguf::SplitLimits limits;
    limits.max_tensors = static_cast<int>((whole->tensors().size() + 2) / 3);
    const std::vector<lctx::gguf::SplitPart> parts = lctx::gguf::plan_split(*whole, prefix, limits);
    ASSERT_GE(parts.size(), 2u);
    lctx::gguf::write_split(*whole, parts);
    std::vector<std::string> paths;
    for (const lctx::gguf::SplitPart &p : parts) paths.push_back(p.path);
    std::vector<const char *> cpaths;
    for (const std::string &p : paths) cpaths.push_back(p.c_str());

    llama_model *by_paths = llama_model_load_from_splits(cpaths.data(), cpaths.size(), llama_model_default_params());
    ASSERT_NE(by_paths, nullptr);
    llama_model *by_name = load(paths[0]);
    ASSERT_NE(by_name, nullptr);
    llama_model *plain = load(golden_model("llama-F16.gguf"));
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(llama_model_n_params(by_paths), llama_model_n_params(plain));
    llama_context *c1 = context(by_paths);
    llama_context *c2 = context(plain);
    ASSERT_NE(c1, nullptr);
    ASSERT_NE(c2, nullptr);
    EXPECT_EQ(logits_of(c1, by_paths), logits_of(c2, plain));
    llama_free(c1);
    llama_free(c2);
    llama_model_free(by_paths);
    llama_model_free(by_name);
    llama_model_free(plain);
}

TEST_F(NoStub, MetadataAndRopeOverrides) {
    llama_model_kv_override kvo[2] = {};
    kvo[0].tag = LLAMA_KV_OVERRIDE_TYPE_INT;
    std::strncpy(kvo[0].key, "llama.context_length", sizeof kvo[0].key - 1);
    kvo[0].val_i64 = 128;
    llama_model_params mp = llama_model_default_params();
    mp.kv_overrides = kvo;
    llama_model *m = llama_model_load_from_file(golden_model("llama-F16.gguf").c_str(), mp);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(llama_model_n_ctx_train(m), 128);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.rope_freq_base = 20000.0f;
    cp.rope_freq_scale = 0.5f;
    cp.yarn_ext_factor = 0.0f;
    llama_context *ctx = llama_init_from_model(m, cp);
    ASSERT_NE(ctx, nullptr);
    llama_context *plain_ctx = context(m);
    ASSERT_NE(plain_ctx, nullptr);
    EXPECT_NE(logits_of(ctx, m), logits_of(plain_ctx, m)) << "the context's RoPE settings changed nothing";
    llama_free(ctx);
    llama_free(plain_ctx);
    llama_model_free(m);
}

}  // namespace
}  // namespace no_stub_test
