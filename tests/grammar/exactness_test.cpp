// The grammar layer where it was compared with llama.cpp b4748 case by case: what lctx matches (pieces
// starting with NUL, the order of trigger words, an empty trigger word), where it deliberately differs
// (listed in include/llama.h: bytes F5-FF, an unfinished character against a negated class, empty
// classes, a root rule not named root, an unusable grammar), lazy trigger tokens, and the token references
// of newer llama.cpp (`<[id]>`, `<think>`, `!<...>`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "llama.h"
#include "sampling/grammar_sampler.h"

namespace lctx::exactness_test {
namespace {

std::shared_ptr<TokenTexts> texts_of(const std::vector<std::string> &pieces) {
    auto t = std::make_shared<TokenTexts>();
    t->piece = pieces;
    t->is_eog.assign(pieces.size(), 0);
    return t;
}

// Which of the tokens 0..n-1 the sampler leaves finite.
std::vector<bool> allowed(GrammarSampler &s, size_t n) {
    std::vector<TokenData> data;
    for (size_t i = 0; i < n; ++i) data.push_back({static_cast<Token>(i), 0.0f, 0.0f});
    TokenDataArray arr{data.data(), data.size(), -1, false};
    s.apply(arr);
    std::vector<bool> ok;
    for (const TokenData &d : data) ok.push_back(std::isfinite(d.logit));
    return ok;
}

bool matches(const std::string &gbnf, const std::string &text) {
    auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf));
    return grammar::match_text(g, grammar::decode_utf8(text)).accepted;
}

// ---- matched with b4748 ----

// b4748 reads a token's text as a C string: one that starts with NUL is never allowed, whatever the
// grammar. A NUL later in a text is a byte like the others here (b4748 stops reading there).
TEST(GrammarExactness, TextsStartingWithNulAreNeverAllowed) {
    GrammarSampler s(texts_of({std::string("\0", 1), std::string("\0a", 2), "a", std::string("a\0", 2)}),
                     "root ::= .+\n", "root");
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{false, false, true, true}));
    GrammarSampler nul(texts_of({std::string("\0", 1), "a"}), "root ::= [\\x00] \"a\"\n", "root");
    EXPECT_EQ(allowed(nul, 2), (std::vector<bool>{false, false}));
}

// Of several trigger words in the output, the first in the list that occurs wins, and the grammar
// constrains the output from where that word is (b4748), not from the earliest occurrence of any word.
TEST(GrammarExactness, SeveralTriggerWordsTheFirstInTheListWins) {
    GrammarTriggers t;
    t.lazy = true;
    t.words = {"B", "A"};
    GrammarSampler s(texts_of({"xAyB", "B", "q", "A"}), "root ::= [AB] [a-z]*\n", "root", t);
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{true, true, true, true}));  // waiting
    s.accept(0);  // "B" (at 3) triggers: the grammar has read "B"; from "A" (at 1) it would refuse "AyB"
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{false, false, true, false}));
}

// An empty trigger word occurs in any output: the first token accepted triggers, read from its start.
TEST(GrammarExactness, AnEmptyTriggerWordTriggersAtOnce) {
    GrammarTriggers t;
    t.lazy = true;
    t.words = {"never", ""};
    GrammarSampler s(texts_of({"zz", "!", "z"}), "root ::= \"zz\" \"!\"\n", "root", t);
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{true, true, true}));
    s.accept(0);
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{false, true, false}));
}

// A trigger token starts the grammar with its own text; a token with the same text but another id does
// not trigger (the words are empty here).
TEST(GrammarExactness, LazyGrammarStartsAtItsTriggerToken) {
    GrammarTriggers t;
    t.lazy = true;
    t.tokens = {1};
    GrammarSampler s(texts_of({"hi", "<tool>", "7", "<tool>"}), "root ::= \"<tool>\" [0-9]+\n", "root", t);
    s.accept(0);
    s.accept(3);  // same text, not the trigger token
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{true, true, true, true}));
    s.accept(1);
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{false, false, true, false}));
    s.accept(2);
    EXPECT_TRUE(s.complete());
    s.reset();  // waiting again
    EXPECT_EQ(allowed(s, 4), (std::vector<bool>{true, true, true, true}));
}

