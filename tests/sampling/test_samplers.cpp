// Each built-in sampler on hand-made candidate arrays with exact expected results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sampling/samplers.h"
#include "sampling_test_util.h"

namespace lctx::test_samplers {
namespace {

using test::Cands;
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- greedy ----

TEST(Greedy, PicksTheMaximum) {
    Cands c({0.5f, 2.0f, -1.0f, 1.9f});
    GreedySampler g;
    g.apply(c.arr);
    EXPECT_EQ(c.arr.selected, 1);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1, 2, 3}));  // untouched
    EXPECT_STREQ(g.name(), "greedy");
}

TEST(Greedy, TiesGoToTheLowestIndex) {
    Cands c({1.0f, 3.0f, 3.0f, 3.0f}, {40, 30, 10, 20});
    GreedySampler g;
    g.apply(c.arr);
    EXPECT_EQ(c.arr.selected, 1);  // index 1 (token 30), not the lowest token id 10
}

TEST(Greedy, NanIsNeverTheMaximum) {
    Cands c({std::nanf(""), 1.0f, std::nanf(""), 2.0f, -kInf});
    GreedySampler().apply(c.arr);
    EXPECT_EQ(c.arr.selected, 3);
    Cands t({std::nanf(""), 1.0f, 2.0f});
    TempSampler(0.0f).apply(t.arr);
    EXPECT_EQ(t.logits()[2], 2.0f);
    EXPECT_EQ(t.logits()[1], -kInf);
    EXPECT_EQ(t.logits()[0], -kInf);
}

TEST(Greedy, EmptyArraySelectsNothing) {
    TokenDataArray a{nullptr, 0, 5, false};
    GreedySampler g;
    g.apply(a);
    EXPECT_EQ(a.selected, -1);
}

TEST(Greedy, AllMinusInfinityStillSelectsTheFirst) {
    Cands c({-kInf, -kInf});
    GreedySampler g;
    g.apply(c.arr);
    EXPECT_EQ(c.arr.selected, 0);
}

// ---- top-k ----

TEST(TopK, KeepsTheKLargestSorted) {
    Cands c({0.1f, 0.9f, 0.5f, 0.7f, 0.3f});
    TopKSampler s(2);
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 3}));
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_STREQ(s.name(), "top-k");
}

TEST(TopK, KLargerThanSizeOrNonPositiveKeepsAllSorted) {
    for (int32_t k : {5, 6, 100, 0, -1}) {
        Cands c({0.1f, 0.9f, 0.5f, 0.7f, 0.3f});
        TopKSampler s(k);
        s.apply(c.arr);
        EXPECT_EQ(c.ids(), (std::vector<Token>{1, 3, 2, 4, 0})) << "k=" << k;
    }
}

TEST(TopK, EmptyArray) {
    TokenDataArray a{nullptr, 0, -1, false};
    TopKSampler(3).apply(a);
    EXPECT_EQ(a.size, 0u);
}

// ---- top-p ----

TEST(TopP, KeepsTheSmallestPrefixReachingP) {
    // ids in shuffled order; probabilities 0.5 (id 2), 0.25 (id 0), 0.15 (id 3), 0.1 (id 1)
    auto c = Cands::from_probs({0.25f, 0.1f, 0.5f, 0.15f});
    TopPSampler s(0.7f, 1);
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{2, 0}));
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_NEAR(c.find(2).p, 0.5f, 1e-6);  // p filled (before truncation, not renormalised)

    auto d = Cands::from_probs({0.25f, 0.1f, 0.5f, 0.15f});
    TopPSampler(0.8f, 1).apply(d.arr);
    EXPECT_EQ(d.ids(), (std::vector<Token>{2, 0, 3}));

    auto e = Cands::from_probs({0.25f, 0.1f, 0.5f, 0.15f});
    TopPSampler(0.4f, 1).apply(e.arr);
    EXPECT_EQ(e.ids(), (std::vector<Token>{2}));
}

TEST(TopP, ReachingPExactlyIsEnough) {
    // Four equal logits: every p is exactly 0.25, so the cumulative mass hits 0.5 exactly at two.
    Cands c({0.0f, 0.0f, 0.0f, 0.0f});
    TopPSampler(0.5f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1}));
}

