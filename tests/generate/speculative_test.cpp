// Speculative decoding (src/generate/speculative.h): greedy output is token for token plain decoding's, per
// drafter and model family; the acceptance rule keeps the target's distribution (chi-square); drafts from
// an incompatible vocabulary or on a recurrent model are refused.
#include "generate/speculative.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "llama.h"

namespace speculative_test {
namespace {

using lctx::generate::Dist;
using lctx::generate::Draft;
using lctx::generate::ModelDrafter;
using lctx::generate::NgramDrafter;
using lctx::generate::SpecParams;
using lctx::generate::SpecSampling;
using lctx::generate::Speculator;
using lctx::generate::Verdict;

// ---- the acceptance rule, statistically ----

using Rule = std::function<Verdict(const Dist &, const Dist &, llama_token, std::mt19937 &)>;

// One position of speculative sampling many times: d drawn from q, then the rule; the chi-square statistic
// of the tokens it gives against p.
double chi_square(const Rule &rule, const Dist &p, const Dist &q, int n_draws, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> count(p.size(), 0.0);
    for (int i = 0; i < n_draws; ++i) {
        const llama_token d = lctx::generate::spec_draw(q, rng);
        const Verdict v = rule(p, q, d, rng);
        count[static_cast<size_t>(v.token)] += 1;
    }
    double chi = 0;
    for (size_t t = 0; t < p.size(); ++t) {
        const double e = n_draws * static_cast<double>(p[t].p);
        chi += (count[t] - e) * (count[t] - e) / e;
    }
    return chi;
}

// Six tokens: the target and a draft that disagrees with it (too sure of token 0, blind to token 5).
const Dist kP = {{0, 0.10f}, {1, 0.25f}, {2, 0.30f}, {3, 0.05f}, {4, 0.20f}, {5, 0.10f}};
const Dist kQ = {{0, 0.40f}, {1, 0.10f}, {2, 0.30f}, {3, 0.15f}, {4, 0.05f}, {5, 0.0f}};
// The chi-square quantile for 5 degrees of freedom at 0.999: a correct rule exceeds it one time in 1000.
constexpr double kChi5 = 20.52;
constexpr int kDraws = 200000;

TEST(SpecAccept, KeepsTheTargetDistribution) {
    EXPECT_LT(chi_square(lctx::generate::spec_accept, kP, kQ, kDraws, 1234), kChi5);
}

TEST(SpecAccept, KeepsTheTargetDistributionWithAPointMassDraft) {
    // A deterministic drafter (n-gram, a greedy draft model): q is 1 at the drafted token.
    const Dist point = {{2, 1.0f}};
    const Rule rule = [](const Dist &p, const Dist &, llama_token d, std::mt19937 &rng) {
        return lctx::generate::spec_accept(p, {}, d, rng);
    };
    EXPECT_LT(chi_square(rule, kP, point, kDraws, 99), kChi5);
}

TEST(SpecAccept, AWrongRuleFailsTheTest) {
    // Accept the draft whenever the target allows it at all: the output follows q, not p.
    const Rule always = [](const Dist &p, const Dist &, llama_token d, std::mt19937 &rng) {
        for (const auto &t : p)
            if (t.id == d && t.p > 0) return Verdict{true, d};
        return Verdict{false, lctx::generate::spec_draw(p, rng)};
    };
    EXPECT_GT(chi_square(always, kP, kQ, kDraws, 1234), kChi5);
    // The right acceptance with the wrong replacement (a draw from p instead of the residual).
    const Rule no_residual = [](const Dist &p, const Dist &q, llama_token d, std::mt19937 &rng) {
        const Verdict v = lctx::generate::spec_accept(p, q, d, rng);
        return v.accepted ? v : Verdict{false, lctx::generate::spec_draw(p, rng)};
    };
    EXPECT_GT(chi_square(no_residual, kP, kQ, kDraws, 1234), kChi5);
}

// ---- n-gram lookup ----

TEST(NgramDrafter, DraftsWhatFollowedTheLatestMatch) {
    NgramDrafter d(1, 3);
    Draft out;
    // ... 7 8 9 | 1 2 3 4 5 | 7 8 9 ->  1 2 3 4
    d.draft({7, 8, 9, 1, 2, 3, 4, 5, 7, 8, 9}, 4, &out);
    EXPECT_EQ(out.tokens, (std::vector<llama_token>{1, 2, 3, 4}));
    // Two earlier matches of the same n-gram: the latest one's continuation.
    // 7 1 2 | 3 | 7 1 2 | 4 | 7 1 2  ->  4 7 1 2, not 3 7 1 2
    d.draft({7, 1, 2, 3, 7, 1, 2, 4, 7, 1, 2}, 4, &out);
    EXPECT_EQ(out.tokens, (std::vector<llama_token>{4, 7, 1, 2}));
    // A repetition drafts itself periodically past the end of the history.
    d.draft({5, 1, 2, 1, 2}, 5, &out);
    EXPECT_EQ(out.tokens, (std::vector<llama_token>{1, 2, 1, 2, 1}));
    // Nothing matches: no draft.
    d.draft({1, 2, 3, 4}, 4, &out);
    EXPECT_TRUE(out.tokens.empty());
    // A shorter n-gram than ngram_min does not count.
    NgramDrafter d2(2, 3);
    d2.draft({1, 9, 8, 1}, 4, &out);
    EXPECT_TRUE(out.tokens.empty());
}

// ---- on real models ----

std::string golden_model(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

struct ModelDeleter {
    void operator()(llama_model *m) const { llama_model_free(m); }
};
struct ContextDeleter {
    void operator()(llama_context *c) const { llama_free(c); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelDeleter>;
using ContextPtr = std::unique_ptr<llama_context, ContextDeleter>;

ModelPtr load(const std::string &path) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    return ModelPtr(llama_model_load_from_file(path.c_str(), llama_model_default_params()));
}

// An F32 KV cache: every kernel level then gives a batch's rows the bits of one-token decodes (AVX-512's
// batched attention over F16 keys does not: README, speculative decoding), which token-for-token equality
// with plain decoding needs on any CPU.
ContextPtr make_ctx(llama_model *m, uint32_t n_ctx = 256) {
    llama_context_params p = llama_context_default_params();
    p.type_k = GGML_TYPE_F32;
    p.type_v = GGML_TYPE_F32;
    p.n_ctx = n_ctx;
    p.n_batch = 64;
    p.n_ubatch = 64;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    return ContextPtr(llama_init_from_model(m, p));
}

std::vector<llama_token> tokenize(llama_model *m, const std::string &text) {
    const llama_vocab *v = llama_model_get_vocab(m);
    std::vector<llama_token> out(text.size() + 8);
    const int32_t n = llama_tokenize(v, text.c_str(), static_cast<int32_t>(text.size()), out.data(),
                                     static_cast<int32_t>(out.size()), true, false);
    out.resize(static_cast<size_t>(std::max(0, n)));
    return out;
}

// Plain greedy decoding, one token per decode, with llama.h's greedy sampler: the reference.
std::vector<llama_token> plain_greedy(llama_model *m, const std::vector<llama_token> &prompt, int n) {
    ContextPtr ctx = make_ctx(m);
    std::vector<llama_token> toks = prompt;
    llama_batch b = llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()));
    EXPECT_EQ(llama_decode(ctx.get(), b), 0);
    llama_sampler *g = llama_sampler_init_greedy();
    std::vector<llama_token> out;
    for (int i = 0; i < n; ++i) {
        llama_token t = llama_sampler_sample(g, ctx.get(), -1);
        out.push_back(t);
        b = llama_batch_get_one(&t, 1);
        EXPECT_EQ(llama_decode(ctx.get(), b), 0);
    }
    llama_sampler_free(g);
    return out;
}

// stories260K drafting for itself: the model, "Once upon a time" and the target's and the drafter's contexts
// of n_ctx cells.
struct SelfDraftSetup {
    ModelPtr m;
    std::vector<llama_token> prompt;
    ContextPtr ctx, dctx;
};
SelfDraftSetup self_draft_setup(uint32_t n_ctx) {
    SelfDraftSetup s;
    s.m = load(golden_model("stories260K"));
    if (!s.m) return s;
    s.prompt = tokenize(s.m.get(), "Once upon a time");
    s.ctx = make_ctx(s.m.get(), n_ctx);
    s.dctx = make_ctx(s.m.get(), n_ctx);
    return s;
}

struct SpecRun {
    std::vector<llama_token> out;
    lctx::generate::SpecStats stats;
};

SpecRun spec_greedy(llama_model *m, lctx::generate::Drafter *drafter, const std::vector<llama_token> &prompt,
                    int n, int32_t n_min = 0) {
    ContextPtr ctx = make_ctx(m);
    SpecParams sp;
    sp.n_max = 8;
    sp.n_min = n_min;
    SpecSampling ss;  // greedy, no filters
    Speculator spec(ctx.get(), drafter, sp, ss);
    std::vector<llama_token> history = prompt;
    EXPECT_EQ(spec.prefill(history), "");
    SpecRun r;
    while (static_cast<int>(r.out.size()) < n) {
        const std::string e = spec.step(history, &r.out);
        EXPECT_EQ(e, "");
        if (!e.empty()) break;
    }
    r.out.resize(static_cast<size_t>(n));
    r.stats = spec.stats();
    return r;
}

class SpecGreedy : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecGreedy, SelfDraftGivesPlainOutput) {
    ModelPtr m = load(golden_model(GetParam()));
    ASSERT_TRUE(m);
    const std::vector<llama_token> prompt = tokenize(m.get(), "Once upon a time, there was a little");
    ASSERT_GT(prompt.size(), 2u);
    const int n = 48;
    const std::vector<llama_token> want = plain_greedy(m.get(), prompt, n);
    ContextPtr dctx = make_ctx(m.get());
    ASSERT_EQ(lctx::generate::spec_context_check(dctx.get(), "draft"), "");
    ASSERT_EQ(
        lctx::generate::spec_vocab_check(llama_model_get_vocab(m.get()), llama_model_get_vocab(m.get())), "");
    ModelDrafter drafter(dctx.get(), 0.0f);
    const SpecRun got = spec_greedy(m.get(), &drafter, prompt, n);
    EXPECT_EQ(got.out, want);
    // The same model drafts what it then accepts: most of the draft is kept, in fewer decodes.
    EXPECT_GT(got.stats.n_accepted, 0);
    EXPECT_LT(got.stats.n_steps, n);
}

TEST_P(SpecGreedy, NgramLookupGivesPlainOutput) {
    ModelPtr m = load(golden_model(GetParam()));
    ASSERT_TRUE(m);
    // A repetitive prompt: lookup has something to draft from.
    const std::vector<llama_token> prompt =
        tokenize(m.get(), "one two three four five one two three four five one two three four five one two");
    const int n = 48;
    const std::vector<llama_token> want = plain_greedy(m.get(), prompt, n);
    NgramDrafter drafter(1, 4);
    const SpecRun got = spec_greedy(m.get(), &drafter, prompt, n, 1);
    EXPECT_EQ(got.out, want);
    EXPECT_GT(got.stats.n_drafted, 0);
}

TEST_P(SpecGreedy, NoDrafterIsPlainDecoding) {
    ModelPtr m = load(golden_model(GetParam()));
    ASSERT_TRUE(m);
    const std::vector<llama_token> prompt = tokenize(m.get(), "The cat sat on the");
    const int n = 24;
    const SpecRun got = spec_greedy(m.get(), nullptr, prompt, n);
    EXPECT_EQ(got.out, plain_greedy(m.get(), prompt, n));
    EXPECT_EQ(got.stats.n_steps, n - 1);  // the first token comes from the prompt's logits
}

INSTANTIATE_TEST_SUITE_P(Families, SpecGreedy,
                         ::testing::Values("stories260K", "llama-F16", "qwen2", "gemma2", "phi3"));

TEST(SpecGreedy, SmallerDraftModelGivesPlainOutput) {
    // The same llama model quantized to 2 bits drafts for its F16 original: same vocabulary, other logits.
    ModelPtr m = load(golden_model("llama-F16"));
    ModelPtr dm = load(golden_model("llama-Q2_K"));
    ASSERT_TRUE(m && dm);
    ASSERT_EQ(
        lctx::generate::spec_vocab_check(llama_model_get_vocab(m.get()), llama_model_get_vocab(dm.get())),
        "");
    const std::vector<llama_token> prompt = tokenize(m.get(), "Once upon a time, there was a little");
    const int n = 48;
    ContextPtr dctx = make_ctx(dm.get());
    ModelDrafter drafter(dctx.get(), 0.0f);
    const SpecRun got = spec_greedy(m.get(), &drafter, prompt, n);
    EXPECT_EQ(got.out, plain_greedy(m.get(), prompt, n));
    EXPECT_GT(got.stats.n_drafted, 0);
}

TEST(SpecGreedy, ContextFullStopsWherePlainDecodingDoes) {
    // A token is only chosen for a position inside the context, drafts included: the history ends at n_ctx.
    const SelfDraftSetup s = self_draft_setup(40);
    ASSERT_TRUE(s.m && s.ctx && s.dctx);
    const size_t n_ctx = llama_n_ctx(s.ctx.get());
    ModelDrafter drafter(s.dctx.get(), 0.0f);
    Speculator spec(s.ctx.get(), &drafter, SpecParams{8, 0}, SpecSampling{});
    std::vector<llama_token> history = s.prompt, out;
    ASSERT_EQ(spec.prefill(history), "");
    while (history.size() < n_ctx) ASSERT_EQ(spec.step(history, &out), "");
    EXPECT_EQ(history.size(), n_ctx);
    EXPECT_EQ(spec.step(history, &out), "the context is full");
    EXPECT_EQ(out, plain_greedy(s.m.get(), s.prompt, static_cast<int>(out.size())));
}

// A caller that decoded the history itself (a chat's turn on its cached conversation) resumes from the
// context's logits; a history limit below the context's (a chat's -c) bounds the drafts, and after a resume
// at the limit one token is chosen for the position past it (the caller shifts before decoding it).
TEST(SpecGreedy, ResumesFromTheCallersDecodeUpToTheGivenContext) {
    const SelfDraftSetup s = self_draft_setup(64);
    ASSERT_TRUE(s.m && s.ctx && s.dctx);
    std::vector<llama_token> history = s.prompt, out;
    llama_batch b = llama_batch_get_one(history.data(), static_cast<int32_t>(history.size()));
    ASSERT_EQ(llama_decode(s.ctx.get(), b), 0);
    ModelDrafter drafter(s.dctx.get(), 0.0f);
    const int32_t limit = 32;
    Speculator spec(s.ctx.get(), &drafter, SpecParams{8, 0, limit}, SpecSampling{});
    ASSERT_EQ(spec.resume(), "");
    while (static_cast<int32_t>(history.size()) < limit) ASSERT_EQ(spec.step(history, &out), "");
    EXPECT_EQ(static_cast<int32_t>(history.size()), limit);
    EXPECT_GT(spec.stats().n_drafted, 0);
    EXPECT_EQ(spec.step(history, &out), "the context is full");
    // The last token decoded by the caller, then one more token chosen from its logits.
    llama_token last = history.back();
    b = llama_batch_get_one(&last, 1);
    ASSERT_EQ(llama_decode(s.ctx.get(), b), 0);
    ASSERT_EQ(spec.resume(), "");
    ASSERT_EQ(spec.step(history, &out), "");
    EXPECT_EQ(static_cast<int32_t>(history.size()), limit + 1);
    EXPECT_EQ(out, plain_greedy(s.m.get(), s.prompt, static_cast<int>(out.size())));
}

// A drafter that proposes what plain greedy decoding continues `full` with, then `bad`, then a valid id: as a
// draft model whose vocabulary is larger than the target's (spec_vocab_check allows 128 more tokens) can.
class OracleThenBad : public lctx::generate::Drafter {
  public:
    OracleThenBad(std::vector<llama_token> full, llama_token bad) : full_(std::move(full)), bad_(bad) {}
    void draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) override {
        out->tokens.clear();
        out->q.clear();
        if (history.size() < full_.size()) out->tokens.push_back(full_[history.size()]);
        out->tokens.push_back(bad_);
        out->tokens.push_back(1);
        if (static_cast<int32_t>(out->tokens.size()) > n_max) out->tokens.resize(static_cast<size_t>(n_max));
    }

