// The sampler API through llama.h: chains are deterministic with a seed, user samplers made with
// llama_sampler_init work alone and inside chains, and chain ownership (add / get / remove / clone) holds.
#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "capi/capi_test_util.h"

namespace capi_sampler_test {
using namespace capi_test;

namespace {

class CapiSampler : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_NE(model(), nullptr); }
    void TearDown() override { llama_log_set(nullptr, nullptr); }
};

llama_sampler *make_chain(uint32_t seed) {
    llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(chain, llama_sampler_init_top_p(0.95f, 1));
    llama_sampler_chain_add(chain, llama_sampler_init_temp(0.9f));
    llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
    return chain;
}

// Generates n tokens after the prompt with llama_sampler_sample.
std::vector<llama_token> generate(llama_sampler *smpl, int n) {
    llama_context *ctx = make_ctx();
    EXPECT_NE(ctx, nullptr);
    std::vector<llama_token> prompt = tokenize("Once upon a time");
    EXPECT_EQ(llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    std::vector<llama_token> out;
    for (int i = 0; i < n; ++i) {
        llama_token t = llama_sampler_sample(smpl, ctx, -1);
        out.push_back(t);
        if (t < 0 || llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) break;
    }
    llama_free(ctx);
    return out;
}

TEST_F(CapiSampler, SeededChainIsDeterministic) {
    llama_sampler *a = make_chain(1234);
    llama_sampler *b = make_chain(1234);
    EXPECT_EQ(llama_sampler_get_seed(a), 1234u);
    EXPECT_EQ(llama_sampler_chain_n(a), 4);
    EXPECT_STREQ(llama_sampler_name(a), "chain");
    EXPECT_STREQ(llama_sampler_name(llama_sampler_chain_get(a, 0)), "top-k");
    EXPECT_STREQ(llama_sampler_name(llama_sampler_chain_get(a, 3)), "dist");
    EXPECT_EQ(llama_sampler_chain_get(a, 4), nullptr);
    const std::vector<llama_token> ta = generate(a, 24);
    EXPECT_EQ(ta.size(), 24u);
    EXPECT_EQ(generate(b, 24), ta);
    // reset re-seeds: the same sequence again.
    llama_sampler_reset(a);
    EXPECT_EQ(generate(a, 24), ta);
    EXPECT_EQ(llama_perf_sampler(a).n_sample, 24);  // reset also zeroed the chain's counters (as upstream)
    llama_perf_sampler_reset(a);
    EXPECT_EQ(llama_perf_sampler(a).n_sample, 0);
    llama_sampler_free(a);
    llama_sampler_free(b);
}

TEST_F(CapiSampler, CloneContinuesFromTheSameState) {
    llama_sampler *a = make_chain(42);
    generate(a, 5);  // advance the RNG
    llama_sampler *c = llama_sampler_clone(a);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(llama_sampler_chain_n(c), 4);
    EXPECT_EQ(generate(c, 10), generate(a, 10));
    llama_sampler_free(a);
    llama_sampler_free(c);
}

TEST_F(CapiSampler, GreedyMatchesArgmax) {
    llama_sampler *g = llama_sampler_init_greedy();
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> prompt = tokenize("Once upon a time");
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    EXPECT_EQ(llama_sampler_sample(g, ctx, -1), argmax(llama_get_logits_ith(ctx, -1)));
    EXPECT_EQ(llama_sampler_get_seed(g), LLAMA_DEFAULT_SEED);
    llama_free(ctx);
    llama_sampler_free(g);
}

// A user sampler: keeps only even token ids, then selects the highest logit among them. Counts its calls.
struct EvenState {
    int applies = 0;
    int accepts = 0;
    int resets = 0;
    int frees = 0;
    llama_token last = -1;
};

const char *even_name(const llama_sampler *) {
    return "even-greedy";
}
void even_accept(llama_sampler *s, llama_token t) {
    auto *st = static_cast<EvenState *>(s->ctx);
    st->accepts++;
    st->last = t;
}
void even_apply(llama_sampler *s, llama_token_data_array *cur) {
    static_cast<EvenState *>(s->ctx)->applies++;
    size_t k = 0;
    for (size_t i = 0; i < cur->size; ++i)
        if (cur->data[i].id % 2 == 0) cur->data[k++] = cur->data[i];
    cur->size = k;
    cur->sorted = false;
    int64_t best = -1;
    for (size_t i = 0; i < cur->size; ++i)
        if (best < 0 || cur->data[i].logit > cur->data[best].logit) best = static_cast<int64_t>(i);
    cur->selected = best;
}
void even_reset(llama_sampler *s) {
    static_cast<EvenState *>(s->ctx)->resets++;
}
llama_sampler *even_clone(const llama_sampler *s);
void even_free(llama_sampler *s) {
    static_cast<EvenState *>(s->ctx)->frees++;
}  // state owned by the test
const llama_sampler_i kEvenIface = {even_name, even_accept, even_apply, even_reset, even_clone, even_free};
llama_sampler *even_clone(const llama_sampler *s) {
    return llama_sampler_init(&kEvenIface, s->ctx);
}

llama_token best_even(const float *logits) {
    llama_token best = 0;
    for (llama_token i = 2; i < 512; i += 2)
        if (logits[i] > logits[best]) best = i;
    return best;
}

TEST_F(CapiSampler, CustomSamplerWorksAloneAndInAChain) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> prompt = tokenize("Once upon a time");
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    const llama_token expect = best_even(llama_get_logits_ith(ctx, -1));

    EvenState st;
    llama_sampler *s = llama_sampler_init(&kEvenIface, &st);
    EXPECT_STREQ(llama_sampler_name(s), "even-greedy");
    EXPECT_EQ(llama_sampler_sample(s, ctx, -1), expect);
    EXPECT_EQ(st.applies, 1);
    EXPECT_EQ(st.accepts, 1);  // sample accepts the token itself
    EXPECT_EQ(st.last, expect);
    EXPECT_EQ(llama_sampler_get_seed(s), LLAMA_DEFAULT_SEED);

    // In a chain after a built-in: the chain applies, accepts and resets it, and owns it.
    llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(100));
    llama_sampler_chain_add(chain, s);
    EXPECT_EQ(llama_sampler_chain_get(chain, 1), s);  // the very pointer that was added
    const llama_token t = llama_sampler_sample(chain, ctx, -1);
    EXPECT_EQ(t % 2, 0);
    EXPECT_EQ(st.applies, 2);
    EXPECT_EQ(st.accepts, 2);
    llama_sampler_reset(chain);
    EXPECT_EQ(st.resets, 1);

    // Clone of the chain clones the member through its iface.
    llama_sampler *copy = llama_sampler_clone(chain);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(llama_sampler_sample(copy, ctx, -1), t);
    EXPECT_EQ(st.applies, 3);
    llama_sampler_free(copy);
    EXPECT_EQ(st.frees, 1);

    // Removing hands ownership back: freeing the chain then does not free it.
    EXPECT_EQ(llama_sampler_chain_remove(chain, 1), s);
    EXPECT_EQ(llama_sampler_chain_n(chain), 1);
    EXPECT_EQ(llama_sampler_chain_remove(chain, 5), nullptr);
    llama_sampler_free(chain);
    EXPECT_EQ(st.frees, 1);
    llama_sampler_free(s);
    EXPECT_EQ(st.frees, 2);
    llama_free(ctx);
}

