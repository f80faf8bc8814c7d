// generate/sampling_chain.h: the chain's samplers and their order from the parameters, the names and
// letters of the order, the grammar left out of the prompt's history, and a grammar that is exhausted.
#include "generate/sampling_chain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "stories_vocab.h"

namespace sampling_chain_test {
namespace {

using lctx::generate::SamplerStage;
using lctx::generate::SamplingConfig;

class GenerateSamplingChain : public lctx::testing::StoriesVocabTest {
  protected:
    // The names of the chain's samplers in order.
    std::vector<std::string> names(const SamplingConfig &c) {
        std::string err;
        llama_sampler *s = lctx::generate::make_sampler_chain(c, vocab(), 64, &err);
        EXPECT_TRUE(s) << err;
        std::vector<std::string> out;
        for (int32_t i = 0; s && i < llama_sampler_chain_n(s); ++i)
            out.emplace_back(llama_sampler_name(llama_sampler_chain_get(s, i)));
        llama_sampler_free(s);
        return out;
    }
};

using Names = std::vector<std::string>;

TEST_F(GenerateSamplingChain, OnlyTheSamplersThatChangeAnythingThenADraw) {
    ASSERT_TRUE(model_);
    SamplingConfig c;  // everything neutral
    EXPECT_EQ(names(c), (Names{"temp", "dist"}));
    c.top_k = 40;
    c.top_p = 0.9f;
    c.repeat_penalty = 1.1f;
    EXPECT_EQ(names(c), (Names{"penalties", "top-k", "top-p", "temp", "dist"}));
    // The CLI's chain keeps the neutral ones (top_k 0 still sorts the candidates).
    SamplingConfig all;
    all.keep_neutral_samplers = true;
    EXPECT_EQ(names(all), (Names{"top-k", "typical", "top-p", "min-p", "temp", "dist"}));
    // A given order; greedy keeps only the logit changers; Mirostat replaces the distribution samplers.
    c.order = {SamplerStage::Temperature, SamplerStage::TopK, SamplerStage::Penalties};
    EXPECT_EQ(names(c), (Names{"temp", "top-k", "penalties", "dist"}));
    c.temperature = 0.0f;
    EXPECT_EQ(names(c), (Names{"penalties", "greedy"}));
    c.temperature = 0.7f;
    c.mirostat = 2;
    EXPECT_EQ(names(c), (Names{"penalties", "temp", "mirostat-v2"}));
    // Grammar, then the biases (ignore_eos among them), first.
    SamplingConfig g;
    g.grammar = "root ::= \"a\"";
    g.ignore_eos = true;
    EXPECT_EQ(names(g), (Names{"grammar", "logit-bias", "temp", "dist"}));
    std::string err;
    g.grammar = "root ::= root \"a\"";
    EXPECT_EQ(lctx::generate::make_sampler_chain(g, vocab(), 64, &err), nullptr);
    EXPECT_FALSE(err.empty());
    // The filter chain is the chain without its draw.
    llama_sampler *f = lctx::generate::make_filter_chain(all, vocab(), 64, &err);
    ASSERT_TRUE(f);
    EXPECT_EQ(llama_sampler_chain_n(f), 5);
    llama_sampler_free(f);
}

// llama.cpp's defaults (common_params_sampling at b4748), which `lctx run` and the server's /completion
// start from: a wrong one changes what every seeded run samples. The rest stays neutral.
TEST(GenerateSamplingDefaults, AreLlamaCppB4748s) {
    const SamplingConfig d = lctx::generate::llama_cpp_sampling_defaults();
    EXPECT_EQ(std::tuple(d.temperature, d.top_k, d.top_p, d.min_p, d.repeat_last_n),
              std::tuple(0.80f, 40, 0.95f, 0.05f, 64));
    EXPECT_EQ(std::tuple(d.typical_p, d.repeat_penalty, d.mirostat, d.dry_multiplier, d.xtc_probability),
              std::tuple(1.0f, 1.0f, 0, 0.0f, 0.0f));
    EXPECT_FALSE(d.keep_neutral_samplers);
    EXPECT_TRUE(d.order.empty());
}

TEST_F(GenerateSamplingChain, NamesAndLettersOfTheOrder) {
    std::vector<SamplerStage> v;
    std::string why;
    ASSERT_TRUE(lctx::generate::parse_sampler_letters("edkypmxt", &v, &why)) << why;
    EXPECT_EQ(v, lctx::generate::default_sampler_order());
    ASSERT_TRUE(lctx::generate::parse_sampler_names("penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature",
                                                    &v, &why));
    EXPECT_EQ(v, lctx::generate::default_sampler_order());
    ASSERT_TRUE(
        lctx::generate::parse_sampler_names("nucleus;typical;temp;infill;top-k;top_n_sigma", &v, &why));
    EXPECT_EQ(
        v, (std::vector<SamplerStage>{SamplerStage::TopP, SamplerStage::TypicalP, SamplerStage::Temperature,
                                      SamplerStage::Infill, SamplerStage::TopK, SamplerStage::TopNSigma}));
    EXPECT_FALSE(lctx::generate::parse_sampler_names("top_k;Top_p", &v, &why));
    EXPECT_NE(why.find("'Top_p'"), std::string::npos) << why;
    EXPECT_FALSE(lctx::generate::parse_sampler_letters("kq", &v, &why));
    EXPECT_FALSE(lctx::generate::parse_sampler_letters("", &v, &why));
    EXPECT_STREQ(lctx::generate::sampler_stage_name(SamplerStage::TypicalP), "typ_p");
}

TEST_F(GenerateSamplingChain, ThePromptGoesToThePenaltiesNotTheGrammar) {
    SamplingConfig c;
    c.grammar = "root ::= \"a\"+";
    c.repeat_penalty = 2.0f;
    c.temperature = 0.0f;
    std::string err;
    llama_sampler *s = lctx::generate::make_sampler_chain(c, vocab(), 64, &err);
    ASSERT_TRUE(s) << err;
    // Token "a" repeated in the prompt: the penalties see it; the grammar, had it taken the prompt, would be
    // past its text and allow nothing but "a" anyway, so check that the grammar still starts from its root:
    // a prompt of other tokens must not kill it.
    const std::vector<llama_token> prompt = {llama_vocab_bos(vocab()), 100, 101, 102};
    lctx::generate::accept_prompt(s, prompt);
    EXPECT_FALSE(lctx::generate::grammar_exhausted(s, vocab()));
    llama_sampler_free(s);
}

TEST_F(GenerateSamplingChain, AGrammarWithNothingButTheEndLeftIsExhausted) {
    const int32_t n_vocab = llama_vocab_n_tokens(vocab());
    SamplingConfig c;
    c.grammar = "root ::= \"ab\"";
    c.temperature = 0.0f;
    std::string err;
    llama_sampler *s = lctx::generate::make_sampler_chain(c, vocab(), 64, &err);
    ASSERT_TRUE(s) << err;
    EXPECT_FALSE(lctx::generate::grammar_exhausted(s, vocab()));
    // Feed the tokens of "ab" the grammar allows, by sampling greedily over flat logits with a bias.
    std::vector<llama_token_data> cand(static_cast<size_t>(n_vocab));
    for (int step = 0; step < 4 && !lctx::generate::grammar_exhausted(s, vocab()); ++step) {
        for (llama_token t = 0; t < n_vocab; ++t) cand[static_cast<size_t>(t)] = {t, 0.0f, 0.0f};
        llama_token_data_array cur{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(s, &cur);
        ASSERT_GE(cur.selected, 0);
        const llama_token tok = cur.data[cur.selected].id;
        ASSERT_FALSE(llama_vocab_is_eog(vocab(), tok)) << "the grammar ended before it was exhausted";
        llama_sampler_accept(s, tok);
    }
    EXPECT_TRUE(lctx::generate::grammar_exhausted(s, vocab()));
    lctx::generate::reset_grammar(s);
    EXPECT_FALSE(lctx::generate::grammar_exhausted(s, vocab()));
    llama_sampler_free(s);
}

}  // namespace
}  // namespace sampling_chain_test
