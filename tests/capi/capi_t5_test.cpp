// T5 through llama.h as llama.cpp's harness drove it (fixtures/golden-t5/FORMAT-T5.md, case t5_greedy):
// llama_tokenize with </s>, llama_encode, the encoder rows read with llama_get_embeddings_ith, then
// llama_decode from llama_model_decoder_start_token, one greedy token at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "llama.h"

namespace capi_t5_test {
namespace {

std::string t5_dir() {
    return std::string(LCTX_FIXTURES_DIR) + "/golden-t5/";
}

std::vector<float> read_f32(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

TEST(CapiT5, EncodeThenGreedyDecodeMatchesLlamaCpp) {
    capi_test::quiet_log();
    std::ifstream jf(t5_dir() + "cases/t5_greedy.json");
    const nlohmann::json c = nlohmann::json::parse(jf);
    const nlohmann::json &step = c["steps"][0];

    llama_model *model =
        llama_model_load_from_file((t5_dir() + "models/t5.gguf").c_str(), llama_model_default_params());
    ASSERT_NE(model, nullptr);
    EXPECT_TRUE(llama_model_has_encoder(model));
    EXPECT_TRUE(llama_model_has_decoder(model));
    EXPECT_EQ(llama_model_decoder_start_token(model), c["decoder_start_token"].get<int32_t>());
    const llama_vocab *vocab = llama_model_get_vocab(model);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = cp.n_ubatch = 64;
    cp.n_threads = cp.n_threads_batch = 1;
    llama_context *ctx = llama_init_from_model(model, cp);
    ASSERT_NE(ctx, nullptr);

    const std::string prompt = step["prompt"];
    std::vector<llama_token> toks(prompt.size() + 8);
    const int32_t n = llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), toks.data(),
                                     static_cast<int32_t>(toks.size()), /*add_special=*/true, false);
    ASSERT_GT(n, 0);
    toks.resize(static_cast<size_t>(n));
    EXPECT_EQ(toks, step["prompt_tokens"].get<std::vector<llama_token>>());

    ASSERT_EQ(llama_encode(ctx, llama_batch_get_one(toks.data(), n)), 0);
    const std::vector<float> want_enc =
        read_f32(t5_dir() + "cases/" + c["encoder_out_file"].get<std::string>());
    const int32_t n_embd = llama_model_n_embd(model);
    ASSERT_EQ(want_enc.size(), static_cast<size_t>(n) * n_embd);
    for (int32_t i = 0; i < n; ++i) {
        const float *e = llama_get_embeddings_ith(ctx, i);
        ASSERT_NE(e, nullptr) << i;
        for (int32_t d = 0; d < n_embd; ++d)
            EXPECT_NEAR(e[d], want_enc[static_cast<size_t>(i) * n_embd + d], 5e-4f) << i << " " << d;
    }

    llama_token tok = llama_model_decoder_start_token(model);
    std::vector<llama_token> got;
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    for (int i = 0; i < step["n_predict"].get<int>(); ++i) {
        ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(&tok, 1)), 0);
        const float *l = llama_get_logits_ith(ctx, -1);
        ASSERT_NE(l, nullptr);
        llama_token best = 0;
        for (llama_token t = 1; t < n_vocab; ++t)
            if (l[t] > l[best]) best = t;
        got.push_back(best);
        if (llama_vocab_is_eog(vocab, best)) break;
        tok = best;
    }
    EXPECT_EQ(got, step["generated_tokens"].get<std::vector<llama_token>>());
    llama_free(ctx);
    llama_model_free(model);
}

}  // namespace
}  // namespace capi_t5_test
