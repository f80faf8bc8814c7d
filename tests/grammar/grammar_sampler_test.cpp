// The grammar sampler through llama.h on stories260K's vocabulary: the tokens it lets through are exactly
// those whose text keeps the output a valid prefix (checked token by token against the matcher fed the
// same bytes), end-of-generation only where the output is complete, lazy grammars wait for their trigger,
// and a grammar that cannot be used gives NULL.
#include "sampling/grammar_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "llama.h"

namespace grammar_sampler_test {
namespace {

using capi_test::quiet_log;
using capi_test::vocab;

std::string piece(llama_token t) {
    char buf[256];
    const int32_t n = llama_token_to_piece(vocab(), t, buf, sizeof buf, 0, true);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Which tokens the sampler leaves finite, over the whole vocabulary.
std::vector<bool> allowed(llama_sampler *s) {
    const int32_t n = llama_vocab_n_tokens(vocab());
    std::vector<llama_token_data> data(n);
    for (int32_t i = 0; i < n; ++i) data[i] = {i, 0.0f, 0.0f};
    llama_token_data_array arr{data.data(), data.size(), -1, false};
    llama_sampler_apply(s, &arr);
    std::vector<bool> out(n);
    for (size_t i = 0; i < arr.size; ++i) out[arr.data[i].id] = std::isfinite(arr.data[i].logit);
    return out;
}

// Reference: a token is allowed when the output so far plus its text decodes to code points the grammar
// can still extend (a trailing incomplete UTF-8 character allowed when some completion could follow).
bool reference_allows(const std::string &gbnf, const std::string &so_far, const std::string &text) {
    auto g = std::make_shared<const lctx::grammar::Grammar>(lctx::grammar::parse_gbnf(gbnf));
    const std::string all = so_far + text;
    // Split off an unfinished trailing character.
    size_t cut = all.size(), k = 0;
    while (cut > 0 && k < 3 && (static_cast<unsigned char>(all[cut - 1]) & 0xC0) == 0x80) --cut, ++k;
    size_t need = 0;
    if (cut > 0) {
        const auto b = static_cast<unsigned char>(all[cut - 1]);
        need = (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : (b & 0xF8) == 0xF0 ? 3 : 0;
    }
    std::string whole = all, partial;
    if (need > 0 && k < need) {  // the last character is unfinished
        whole = all.substr(0, cut - 1);
        partial = all.substr(cut - 1);
    }
    lctx::grammar::Matcher m(g);
    for (uint32_t cp : lctx::grammar::decode_utf8(whole))
        if (!m.accept(cp)) return false;
    if (partial.empty()) return true;
    // Completions of the partial character: value bits shifted by the missing continuation bytes.
    const auto b0 = static_cast<unsigned char>(partial[0]);
    const int extra = static_cast<int>(need);
    uint32_t v = b0 & (0x3Fu >> extra);
    for (size_t i = 1; i < partial.size(); ++i)
        v = (v << 6) | (static_cast<unsigned char>(partial[i]) & 0x3F);
    const int missing = extra - static_cast<int>(partial.size() - 1);
    // Overlong forms and values past U+10FFFF are not characters.
    const uint32_t min_of_length[4] = {0, 0x80, 0x800, 0x10000};
    const uint32_t lo = std::max(v << (6 * missing), min_of_length[extra]);
    const uint32_t hi = std::min((v << (6 * missing)) + (1u << (6 * missing)) - 1, 0x10FFFFu);
    return lo <= hi && m.may_continue_with(m.stacks(), lo, hi);
}

// SPM text starts with a space (the tokenizer's dummy prefix).
const char *kGrammar = "root ::= \" Once\" ( \" \" word )* \".\"?\nword ::= [a-z]+ | \"T\" \"om\"\n";

TEST(GrammarSampler, AllowsExactlyTheTokensThatKeepAValidPrefix) {
    quiet_log();
    llama_sampler *s = llama_sampler_init_grammar(vocab(), kGrammar, "root");
    ASSERT_NE(s, nullptr);
    std::string so_far;
    const llama_token eos = llama_vocab_eos(vocab());
    auto g = std::make_shared<const lctx::grammar::Grammar>(lctx::grammar::parse_gbnf(kGrammar));
    // Walk a path through the grammar token by token, checking the whole vocabulary at every step.
    const std::string text = "Once upon a time Tom.";
    std::vector<llama_token> toks(64);
    const int32_t n = llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), toks.data(),
                                     static_cast<int32_t>(toks.size()), false, false);
    ASSERT_GT(n, 4);
    for (int32_t step = 0; step <= n; ++step) {
        const std::vector<bool> ok = allowed(s);
        size_t n_ok = 0;
        for (llama_token t = 0; t < static_cast<llama_token>(ok.size()); ++t) {
            if (llama_vocab_is_eog(vocab(), t)) continue;  // judged below
            const std::string p = piece(t);
            const bool want = !p.empty() && reference_allows(kGrammar, so_far, p);
            EXPECT_EQ(ok[t], want) << "after '" << so_far << "': token " << t << " '" << p << "'";
            n_ok += ok[t];
        }
        if (step < n) {
            EXPECT_GT(n_ok, 0u) << so_far;
        }
        EXPECT_EQ(ok[eos], lctx::grammar::match_text(g, lctx::grammar::decode_utf8(so_far)).accepted)
            << so_far;
        if (step == n) break;
        EXPECT_TRUE(ok[toks[step]]) << "token " << toks[step] << " after '" << so_far << "'";
        llama_sampler_accept(s, toks[step]);
        so_far += piece(toks[step]);
    }
    EXPECT_EQ(so_far, " " + text);
    llama_sampler_free(s);
}

TEST(GrammarSampler, GreedyGenerationStaysInsideTheGrammar) {
    quiet_log();
    llama_context *ctx = capi_test::make_ctx();
    ASSERT_NE(ctx, nullptr);
    llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_grammar(vocab(), kGrammar, "root"));
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    ASSERT_EQ(capi_test::decode_seq(ctx, {llama_vocab_bos(vocab())}, 0, 0), 0);
    std::string out;
    for (int i = 0; i < 24; ++i) {
        const llama_token t = llama_sampler_sample(chain, ctx, -1);
        if (llama_vocab_is_eog(vocab(), t)) break;
        out += piece(t);
        ASSERT_EQ(capi_test::decode_seq(ctx, {t}, i + 1, 0), 0);
    }
    auto g = std::make_shared<const lctx::grammar::Grammar>(lctx::grammar::parse_gbnf(kGrammar));
    const lctx::grammar::MatchResult r = lctx::grammar::match_text(g, lctx::grammar::decode_utf8(out));
    EXPECT_TRUE(r.accepted || r.unexpected_end) << "'" << out << "' breaks the grammar at " << r.position;
    EXPECT_EQ(out.rfind(" Once", 0), 0u) << out;
    llama_sampler_free(chain);
    llama_free(ctx);
}

TEST(GrammarSampler, LazyGrammarWaitsForItsTriggerWord) {
    quiet_log();
    const char *words[] = {"time"};
    llama_sampler *s = llama_sampler_init_grammar_lazy(vocab(), "root ::= \"time\" \" \" [a-z]+\n", "root",
                                                       words, 1, nullptr, 0);
    ASSERT_NE(s, nullptr);
    std::vector<bool> ok = allowed(s);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), static_cast<long>(ok.size()));  // waiting: no change
    std::vector<llama_token> toks(32);
    const std::string text = "Once upon a time";
    const int32_t n = llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), toks.data(), 32,
                                     false, false);
    ASSERT_GT(n, 0);
    for (int32_t i = 0; i < n; ++i) llama_sampler_accept(s, toks[i]);
    ok = allowed(s);  // constrained now: "time" matched, a space must follow
    for (llama_token t = 0; t < static_cast<llama_token>(ok.size()); ++t) {
        const std::string p = piece(t);
        if (ok[t]) {
            EXPECT_EQ(p[0], ' ') << t << " '" << p << "'";
        }
    }
    EXPECT_GT(std::count(ok.begin(), ok.end(), true), 0);
    llama_sampler_reset(s);  // waiting again
    ok = allowed(s);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), static_cast<long>(ok.size()));
    llama_sampler_free(s);
}