// ---- deliberate differences (include/llama.h) ----

// A single byte F5-FF can start no UTF-8 character (none is above U+10FFFF): b4748 lets it through `.`
// and negated classes, where no continuation can ever make it text. F4 can still start U+10xxxx.
TEST(GrammarExactness, BytesThatStartNoCharacterAreRefused) {
    const std::vector<std::string> pieces = {"\xF5", "\xF8", "\xFF", "\xF4", "a"};
    for (const char *gbnf : {"root ::= .+\n", "root ::= [^a]+\n"}) {
        GrammarSampler s(texts_of(pieces), gbnf, "root");
        EXPECT_EQ(allowed(s, pieces.size()), (std::vector<bool>{false, false, false, true, gbnf[9] == '.'}))
            << gbnf;
    }
}

// An unfinished character is allowed against a negated class when some character it can still become lies
// outside the class: b4748 refuses it when any of them lies inside ("\xC3" can become U+00C0-U+00FF; only
// U+00E9 is excluded).
TEST(GrammarExactness, UnfinishedCharacterAgainstANegatedClass) {
    GrammarSampler s(texts_of({"\xC3", "\xA9", "\xA8"}), "root ::= [^\\u00e9]\n", "root");
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{true, false, false}));
    s.accept(0);
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{false, false, true}));  // è, not é
}

// `[]` is the empty set (matches no character) and `[^]` its complement (any character); b4748 parses both
// into nothing, so they match the empty string.
TEST(GrammarExactness, EmptyClassesAreSets) {
    EXPECT_FALSE(matches("root ::= \"a\" [] \"b\"\n", "ab"));
    EXPECT_FALSE(matches("root ::= \"a\" [] \"b\"\n", "axb"));
    EXPECT_TRUE(matches("root ::= \"a\" [^] \"b\"\n", "axb"));
    EXPECT_TRUE(matches("root ::= \"a\" [^] \"b\"\n",
                        "a\xE2\x82\xAC"
                        "b"));
    EXPECT_FALSE(matches("root ::= \"a\" [^] \"b\"\n", "ab"));
    EXPECT_TRUE(matches("root ::= \"a\" []? \"b\"\n", "ab"));
}

}  // namespace
}  // namespace lctx::exactness_test