  private:
    std::vector<llama_token> full_;
    llama_token bad_;
};

// The draft ends before its first id outside the target's vocabulary (n_vocab itself, beyond it, negative):
// the target never decodes it, the output is plain decoding's, and only the ids before it count as drafted.
TEST(SpecGreedy, DraftIdsOutsideTheTargetVocabularyEndTheDraft) {
    ModelPtr m = load(golden_model("stories260K"));
    ASSERT_TRUE(m);
    const llama_token n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m.get()));
    const std::vector<llama_token> prompt = tokenize(m.get(), "Once upon a time, there was a little");
    const int n = 16;
    const std::vector<llama_token> want = plain_greedy(m.get(), prompt, n + 8);
    std::vector<llama_token> full = prompt;
    full.insert(full.end(), want.begin(), want.end());
    for (llama_token bad : {n_vocab, n_vocab + 1, n_vocab + 127, llama_token{-1}}) {
        OracleThenBad drafter(full, bad);
        const SpecRun got = spec_greedy(m.get(), &drafter, prompt, n);
        EXPECT_EQ(got.out, std::vector<llama_token>(want.begin(), want.begin() + n)) << "bad id " << bad;
        // One valid id a step, each the target's own choice: all accepted.
        EXPECT_GT(got.stats.n_drafted, 0) << "bad id " << bad;
        EXPECT_EQ(got.stats.n_accepted, got.stats.n_drafted) << "bad id " << bad;
        EXPECT_EQ(got.stats.n_drafted, got.stats.n_steps) << "bad id " << bad;
    }
}

