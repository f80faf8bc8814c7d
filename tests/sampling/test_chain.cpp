// The chain: order, ownership, accept/reset/clone forwarding, seeds, perf counters, and sample().
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "sampling/samplers.h"
#include "sampling_test_util.h"
#include "util/error.h"

namespace lctx::test_chain {
namespace {

using test::Cands;

// Records what it was given; used to check forwarding.
class Probe final : public Sampler {
  public:
    explicit Probe(std::vector<std::string> *log, std::string tag) : log_(log), tag_(std::move(tag)) {}
    const char *name() const override { return "probe"; }
    void accept(Token t) override { log_->push_back(tag_ + ".accept" + std::to_string(t)); }
    void apply(TokenDataArray &) override { log_->push_back(tag_ + ".apply"); }
    void reset() override { log_->push_back(tag_ + ".reset"); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Probe>(*this); }

  private:
    std::vector<std::string> *log_;
    std::string tag_;
};

TEST(Chain, AppliesInOrderAndForwardsAcceptAndReset) {
    std::vector<std::string> log;
    SamplerChain chain;
    chain.add(std::make_unique<Probe>(&log, "a"));
    chain.add(std::make_unique<Probe>(&log, "b"));
    Cands c({1.0f});
    chain.apply(c.arr);
    chain.accept(7);
    chain.reset();
    EXPECT_EQ(log, (std::vector<std::string>{"a.apply", "b.apply", "a.accept7", "b.accept7", "a.reset",
                                             "b.reset"}));
    EXPECT_STREQ(chain.name(), "chain");
}

TEST(Chain, OrderMatters) {
    const LogitBias lb[] = {{2, 5.0f}};
    // bias, then greedy: the bias decides.
    SamplerChain biased_first;
    biased_first.add(std::make_unique<LogitBiasSampler>(4, lb, 1));
    biased_first.add(std::make_unique<GreedySampler>());
    // greedy, then bias: the choice was already made on the raw logits.
    SamplerChain greedy_first;
    greedy_first.add(std::make_unique<GreedySampler>());
    greedy_first.add(std::make_unique<LogitBiasSampler>(4, lb, 1));

    Cands a({0.0f, 1.0f, 0.0f, 0.5f});
    biased_first.apply(a.arr);
    EXPECT_EQ(a.arr.data[a.arr.selected].id, 2);
    Cands b({0.0f, 1.0f, 0.0f, 0.5f});
    greedy_first.apply(b.arr);
    EXPECT_EQ(b.arr.data[b.arr.selected].id, 1);

    // temp(0) then top-k(3) masks before truncating; top-k(3) then temp(2) truncates then rescales.
    SamplerChain t1;
    t1.add(std::make_unique<TempSampler>(0.0f));
    t1.add(std::make_unique<TopKSampler>(3));
    SamplerChain t2;
    t2.add(std::make_unique<TopKSampler>(3));
    t2.add(std::make_unique<TempSampler>(2.0f));
    Cands x({2.0f, 1.9f, 1.8f, 0.0f});
    t1.apply(x.arr);
    Cands y({2.0f, 1.9f, 1.8f, 0.0f});
    t2.apply(y.arr);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(x.logits(), (std::vector<float>{2.0f, -inf, -inf}));
    EXPECT_EQ(y.logits(), (std::vector<float>{1.0f, 0.95f, 0.9f}));
}

TEST(Chain, GetRemoveAndSize) {
    SamplerChain chain;
    chain.add(std::make_unique<TopKSampler>(3));
    chain.add(std::make_unique<GreedySampler>());
    EXPECT_EQ(chain.size(), 2);
    EXPECT_STREQ(chain.get(0)->name(), "top-k");
    EXPECT_STREQ(chain.get(1)->name(), "greedy");
    EXPECT_EQ(chain.get(2), nullptr);
    EXPECT_EQ(chain.get(-1), nullptr);
    auto removed = chain.remove(0);
    ASSERT_NE(removed, nullptr);
    EXPECT_STREQ(removed->name(), "top-k");
    EXPECT_EQ(chain.size(), 1);
    EXPECT_STREQ(chain.get(0)->name(), "greedy");
    EXPECT_EQ(chain.remove(5), nullptr);
    EXPECT_THROW(chain.add(nullptr), Error);
}

TEST(Chain, SeedIsTheLastMemberWithOne) {
    SamplerChain chain;
    EXPECT_EQ(chain.seed(), kDefaultSeed);
    chain.add(std::make_unique<DistSampler>(5));
    chain.add(std::make_unique<TopKSampler>(3));
    EXPECT_EQ(chain.seed(), 5u);
    chain.add(std::make_unique<MirostatV2Sampler>(9, 5.0f, 0.1f));
    chain.add(std::make_unique<XtcSampler>(0.5f, 0.1f, 1, 77));  // XTC does not report its seed
    EXPECT_EQ(chain.seed(), 9u);
    EXPECT_EQ(TopKSampler(3).seed(), kDefaultSeed);
}

TEST(Chain, CloneIsDeepAndCarriesState) {
    SamplerChain chain;
    chain.add(std::make_unique<PenaltiesSampler>(8, 1.0f, 1.0f, 0.0f));
    chain.add(std::make_unique<DistSampler>(31));
    std::vector<float> logits = {0.5f, 0.1f, 0.4f, 0.2f, 0.3f};
    for (int i = 0; i < 5; ++i) chain.sample(logits.data(), 5);

    auto twin_base = chain.clone();
    auto &twin = static_cast<SamplerChain &>(*twin_base);
    ASSERT_EQ(twin.size(), 2);
    EXPECT_NE(twin.get(0), chain.get(0));  // different objects
    const auto &pa = static_cast<const PenaltiesSampler &>(*chain.get(0));
    const auto &pb = static_cast<const PenaltiesSampler &>(*twin.get(0));
    for (Token t = 0; t < 5; ++t) EXPECT_EQ(pa.count(t), pb.count(t));
    for (int i = 0; i < 20; ++i) EXPECT_EQ(chain.sample(logits.data(), 5), twin.sample(logits.data(), 5));
}

TEST(Chain, ResetClearsPenaltiesAndReseeds) {
    SamplerChain chain;
    chain.add(std::make_unique<PenaltiesSampler>(8, 1.0f, 1.0f, 0.0f));
    chain.add(std::make_unique<DistSampler>(31));
    std::vector<float> logits = {0.5f, 0.1f, 0.4f, 0.2f, 0.3f};
    std::vector<Token> first;
    for (int i = 0; i < 10; ++i) first.push_back(chain.sample(logits.data(), 5));
    chain.reset();
    const auto &pen = static_cast<const PenaltiesSampler &>(*chain.get(0));
    EXPECT_EQ(pen.history_size(), 0u);
    EXPECT_EQ(chain.n_sample(), 0);
    std::vector<Token> again;
    for (int i = 0; i < 10; ++i) again.push_back(chain.sample(logits.data(), 5));
    EXPECT_EQ(first, again);
}

TEST(Chain, PerfCountsSamplesAndTimesOnlyWhenAsked) {
    SamplerChain quiet;  // no_perf = true by default
    quiet.add(std::make_unique<GreedySampler>());
    SamplerChain timed(SamplerChainParams{false});
    timed.add(std::make_unique<TopKSampler>(0));  // sorts: measurable work
    timed.add(std::make_unique<GreedySampler>());
    std::vector<float> logits(50000);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (auto &l : logits) l = nd(rng);
    for (int i = 0; i < 3; ++i) {
        quiet.sample(logits.data(), 50000);
        timed.sample(logits.data(), 50000);
    }
    EXPECT_EQ(quiet.n_sample(), 3);
    EXPECT_EQ(timed.n_sample(), 3);
    EXPECT_EQ(quiet.t_sample_ms(), 0.0);
    EXPECT_GT(timed.t_sample_ms(), 0.0);
    timed.perf_reset();
    EXPECT_EQ(timed.n_sample(), 0);
    EXPECT_EQ(timed.t_sample_ms(), 0.0);
}

// ---- sample() ----

TEST(Sample, BuildsVocabularyOrderedCandidatesAndAccepts) {
    SamplerChain chain;
    chain.add(std::make_unique<PenaltiesSampler>(4, 1.0f, 10.0f, 0.0f));
    chain.add(std::make_unique<GreedySampler>());
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f};
    EXPECT_EQ(chain.sample(logits.data(), 3), 1);
    // sample() accepted token 1, so the penalty now pushes it below token 2.
    EXPECT_EQ(chain.sample(logits.data(), 3), 2);
    EXPECT_EQ(chain.sample(logits.data(), 3), 0);
    EXPECT_EQ(chain.n_sample(), 3);
}

TEST(Sample, GreedyTiesPickTheLowestTokenId) {
    GreedySampler g;
    const std::vector<float> logits = {0.0f, 4.0f, 1.0f, 4.0f};
    EXPECT_EQ(sample(g, logits.data(), 4), 1);
}

TEST(Sample, WorksOnASingleSampler) {
    DistSampler d(8);
    const std::vector<float> logits = {0.0f, 0.0f};
    std::vector<TokenData> scratch;
    const Token t = sample(d, logits.data(), 2, &scratch);
    EXPECT_TRUE(t == 0 || t == 1);
    EXPECT_EQ(scratch.size(), 2u);
}

TEST(Sample, RejectsBadInput) {
    SamplerChain chain;
    chain.add(std::make_unique<GreedySampler>());
    const std::vector<float> logits = {1.0f, std::nanf(""), 2.0f};
    EXPECT_THROW(chain.sample(logits.data(), 3), Error);
    EXPECT_THROW(chain.sample(nullptr, 3), Error);
    EXPECT_THROW(chain.sample(logits.data(), 0), Error);
    EXPECT_EQ(chain.n_sample(), 0);  // nothing accepted
}

TEST(Sample, ChainWithoutSelectorThrows) {
    SamplerChain chain;
    chain.add(std::make_unique<TopKSampler>(2));
    const std::vector<float> logits = {1.0f, 2.0f};
    EXPECT_THROW(chain.sample(logits.data(), 2), Error);
}

TEST(Sample, AllMinusInfinityWithDistThrows) {
    SamplerChain chain;
    chain.add(std::make_unique<DistSampler>(1));
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits = {-inf, -inf};
    EXPECT_THROW(chain.sample(logits.data(), 2), Error);
}

TEST(Sample, ZeroTemperatureChainIsGreedy) {
    SamplerChain chain;
    chain.add(std::make_unique<TempSampler>(0.0f));
    chain.add(std::make_unique<DistSampler>(123));
    const std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.25f};
    for (int i = 0; i < 50; ++i) EXPECT_EQ(chain.sample(logits.data(), 4), 1);
}

