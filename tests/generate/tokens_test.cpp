// generate/tokens.h: tokenize and token_piece through llama.h.
#include "generate/tokens.h"

#include <gtest/gtest.h>

#include <string>

namespace tokens_test {
namespace {

TEST(GenerateTokens, TokenizeAndPiecesRoundTrip) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    const std::string path = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *m = llama_model_load_from_file(path.c_str(), mp);
    ASSERT_TRUE(m);
    const llama_vocab *v = llama_model_get_vocab(m);
    const std::string text = "Once upon a time, there was a little girl.";
    const std::vector<llama_token> with_bos = lctx::generate::tokenize(v, text, true, false);
    const std::vector<llama_token> without = lctx::generate::tokenize(v, text, false, false);
    ASSERT_EQ(with_bos.size(), without.size() + 1);
    EXPECT_EQ(with_bos.front(), llama_vocab_bos(v));
    std::string back;
    for (llama_token t : without) back += lctx::generate::token_piece(v, t, false);
    EXPECT_EQ(back, " " + text);  // SPM's leading space
    EXPECT_EQ(lctx::generate::token_piece(v, llama_vocab_bos(v), true), "<s>");
    EXPECT_EQ(lctx::generate::token_piece(v, llama_vocab_bos(v), false), "");
    EXPECT_EQ(lctx::generate::tokenize(v, "", true, false), std::vector<llama_token>{llama_vocab_bos(v)});
    llama_model_free(m);
}

}  // namespace
}  // namespace tokens_test
