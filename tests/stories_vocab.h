// A test fixture with stories260K's vocabulary loaded through llama.h (vocab_only: no weights), once per
// suite, llama.h's log silenced: for the tests of sampler chains built over a llama_vocab.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "llama.h"

namespace lctx::testing {

class StoriesVocabTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        const std::string path = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
        llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        model_ = llama_model_load_from_file(path.c_str(), mp);
    }
    static void TearDownTestSuite() {
        llama_model_free(model_);
        model_ = nullptr;
    }
    static const llama_vocab *vocab() { return llama_model_get_vocab(model_); }
    static int32_t n_vocab() { return llama_vocab_n_tokens(vocab()); }

    inline static llama_model *model_ = nullptr;
};

}  // namespace lctx::testing