TEST(GrammarSampler, UnusableGrammarsGiveNullAndEmptyOnesPassEverything) {
    quiet_log();
    EXPECT_EQ(llama_sampler_init_grammar(vocab(), "root ::= root \"a\" | \"b\"\n", "root"), nullptr);
    EXPECT_EQ(llama_sampler_init_grammar(vocab(), "root ::= \"a\"\n", "start"), nullptr);
    EXPECT_EQ(
        llama_sampler_init_grammar(vocab(), "root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?\n", "root"),
        nullptr);  // llama.cpp crashes on this one
    llama_sampler *pass = llama_sampler_init_grammar(vocab(), "", "root");
    ASSERT_NE(pass, nullptr);
    const std::vector<bool> ok = allowed(pass);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), static_cast<long>(ok.size()));
    llama_sampler_free(pass);
}

TEST(GrammarSampler, CloneKeepsTheParseState) {
    quiet_log();
    llama_sampler *s = llama_sampler_init_grammar(vocab(), kGrammar, "root");
    ASSERT_NE(s, nullptr);
    std::vector<llama_token> toks(8);
    const int32_t n = llama_tokenize(vocab(), "Once", 4, toks.data(), 8, false, false);
    ASSERT_GT(n, 0);
    for (int32_t i = 0; i < n; ++i) llama_sampler_accept(s, toks[i]);
    llama_sampler *c = llama_sampler_clone(s);
    EXPECT_EQ(allowed(c), allowed(s));
    llama_sampler_reset(c);
    EXPECT_NE(allowed(c), allowed(s));
    llama_sampler_free(c);
    llama_sampler_free(s);
}

}  // namespace
}  // namespace grammar_sampler_test

