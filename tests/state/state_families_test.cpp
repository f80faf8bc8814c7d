// State files of the other families: a qwen2 context saved after a decode and loaded into a fresh context
// gives the same next logits and continues identically (whole state and one sequence's state); a state of
// one family is refused by a model of another.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"

namespace state_families_test {
namespace {

using capi_test::decode_seq;
using capi_test::quiet_log;
using capi_test::seq_state_bytes;
using capi_test::state_bytes;

struct ModelDeleter {
    void operator()(llama_model *m) const { llama_model_free(m); }
};
struct CtxDeleter {
    void operator()(llama_context *c) const { llama_free(c); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelDeleter>;
using Ctx = std::unique_ptr<llama_context, CtxDeleter>;

ModelPtr load(const char *name) {
    const std::string path = std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name;
    return ModelPtr(llama_model_load_from_file(path.c_str(), llama_model_default_params()));
}

Ctx make(llama_model *m, uint32_t n_seq_max = 1) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 128;
    p.n_batch = 64;
    p.n_ubatch = 8;  // the prompt goes through two micro-batches
    p.n_seq_max = n_seq_max;
    p.n_threads = p.n_threads_batch = 1;
    return Ctx(llama_init_from_model(m, p));
}

constexpr int32_t kVocab = 512;

std::vector<float> last_logits(llama_context *ctx) {
    const float *l = llama_get_logits_ith(ctx, -1);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + kVocab) : std::vector<float>();
}

llama_token argmax(const std::vector<float> &l) {
    llama_token best = 0;
    for (int32_t i = 1; i < static_cast<int32_t>(l.size()); ++i)
        if (l[i] > l[best]) best = i;
    return best;
}

// n greedy tokens after the context's last logits, from position pos of seq.
std::vector<llama_token> greedy(llama_context *ctx, llama_pos pos, llama_seq_id seq, int n) {
    std::vector<llama_token> out;
    for (int i = 0; i < n; ++i) {
        out.push_back(argmax(last_logits(ctx)));
        EXPECT_EQ(decode_seq(ctx, {out.back()}, pos++, seq), 0);
    }
    return out;
}

const std::vector<llama_token> kPrompt = {1, 313, 368, 303, 412, 425, 390, 340, 139, 41, 404, 181, 129};

TEST(StateFamilies, Qwen2RoundTripGivesTheSameNextLogits) {
    ModelPtr m = load("qwen2.gguf");
    ASSERT_NE(m, nullptr);
    Ctx a = make(m.get()), b = make(m.get());
    ASSERT_EQ(decode_seq(a.get(), kPrompt, 0, 0), 0);
    const std::vector<uint8_t> saved = state_bytes(a.get());
    const llama_pos n = static_cast<llama_pos>(kPrompt.size());

    ASSERT_EQ(llama_state_set_data(b.get(), saved.data(), saved.size()), saved.size());
    EXPECT_EQ(last_logits(b.get()), last_logits(a.get()));
    EXPECT_EQ(state_bytes(b.get()), saved);  // restoring then saving reproduces the bytes
    // The next decode reads the restored K/V of every layer: bit-identical logits, then the same tokens.
    ASSERT_EQ(decode_seq(a.get(), {300}, n, 0), 0);
    ASSERT_EQ(decode_seq(b.get(), {300}, n, 0), 0);
    EXPECT_EQ(last_logits(b.get()), last_logits(a.get()));
    EXPECT_EQ(greedy(b.get(), n + 1, 0, 8), greedy(a.get(), n + 1, 0, 8));
}

TEST(StateFamilies, Qwen2SequenceStateMovesToAnotherSequence) {
    ModelPtr m = load("qwen2.gguf");
    ASSERT_NE(m, nullptr);
    Ctx a = make(m.get()), b = make(m.get(), 2);
    ASSERT_EQ(decode_seq(a.get(), kPrompt, 0, 0), 0);
    const std::vector<uint8_t> saved = seq_state_bytes(a.get(), 0);
    ASSERT_EQ(llama_state_seq_set_data(b.get(), saved.data(), saved.size(), 1), saved.size());
    const llama_pos n = static_cast<llama_pos>(kPrompt.size());
    ASSERT_EQ(decode_seq(a.get(), {300}, n, 0), 0);
    ASSERT_EQ(decode_seq(b.get(), {300}, n, 1), 0);
    EXPECT_EQ(last_logits(b.get()), last_logits(a.get()));
}

TEST(StateFamilies, AStateOfAnotherFamilyIsRefused) {
    quiet_log();
    ModelPtr qwen2 = load("qwen2.gguf"), phi3 = load("phi3.gguf");
    ASSERT_NE(qwen2, nullptr);
    ASSERT_NE(phi3, nullptr);
    Ctx a = make(qwen2.get()), b = make(phi3.get());
    ASSERT_EQ(decode_seq(a.get(), kPrompt, 0, 0), 0);
    ASSERT_EQ(decode_seq(b.get(), kPrompt, 0, 0), 0);
    const std::vector<float> before = last_logits(b.get());
    const std::vector<uint8_t> saved = state_bytes(a.get());
    EXPECT_EQ(llama_state_set_data(b.get(), saved.data(), saved.size()), 0u);
    EXPECT_EQ(last_logits(b.get()), before);  // nothing changed
    llama_log_set(nullptr, nullptr);
}

}  // namespace
}  // namespace state_families_test