TEST(TopP, MinKeepWins) {
    auto c = Cands::from_probs({0.25f, 0.1f, 0.5f, 0.15f});
    TopPSampler(0.3f, 3).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{2, 0, 3}));
}

TEST(TopP, POfOneOrMoreDoesNothing) {
    for (float p : {1.0f, 1.5f}) {
        auto c = Cands::from_probs({0.25f, 0.1f, 0.5f, 0.15f});
        TopPSampler(p, 1).apply(c.arr);
        EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1, 2, 3}));
        EXPECT_FALSE(c.arr.sorted);
        EXPECT_EQ(c.find(0).p, 0.0f);  // not even softmaxed
    }
}

TEST(TopP, AllMinusInfinityKeepsEverything) {
    Cands c({-kInf, -kInf, -kInf});
    TopPSampler(0.5f, 1).apply(c.arr);
    EXPECT_EQ(c.arr.size, 3u);
}

// ---- min-p ----

TEST(MinP, DropsBelowPTimesTheTopProbabilityKeepingOrder) {
    // threshold logit = 2 + ln 0.3 = 0.796: keeps logits 2 and 1.
    Cands c({0.0f, 2.0f, -1.0f, 1.0f, -3.0f});
    MinPSampler s(0.3f, 1);
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 3}));  // unsorted input keeps its order
    EXPECT_FALSE(c.arr.sorted);
    EXPECT_STREQ(s.name(), "min-p");
}

TEST(MinP, ProbabilityRatioBoundary) {
    // p_i / p_max = exp(l_i - l_max): exp(-0.5) = 0.6065 passes 0.6, exp(-0.52) = 0.5945 does not.
    Cands c({0.0f, -0.5f, -0.52f});
    MinPSampler(0.6f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1}));
}

// A candidate exactly at the threshold passes (b4748 keeps logit >= max + ln p), and so counts towards
// min_keep: two pass here, so the unsorted array is filtered in place, in its order, not sorted.
TEST(MinP, ACandidateExactlyAtTheThresholdCountsForMinKeep) {
    const float at = 0.0f + std::log(0.5f);  // the threshold for p = 0.5 under a maximum of 0
    Cands c({at, 0.0f, -5.0f});
    MinPSampler(0.5f, 2).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1}));
    EXPECT_FALSE(c.arr.sorted);
}

TEST(MinP, SortedInputStaysSorted) {
    Cands c({2.0f, 1.0f, 0.0f, -1.0f});
    c.arr.sorted = true;
    MinPSampler(0.3f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1}));
    EXPECT_TRUE(c.arr.sorted);
}

TEST(MinP, MinKeepFallsBackToTheSortedTop) {
    Cands c({0.0f, 2.0f, -1.0f, 1.0f, -3.0f});
    MinPSampler(0.3f, 3).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 3, 0}));
    EXPECT_TRUE(c.arr.sorted);
}

TEST(MinP, NonPositivePDoesNothingAndPAboveOneKeepsTheMaximum) {
    Cands c({0.0f, 2.0f, -1.0f});
    MinPSampler(0.0f, 1).apply(c.arr);
    EXPECT_EQ(c.arr.size, 3u);
    Cands d({0.0f, 2.0f, -1.0f});
    MinPSampler(2.0f, 0).apply(d.arr);
    EXPECT_EQ(d.ids(), (std::vector<Token>{1}));
}

// ---- typical ----

TEST(Typical, KeepsTheMostTypicalUntilMassExceedsP) {
    // p = {0.4, 0.3, 0.2, 0.1}: H = 1.2799; |-ln p - H| = {0.364, 0.076, 0.329, 1.023}
    // so the typical order is ids 1, 2, 0, 3 with cumulative mass 0.3, 0.5, 0.9, 1.0.
    auto c = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler s(0.45f, 1);
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 2}));
    EXPECT_FALSE(c.arr.sorted);
    EXPECT_STREQ(s.name(), "typical");

    auto d = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler(0.85f, 1).apply(d.arr);
    EXPECT_EQ(d.ids(), (std::vector<Token>{1, 2, 0}));

    auto e = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler(0.1f, 1).apply(e.arr);
    EXPECT_EQ(e.ids(), (std::vector<Token>{1}));
}