namespace lctx::grammar_sampler_test {
namespace {

// A character split over two tokens: the first token's lone lead byte is allowed when some completion
// fits the grammar, and the next token must finish it.
TEST(GrammarSamplerBytes, PartialUtf8CarriesOverToTheNextToken) {
    auto texts = std::make_shared<TokenTexts>();
    texts->piece = {"\xC3", "\xA9", "\xC3\xA9", "a", "\xC0", "\xA9\xC3"};  // lead, tail, é, a, overlong lead
    texts->is_eog = {0, 0, 0, 0, 0, 0};
    GrammarSampler s(texts, "root ::= \"\xC3\xA9\"+\n", "root");
    auto allowed = [&] {
        std::vector<TokenData> data;
        for (int i = 0; i < 6; ++i) data.push_back({i, 0.0f, 0.0f});
        TokenDataArray arr{data.data(), data.size(), -1, false};
        s.apply(arr);
        std::vector<bool> ok;
        for (const TokenData &d : data) ok.push_back(std::isfinite(d.logit));
        return ok;
    };
    EXPECT_EQ(allowed(), (std::vector<bool>{true, false, true, false, false, false}));
    s.accept(0);  // the lead byte alone
    EXPECT_FALSE(s.complete());
    EXPECT_EQ(allowed(), (std::vector<bool>{false, true, false, false, false, true}));
    s.accept(5);  // finishes é and starts the next
    EXPECT_EQ(allowed(), (std::vector<bool>{false, true, false, false, false, true}));
    s.accept(1);
    EXPECT_TRUE(s.complete());
    EXPECT_EQ(allowed(), (std::vector<bool>{true, false, true, false, false, false}));
}

// The states the sampler remembers (transitions, and the tokens a state allows) change nothing: writing a
// JSON document twice with one sampler (reset in between, so the second pass runs from what it cached),
// the tokens allowed at every step equal those whose bytes the sampler's own matcher takes, judged one by
// one on a copy with no cache.
TEST(GrammarSamplerBytes, RememberedStatesAllowWhatTheMatcherTakes) {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/grammar/grammars/json.gbnf", std::ios::binary);
    std::string gbnf{std::istreambuf_iterator<char>(f), {}};
    ASSERT_FALSE(gbnf.empty());
    gbnf += "\nroot ::= \" \" object\n";  // SPM text starts with a space; a later definition replaces root
    const int32_t n_vocab = llama_vocab_n_tokens(capi_test::vocab());
    auto texts = std::make_shared<TokenTexts>();
    texts->piece.resize(n_vocab);
    texts->is_eog.resize(n_vocab);
    for (int32_t id = 0; id < n_vocab; ++id) {
        char buf[256];
        const int32_t n = llama_token_to_piece(capi_test::vocab(), id, buf, sizeof buf, 0, true);
        texts->piece[id] = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
        texts->is_eog[id] = llama_vocab_is_eog(capi_test::vocab(), id);
    }
    const std::string doc =
        "{\"a\": [1, 2.5, \"x y\"], \"bb\": {\"c\": true, \"d\": null}, \"e\": \"once upon\"}";
    std::vector<llama_token> toks(256);
    const int32_t n = llama_tokenize(capi_test::vocab(), doc.data(), static_cast<int32_t>(doc.size()),
                                     toks.data(), static_cast<int32_t>(toks.size()), false, false);
    ASSERT_GT(n, 10);
    GrammarSampler s(texts, gbnf, "root");
    for (int pass = 0; pass < 2; ++pass) {
        s.reset();
        for (int32_t step = 0; step <= n; ++step) {
            std::vector<TokenData> data(static_cast<size_t>(n_vocab));
            for (int32_t i = 0; i < n_vocab; ++i) data[i] = {i, 0.0f, 0.0f};
            TokenDataArray arr{data.data(), data.size(), -1, false};
            s.apply(arr);
            for (int32_t t = 0; t < n_vocab; ++t) {
                bool want;
                if (texts->is_eog[t]) {
                    want = s.complete();
                } else {
                    auto copy = s.clone();
                    want = !texts->piece[t].empty() &&
                           static_cast<GrammarSampler &>(*copy).accept_bytes(texts->piece[t]);
                }
                ASSERT_EQ(std::isfinite(data[t].logit), want)
                    << "pass " << pass << ", step " << step << ", token " << t << " '" << texts->piece[t]
                    << "'";
            }
            if (step == n) break;
            ASSERT_TRUE(std::isfinite(data[toks[step]].logit)) << "step " << step;
            s.accept(toks[step]);
        }
        EXPECT_TRUE(s.complete());
    }
}

}  // namespace
}  // namespace lctx::grammar_sampler_test