namespace exactness_test {
namespace {

using capi_test::quiet_log;
using capi_test::vocab;

std::vector<bool> capi_allowed(llama_sampler *s) {
    const int32_t n = llama_vocab_n_tokens(vocab());
    std::vector<llama_token_data> data(n);
    for (int32_t i = 0; i < n; ++i) data[i] = {i, 0.0f, 0.0f};
    llama_token_data_array arr{data.data(), data.size(), -1, false};
    llama_sampler_apply(s, &arr);
    std::vector<bool> out(n);
    for (size_t i = 0; i < arr.size; ++i) out[arr.data[i].id] = std::isfinite(arr.data[i].logit);
    return out;
}

std::string piece(llama_token t) {
    char buf[256];
    const int32_t n = llama_token_to_piece(vocab(), t, buf, sizeof buf, 0, true);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The root rule is the one the caller names, whether or not the grammar also has a rule `root` (b4748
// requires a `root` rule and refuses the grammar without one).
TEST(GrammarExactnessCapi, TheNamedRootRuleNeedsNoRuleCalledRoot) {
    quiet_log();
    llama_sampler *s = llama_sampler_init_grammar(vocab(), "expr ::= \" a\"\n", "expr");
    ASSERT_NE(s, nullptr);
    const std::vector<bool> ok = capi_allowed(s);
    for (llama_token t = 0; t < static_cast<llama_token>(ok.size()); ++t) {
        if (ok[t]) {
            EXPECT_TRUE(std::string(" a").rfind(piece(t), 0) == 0) << t << " '" << piece(t) << "'";
        }
    }
    EXPECT_GT(std::count(ok.begin(), ok.end(), true), 0);
    llama_sampler_free(s);
}

// A grammar that cannot be used gives NULL (b4748 gives a sampler that allows everything, so a broken
// grammar constrains nothing, silently); adding that NULL to a chain is refused with a log line.
TEST(GrammarExactnessCapi, AnUnusableGrammarIsNullAndAChainRefusesIt) {
    quiet_log();
    llama_sampler *bad = llama_sampler_init_grammar(vocab(), "root ::= [a-z\n", "root");
    EXPECT_EQ(bad, nullptr);
    llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, bad);
    EXPECT_EQ(llama_sampler_chain_n(chain), 0);
    llama_sampler_free(chain);
}

// Token references through llama.h resolve against the model's vocabulary.
TEST(GrammarExactnessCapi, TokenReferencesUseTheVocabulary) {
    quiet_log();
    const llama_token unk = llama_vocab_get_text(vocab(), 0) == std::string("<unk>") ? 0 : -1;
    ASSERT_EQ(unk, 0);
    llama_sampler *s = llama_sampler_init_grammar(vocab(), "root ::= <unk> !<[100]> <[100]>\n", "root");
    ASSERT_NE(s, nullptr);
    std::vector<bool> ok = capi_allowed(s);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), 1);
    EXPECT_TRUE(ok[0]);
    llama_sampler_accept(s, 0);
    ok = capi_allowed(s);
    EXPECT_FALSE(ok[100]);
    EXPECT_FALSE(ok[llama_vocab_eos(vocab())]);  // end of generation only where the output is complete
    long n_eog = 0;
    for (llama_token t = 0; t < static_cast<llama_token>(ok.size()); ++t)
        n_eog += llama_vocab_is_eog(vocab(), t);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), static_cast<long>(ok.size()) - 1 - n_eog);
    llama_sampler_accept(s, 7);
    ok = capi_allowed(s);
    EXPECT_EQ(std::count(ok.begin(), ok.end(), true), 1);
    EXPECT_TRUE(ok[100]);
    llama_sampler_accept(s, 100);
    ok = capi_allowed(s);
    EXPECT_TRUE(ok[llama_vocab_eos(vocab())]);
    llama_sampler_free(s);
    // Unknown texts and ids outside the vocabulary are refused.
    EXPECT_EQ(llama_sampler_init_grammar(vocab(), "root ::= <nosuchtoken>\n", "root"), nullptr);
    EXPECT_EQ(llama_sampler_init_grammar(vocab(), "root ::= <[512]>\n", "root"), nullptr);
}

}  // namespace
}  // namespace exactness_test