// A realistic chain over a 150k vocabulary: top-k narrows first (partial sort), and the result equals
// what a full sort says the top candidates are.
TEST(Sample, LargeVocabularyTopKChain) {
    const int32_t n_vocab = 150000;
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    std::mt19937 rng(99);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    for (auto &l : logits) l = nd(rng);

    std::vector<Token> order(static_cast<size_t>(n_vocab));
    for (Token i = 0; i < n_vocab; ++i) order[static_cast<size_t>(i)] = i;
    std::sort(order.begin(), order.end(), [&](Token a, Token b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    const std::vector<Token> top40(order.begin(), order.begin() + 40);

    SamplerChain chain;
    chain.add(std::make_unique<PenaltiesSampler>(64, 1.1f, 0.0f, 0.0f));
    chain.add(std::make_unique<TopKSampler>(40));
    chain.add(std::make_unique<TopPSampler>(0.95f, 1));
    chain.add(std::make_unique<MinPSampler>(0.05f, 1));
    chain.add(std::make_unique<TempSampler>(0.8f));
    chain.add(std::make_unique<DistSampler>(2025));
    for (int i = 0; i < 20; ++i) {
        const Token t = chain.sample(logits.data(), n_vocab);
        EXPECT_NE(std::find(top40.begin(), top40.end(), t), top40.end()) << t;
    }

    GreedySampler g;
    EXPECT_EQ(sample(g, logits.data(), n_vocab), order[0]);
}

}  // namespace
}  // namespace lctx::test_chain