TEST_F(CapiSampler, ApplyOnACallerArray) {
    // Built-in samplers through llama_sampler_apply on llama_token_data_array.
    std::vector<llama_token_data> d = {{0, 1.0f, 0}, {1, 3.0f, 0}, {2, 2.0f, 0}, {3, -1.0f, 0}};
    llama_token_data_array arr = {d.data(), d.size(), -1, false};
    llama_sampler *k = llama_sampler_init_top_k(2);
    llama_sampler_apply(k, &arr);
    EXPECT_EQ(arr.size, 2u);
    EXPECT_EQ(arr.data[0].id, 1);
    EXPECT_EQ(arr.data[1].id, 2);
    llama_sampler *g = llama_sampler_init_greedy();
    llama_sampler_apply(g, &arr);
    EXPECT_EQ(arr.data[arr.selected].id, 1);
    llama_sampler_free(k);
    llama_sampler_free(g);

    const llama_logit_bias bias[] = {{3, 10.0f}};
    llama_sampler *lb = llama_sampler_init_logit_bias(4, 1, bias);
    std::vector<llama_token_data> d2 = {{0, 1.0f, 0}, {1, 3.0f, 0}, {2, 2.0f, 0}, {3, -1.0f, 0}};
    llama_token_data_array arr2 = {d2.data(), d2.size(), -1, false};
    llama_sampler_apply(lb, &arr2);
    EXPECT_FLOAT_EQ(arr2.data[3].logit, 9.0f);
    llama_sampler_free(lb);
}