// --draft-p-min: the draft model drafts its most likely token while that token's probability (its softmax,
// computed here in double the same way) is at least p_min, and stops at the first one below it.
TEST(ModelDrafterPMin, StopsAtTheFirstTokenLessLikelyThanPMin) {
    ModelPtr m = load(golden_model("stories260K"));
    ASSERT_TRUE(m);
    const std::vector<llama_token> prompt = tokenize(m.get(), "Once upon a time, there was a little");
    const int k = 8;
    // The greedy path and the probability of each of its tokens.
    std::vector<double> p;
    {
        ContextPtr ctx = make_ctx(m.get());
        std::vector<llama_token> toks = prompt;
        llama_batch b = llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()));
        ASSERT_EQ(llama_decode(ctx.get(), b), 0);
        const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m.get()));
        for (int i = 0; i < k; ++i) {
            const float *l = llama_get_logits_ith(ctx.get(), -1);
            llama_token best = 0;
            for (llama_token t = 1; t < n_vocab; ++t)
                if (l[t] > l[best]) best = t;
            double sum = 0;
            for (llama_token t = 0; t < n_vocab; ++t) sum += std::exp(static_cast<double>(l[t] - l[best]));
            p.push_back(1.0 / sum);
            b = llama_batch_get_one(&best, 1);
            ASSERT_EQ(llama_decode(ctx.get(), b), 0);
        }
    }
    std::vector<double> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_LT(sorted[0], sorted[k - 1]);
    const std::vector<llama_token> greedy = plain_greedy(m.get(), prompt, k);
    for (size_t j = 1; j < sorted.size(); ++j) {
        if (!(sorted[j - 1] < sorted[j])) continue;
        const float p_min = static_cast<float>(0.5 * (sorted[j - 1] + sorted[j]));  // between two of them
        size_t want = 0;
        while (want < p.size() && p[want] >= p_min) ++want;
        ContextPtr dctx = make_ctx(m.get());
        ModelDrafter drafter(dctx.get(), p_min);
        Draft out;
        drafter.draft(prompt, k, &out);
        EXPECT_EQ(out.tokens,
                  std::vector<llama_token>(greedy.begin(), greedy.begin() + static_cast<long>(want)))
            << "p_min " << p_min;
    }
}

