// State files of every KV cache type (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1): the layer
// types are written as b4748 writes them (the ggml type id), a state restores into a context of the same
// types and continues identically (whole context and one sequence), and a state saved with one type is
// refused, with a message that names both types, by a context of another (nothing changed).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "state/state_layout.h"

namespace state_cache_types_test {
using namespace capi_test;

namespace {

struct CacheType {
    const char *name;
    ggml_type id;  // ggml's type id, as b4748 writes it (STATE-FORMAT.md: k_type, v_type)
};
const CacheType kTypes[] = {{"f32", GGML_TYPE_F32},       {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
                            {"q8_0", GGML_TYPE_Q8_0},     {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
                            {"iq4_nl", GGML_TYPE_IQ4_NL}, {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}};

static_assert(GGML_TYPE_Q4_0 == 2 && GGML_TYPE_Q4_1 == 3 && GGML_TYPE_Q5_0 == 6 && GGML_TYPE_Q5_1 == 7 &&
                  GGML_TYPE_Q8_0 == 8 && GGML_TYPE_IQ4_NL == 20 && GGML_TYPE_BF16 == 30,
              "ggml's type ids");

std::string g_log;
void capture(ggml_log_level, const char *text, void *) {
    g_log += text;
}

class StateCacheTypes : public ::testing::TestWithParam<CacheType> {
  protected:
    void SetUp() override {
        llama_log_set(capture, nullptr);
        llama_model_params mp = llama_model_default_params();
        // head size 32: one block per head
        model_ = llama_model_load_from_file(
            (std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf").c_str(), mp);
        ASSERT_NE(model_, nullptr);
    }
    void TearDown() override {
        llama_model_free(model_);
        llama_log_set(nullptr, nullptr);
    }
    llama_context *make(ggml_type k, ggml_type v) {
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 128;
        cp.n_seq_max = 2;
        cp.n_threads = cp.n_threads_batch = 1;
        cp.type_k = k;
        cp.type_v = v;
        cp.flash_attn = true;  // a block-quantized V needs it
        return llama_init_from_model(model_, cp);
    }
    llama_model *model_ = nullptr;
};

const std::vector<llama_token> kPrompt = {1, 313, 368, 303, 412, 425, 390, 340, 139, 41, 404, 181, 77};

TEST_P(StateCacheTypes, RoundTripContinuesIdenticallyAndWritesTheTypeIds) {
    const CacheType t = GetParam();
    llama_context *a = make(t.id, t.id);
    ASSERT_NE(a, nullptr) << g_log;
    ASSERT_EQ(decode_seq(a, kPrompt, 0, 0), 0);
    ASSERT_EQ(decode_seq(a, {5, 9, 300}, 0, 1), 0);  // a second sequence
    const std::vector<uint8_t> saved = state_bytes(a);
    const state_test::Layout l = state_test::parse_layout(saved.data(), saved.size(), false);
    EXPECT_EQ(l.end, saved.size());
    EXPECT_EQ(l.v_trans, 0u);  // flash attention: V by rows
    for (uint32_t il = 0; il < l.n_layer; ++il) {
        int32_t k = -1, v = -1;
        std::memcpy(&k, saved.data() + l.k_type_off[il], sizeof k);
        std::memcpy(&v, saved.data() + l.v_type_off[il], sizeof v);
        EXPECT_EQ(k, static_cast<int32_t>(t.id)) << "layer " << il;
        EXPECT_EQ(v, static_cast<int32_t>(t.id)) << "layer " << il;
    }
    const std::vector<uint8_t> seq1 = seq_state_bytes(a, 1);
    const std::vector<llama_token> expect = greedy(a, static_cast<llama_pos>(kPrompt.size()), 0, 8);

    llama_context *b = make(t.id, t.id);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(llama_state_set_data(b, saved.data(), saved.size()), saved.size()) << g_log;
    EXPECT_EQ(state_bytes(b), saved);  // restoring then saving gives the same bytes
    EXPECT_EQ(greedy(b, static_cast<llama_pos>(kPrompt.size()), 0, 8), expect);

    // one sequence into another context's sequence 0: its next logits are the saved context's
    llama_context *c = make(t.id, t.id);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(llama_state_seq_set_data(c, seq1.data(), seq1.size(), 0), seq1.size()) << g_log;
    ASSERT_EQ(decode_seq(c, {42}, 3, 0), 0);
    ASSERT_EQ(decode_seq(a, {42}, 3, 1), 0);
    const float *lc = llama_get_logits_ith(c, -1), *la = llama_get_logits_ith(a, -1);
    ASSERT_NE(lc, nullptr);
    ASSERT_NE(la, nullptr);
    EXPECT_EQ(std::vector<float>(lc, lc + 512), std::vector<float>(la, la + 512));
    llama_free(a);
    llama_free(b);
    llama_free(c);
}

TEST_P(StateCacheTypes, AStateOfAnotherTypeIsRefusedAndChangesNothing) {
    const CacheType t = GetParam();
    // the next type in the list (f32 -> f16, ..., q5_1 -> f32)
    const size_t n = sizeof kTypes / sizeof kTypes[0];
    size_t i = 0;
    while (std::strcmp(kTypes[i].name, t.name) != 0) ++i;
    const CacheType u = kTypes[(i + 1) % n];
    llama_context *a = make(t.id, t.id);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(decode_seq(a, kPrompt, 0, 0), 0);
    const std::vector<uint8_t> saved = state_bytes(a), seq0 = seq_state_bytes(a, 0);
    for (bool k_differs : {true, false}) {
        llama_context *b = k_differs ? make(u.id, t.id) : make(t.id, u.id);
        ASSERT_NE(b, nullptr);
        ASSERT_EQ(decode_seq(b, {1, 2, 3}, 0, 0), 0);
        const std::vector<uint8_t> before = state_bytes(b);
        g_log.clear();
        EXPECT_EQ(llama_state_set_data(b, saved.data(), saved.size()), 0u);
        const std::string want = std::string("state ") + (k_differs ? "K" : "V") +
                                 " cache of layer 0 has type " + t.name + " (id " + std::to_string(t.id) +
                                 "), this context uses " + u.name + " (id " + std::to_string(u.id) + ")";
        EXPECT_NE(g_log.find(want), std::string::npos) << g_log;
        EXPECT_EQ(llama_state_seq_set_data(b, seq0.data(), seq0.size(), 1), 0u);
        EXPECT_EQ(state_bytes(b), before);  // nothing changed
        llama_free(b);
    }
    llama_free(a);
}

INSTANTIATE_TEST_SUITE_P(Types, StateCacheTypes, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<CacheType> &info) {
                             return std::string(info.param.name);
                         });

}  // namespace
}  // namespace state_cache_types_test
