// The CLI's option helpers: llama.cpp spellings, escapes, --logit-bias, the range checks, and the sampler
// chain the options build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "llama.h"
#include "stories_vocab.h"
#include "tools/lctx/args.h"
#include "tools/lctx/cli_sampling.h"
#include "tools/lctx/gen_options.h"

namespace lctx::cli::options_test {
namespace {

std::vector<std::string> norm(std::vector<const char *> v) {
    return normalize_args(static_cast<int>(v.size()), v.data());
}

TEST(NormalizeArgs, MultiLetterShortOptionsBecomeLongOnes) {
    EXPECT_EQ(
        norm({"lctx", "-ub", "8", "-ctk", "q8_0", "-ctv=f32", "-fa", "-cnv", "-sys", "hi", "-ngl", "99",
              "-tb", "2"}),
        (std::vector<std::string>{"lctx", "--ubatch-size", "8", "--cache-type-k", "q8_0",
                                  "--cache-type-v=f32", "--flash-attn", "--conversation", "--system-prompt",
                                  "hi", "--n-gpu-layers", "99", "--threads-batch", "2"}));
}

TEST(NormalizeArgs, LeavesOtherArgumentsAndEverythingAfterDoubleDash) {
    EXPECT_EQ(norm({"-ub", "-n", "-1", "-p", "-ub", "--", "-ctk"}),
              (std::vector<std::string>{"-ub", "-n", "-1", "-p", "--ubatch-size", "--", "-ctk"}));
}

TEST(ProcessEscapes, KnownEscapesAndTheRestKept) {
    EXPECT_EQ(process_escapes("a\\nb\\tc\\\\d\\\"e\\'"), "a\nb\tc\\d\"e'");
    EXPECT_EQ(process_escapes("\\x41\\102\\x4"), "AB\\x4");
    EXPECT_EQ(process_escapes("\\x4A\\x4a\\xFf\\101\\1011"),
              "JJ\xff"
              "AA1");  // either case; 3 octal digits
    EXPECT_EQ(process_escapes("end\\"), "end\\");
    EXPECT_EQ(process_escapes("\\q"), "\\q");
}

TEST(LogitBias, ParsesPlusMinusAndInfinity) {
    TokenBias b{};
    std::string why;
    ASSERT_TRUE(parse_logit_bias("15043+1", &b, &why)) << why;
    EXPECT_EQ(b.token, 15043);
    EXPECT_FLOAT_EQ(b.bias, 1.0f);
    ASSERT_TRUE(parse_logit_bias("2-inf", &b, &why)) << why;
    EXPECT_EQ(b.token, 2);
    EXPECT_TRUE(std::isinf(b.bias) && b.bias < 0);
    ASSERT_TRUE(parse_logit_bias("7 -0.5", &b, &why)) << why;
    EXPECT_FLOAT_EQ(b.bias, -0.5f);
    for (const char *bad : {"", "+1", "-3+1", "abc", "12", "12*3", "12+x", "12+nan"})
        EXPECT_FALSE(parse_logit_bias(bad, &b, &why)) << bad;
}

TEST(SamplingChecks, DefaultsPassAndEachBadValueIsNamed) {
    EXPECT_EQ(check_sampling_options(SamplingOptions{}), "");
    struct Case {
        void (*set)(SamplingOptions &);
        const char *name;
    };
    const Case cases[] = {
        {[](SamplingOptions &o) { o.config.temperature = NAN; }, "--temp"},
        {[](SamplingOptions &o) { o.config.temperature = INFINITY; }, "--temp"},
        {[](SamplingOptions &o) { o.config.top_p = 1.5f; }, "--top-p"},
        {[](SamplingOptions &o) { o.config.top_p = NAN; }, "--top-p"},
        {[](SamplingOptions &o) { o.config.min_p = -0.1f; }, "--min-p"},
        {[](SamplingOptions &o) { o.config.typical_p = NAN; }, "--typical"},
        {[](SamplingOptions &o) { o.config.repeat_penalty = -1.0f; }, "--repeat-penalty"},
        {[](SamplingOptions &o) { o.config.repeat_last_n = -2; }, "--repeat-last-n"},
        {[](SamplingOptions &o) { o.config.frequency_penalty = NAN; }, "--frequency-penalty"},
        {[](SamplingOptions &o) { o.config.presence_penalty = INFINITY; }, "--presence-penalty"},
        {[](SamplingOptions &o) { o.seed = -2; }, "--seed"},
        {[](SamplingOptions &o) { o.seed = 0xFFFFFFFFll; }, "--seed"},
        {[](SamplingOptions &o) { o.config.mirostat = 3; }, "--mirostat"},
        {[](SamplingOptions &o) { o.config.mirostat_eta = NAN; }, "--mirostat-lr"},
        {[](SamplingOptions &o) { o.config.xtc_probability = 2.0f; }, "--xtc-probability"},
        {[](SamplingOptions &o) { o.config.dynatemp_range = -1.0f; }, "--dynatemp-range"},
        {[](SamplingOptions &o) { o.config.dry_base = 0.5f; }, "--dry-base"},
        {[](SamplingOptions &o) { o.logit_bias = {"x"}; }, "--logit-bias"},
        {[](SamplingOptions &o) { o.json_schema = R"({"type": "kaboom"})"; }, "--json-schema"},
        {[](SamplingOptions &o) { o.json_schema = "{"; }, "--json-schema"},
        {[](SamplingOptions &o) {
             o.json_schema = "{}";
             o.config.grammar = "root ::= \"a\"";
         },
         "--json-schema"},
        {[](SamplingOptions &o) { o.config.dry_multiplier = NAN; }, "--dry-multiplier"},
        {[](SamplingOptions &o) {
             o.config.grammar = "root ::= \"a\"";
             o.grammar_file = "g.gbnf";
         },
         "--grammar"},
    };
    for (const Case &c : cases) {
        SamplingOptions o;
        c.set(o);
        const std::string e = check_sampling_options(o);
        EXPECT_EQ(e.rfind(c.name, 0), 0u) << c.name << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
}

TEST(GenChecks, NPredictSemanticsAndCacheTypes) {
    for (int n : {-2, -1, 0, 1, 1000}) {
        GenOptions o;
        o.n_predict = n;
        EXPECT_EQ(check_gen_options(o), "") << n;
    }
    GenOptions o;
    o.n_predict = -3;
    EXPECT_EQ(check_gen_options(o).rfind("--n-predict", 0), 0u);
    GenOptions k;
    k.cache_type_k = "q8_0";
    EXPECT_EQ(check_gen_options(k), "");
    EXPECT_EQ(k.type_k, GGML_TYPE_Q8_0);
    k.cache_type_v = "q9";
    EXPECT_EQ(check_gen_options(k).rfind("--cache-type-v", 0), 0u);
    GenOptions b;
    b.n_ubatch = 0;
    EXPECT_EQ(check_gen_options(b).rfind("--ubatch-size", 0), 0u);
}

// The defaults are llama.cpp b4748's (common_params_sampling in common/common.h): a wrong one changes what
// every seeded run samples, which no range check notices.
TEST(SamplingDefaults, AreLlamaCppB4748s) {
    const SamplingOptions o;
    EXPECT_EQ(o.config.temperature, 0.80f);
    EXPECT_EQ(o.config.top_k, 40);
    EXPECT_EQ(o.config.top_p, 0.95f);
    EXPECT_EQ(o.config.min_p, 0.05f);
    EXPECT_EQ(o.config.typical_p, 1.00f);
    EXPECT_EQ(o.config.repeat_penalty, 1.00f);
    EXPECT_EQ(o.config.repeat_last_n, 64);
    EXPECT_EQ(o.config.frequency_penalty, 0.00f);
    EXPECT_EQ(o.config.presence_penalty, 0.00f);
    EXPECT_EQ(o.seed, -1);  // LLAMA_DEFAULT_SEED: a random one
    EXPECT_EQ(o.config.dynatemp_range, 0.00f);
    EXPECT_EQ(o.config.dynatemp_exponent, 1.00f);
    EXPECT_EQ(o.config.mirostat, 0);
    EXPECT_EQ(o.config.mirostat_tau, 5.00f);  // tau
    EXPECT_EQ(o.config.mirostat_eta, 0.10f);  // eta
    EXPECT_EQ(o.config.xtc_probability, 0.00f);
    EXPECT_EQ(o.config.xtc_threshold, 0.10f);
    EXPECT_EQ(o.config.dry_multiplier, 0.0f);
    EXPECT_EQ(o.config.dry_base, 1.75f);
    EXPECT_EQ(o.config.dry_allowed_length, 2);
    EXPECT_EQ(o.config.dry_penalty_last_n, -1);
    EXPECT_FALSE(o.config.ignore_eos);
}

// The chain `run` and `chat` sample with: the options through tools/lctx/cli_sampling.h into the generation
// layer's llama.h chain.
class SamplerChainFromOptions : public lctx::testing::StoriesVocabTest {
  protected:
    // The chain of the options, owned by the test.
    static SamplerPtr chain_of(const SamplingOptions &o) {
        std::string err;
        SamplerPtr c = make_cli_sampler_chain(o, vocab(), 256, &err);
        EXPECT_TRUE(c) << err;
        return c;
    }
    // A chain built by hand from the given samplers, in order.
    static SamplerPtr chain(std::initializer_list<llama_sampler *> samplers) {
        SamplerPtr c(llama_sampler_chain_init(llama_sampler_chain_default_params()));
        for (llama_sampler *s : samplers) llama_sampler_chain_add(c.get(), s);
        return c;
    }
    // The token the chain picks from these logits (and accepts, as sampling does).
    // --mirostat 1 options (seed, temperature, tau) and b4748's chain for them with Zipf estimate size m.
    static SamplingOptions mirostat_v1(int64_t seed, float temp, float tau) {
        SamplingOptions o;
        o.config.mirostat = 1;
        o.seed = seed;
        o.config.temperature = temp;
        o.config.mirostat_tau = tau;
        return o;
    }
    SamplerPtr mirostat_v1_chain(const SamplingOptions &o, int32_t m) {
        return chain({llama_sampler_init_temp(o.config.temperature),
                      llama_sampler_init_mirostat(n_vocab(), static_cast<uint32_t>(o.seed),
                                                  o.config.mirostat_tau, o.config.mirostat_eta, m)});
    }

    static llama_token sample(llama_sampler *c, const std::vector<float> &logits) {
        std::vector<llama_token_data> cand(logits.size());
        for (size_t i = 0; i < logits.size(); ++i) cand[i] = {static_cast<llama_token>(i), logits[i], 0.0f};
        llama_token_data_array cur{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(c, &cur);
        EXPECT_GE(cur.selected, 0);
        if (cur.selected < 0) return -1;
        const llama_token t = cur.data[cur.selected].id;
        llama_sampler_accept(c, t);
        return t;
    }
};

// --mirostat 1 is b4748's chain (common/sampling.cpp): temperature, then mirostat v1 (tau, eta, m = 100).
// (These logits do not tell m = 50 from m = 100 apart: docs/MUTATION.md, cli_mirostat_m.)
TEST_F(SamplerChainFromOptions, MirostatV1IsTemperatureThenMirostat) {
    ASSERT_TRUE(model_);
    const SamplingOptions o = mirostat_v1(1234, 0.9f, 1.0f);
    const auto got = chain_of(o);
    ASSERT_TRUE(got);
    const auto want = mirostat_v1_chain(o, 100);
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(n_vocab()));
    for (int step = 0; step < 64; ++step) {
        for (float &l : logits) l = d(rng);
        const llama_token a = sample(got.get(), logits);
        ASSERT_EQ(a, sample(want.get(), logits)) << "step " << step;
    }
}

// Mirostat v1 estimates the Zipf exponent from the top m = 100 candidates (b4748). Logits that follow
// exponent 1.1 over the first 50 ranks and fall steeply after them give an estimate near 1.1 from 50
// candidates (k over a hundred) and a large one from 100 (k of one or two), so a chain with another m picks
// other tokens.
TEST_F(SamplerChainFromOptions, MirostatV1EstimatesFromAHundredCandidates) {
    ASSERT_TRUE(model_);
    ASSERT_GT(n_vocab(), 200);
    const SamplingOptions o = mirostat_v1(99, 1.0f, 5.0f);
    const auto got = chain_of(o);
    ASSERT_TRUE(got);
    const auto want = mirostat_v1_chain(o, 100);
    const auto fifty = mirostat_v1_chain(o, 50);  // what the chain must not be
    std::vector<int32_t> ids(static_cast<size_t>(n_vocab()));
    std::iota(ids.begin(), ids.end(), 0);
    std::mt19937 rng(11);
    std::vector<float> logits(static_cast<size_t>(n_vocab()));
    int differs_from_fifty = 0;
    for (int step = 0; step < 32; ++step) {
        std::shuffle(ids.begin(), ids.end(), rng);
        float l = 0.0f;
        for (size_t rank = 0; rank < ids.size(); ++rank) {
            l = rank < 50 ? -1.1f * std::log(static_cast<float>(rank + 1)) : l - 3.0f;
            logits[static_cast<size_t>(ids[rank])] = l;
        }
        const llama_token a = sample(got.get(), logits);
        ASSERT_EQ(a, sample(want.get(), logits)) << "step " << step;
        if (a != sample(fifty.get(), logits)) ++differs_from_fifty;
    }
    // The logits do tell the two apart (else this test could not fail for a chain built with m = 50).
    EXPECT_GT(differs_from_fifty, 8);
}

// --temp 0 (or below) is greedy (`--temp`'s help, and the server's rule): after the logit changers
// (penalties, DRY) the chain picks the most likely token; the truncating samplers and the random draw do not
// run, so top-k, typical-p and XTC, which can take the most likely token out, change nothing. This is lctx's
// rule, llama.cpp's before its PR 9897; b4748 builds its whole chain at any temperature, with a temperature
// sampler that keeps only the top token of what reaches it (docs/MUTATION.md, cli_greedy_at_temp_zero).
TEST_F(SamplerChainFromOptions, TempZeroIsGreedy) {
    ASSERT_TRUE(model_);
    SamplingOptions o;
    o.seed = 5;
    o.config.top_k = 3;
    o.config.typical_p = 0.2f;
    o.config.xtc_probability =
        1.0f;  // always cut the tokens above the threshold but the least likely of them
    o.config.xtc_threshold = 0.01f;
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 2.0f);
    std::vector<float> logits(static_cast<size_t>(n_vocab()));
    for (float temp : {0.0f, -1.0f}) {
        o.config.temperature = temp;
        const auto c = chain_of(o);
        ASSERT_TRUE(c);
        ASSERT_EQ(llama_sampler_chain_n(c.get()), 1) << "temp " << temp;
        EXPECT_STREQ(llama_sampler_name(llama_sampler_chain_get(c.get(), 0)), "greedy") << "temp " << temp;
        for (int step = 0; step < 32; ++step) {
            for (float &l : logits) l = d(rng);
            const llama_token best =
                static_cast<llama_token>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            ASSERT_EQ(sample(c.get(), logits), best) << "temp " << temp << ", step " << step;
        }
    }
    // The same options at a small positive temperature do take the most likely token out (else this test
    // could not tell a greedy chain from the full one).
    o.config.temperature = 0.01f;
    const auto full = chain_of(o);
    ASSERT_TRUE(full);
    int other = 0;
    for (int step = 0; step < 32; ++step) {
        for (float &l : logits) l = d(rng);
        const llama_token best =
            static_cast<llama_token>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        if (sample(full.get(), logits) != best) ++other;
    }
    EXPECT_GT(other, 16);
}

TEST(Seed, MinusOneBecomesARandomSeedAndOthersStay) {
    SamplingOptions o;
    const uint32_t s = resolve_seed(o);
    EXPECT_EQ(o.seed, static_cast<int64_t>(s));
    EXPECT_NE(s, 0xFFFFFFFFu);
    SamplingOptions fixed;
    fixed.seed = 42;
    EXPECT_EQ(resolve_seed(fixed), 42u);
}

}  // namespace
}  // namespace lctx::cli::options_test