TEST(SpecSampled, DraftsAreAcceptedAndTheSeedRepeatsTheOutput) {
    // temperature 0.8 after top-k 40: the filters without a draw; the layer draws with its own seed.
    ModelPtr m = load(golden_model("stories260K"));
    ASSERT_TRUE(m);
    const std::vector<llama_token> prompt = tokenize(m.get(), "Once upon a time, there was a little");
    auto run = [&](uint32_t seed) {
        llama_sampler *filters = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(filters, llama_sampler_init_top_k(40));
        llama_sampler_chain_add(filters, llama_sampler_init_temp(0.8f));
        ContextPtr ctx = make_ctx(m.get());
        ContextPtr dctx = make_ctx(m.get());
        ModelDrafter drafter(dctx.get(), 0.0f);
        SpecSampling ss;
        ss.filters = filters;
        ss.greedy = false;
        ss.seed = seed;
        Speculator spec(ctx.get(), &drafter, SpecParams{8, 0}, ss);
        std::vector<llama_token> history = prompt, out;
        EXPECT_EQ(spec.prefill(history), "");
        while (out.size() < 64) EXPECT_EQ(spec.step(history, &out), "");
        llama_sampler_free(filters);
        EXPECT_GT(spec.stats().n_accepted, 0);
        EXPECT_LT(spec.stats().n_accepted, spec.stats().n_drafted);  // a sampled target rejects some
        return out;
    };
    const std::vector<llama_token> a = run(7);
    EXPECT_EQ(run(7), a);
    EXPECT_NE(run(8), a);
}