namespace lctx::exactness_test {
namespace {

// `<[id]>` matches exactly that token, `<think>` the token whose text is exactly "<think>", `!<...>` any
// one token other than it; by id, whatever the token's text, while strings still match bytes.
TEST(GrammarTokenReferences, MatchWholeTokensById) {
    // 0 "<think>" (the special token), 1 "</think>", 2 "a", 3 "b", 4 "<think>" spelt by two tokens 5 + 6.
    const std::vector<std::string> pieces = {"<think>", "</think>", "a", "b", "x", "<thi", "nk>"};
    GrammarSampler s(texts_of(pieces), "root ::= <think> [ab]* </think> !<[2]>\n", "root");
    EXPECT_EQ(allowed(s, 7), (std::vector<bool>{true, false, false, false, false, false, false}));
    s.accept(0);
    EXPECT_EQ(allowed(s, 7), (std::vector<bool>{false, true, true, true, false, false, false}));
    s.accept(2);
    s.accept(3);
    EXPECT_EQ(allowed(s, 7), (std::vector<bool>{false, true, true, true, false, false, false}));
    s.accept(1);
    EXPECT_FALSE(s.complete());
    EXPECT_EQ(allowed(s, 7), (std::vector<bool>{true, true, false, true, true, true, true}));  // not "a"
    s.accept(5);
    EXPECT_TRUE(s.complete());

    // Strings still match the text, so "<think>" as a string takes both spellings.
    GrammarSampler text(texts_of(pieces), "root ::= \"<think>\"\n", "root");
    EXPECT_EQ(allowed(text, 7), (std::vector<bool>{true, false, false, false, false, true, false}));
    // An id, and its negation inside a repetition.
    GrammarSampler ids(texts_of(pieces), "root ::= <[4]> (!<[4]>)*\n", "root");
    EXPECT_EQ(allowed(ids, 7), (std::vector<bool>{false, false, false, false, true, false, false}));
    ids.accept(4);
    EXPECT_EQ(allowed(ids, 7), (std::vector<bool>{true, true, true, true, false, true, true}));
    ids.accept(6);
    EXPECT_TRUE(ids.complete());
}

// A token reference and a string side by side: a token may match either way, and both parses go on.
TEST(GrammarTokenReferences, ATokenMayMatchByIdAndByText) {
    const std::vector<std::string> pieces = {"<think>", "1", "2"};
    GrammarSampler s(texts_of(pieces), "root ::= <think> \"1\" | \"<think>\" \"2\"\n", "root");
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{true, false, false}));
    s.accept(0);
    EXPECT_EQ(allowed(s, 3), (std::vector<bool>{false, true, true}));
    // After half a character, no token reference can match (the character must be finished first).
    GrammarSampler p(texts_of({"\xC3", "\xA9", "x"}), "root ::= [\\u00e9] | <[2]>\n", "root");
    EXPECT_EQ(allowed(p, 3), (std::vector<bool>{true, false, true}));
    p.accept(0);
    EXPECT_EQ(allowed(p, 3), (std::vector<bool>{false, true, false}));
}

TEST(GrammarTokenReferences, ParseErrorsNameTheReference) {
    grammar::TokenVocabulary v;
    v.n_tokens = 10;
    v.by_text = [](std::string_view t) { return t == "<think>" ? 3 : -1; };
    auto error = [&](const std::string &gbnf) {
        try {
            grammar::parse_gbnf(gbnf, "root", &v);
        } catch (const grammar::GrammarError &e) {
            return std::string(e.what());
        }
        return std::string("(parsed)");
    };
    EXPECT_EQ(error("root ::= <think> !<think> <[9]>\n"), "(parsed)");
    EXPECT_NE(error("root ::= <[10]>\n").find("token id 10 is outside the vocabulary"), std::string::npos);
    EXPECT_NE(error("root ::= <thought>\n").find("no token of the vocabulary is exactly <thought>"),
              std::string::npos);
    EXPECT_NE(error("root ::= <think\n").find("unterminated token reference"), std::string::npos);
    EXPECT_NE(error("root ::= <[1x]>\n").find("expecting <[ID]>"), std::string::npos);
    EXPECT_NE(error("root ::= <>\n").find("empty token reference"), std::string::npos);
    EXPECT_NE(error("root ::= !\"a\"\n").find("expecting newline or end"), std::string::npos);
    // Without a vocabulary only the syntax is checked; a `<TEXT>` reference then matches no token.
    const grammar::Grammar g = grammar::parse_gbnf("root ::= <think> | <[5]>+\n");
    EXPECT_EQ(g.elements[0].kind, grammar::Element::Kind::Token);
    grammar::Matcher m(std::make_shared<const grammar::Grammar>(g));
    EXPECT_FALSE(m.accept('a'));  // a token reference takes no character
    EXPECT_TRUE(m.step_token(m.stacks(), 3).empty());
    EXPECT_FALSE(m.step_token(m.stacks(), 5).empty());
}

}  // namespace
}  // namespace lctx::exactness_test
