// DRY and infill samplers. DRY is checked against a direct reading of its definition (for every earlier
// position, count how many tokens ending there equal the tokens ending at the newest one: O(n^2), no
// Z-array), on random histories with random breakers; infill against its rules on hand-made candidates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "capi/capi_test_util.h"
#include "llama.h"
#include "sampling/dry.h"
#include "sampling/infill.h"

namespace lctx::test_dry_infill {
namespace {

std::vector<TokenData> flat(int n) {
    std::vector<TokenData> d;
    for (int i = 0; i < n; ++i) d.push_back({i, 0.0f, 0.0f});
    return d;
}

// The penalty each token gets, straight from the definition.
std::map<Token, float> dry_reference(const std::vector<Token> &hist, const DryParams &p,
                                     const std::vector<DryBreaker> &breakers) {
    std::map<Token, float> out;
    const int32_t last_n = p.penalty_last_n == -1 ? p.context_size : std::max(p.penalty_last_n, 0);
    const int n = std::min({static_cast<int>(hist.size()), last_n, p.context_size});
    if (p.multiplier == 0.0f || p.base < 1.0f || p.penalty_last_n == 0 || n <= p.allowed_length) return out;
    const std::vector<Token> w(hist.end() - n, hist.end());
    // The nearest breaker (its head i tokens back, its tail after it) limits the repetition.
    int limit = n;
    for (int i = 0; i < n && limit == n; ++i) {
        int best = -1;
        for (const auto &[head, tail] : breakers) {
            if (head != w[n - 1 - i] || static_cast<int>(tail.size()) > i) continue;
            bool ok = true;
            for (size_t k = 0; k < tail.size(); ++k) ok = ok && tail[k] == w[n - i + k];
            if (ok) best = std::max(best, static_cast<int>(tail.size()));
        }
        if (best >= 0) limit = i - best;
    }
    if (limit < p.allowed_length) return out;
    std::map<Token, int> longest;
    for (int t = 0; t + 1 < n; ++t) {
        int len = 0;
        while (len <= t && w[t - len] == w[n - 1 - len]) ++len;
        len = std::min(len, limit);
        if (len >= p.allowed_length) longest[w[t + 1]] = std::max(longest[w[t + 1]], len);
    }
    int max_exp = p.base > 1.000001f ? static_cast<int>(88.7228391f / std::log(p.base)) : 0;
    for (const auto &[tok, len] : longest) {
        bool single = false;
        for (const auto &[head, tail] : breakers) single = single || (head == tok && tail.empty());
        if (single) continue;
        int e = len - p.allowed_length;
        if (max_exp > 0 && e > max_exp) e = max_exp;
        out[tok] = static_cast<float>(p.multiplier * std::pow(static_cast<double>(p.base), e));
    }
    return out;
}

TEST(Dry, MatchesItsDefinitionOnRandomHistories) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const int vocab = 2 + static_cast<int>(rng() % 5);  // few tokens: many repeats
        DryParams p;
        p.context_size = 4 + static_cast<int>(rng() % 60);
        p.multiplier = 0.5f + static_cast<float>(rng() % 4);
        p.base = 1.0f + static_cast<float>(rng() % 300) / 100.0f;
        p.allowed_length = static_cast<int32_t>(rng() % 4);
        p.penalty_last_n = (rng() % 3 == 0) ? -1 : static_cast<int32_t>(rng() % 70);
        std::vector<DryBreaker> breakers;
        if (rng() % 2) breakers.push_back({static_cast<Token>(rng() % vocab), {}});
        if (rng() % 2)
            breakers.push_back({static_cast<Token>(rng() % vocab), {static_cast<Token>(rng() % vocab)}});
        DrySampler s(p, breakers);
        std::vector<Token> hist;
        const int len = static_cast<int>(rng() % 90);
        for (int i = 0; i < len; ++i) {
            hist.push_back(static_cast<Token>(rng() % vocab));
            s.accept(hist.back());
        }
        std::vector<TokenData> d = flat(vocab);
        TokenDataArray arr{d.data(), d.size(), -1, true};
        s.apply(arr);
        const std::map<Token, float> want = dry_reference(hist, p, breakers);
        for (const TokenData &t : d) {
            const float expect = want.count(t.id) ? -want.at(t.id) : 0.0f;
            ASSERT_EQ(t.logit, expect) << "trial " << trial << " token " << t.id;
        }
    }
}

TEST(Dry, TheDescriptionsExample) {
    // History a b c c b c y a b c: emitting c would repeat "a b c c" (3 -> 4), b "c b", y "b c y".
    enum : Token { a, b, c, y };
    DryParams p;
    p.context_size = 100;
    p.multiplier = 1.0f;
    p.base = 2.0f;
    p.allowed_length = 1;
    DrySampler s(p, {});
    for (Token t : {a, b, c, c, b, c, y, a, b, c}) s.accept(t);
    std::vector<TokenData> d = flat(4);
    TokenDataArray arr{d.data(), d.size(), -1, false};
    s.apply(arr);
    EXPECT_EQ(d[a].logit, 0.0f);
    EXPECT_EQ(d[c].logit, -4.0f);  // 2^(3 - 1)
    EXPECT_EQ(d[b].logit, -1.0f);  // 2^(1 - 1)
    EXPECT_EQ(d[y].logit, -2.0f);  // 2^(2 - 1)
    // Off: multiplier 0, base below 1, or no history window.
    for (DryParams off : {DryParams{100, 0.0f, 2.0f, 1, -1}, DryParams{100, 1.0f, 0.5f, 1, -1},
                          DryParams{100, 1.0f, 2.0f, 1, 0}}) {
        DrySampler o(off, {});
        for (Token t : {a, b, c, c, b, c, y, a, b, c}) o.accept(t);
        std::vector<TokenData> e = flat(4);
        TokenDataArray ea{e.data(), e.size(), -1, false};
        o.apply(ea);
        for (const TokenData &t : e) EXPECT_EQ(t.logit, 0.0f);
    }
}

