// The shared helpers: ordering, partial top-k against a full sort, softmax, temperature, draw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "sampling/candidates.h"
#include "sampling_test_util.h"

namespace lctx::test_candidates {
namespace {

using test::Cands;
constexpr float kInf = std::numeric_limits<float>::infinity();

// A C-side mirror of llama.h's structs: the C API reinterpret_casts between them and ours.
extern "C" {
struct CTokenData {
    int32_t id;
    float logit;
    float p;
};
struct CTokenDataArray {
    CTokenData *data;
    size_t size;
    int64_t selected;
    bool sorted;
};
}

TEST(TokenData, LayoutMatchesTheCStructs) {
    static_assert(sizeof(CTokenData) == sizeof(TokenData));
    static_assert(sizeof(CTokenDataArray) == sizeof(TokenDataArray));
    static_assert(offsetof(CTokenDataArray, sorted) == offsetof(TokenDataArray, sorted));
    CTokenData c[3] = {{7, 1.5f, 0.25f}, {8, -2.0f, 0.5f}, {9, 3.0f, 0.75f}};
    CTokenDataArray ca{c, 3, 2, true};
    const auto *a = reinterpret_cast<const TokenDataArray *>(&ca);
    EXPECT_EQ(a->size, 3u);
    EXPECT_EQ(a->selected, 2);
    EXPECT_TRUE(a->sorted);
    EXPECT_EQ(a->data[1].id, 8);
    EXPECT_EQ(a->data[2].logit, 3.0f);
    EXPECT_EQ(a->data[2].p, 0.75f);
}

TEST(Candidates, SortIsByDescendingLogitThenAscendingId) {
    Cands c({1.0f, 3.0f, 1.0f, -kInf, 3.0f, 2.0f});
    candidates_sort(c.arr);
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_EQ(c.ids(), (std::vector<Token>{1, 4, 5, 0, 2, 3}));
}

TEST(Candidates, SortLeavesAnArrayMarkedSortedAlone) {
    Cands c({1.0f, 3.0f, 2.0f});
    c.arr.sorted = true;  // the flag is trusted, as upstream does
    candidates_sort(c.arr);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1, 2}));
}

TEST(Candidates, NanSortsLikeMinusInfinityAndNeverBreaksTheSort) {
    std::vector<float> logits(1000);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    for (auto &l : logits) l = nd(rng);
    for (size_t i = 0; i < logits.size(); i += 7) logits[i] = std::nanf("");
    Cands c(logits);
    candidates_sort(c.arr);
    // Every NaN comes after every finite logit.
    size_t first_nan = c.arr.size;
    for (size_t i = 0; i < c.arr.size; ++i) {
        if (std::isnan(c.arr.data[i].logit)) {
            first_nan = i;
            break;
        }
    }
    ASSERT_LT(first_nan, c.arr.size);
    for (size_t i = first_nan; i < c.arr.size; ++i) EXPECT_TRUE(std::isnan(c.arr.data[i].logit)) << i;
    for (size_t i = 1; i < first_nan; ++i) EXPECT_GE(c.arr.data[i - 1].logit, c.arr.data[i].logit);
}

// Large arrays take the radix-sort path: it must agree exactly with the comparator, including on ties,
// -0 / +0, infinities, NaN, negative ids and an input that is not in id order.
TEST(Candidates, LargeSortAgreesWithTheComparator) {
    const size_t n = 20000;
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> coarse(-50, 50);
    std::vector<float> logits(n);
    std::vector<Token> ids(n);
    for (size_t i = 0; i < n; ++i) {
        logits[i] = static_cast<float>(coarse(rng)) * 0.25f;
        ids[i] = static_cast<Token>(i) - 7000;
    }
    std::shuffle(ids.begin(), ids.end(), rng);
    logits[10] = -0.0f;
    logits[11] = 0.0f;
    logits[12] = kInf;
    logits[13] = -kInf;
    logits[14] = std::nanf("");
    logits[15] = 1e-40f;  // subnormal
    logits[16] = -1e-40f;
    logits[17] = std::numeric_limits<float>::max();
    logits[18] = std::numeric_limits<float>::lowest();
    Cands c(logits, ids);
    std::vector<TokenData> ref = c.buf;
    std::sort(ref.begin(), ref.end(), candidate_before);
    candidates_sort(c.arr);
    ASSERT_TRUE(c.arr.sorted);
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(c.arr.data[i].id, ref[i].id) << i;
        ASSERT_EQ(std::memcmp(&c.arr.data[i], &ref[i], sizeof(TokenData)), 0) << i;  // p travels along
    }
}

// Partial top-k must give exactly the first k entries of a full sort, for every path (heap, nth_element,
// whole array) and for k out of range, including on ties.
TEST(Candidates, TopKMatchesAFullSortForEveryK) {
    const size_t n = 5000;
    std::vector<float> logits(n);
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> coarse(-300, 300);  // many ties
    for (auto &l : logits) l = static_cast<float>(coarse(rng)) * 0.05f;
    std::vector<TokenData> ref;
    for (size_t i = 0; i < n; ++i) ref.push_back({static_cast<Token>(i), logits[i], 0.0f});
    std::sort(ref.begin(), ref.end(), candidate_before);

    for (int64_t k : {1, 2, 40, 127, 128, 129, 1000, 4999, 5000, 5001, 0, -1}) {
        Cands c(logits);
        candidates_top_k(c.arr, k);
        const size_t want = (k <= 0 || k > static_cast<int64_t>(n)) ? n : static_cast<size_t>(k);
        ASSERT_EQ(c.arr.size, want) << "k=" << k;
        EXPECT_TRUE(c.arr.sorted);
        for (size_t i = 0; i < want; ++i) {
            ASSERT_EQ(c.arr.data[i].id, ref[i].id) << "k=" << k << " i=" << i;
        }
    }
}