TEST(Typical, MassMustExceedP) {
    // Uniform: all equally typical (ties keep order); mass 0.5 does not exceed 0.5, 0.75 does.
    Cands c({0.0f, 0.0f, 0.0f, 0.0f});
    TypicalSampler(0.5f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1, 2}));
}

TEST(Typical, MinKeepWins) {
    auto c = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler(0.1f, 3).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 2, 0}));
}

TEST(Typical, MinKeepZeroKeepsEveryCandidateInTypicalOrder) {
    // b4748 tests i >= min_keep - 1 on size_t: with 0 that is SIZE_MAX, so nothing is cut (common's default).
    auto c = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler(0.1f, 0).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 2, 0, 3}));
    EXPECT_FALSE(c.arr.sorted);
}

TEST(Typical, POfOneDoesNothing) {
    auto c = Cands::from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    TypicalSampler(1.0f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1, 2, 3}));
}

TEST(Typical, ZeroProbabilityCandidatesAreLeastTypical) {
    Cands c({0.0f, -kInf, 0.0f});
    TypicalSampler(0.99f, 1).apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 2}));  // H = ln 2, both at distance 0; mass 1 > 0.99
}

// ---- temp ----

TEST(Temp, DividesLogits) {
    Cands c({1.0f, -2.0f, 4.0f});
    TempSampler s(0.5f);
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{2.0f, -4.0f, 8.0f}));
    EXPECT_STREQ(s.name(), "temp");
}

TEST(Temp, NonPositiveKeepsOnlyTheMaximum) {
    Cands c({1.0f, -2.0f, 4.0f, 4.0f});
    TempSampler(0.0f).apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{-kInf, -kInf, 4.0f, -kInf}));
}

TEST(Temp, EmptyArray) {
    TokenDataArray a{nullptr, 0, -1, false};
    TempSampler(0.0f).apply(a);
    TempSampler(2.0f).apply(a);
    EXPECT_EQ(a.size, 0u);
}

// ---- temp-ext ----

TEST(TempExt, NonPositiveDeltaIsPlainTemperature) {
    Cands c({1.0f, -2.0f, 4.0f});
    TempExtSampler(0.5f, 0.0f, 1.0f).apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{2.0f, -4.0f, 8.0f}));
    EXPECT_FALSE(c.arr.sorted);
}

TEST(TempExt, MaximumEntropyUsesTheHighestTemperature) {
    // Uniform: normalised entropy 1, so t = t + delta = 1.5 and every logit 3 becomes 2.
    Cands c({3.0f, 3.0f, 3.0f, 3.0f});
    TempExtSampler s(1.0f, 0.5f, 1.0f);
    s.apply(c.arr);
    for (float l : c.logits()) EXPECT_FLOAT_EQ(l, 2.0f);
    for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(c.arr.data[i].p, 0.25f);
    EXPECT_STREQ(s.name(), "temp-ext");
}

TEST(TempExt, NearZeroEntropyUsesTheLowestTemperature) {
    // One dominant logit: entropy ~1e-41, so t = t - delta = 0.5 (logits double).
    Cands c({0.0f, 100.0f, 0.0f});
    TempExtSampler(1.0f, 0.5f, 1.0f).apply(c.arr);
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 0, 2}));
    EXPECT_EQ(c.logits(), (std::vector<float>{200.0f, 0.0f, 0.0f}));
    EXPECT_FLOAT_EQ(c.arr.data[0].p, 1.0f);
}

TEST(TempExt, IntermediateEntropyFollowsTheFormula) {
    // p = {0.5, 0.25, 0.25}: H = 1.5 ln 2, H / ln 3 = 0.94640; exponent 2 -> 0.89568;
    // t = 0.5 + 1.0 * 0.89568 = 1.39568.
    auto c = Cands::from_probs({0.5f, 0.25f, 0.25f});
    const float l0 = std::log(0.5f);
    TempExtSampler(1.0f, 0.5f, 2.0f).apply(c.arr);
    const double t = 0.5 + std::pow(1.5 * std::log(2.0) / std::log(3.0), 2.0);
    EXPECT_NEAR(c.find(0).logit, l0 / t, 1e-5);
    double z = 0;
    for (float p : {0.5, 0.25, 0.25}) z += std::exp(std::log(p) / t);
    EXPECT_NEAR(c.find(0).p, std::exp(std::log(0.5) / t) / z, 1e-5);
}

