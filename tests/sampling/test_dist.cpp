// Seeded random selection: dist reproducibility and its empirical distribution, XTC, Mirostat.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/samplers.h"
#include "sampling_test_util.h"

namespace lctx::test_dist {
namespace {

using test::Cands;

std::vector<Token> draw_many(Sampler &s, const std::vector<float> &logits, int n) {
    std::vector<Token> out;
    for (int i = 0; i < n; ++i) {
        Cands c(logits);
        s.apply(c.arr);
        EXPECT_GE(c.arr.selected, 0);
        out.push_back(c.arr.data[c.arr.selected].id);
    }
    return out;
}

const std::vector<float> kLogits = {0.3f, -1.0f, 2.0f, 1.1f, 0.0f, -0.5f};

TEST(Dist, SameSeedSameSequenceDifferentSeedDifferentSequence) {
    DistSampler a(1234), b(1234), c(1235);
    const auto sa = draw_many(a, kLogits, 200);
    EXPECT_EQ(sa, draw_many(b, kLogits, 200));
    EXPECT_NE(sa, draw_many(c, kLogits, 200));
    EXPECT_EQ(a.seed(), 1234u);
    EXPECT_STREQ(a.name(), "dist");
}

TEST(Dist, ResetRestartsTheSequenceAndCloneContinuesIt) {
    DistSampler a(77);
    const auto first = draw_many(a, kLogits, 50);
    auto twin = a.clone();  // state after 50 draws
    const auto next_a = draw_many(a, kLogits, 50);
    EXPECT_EQ(next_a, draw_many(*twin, kLogits, 50));
    a.reset();
    EXPECT_EQ(first, draw_many(a, kLogits, 50));
}

TEST(Dist, DefaultSeedDrawsARandomSeedAndReportsIt) {
    DistSampler a(kDefaultSeed);
    DistSampler b(a.seed());
    EXPECT_EQ(draw_many(a, kLogits, 50), draw_many(b, kLogits, 50));
}

// Pearson's chi-square over 20000 seeded draws. Critical value for 3 degrees of freedom at
// p = 0.001 is 16.27; the seed makes the outcome deterministic, so this cannot flake.
TEST(Dist, EmpiricalDistributionMatchesTheProbabilities) {
    const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f};
    const int n = 20000;
    for (uint32_t seed : {1u, 2u, 3u}) {
        DistSampler s(seed);
        std::vector<int> hits(probs.size(), 0);
        for (int i = 0; i < n; ++i) {
            auto c = Cands::from_probs(probs);
            s.apply(c.arr);
            ASSERT_GE(c.arr.selected, 0);
            ++hits[static_cast<size_t>(c.arr.data[c.arr.selected].id)];
        }
        double chi2 = 0.0;
        for (size_t k = 0; k < probs.size(); ++k) {
            const double expect = n * static_cast<double>(probs[k]);
            chi2 += (hits[k] - expect) * (hits[k] - expect) / expect;
        }
        EXPECT_LT(chi2, 16.27) << "seed " << seed;
    }
}

TEST(Dist, SortsAndFillsProbabilities) {
    Cands c({0.0f, std::log(3.0f)});
    DistSampler(5).apply(c.arr);
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_EQ(c.arr.data[0].id, 1);
    EXPECT_FLOAT_EQ(c.arr.data[0].p, 0.75f);
}

TEST(Dist, AllMinusInfinitySelectsNothing) {
    const float inf = std::numeric_limits<float>::infinity();
    Cands c({-inf, -inf});
    DistSampler(5).apply(c.arr);
    EXPECT_EQ(c.arr.selected, -1);
}

TEST(Dist, NeverPicksAMaskedCandidate) {
    const float inf = std::numeric_limits<float>::infinity();
    DistSampler s(9);
    for (int i = 0; i < 500; ++i) {
        Cands c({0.0f, -inf, 0.0f, -inf});
        s.apply(c.arr);
        const Token t = c.arr.data[c.arr.selected].id;
        ASSERT_TRUE(t == 0 || t == 2);
    }
}

// ---- XTC ----

TEST(Xtc, RemovesTopChoicesAboveThresholdExceptTheLast) {
    // p = {0.5, 0.3, 0.15, 0.05}, threshold 0.1: 0.5 and 0.3 go, 0.15 stays with 0.05.
    XtcSampler s(1.0f, 0.1f, 1, 42);
    auto c = Cands::from_probs({0.3f, 0.05f, 0.5f, 0.15f});
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{3, 1}));
    EXPECT_EQ(c.arr.data, c.buf.data() + 2);  // removal is done by advancing the data pointer
    EXPECT_STREQ(s.name(), "xtc");
}