TEST(Candidates, TopKOnASortedArrayOnlyTruncates) {
    Cands c({1.0f, 5.0f, 3.0f});
    c.arr.sorted = true;
    candidates_top_k(c.arr, 2);
    EXPECT_EQ(c.ids(), (std::vector<Token>{0, 1}));
}

TEST(Candidates, SoftmaxMatchesTheDefinition) {
    Cands c({0.0f, 1.0f, 2.0f, -1.0f});
    candidates_softmax(c.arr);
    EXPECT_TRUE(c.arr.sorted);
    EXPECT_EQ(c.ids(), (std::vector<Token>{2, 1, 0, 3}));
    const double z = std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(-1.0);
    EXPECT_NEAR(c.find(0).p, std::exp(0.0) / z, 1e-6);
    EXPECT_NEAR(c.find(1).p, std::exp(1.0) / z, 1e-6);
    EXPECT_NEAR(c.find(2).p, std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(c.find(3).p, std::exp(-1.0) / z, 1e-6);
}

TEST(Candidates, SoftmaxIsStableForHugeLogits) {
    Cands c({1000.0f, 1000.0f, 999.0f});
    candidates_softmax(c.arr);
    const double z = 2.0 + std::exp(-1.0);
    EXPECT_NEAR(c.find(0).p, 1.0 / z, 1e-6);
    EXPECT_NEAR(c.find(2).p, std::exp(-1.0) / z, 1e-6);
}

TEST(Candidates, SoftmaxGivesMinusInfinityNoMass) {
    Cands c({-kInf, 0.0f, -kInf, 0.0f});
    candidates_softmax(c.arr);
    EXPECT_EQ(c.find(0).p, 0.0f);
    EXPECT_EQ(c.find(2).p, 0.0f);
    EXPECT_FLOAT_EQ(c.find(1).p, 0.5f);
    EXPECT_FLOAT_EQ(c.find(3).p, 0.5f);
}

TEST(Candidates, SoftmaxOfAllMinusInfinityHasNoMassAnywhere) {
    Cands c({-kInf, -kInf, -kInf});
    candidates_softmax(c.arr);
    for (size_t i = 0; i < c.arr.size; ++i) EXPECT_EQ(c.arr.data[i].p, 0.0f);
    std::mt19937 rng(1);
    EXPECT_EQ(candidates_draw(c.arr, rng), -1);
}

TEST(Candidates, SoftmaxSplitsMassBetweenPlusInfinities) {
    Cands c({1.0f, kInf, 2.0f, kInf});
    candidates_softmax(c.arr);
    EXPECT_EQ(c.find(1).p, 0.5f);
    EXPECT_EQ(c.find(3).p, 0.5f);
    EXPECT_EQ(c.find(0).p, 0.0f);
    EXPECT_EQ(c.find(2).p, 0.0f);
}

TEST(Candidates, SoftmaxOfEmptyArrayIsANoOp) {
    TokenDataArray a{nullptr, 0, -1, false};
    candidates_softmax(a);
    EXPECT_EQ(a.size, 0u);
    std::mt19937 rng(1);
    EXPECT_EQ(candidates_draw(a, rng), -1);
}

TEST(Candidates, TemperatureDividesLogits) {
    Cands c({2.0f, -4.0f, 1.0f});
    candidates_temperature(c.arr, 2.0f);
    EXPECT_EQ(c.logits(), (std::vector<float>{1.0f, -2.0f, 0.5f}));
}

TEST(Candidates, ZeroTemperatureKeepsTheFirstMaximumOnly) {
    Cands c({2.0f, 5.0f, 1.0f, 5.0f});
    candidates_temperature(c.arr, 0.0f);
    EXPECT_EQ(c.logits(), (std::vector<float>{-kInf, 5.0f, -kInf, -kInf}));
    Cands n({2.0f, 5.0f, 1.0f});
    candidates_temperature(n.arr, -1.0f);
    EXPECT_EQ(n.logits(), (std::vector<float>{-kInf, 5.0f, -kInf}));
}

TEST(Candidates, DrawNeverPicksZeroProbability) {
    Cands c({0.0f, 0.0f, 0.0f, 0.0f});
    c.buf[0].p = 0.0f;
    c.buf[1].p = 0.7f;
    c.buf[2].p = 0.0f;
    c.buf[3].p = 0.3f;
    std::mt19937 rng(3);
    for (int i = 0; i < 2000; ++i) {
        const int64_t s = candidates_draw(c.arr, rng);
        ASSERT_TRUE(s == 1 || s == 3) << s;
    }
}

TEST(Candidates, ExplicitSeedIsKeptDefaultSeedIsDrawn) {
    EXPECT_EQ(resolve_seed(1234u), 1234u);
    EXPECT_EQ(resolve_seed(0u), 0u);
    // Two fresh random seeds agreeing three times in a row has probability ~2^-96.
    bool differ = false;
    for (int i = 0; i < 3 && !differ; ++i) differ = resolve_seed(kDefaultSeed) != resolve_seed(kDefaultSeed);
    EXPECT_TRUE(differ);
}

}  // namespace
}  // namespace lctx::test_candidates