TEST(TempExt, SingleCandidateIsLeftAlone) {
    Cands c({3.0f});
    TempExtSampler(1.0f, 0.5f, 1.0f).apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{3.0f}));
}

// ---- penalties ----

TEST(Penalties, ChangeExactlyTheSeenTokensByTheFormula) {
    PenaltiesSampler s(3, 2.0f, 0.5f, 0.25f);
    s.accept(3);
    s.accept(3);
    s.accept(5);
    Cands c({1.0f, 1.0f, 1.0f, 4.0f, 1.0f, -1.0f, 0.0f}, {0, 1, 2, 3, 4, 5, 6});
    c.arr.sorted = true;
    s.apply(c.arr);
    // token 3: count 2, positive -> 4 / 2 - (2 * 0.5 + 0.25) = 0.75
    // token 5: count 1, negative -> -1 * 2 - (0.5 + 0.25) = -2.75
    EXPECT_EQ(c.logits(), (std::vector<float>{1.0f, 1.0f, 1.0f, 0.75f, 1.0f, -2.75f, 0.0f}));
    EXPECT_FALSE(c.arr.sorted);
    EXPECT_STREQ(s.name(), "penalties");
}

TEST(Penalties, ZeroLogitIsMultipliedThenShifted) {
    PenaltiesSampler s(4, 3.0f, 0.0f, 1.0f);
    s.accept(0);
    Cands c({0.0f, 0.0f});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{-1.0f, 0.0f}));
}

TEST(Penalties, WindowKeepsOnlyTheLastNTokens) {
    PenaltiesSampler s(2, 1.0f, 1.0f, 0.0f);
    s.accept(1);
    s.accept(2);
    s.accept(2);  // window now {2, 2}: 1 has left it
    EXPECT_EQ(s.count(1), 0);
    EXPECT_EQ(s.count(2), 2);
    s.accept(3);  // window {2, 3}
    EXPECT_EQ(s.count(2), 1);
    EXPECT_EQ(s.count(3), 1);
    EXPECT_EQ(s.history_size(), 2u);
    Cands c({5.0f, 5.0f, 5.0f, 5.0f});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{5.0f, 5.0f, 4.0f, 4.0f}));
}

// A token that left the window is not penalised at all: not by the repetition factor, not by the presence
// penalty (a count of zero is no presence).
TEST(Penalties, ATokenThatLeftTheWindowIsNotPenalised) {
    PenaltiesSampler s(2, 2.0f, 0.0f, 1.0f);
    s.accept(1);
    s.accept(2);
    s.accept(2);  // window {2, 2}: 1 has left it
    Cands c({5.0f, 5.0f, 5.0f, 5.0f});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{5.0f, 5.0f, 5.0f / 2.0f - 1.0f, 5.0f}));
}

TEST(Penalties, LongHistoryCountsMatchABruteForceWindow) {
    const int32_t last_n = 7;
    PenaltiesSampler s(last_n, 1.0f, 1.0f, 0.0f);
    std::vector<Token> hist;
    uint32_t x = 12345;
    for (int i = 0; i < 200; ++i) {
        x = x * 1103515245u + 12345u;
        const Token t = static_cast<Token>((x >> 16) % 5);
        s.accept(t);
        hist.push_back(t);
        for (Token q = 0; q < 5; ++q) {
            int want = 0;
            for (size_t j = hist.size() > last_n ? hist.size() - last_n : 0; j < hist.size(); ++j)
                want += hist[j] == q;
            ASSERT_EQ(s.count(q), want) << "step " << i << " token " << q;
        }
    }
}