TEST_F(CapiSampler, EveryBuiltInConstructs) {
    llama_sampler *all[] = {
        llama_sampler_init_greedy(),
        llama_sampler_init_dist(7),
        llama_sampler_init_top_k(10),
        llama_sampler_init_top_p(0.9f, 1),
        llama_sampler_init_min_p(0.05f, 1),
        llama_sampler_init_typical(0.9f, 1),
        llama_sampler_init_temp(0.7f),
        llama_sampler_init_temp_ext(0.7f, 0.2f, 1.0f),
        llama_sampler_init_xtc(0.5f, 0.1f, 1, 3),
        llama_sampler_init_top_n_sigma(1.5f),
        llama_sampler_init_mirostat(512, 5, 5.0f, 0.1f, 100),
        llama_sampler_init_mirostat_v2(5, 5.0f, 0.1f),
        llama_sampler_init_penalties(64, 1.1f, 0.0f, 0.0f),
    };
    const char *names[] = {"greedy",   "dist", "top-k",       "top-p",    "min-p",       "typical",  "temp",
                           "temp-ext", "xtc",  "top-n-sigma", "mirostat", "mirostat-v2", "penalties"};
    for (size_t i = 0; i < std::size(all); ++i) {
        ASSERT_NE(all[i], nullptr) << names[i];
        EXPECT_STREQ(llama_sampler_name(all[i]), names[i]);
        llama_sampler *c = llama_sampler_clone(all[i]);
        EXPECT_NE(c, nullptr) << names[i];
        llama_sampler_free(c);
        llama_sampler_free(all[i]);
    }
    EXPECT_EQ(llama_sampler_get_seed(nullptr), LLAMA_DEFAULT_SEED);
    llama_sampler_free(nullptr);
}

TEST_F(CapiSampler, MisuseIsReportedNotFatal) {
    quiet_log();
    llama_sampler *g = llama_sampler_init_greedy();
    EXPECT_EQ(llama_sampler_chain_n(g), 0);        // not a chain
    EXPECT_EQ(llama_perf_sampler(g).n_sample, 0);  // not a chain
    llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, nullptr);  // e.g. a refused grammar sampler
    EXPECT_EQ(llama_sampler_chain_n(chain), 0);
    // A chain that never selects: sample reports and returns LLAMA_TOKEN_NULL.
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(5));
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_sampler_sample(chain, ctx, -1), LLAMA_TOKEN_NULL);  // nothing decoded
    std::vector<llama_token> prompt = tokenize("Once");
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    EXPECT_EQ(llama_sampler_sample(chain, ctx, -1), LLAMA_TOKEN_NULL);
    llama_free(ctx);
    llama_sampler_free(chain);
    llama_sampler_free(g);
}

}  // namespace
}  // namespace capi_sampler_test
