// Pre-tokenizer splits for patterns the fixture vocabularies do not cover, and that every named
// pre-tokenizer compiles.
#include "vocab/pretokenizer.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace lctx {
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
}  // namespace lctx