TEST(Penalties, DisabledWhenNeutralOrWindowZero) {
    for (auto [n, r, f, p] : {std::tuple{0, 2.0f, 1.0f, 1.0f}, std::tuple{-1, 2.0f, 1.0f, 1.0f},
                              std::tuple{8, 1.0f, 0.0f, 0.0f}}) {
        PenaltiesSampler s(n, r, f, p);
        s.accept(0);
        Cands c({2.0f, 1.0f});
        s.apply(c.arr);
        EXPECT_EQ(c.logits(), (std::vector<float>{2.0f, 1.0f})) << n << " " << r;
    }
}

TEST(Penalties, ResetClearsHistory) {
    PenaltiesSampler s(4, 2.0f, 0.0f, 0.0f);
    s.accept(0);
    s.reset();
    EXPECT_EQ(s.count(0), 0);
    EXPECT_EQ(s.history_size(), 0u);
    Cands c({2.0f});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{2.0f}));
}

TEST(Penalties, CloneCopiesHistoryAndThenDiverges) {
    PenaltiesSampler s(4, 2.0f, 0.0f, 0.0f);
    s.accept(0);
    auto c2 = s.clone();
    s.accept(1);
    Cands a({2.0f, 2.0f});
    Cands b({2.0f, 2.0f});
    s.apply(a.arr);
    c2->apply(b.arr);
    EXPECT_EQ(a.logits(), (std::vector<float>{1.0f, 1.0f}));
    EXPECT_EQ(b.logits(), (std::vector<float>{1.0f, 2.0f}));
}

// ---- logit bias ----

TEST(LogitBias, AddsBiasInVocabularyOrder) {
    const LogitBias lb[] = {{1, 2.0f}, {3, -kInf}, {1, 0.5f}};
    LogitBiasSampler s(4, lb, 3);
    Cands c({0.0f, 0.0f, 0.0f, 0.0f});
    c.arr.sorted = true;
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{0.0f, 2.5f, 0.0f, -kInf}));
    EXPECT_FALSE(c.arr.sorted);
    EXPECT_STREQ(s.name(), "logit-bias");
}

TEST(LogitBias, FindsTokensInAReorderedArray) {
    const LogitBias lb[] = {{7, 1.0f}, {2, -1.0f}, {7, 1.0f}};
    LogitBiasSampler s(10, lb, 3);
    Cands c({0.0f, 0.0f, 0.0f}, {7, 9, 2});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{2.0f, 0.0f, -1.0f}));
}

TEST(LogitBias, IgnoresTokensNotAmongTheCandidates) {
    const LogitBias lb[] = {{-5, 1.0f}, {100, 1.0f}};
    LogitBiasSampler s(4, lb, 2);
    Cands c({0.0f, 0.0f});
    c.arr.sorted = true;
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{0.0f, 0.0f}));
    EXPECT_TRUE(c.arr.sorted);
}

TEST(LogitBias, EntriesAreCopied) {
    LogitBias lb[] = {{0, 1.0f}};
    LogitBiasSampler s(2, lb, 1);
    lb[0].bias = 100.0f;
    Cands c({0.0f, 0.0f});
    s.apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{1.0f, 0.0f}));
}

// ---- top-n-sigma ----

TEST(TopNSigma, MasksLogitsMoreThanNSigmaBelowTheMax) {
    // {0, 1, 2, 3, 10}: mean 3.2, sigma = sqrt(12.56) = 3.544.
    const std::vector<float> l = {0.0f, 1.0f, 2.0f, 3.0f, 10.0f};
    Cands a(l);
    TopNSigmaSampler(1.0f).apply(a.arr);  // cut 6.456: only 10 survives
    EXPECT_EQ(a.find(4).p, 1.0f);
    EXPECT_EQ(a.find(3).logit, -kInf);
    EXPECT_TRUE(a.arr.sorted);

    Cands b(l);
    TopNSigmaSampler(2.0f).apply(b.arr);  // cut 2.912: 3 and 10 survive
    EXPECT_EQ(b.find(3).logit, 3.0f);
    EXPECT_EQ(b.find(2).logit, -kInf);

    Cands c(l);
    TopNSigmaSampler(3.0f).apply(c.arr);  // cut -0.63: everything survives
    for (Token t = 0; t < 5; ++t) EXPECT_EQ(c.find(t).logit, l[static_cast<size_t>(t)]);
}

