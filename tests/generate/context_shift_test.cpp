// generate/context_shift.h over llama.h: the kept tokens stay, half of the rest go, the remainder moves back;
// nothing moves when shifting is off or the kept tokens fill the sequence.
#include "generate/context_shift.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace context_shift_test {
namespace {

TEST(GenerateContextShift, KeepsNDropsHalfOfTheRestAndMovesTheRemainderBack) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    const std::string path = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
    llama_model *m = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    ASSERT_TRUE(m);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = cp.n_threads_batch = 1;
    llama_context *ctx = llama_init_from_model(m, cp);
    ASSERT_TRUE(ctx);
    std::vector<llama_token> toks(20);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<llama_token>(10 + i);
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 0);
    ASSERT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 19);

    lctx::generate::ContextShift off;
    off.enabled = false;
    EXPECT_EQ(lctx::generate::shift_context(ctx, 0, off), 0);
    lctx::generate::ContextShift full;
    full.n_keep = 20;
    EXPECT_EQ(lctx::generate::shift_context(ctx, 0, full), 0);
    EXPECT_EQ(llama_get_kv_cache_token_count(ctx), 20);

    lctx::generate::ContextShift keep4;
    keep4.n_keep = 4;
    EXPECT_EQ(lctx::generate::shift_context(ctx, 0, keep4), 8);  // (20 - 4) / 2
    EXPECT_EQ(llama_get_kv_cache_token_count(ctx), 12);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 11);
    // The next token decodes at the position after the moved ones.
    llama_token next = 42;
    llama_batch b = llama_batch_init(1, 0, 1);
    b.n_tokens = 1;
    b.token[0] = next;
    b.pos[0] = 12;
    b.n_seq_id[0] = 1;
    b.seq_id[0][0] = 0;
    b.logits[0] = true;
    EXPECT_EQ(llama_decode(ctx, b), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 12);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(m);
}

}  // namespace
}  // namespace context_shift_test
