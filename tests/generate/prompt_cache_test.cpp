// generate/prompt_cache.h over llama.h's state files: a saved state comes back with its tokens, a prompt
// reuses their longest common prefix (never the whole prompt: its last token is decoded again for its
// logits), and the logits after the reused prefix are the ones a fresh decode of the same batches gives.
#include "generate/prompt_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace prompt_cache_test {
namespace {

llama_context *new_context(llama_model *m) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = cp.n_threads_batch = 1;
    return llama_init_from_model(m, cp);
}

std::vector<float> last_logits(llama_context *ctx, const llama_model *m) {
    const float *l = llama_get_logits_ith(ctx, -1);
    return std::vector<float>(l, l + llama_vocab_n_tokens(llama_model_get_vocab(m)));
}

TEST(GeneratePromptCache, SavesLoadsAndReusesTheLongestCommonPrefix) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    const std::string path = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
    llama_model *m = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    ASSERT_TRUE(m);
    const std::string file =
        (std::filesystem::temp_directory_path() / ("lctx_prompt_cache_test_" + std::to_string(getpid())))
            .string();
    std::vector<llama_token> first = {1, 20, 21, 22, 23, 24};
    {
        llama_context *ctx = new_context(m);
        ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(first.data(), static_cast<int32_t>(first.size()))),
                  0);
        ASSERT_TRUE(lctx::generate::prompt_cache_save(ctx, file, first));
        llama_free(ctx);
    }
    // A prompt that shares four tokens, then differs.
    std::vector<llama_token> second = {1, 20, 21, 22, 30, 31};
    llama_context *ctx = new_context(m);
    std::vector<llama_token> cached;
    ASSERT_TRUE(lctx::generate::prompt_cache_load(ctx, file, &cached));
    EXPECT_EQ(cached, first);
    const int32_t reused = lctx::generate::prompt_cache_reuse(ctx, cached, second);
    EXPECT_EQ(reused, 4);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 3);
    std::vector<llama_token> rest(second.begin() + reused, second.end());
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(rest.data(), static_cast<int32_t>(rest.size()))), 0);
    const std::vector<float> got = last_logits(ctx, m);
    llama_free(ctx);
    // A fresh context decoding the same two batches (the prefix, then the rest) gives the same bits.
    llama_context *fresh = new_context(m);
    ASSERT_EQ(llama_decode(fresh, llama_batch_get_one(second.data(), reused)), 0);
    ASSERT_EQ(llama_decode(fresh, llama_batch_get_one(rest.data(), static_cast<int32_t>(rest.size()))), 0);
    EXPECT_EQ(got, last_logits(fresh, m));
    llama_free(fresh);
    // The whole prompt cached: its last token is left to decode.
    ctx = new_context(m);
    ASSERT_TRUE(lctx::generate::prompt_cache_load(ctx, file, &cached));
    EXPECT_EQ(lctx::generate::prompt_cache_reuse(ctx, cached, first), 5);
    llama_free(ctx);
    // A file that is not a state file is refused.
    {
        std::FILE *f = std::fopen(file.c_str(), "wb");
        std::fputs("not a state", f);
        std::fclose(f);
    }
    ctx = new_context(m);
    EXPECT_FALSE(lctx::generate::prompt_cache_load(ctx, file, &cached));
    llama_free(ctx);
    std::filesystem::remove(file);
    llama_model_free(m);
}

}  // namespace
}  // namespace prompt_cache_test