TEST(TopNSigma, MinusInfinityIsLeftOutOfTheStatistics) {
    Cands c({0.0f, 1.0f, 2.0f, 3.0f, 10.0f, -kInf});
    TopNSigmaSampler(2.0f).apply(c.arr);
    EXPECT_EQ(c.find(3).logit, 3.0f);
    EXPECT_EQ(c.find(2).logit, -kInf);
    EXPECT_GT(c.find(3).p, 0.0f);
}

TEST(TopNSigma, ZeroNKeepsOnlyTheMaximalLogits) {
    // b4748: the cut is max - 0 * sigma = max, so every smaller logit is masked (ties with the maximum stay).
    Cands c({0.0f, 10.0f, 3.0f, 10.0f});
    TopNSigmaSampler(0.0f).apply(c.arr);
    EXPECT_EQ(c.find(1).logit, 10.0f);
    EXPECT_EQ(c.find(3).logit, 10.0f);
    EXPECT_EQ(c.find(0).logit, -kInf);
    EXPECT_EQ(c.find(2).logit, -kInf);
    EXPECT_EQ(c.find(1).p, 0.5f);
    EXPECT_TRUE(c.arr.sorted);
}

TEST(TopNSigma, OneCandidateEndsWithTheSoftmax) {
    // b4748 masks nothing (sigma 0, the cut is the logit itself) and then runs the softmax: p = 1, sorted.
    Cands c({-3.5f});
    TopNSigmaSampler(1.0f).apply(c.arr);
    EXPECT_EQ(c.find(0).logit, -3.5f);
    EXPECT_EQ(c.find(0).p, 1.0f);
    EXPECT_TRUE(c.arr.sorted);
}

TEST(TopNSigma, NegativeNDoesNothing) {
    // A deliberate difference (llama.h): b4748 masks every candidate, leaving no probability to draw from.
    Cands c({0.0f, 10.0f});
    TopNSigmaSampler(-1.0f).apply(c.arr);
    EXPECT_EQ(c.logits(), (std::vector<float>{0.0f, 10.0f}));
    EXPECT_FALSE(c.arr.sorted);
}

// ---- softmax (deprecated upstream) ----

TEST(Softmax, SortsAndFillsP) {
    Cands c({0.0f, std::log(3.0f)});
    SoftmaxSampler s;
    s.apply(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 0}));
    EXPECT_FLOAT_EQ(c.arr.data[0].p, 0.75f);
    EXPECT_STREQ(s.name(), "softmax");
}

// ---- every sampler survives an empty array ----

TEST(AllSamplers, EmptyArrayIsHarmless) {
    const LogitBias lb[] = {{0, 1.0f}};
    std::vector<std::unique_ptr<Sampler>> all;
    all.push_back(std::make_unique<GreedySampler>());
    all.push_back(std::make_unique<DistSampler>(1));
    all.push_back(std::make_unique<SoftmaxSampler>());
    all.push_back(std::make_unique<TopKSampler>(3));
    all.push_back(std::make_unique<TopPSampler>(0.5f, 1));
    all.push_back(std::make_unique<MinPSampler>(0.5f, 1));
    all.push_back(std::make_unique<TypicalSampler>(0.5f, 1));
    all.push_back(std::make_unique<TempSampler>(0.0f));
    all.push_back(std::make_unique<TempExtSampler>(1.0f, 0.5f, 1.0f));
    all.push_back(std::make_unique<XtcSampler>(1.0f, 0.1f, 1, 1));
    all.push_back(std::make_unique<TopNSigmaSampler>(1.0f));
    all.push_back(std::make_unique<MirostatSampler>(10, 1, 5.0f, 0.1f, 100));
    all.push_back(std::make_unique<MirostatV2Sampler>(1, 5.0f, 0.1f));
    all.push_back(std::make_unique<PenaltiesSampler>(4, 2.0f, 1.0f, 1.0f));
    all.push_back(std::make_unique<LogitBiasSampler>(4, lb, 1));
    for (auto &s : all) {
        s->accept(0);
        TokenDataArray a{nullptr, 0, -1, false};
        s->apply(a);
        EXPECT_EQ(a.size, 0u) << s->name();
        EXPECT_EQ(a.selected, -1) << s->name();
    }
}

}  // namespace
}  // namespace lctx::test_samplers