TEST(SpecRefusal, RecurrentModel) {
    ModelPtr m = load(golden_model("mamba"));
    ASSERT_TRUE(m);
    ContextPtr ctx = make_ctx(m.get());
    ASSERT_TRUE(ctx);
    const std::string e = lctx::generate::spec_context_check(ctx.get(), "target");
    EXPECT_NE(e.find("recurrent"), std::string::npos) << e;
}

ModelPtr load_vocab(const std::string &path) {
    llama_model_params p = llama_model_default_params();
    p.vocab_only = true;
    return ModelPtr(llama_model_load_from_file(path.c_str(), p));
}

std::string vocab_file(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-" + name + ".gguf";
}

TEST(SpecRefusal, IncompatibleVocabulary) {
    ModelPtr stories = load(golden_model("stories260K"));
    ModelPtr spm = load_vocab(vocab_file("llama-spm"));
    ModelPtr gpt2 = load_vocab(vocab_file("gpt-2"));
    ModelPtr phi3 = load_vocab(vocab_file("phi-3"));
    ASSERT_TRUE(stories && spm && gpt2 && phi3);
    auto check = [](const ModelPtr &t, const ModelPtr &d) {
        return lctx::generate::spec_vocab_check(llama_model_get_vocab(t.get()),
                                                llama_model_get_vocab(d.get()));
    };
    EXPECT_NE(check(spm, gpt2).find("vocabulary type"), std::string::npos) << check(spm, gpt2);
    EXPECT_NE(check(spm, phi3).find("special tokens"), std::string::npos) << check(spm, phi3);
    EXPECT_NE(check(stories, spm).find("at most 128 apart"), std::string::npos) << check(stories, spm);
    EXPECT_EQ(check(spm, spm), "");
    // The same sizes and special tokens, one token's text changed.
    auto f = lctx::gguf::File::open(golden_model("stories260K"));
    std::vector<std::string> texts = *f->get_string_array("tokenizer.ggml.tokens");
    texts[300] = "changed";
    lctx::testing::Rewrite r;
    r.add = [&](lctx::gguf::Writer &w) { w.set_string_array("tokenizer.ggml.tokens", texts); };
    const std::string path = lctx::testing::rewrite_gguf(golden_model("stories260K"), r, "spec-vocab");
    ModelPtr other = load(path);
    std::remove(path.c_str());
    ASSERT_TRUE(other);
    const std::string e = check(stories, other);
    EXPECT_NE(e.find("token 300"), std::string::npos) << e;
    EXPECT_NE(e.find("changed"), std::string::npos) << e;
}

}  // namespace
}  // namespace speculative_test