TEST(Xtc, RespectsMinKeepAndTheDisablingConditions) {
    auto run = [](XtcSampler s) {
        auto c = Cands::from_probs({0.3f, 0.05f, 0.5f, 0.15f});
        s.apply(c.arr);
        return c.arr.size;
    };
    EXPECT_EQ(run(XtcSampler(1.0f, 0.1f, 3, 1)), 4u);  // would leave 2 < min_keep
    EXPECT_EQ(run(XtcSampler(0.0f, 0.1f, 1, 1)), 4u);  // p <= 0
    EXPECT_EQ(run(XtcSampler(1.0f, 0.6f, 1, 1)), 4u);  // t > 0.5
    EXPECT_EQ(run(XtcSampler(1.0f, 0.4f, 1, 1)), 4u);  // only one above threshold: nothing to remove
    auto one = Cands::from_probs({1.0f});
    XtcSampler(1.0f, 0.1f, 1, 1).apply(one.arr);
    EXPECT_EQ(one.arr.size, 1u);
}

TEST(Xtc, TriggersWithProbabilityP) {
    XtcSampler s(0.3f, 0.1f, 1, 2024);
    int triggered = 0;
    const int n = 4000;
    for (int i = 0; i < n; ++i) {
        auto c = Cands::from_probs({0.3f, 0.05f, 0.5f, 0.15f});
        s.apply(c.arr);
        triggered += c.arr.size == 2;
    }
    // Binomial(4000, 0.3): mean 1200, sd 29; a 5-sd band.
    EXPECT_NEAR(triggered, 1200, 145);
}

// ---- Mirostat ----

TEST(MirostatV2, TruncatesBySurpriseAndUpdatesMu) {
    // tau 1 -> mu 2: keeps candidates with -log2 p <= 2, i.e. p >= 0.25: 0.5 and 0.25.
    MirostatV2Sampler s(3, 1.0f, 0.5f);
    auto c = Cands::from_probs({0.125f, 0.5f, 0.25f, 0.125f});
    s.apply(c.arr);
    ASSERT_EQ(c.arr.size, 2u);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 2}));
    EXPECT_NEAR(c.arr.data[0].p, 2.0f / 3.0f, 1e-6);  // renormalised
    ASSERT_GE(c.arr.selected, 0);
    const float p = c.arr.data[c.arr.selected].p;
    EXPECT_NEAR(s.mu(), 2.0f - 0.5f * (-std::log2(p) - 1.0f), 1e-6);
    EXPECT_EQ(s.seed(), 3u);
    EXPECT_STREQ(s.name(), "mirostat-v2");
}

TEST(MirostatV2, KeepsAtLeastOneAndResetRestoresMu) {
    MirostatV2Sampler s(3, 0.1f, 0.5f);  // mu 0.2: even p = 0.5 is too surprising
    auto c = Cands::from_probs({0.5f, 0.5f});
    s.apply(c.arr);
    EXPECT_EQ(c.arr.size, 1u);
    EXPECT_EQ(c.arr.selected, 0);
    EXPECT_NE(s.mu(), 0.2f);
    s.reset();
    EXPECT_EQ(s.mu(), 0.2f);
}