TEST(Dry, BreakerStringsBecomeTokenSequencesThroughTheCApi) {
    capi_test::quiet_log();
    const char *breakers[] = {"\n", ":", "", nullptr};
    llama_sampler *s = llama_sampler_init_dry(capi_test::vocab(), 512, 1.0f, 2.0f, 1, -1, breakers, 4);
    ASSERT_NE(s, nullptr);
    // "x y x" with the newline token between: the repetition cannot reach back over it.
    const std::vector<llama_token> line = capi_test::tokenize("Tom ran", false);
    const std::vector<llama_token> nl = capi_test::tokenize("\n", false);
    ASSERT_FALSE(nl.empty());
    for (llama_token t : line) llama_sampler_accept(s, t);
    for (llama_token t : line) llama_sampler_accept(s, t);  // the line repeats: its next token is penalized
    std::vector<llama_token_data> d;
    for (int i = 0; i < llama_vocab_n_tokens(capi_test::vocab()); ++i) d.push_back({i, 0.0f, 0.0f});
    llama_token_data_array arr{d.data(), d.size(), -1, false};
    llama_sampler_apply(s, &arr);
    EXPECT_LT(d[line[0]].logit, 0.0f);  // would repeat "Tom ran Tom"
    llama_sampler_accept(s, nl.back());
    for (llama_token_data &t : d) t.logit = 0.0f;
    llama_sampler_apply(s, &arr);
    for (const llama_token_data &t : d) EXPECT_EQ(t.logit, 0.0f) << t.id;  // the newline ends every repeat
    llama_sampler *c = llama_sampler_clone(s);
    ASSERT_NE(c, nullptr);
    llama_sampler_free(c);
    llama_sampler_free(s);
}

std::shared_ptr<InfillVocab> infill_vocab() {
    auto v = std::make_shared<InfillVocab>();
    v->piece = {"</s>", "foo", "foobar", "x", "y", "<eot>", "a", "b", "c", "d", "e", "f"};
    v->is_eog = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    v->eot = 5;
    return v;
}

TEST(Infill, MergesPrefixesAndFiltersAsB4748) {
    InfillSampler s(infill_vocab());
    // foo 0.5-ish, foobar, x, y small; eog tiny.
    std::vector<TokenData> d = {{0, -6.0f, 0}, {1, 2.0f, 0},  {2, 1.0f, 0},
                                {3, 0.5f, 0},  {4, -1.0f, 0}, {5, -7.0f, 0}};
    TokenDataArray arr{d.data(), d.size(), -1, false};
    s.apply(arr);
    // foobar's mass goes to foo (the likelier); below 0.2 and not EOG goes; then 1 / (kept + 1).
    ASSERT_GE(arr.size, 1u);
    EXPECT_EQ(arr.data[0].id, 1);
    float sum = 0;
    for (size_t i = 0; i < arr.size; ++i) {
        sum += arr.data[i].p;
        EXPECT_NE(arr.data[i].id, 2);  // merged away
    }
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
}

TEST(Infill, EndsWhenEogHoldsEnoughMass) {
    InfillSampler s(infill_vocab());
    std::vector<TokenData> d = {{0, 1.0f, 0}, {1, 1.0f, 0}, {2, 0.5f, 0},
                                {3, 0.5f, 0}, {4, 0.0f, 0}, {5, 0.0f, 0}};
    TokenDataArray arr{d.data(), d.size(), -1, false};
    s.apply(arr);
    ASSERT_EQ(arr.size, 2u);  // only the EOG tokens stay
    for (size_t i = 0; i < arr.size; ++i) EXPECT_TRUE(arr.data[i].id == 0 || arr.data[i].id == 5);
    EXPECT_NEAR(arr.data[0].p + arr.data[1].p, 1.0f, 1e-6f);
}

TEST(Infill, NoTextWorthWritingLeavesTheEot) {
    InfillSampler s(infill_vocab());
    // Eight unrelated texts of equal weight (0.125 each, under 0.2) and no EOG candidate: the EOT is left.
    std::vector<TokenData> d;
    for (Token t : {3, 4, 6, 7, 8, 9, 10, 11}) d.push_back({t, 0.0f, 0});
    TokenDataArray arr{d.data(), d.size(), -1, false};
    s.apply(arr);
    ASSERT_EQ(arr.size, 1u);
    EXPECT_EQ(arr.data[0].id, 5);
    EXPECT_EQ(arr.data[0].logit, 1.0f);
    // Four of them: 0.25 each survive the first cut, and 1 / (4 + 1) the second.
    std::vector<TokenData> e;
    for (Token t : {3, 4, 6, 7}) e.push_back({t, 0.0f, 0});
    TokenDataArray earr{e.data(), e.size(), -1, false};
    s.apply(earr);
    EXPECT_EQ(earr.size, 4u);
    std::vector<TokenData> none;
    TokenDataArray empty{none.data(), 0, -1, false};
    s.apply(empty);  // harmless
    EXPECT_EQ(empty.size, 0u);
}

TEST(Infill, ThroughTheCApi) {
    capi_test::quiet_log();
    llama_sampler *s = llama_sampler_init_infill(capi_test::vocab());
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(llama_sampler_name(s), "infill");
    llama_sampler_free(s);
    EXPECT_EQ(llama_sampler_init_infill(nullptr), nullptr);
}

}  // namespace
}  // namespace lctx::test_dry_infill
