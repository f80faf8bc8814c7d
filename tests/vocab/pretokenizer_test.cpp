// Pre-tokenizer splits of every pattern list a named pre-tokenizer selects (those the fixture vocabularies do
// not cover), and that every named pre-tokenizer compiles.
#include "vocab/pretokenizer.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace lctx::pretokenizer_test {
namespace {

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2Scanner) {
    const PreTokenizer p(pre_regexes(PreType::kGpt2));
    EXPECT_EQ(p.split("Hello world  foo\n\n bar's 123"),
              (Words{"Hello", " world", " ", " foo", "\n\n", " bar", "'s", " 123"}));
    EXPECT_EQ(p.split("\xC3\x84pfel \xF0\x9F\xA6\x99 x  "),
              (Words{"\xC3\x84pfel", " \xF0\x9F\xA6\x99", " x", "  "}));
    EXPECT_TRUE(p.split("").empty());
}

TEST(PreTokenizer, Llama3Scanner) {
    const PreTokenizer p(pre_regexes(PreType::kLlama3));
    EXPECT_EQ(p.split("Hello world  foo\n\n bar's 12345 ?!\n x"),
              (Words{"Hello", " world", " ", " foo", "\n\n", " bar", "'s", " ", "123", "45", " ?!\n", " x"}));
    EXPECT_EQ(p.split("IT'S (ok)"), (Words{"IT", "'S", " (", "ok", ")"}));
}

TEST(PreTokenizer, Qwen2SplitsSingleDigits) {
    const PreTokenizer p(pre_regexes(PreType::kQwen2));
    EXPECT_EQ(p.split("12345 abc"), (Words{"1", "2", "3", "4", "5", " abc"}));
    EXPECT_EQ(p.split("\xC3\x84pfel, ja"), (Words{"\xC3\x84pfel", ",", " ja"}));
}

// The other pattern lists, each on a text whose split its rules decide (llama.cpp's semantics: each pattern
// refines the pieces of the one before; text a pattern does not match stays a piece of its own).
Words split(PreType t, const std::string &text) {
    return PreTokenizer(pre_regexes(t)).split(text);
}

TEST(PreTokenizer, DigitsAloneThenGpt2) {  // starcoder, refact, command-r, smollm, codeshell, exaone, minerva
    EXPECT_EQ(split(PreType::kStarcoder, "abc 12345 x"), (Words{"abc", " ", "1", "2", "3", "4", "5", " x"}));
}

TEST(PreTokenizer, FalconPunctuationGpt2ThenDigitTriples) {
    EXPECT_EQ(split(PreType::kFalcon, "a+b 12345"), (Words{"a", "+", "b", " ", "123", "45"}));
}

TEST(PreTokenizer, DefaultPunctuationGpt2DigitsTriples) {
    EXPECT_EQ(split(PreType::kDefault, "x 12345!"), (Words{"x", " ", "123", "45", "!"}));
}

TEST(PreTokenizer, DeepseekCoder) {
    EXPECT_EQ(split(PreType::kDeepseekCoder, "ab cd, 12\n"), (Words{"ab", " cd", ",", " ", "1", "2", "\n"}));
}

TEST(PreTokenizer, DeepseekLlm) {
    EXPECT_EQ(split(PreType::kDeepseekLlm, "Hi there, 123\n"),
              (Words{"Hi", " there", ",", " ", "123", "\n"}));
}

TEST(PreTokenizer, Deepseek3Llm) {
    EXPECT_EQ(split(PreType::kDeepseek3Llm, "ab 12345 cd"), (Words{"ab", " ", "123", "45", " cd"}));
}

TEST(PreTokenizer, PoroAndViking) {  // poro, bloom, gpt3-finnish; viking adds single digits
    EXPECT_EQ(split(PreType::kPoro, "Hei maailma, 123!"), (Words{"Hei", " maailma", ",", " 123", "!"}));
    EXPECT_EQ(split(PreType::kViking, "Hei maailma, 123!"),
              (Words{"Hei", " maailma", ",", " ", "1", "2", "3", "!"}));
}

TEST(PreTokenizer, Gpt4oSplitsCaseRunsAndKeepsContractions) {
    EXPECT_EQ(split(PreType::kGpt4o, "HelloWorld it's 12345"),
              (Words{"Hello", "World", " it's", " ", "123", "45"}));
}

TEST(PreTokenizer, TekkenSplitsCaseRunsAndSingleDigits) {
    EXPECT_EQ(split(PreType::kTekken, "HelloWorld it's 123"),
              (Words{"Hello", "World", " it", "'s", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, ChameleonWhitespaceDigitsPunctuationThenGpt2) {
    EXPECT_EQ(split(PreType::kChameleon, "a  b\t7,"), (Words{"a", "  ", "b", "\t", "7", ","}));
}

// Names that share another's pattern list: the list is the one tested above.
TEST(PreTokenizer, SharedPatternLists) {
    for (PreType t : {PreType::kDbrx, PreType::kSmaug, PreType::kChatglm4})
        EXPECT_EQ(pre_regexes(t), pre_regexes(PreType::kLlama3)) << int(t);
    for (PreType t : {PreType::kRefact, PreType::kCommandR, PreType::kSmollm, PreType::kCodeshell,
                      PreType::kExaone, PreType::kMinerva})
        EXPECT_EQ(pre_regexes(t), pre_regexes(PreType::kStarcoder)) << int(t);
    for (PreType t : {PreType::kMpt, PreType::kOlmo, PreType::kJais})
        EXPECT_EQ(pre_regexes(t), pre_regexes(PreType::kGpt2)) << int(t);
    EXPECT_EQ(pre_regexes(PreType::kStablelm2), pre_regexes(PreType::kQwen2));
    EXPECT_EQ(pre_regexes(PreType::kChatglm3), pre_regexes(PreType::kDefault));
    for (PreType t : {PreType::kBloom, PreType::kGpt3Finnish})
        EXPECT_EQ(pre_regexes(t), pre_regexes(PreType::kPoro)) << int(t);
}

TEST(PreTokenizer, EveryNamedPreTokenizerCompiles) {
    for (int t = 0; t <= int(PreType::kGpt4o); ++t) {
        EXPECT_NO_THROW({
            const PreTokenizer p(pre_regexes(PreType(t)));
            p.split("Hello, world! 123 \xE4\xBD\xA0\xE5\xA5\xBD  \n\tx");
        }) << "pre type "
           << t;
    }
    PreSpec s;
    EXPECT_TRUE(find_pre_spec("llama-bpe", &s));
    EXPECT_EQ(s.type, PreType::kLlama3);
    EXPECT_TRUE(s.ignore_merges);
    EXPECT_TRUE(find_pre_spec("", &s));
    EXPECT_EQ(s.type, PreType::kDefault);
    EXPECT_FALSE(find_pre_spec("nonsense", &s));
}

TEST(PreTokenizer, BadPatternIsAnError) {
    EXPECT_THROW(PreTokenizer({"[unclosed"}), Error);
    EXPECT_THROW(PreTokenizer({"\\p{L}\xC3\xA9"}), Error);  // categories mixed with non-ASCII
}

}  // namespace
}  // namespace lctx::pretokenizer_test