TEST(Mirostat, ZipfCandidatesGiveTheExpectedK) {
    // p_i proportional to 1/(i+1)^2: log(p_i / p_i+1) = 2 log((i+2)/(i+1)), so the fit gives s_hat = 2,
    // e_hat = 1 and k = (2^mu / (1 - 1/N))^(1/2). With tau = 2.5 (mu = 5) and N = 1000:
    // k = sqrt(32 / 0.999) = 5.66 -> 5 candidates.
    std::vector<float> probs;
    for (int i = 0; i < 1000; ++i) probs.push_back(1.0f / static_cast<float>((i + 1) * (i + 1)));
    auto c = Cands::from_probs(probs);
    MirostatSampler s(1000, 11, 2.5f, 0.1f, 100);
    s.apply(c.arr);
    EXPECT_EQ(c.arr.size, 5u);
    ASSERT_GE(c.arr.selected, 0);
    ASSERT_LT(c.arr.selected, 5);
    const float p = c.arr.data[c.arr.selected].p;
    EXPECT_NEAR(s.mu(), 5.0f - 0.1f * (-std::log2(p) - 2.5f), 1e-5);
    EXPECT_STREQ(s.name(), "mirostat");
    EXPECT_EQ(s.seed(), 11u);

    // A larger mu allows more candidates: mu = 8 -> k = sqrt(256 / 0.999) = 16.0 -> 16.
    auto d = Cands::from_probs(probs);
    MirostatSampler wide(1000, 11, 4.0f, 0.1f, 100);
    wide.apply(d.arr);
    EXPECT_EQ(d.arr.size, 16u);
}

TEST(Mirostat, KBeyondAnyIntOrUndefinedKeepsOneCandidate) {
    // b4748 keeps max(int(k), 1): a k no int holds converts to INT_MIN (x86) and one candidate is left.
    std::vector<float> probs;
    for (int i = 0; i < 1000; ++i) probs.push_back(1.0f / static_cast<float>((i + 1) * (i + 1)));
    // tau = 100: mu = 200, k = sqrt(2^200 / 0.999) ~ 1e30 (or +inf in float): far beyond INT_MAX.
    auto huge = Cands::from_probs(probs);
    MirostatSampler(1000, 11, 100.0f, 0.1f, 100).apply(huge.arr);
    EXPECT_EQ(huge.arr.size, 1u);
    EXPECT_EQ(huge.arr.selected, 0);
    // m = 1: no pair to fit, s_hat = 0 / 0, k is NaN.
    auto nan_k = Cands::from_probs(probs);
    MirostatSampler(1000, 11, 2.5f, 0.1f, 1).apply(nan_k.arr);
    EXPECT_EQ(nan_k.arr.size, 1u);
    EXPECT_EQ(nan_k.arr.data[0].id, 0);
}

TEST(Mirostat, SingleCandidateAndCloneState) {
    MirostatSampler s(10, 4, 3.0f, 0.2f, 100);
    Cands one({1.0f});
    s.apply(one.arr);
    EXPECT_EQ(one.arr.selected, 0);
    EXPECT_NEAR(s.mu(), 6.0f - 0.2f * (0.0f - 3.0f), 1e-6);
    auto twin = s.clone();
    EXPECT_EQ(static_cast<MirostatSampler &>(*twin).mu(), s.mu());
    const std::vector<float> logits = {0.1f, 0.9f, 0.5f, 0.7f, 0.3f, -0.2f, 0.0f, 0.4f, 0.6f, 0.8f};
    EXPECT_EQ(draw_many(s, logits, 30), draw_many(*twin, logits, 30));
}

TEST(Mirostat, MuSettlesNearTau) {
    // The controller drives the average surprise towards tau.
    std::vector<float> logits;
    for (int i = 0; i < 500; ++i) logits.push_back(-0.02f * static_cast<float>(i));
    MirostatV2Sampler s(5, 4.0f, 0.1f);
    double surprise = 0.0;
    const int n = 3000;
    for (int i = 0; i < n; ++i) {
        Cands c(logits);
        s.apply(c.arr);
        // surprise under the full distribution is not what mirostat tracks; use the truncated p
        surprise += -std::log2(c.arr.data[c.arr.selected].p);
    }
    EXPECT_NEAR(surprise / n, 4.0, 0.3);
}

}  // namespace
}  // namespace lctx::test_dist
