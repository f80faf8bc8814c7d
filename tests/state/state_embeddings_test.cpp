// A whole-context state saved with embeddings on (pooling none) carries each output token's embedding
// (STATE-FORMAT.md: the embeddings section after the logits); restoring it into a fresh context gives back
// the same rows, for a decoder (stories260K) and for an encoder decoded without the cache (bert).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "llama.h"

namespace state_embeddings_test {
namespace {

struct ModelDeleter {
    void operator()(llama_model *m) const { llama_model_free(m); }
};

llama_context *make(llama_model *m) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_batch = p.n_ubatch = 32;
    p.n_threads = p.n_threads_batch = 1;
    p.embeddings = true;
    p.pooling_type = LLAMA_POOLING_TYPE_NONE;
    return llama_init_from_model(m, p);
}

void round_trip(llama_model *m, const std::vector<llama_token> &tokens) {
    const int n = static_cast<int>(tokens.size()), n_embd = llama_model_n_embd(m);
    llama_context *a = make(m), *b = make(m);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; ++i) {
        batch.token[i] = tokens[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = i % 2 == 0 || i == n - 1;  // some tokens without an output
    }
    batch.n_tokens = n;
    ASSERT_EQ(llama_decode(a, batch), 0);
    std::vector<int> outputs;
    for (int i = 0; i < n; ++i)
        if (batch.logits[i]) outputs.push_back(i);
    std::vector<float> want;
    for (int i : outputs) {
        const float *e = llama_get_embeddings_ith(a, i);
        ASSERT_NE(e, nullptr);
        want.insert(want.end(), e, e + n_embd);
    }

    const std::vector<uint8_t> saved = capi_test::state_bytes(a);
    ASSERT_EQ(llama_state_set_data(b, saved.data(), saved.size()), saved.size());
    std::vector<float> got;
    for (int i : outputs) {
        const float *e = llama_get_embeddings_ith(b, i);
        ASSERT_NE(e, nullptr) << "token " << i << " lost its embedding in the restore";
        got.insert(got.end(), e, e + n_embd);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(llama_get_embeddings_ith(b, 1), nullptr) << "token 1 asked for no output";
    const float *flat = llama_get_embeddings(b);
    ASSERT_NE(flat, nullptr);
    EXPECT_EQ(std::vector<float>(flat, flat + want.size()), want);
    EXPECT_EQ(capi_test::state_bytes(b), saved);
    llama_batch_free(batch);
    llama_free(a);
    llama_free(b);
}

TEST(StateEmbeddings, RestoreGivesBackEveryOutputsEmbedding) {
    capi_test::quiet_log();
    round_trip(capi_test::model(), {1, 403, 407, 261, 378, 432, 383});
    const std::unique_ptr<llama_model, ModelDeleter> bert(llama_model_load_from_file(
        (std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf").c_str(), llama_model_default_params()));
    ASSERT_NE(bert, nullptr);
    round_trip(bert.get(), {101, 7592, 2088, 1012, 18133, 102});
}

}  // namespace
}  // namespace state_embeddings_test
