// Every vocabulary test set in fixtures/vocab: tokenize(text, add_special = false, parse_special = false)
// must give exactly the ids llama.cpp gave. One test case per text.
#include <gtest/gtest.h>

#include <sstream>

#include "gguf_rewrite.h"
#include "util/error.h"
#include "vocab/vocab_test_util.h"

namespace lctx::test::vocab_fixtures_test {
namespace {

const char *const kSets[] = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon",   "gpt-2", "llama-spm",
                             "mpt",      "phi-3",          "refact",       "starcoder"};

// T5's SentencePiece unigram vocabulary with its precompiled charsmap (fixtures/golden-t5/FORMAT-T5.md):
// 20 texts, each also what SentencePiece itself gives.
constexpr size_t kT5Texts = 20;

std::string describe(const Vocab &v, const std::vector<int32_t> &ids) {
    std::ostringstream os;
    for (int32_t id : ids) {
        os << ' ' << id;
        if (id >= 0 && id < v.n_tokens()) os << "'" << escape(std::string(v.token_text(id))) << "'";
    }
    return os.str();
}

// One test per set, each text checked and reported on its own: one process per set rather than per text
// (ctest runs each test in a process of its own, and each would read every set's cases first).
class VocabFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFixture, TokenizeMatchesReference) {
    const std::string &set = GetParam();
    const Vocab &v = fixture_vocab(set);
    const std::vector<VocabCase> cases = read_cases(set);
    ASSERT_FALSE(cases.empty()) << set;
    for (size_t i = 0; i < cases.size(); ++i) {
        const VocabCase &c = cases[i];
        const std::vector<int32_t> got = v.tokenize(c.text, false, false);
        EXPECT_EQ(got, c.ids) << "set " << set << ", text #" << i << ": \"" << escape(c.text) << "\"\n"
                              << "  expected:" << describe(v, c.ids) << "\n"
                              << "  got:     " << describe(v, got);
    }
}

INSTANTIATE_TEST_SUITE_P(AllSets, VocabFixture, ::testing::ValuesIn([] {
                             std::vector<std::string> sets = {"t5"};
                             sets.insert(sets.end(), std::begin(kSets), std::end(kSets));
                             return sets;
                         }()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                             std::string name = info.param;
                             for (char &ch : name)
                                 if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return name;
                         });

// Each set must actually be exercised (a missing or empty fixture must not pass silently).
TEST(VocabFixtureSets, EachSetHasItsCases) {
    for (const char *s : kSets) EXPECT_EQ(read_cases(s).size(), 46u) << s;
    EXPECT_EQ(read_cases("t5").size(), kT5Texts);
}

// T5 adds no BOS and appends </s> (id 1) when asked for special tokens.
TEST(VocabFixtureSets, T5AppendsEos) {
    const Vocab &v = fixture_vocab("t5");
    EXPECT_EQ(v.type(), VocabType::kUgm);
    const std::vector<int32_t> plain = v.tokenize("The house is wonderful.", false, false);
    std::vector<int32_t> want = plain;
    want.push_back(1);
    EXPECT_EQ(v.tokenize("The house is wonderful.", true, false), want);
    EXPECT_EQ(plain, (std::vector<int32_t>{37, 629, 19, 1627, 5}));  // FORMAT-T5.md's encoder text
}

// Detokenizing with remove_special takes off the EOS that tokenizing with add_special appended (b4748's
// llama_detokenize: the last token, when it is EOS and the vocabulary adds EOS), and that one token only.
// With unparse_special a kept EOS would show as its text.
TEST(VocabFixtureSets, T5RemoveSpecialDropsTheTrailingEos) {
    const Vocab &v = fixture_vocab("t5");
    ASSERT_TRUE(v.add_eos());
    const std::vector<int32_t> plain = v.tokenize("The house is wonderful.", false, false);
    std::vector<int32_t> with = v.tokenize("The house is wonderful.", true, false);
    ASSERT_EQ(with.size(), plain.size() + 1);
    ASSERT_EQ(with.back(), v.eos());
    const std::string text = v.detokenize(plain, false, true);
    const std::string eos_text = v.token_to_piece(v.eos(), true);
    ASSERT_FALSE(eos_text.empty());
    EXPECT_EQ(v.detokenize(with, true, true), text);
    EXPECT_EQ(v.detokenize(with, false, true), text + eos_text);  // kept without remove_special
    // Two at the end: only the last goes. One in the middle stays.
    with.push_back(v.eos());
    EXPECT_EQ(v.detokenize(with, true, true), text + eos_text);
    std::vector<int32_t> middle = {v.eos()};
    middle.insert(middle.end(), plain.begin(), plain.end());
    EXPECT_EQ(v.detokenize(middle, true, true), v.detokenize(middle, false, true));
    EXPECT_EQ(v.detokenize({v.eos()}, true, true), "");
}

// A charsmap whose size field points past its end is refused by name; one that is valid but empty of the
// double array's entries for a text still tokenizes (characters kept as they are), ids in range.
TEST(VocabFixtureSets, T5BadCharsmapIsRefusedByName) {
    auto with_charsmap = [](std::vector<uint8_t> bytes) {
        testing::Rewrite r;
        r.add = [bytes](gguf::Writer &w) {
            std::vector<gguf::Value> elems;
            for (uint8_t b : bytes) elems.push_back(gguf::Value::from_uint(gguf::ValueType::UINT8, b));
            w.set("tokenizer.ggml.precompiled_charsmap",
                  gguf::Value::from_array(gguf::ValueType::UINT8, elems));
        };
        return r;
    };
    const std::string src = vocab_path("t5");
    for (const std::vector<uint8_t> &bad :
         {std::vector<uint8_t>{1, 0}, std::vector<uint8_t>{0xFF, 0, 0, 0, 1, 2, 3, 4}}) {
        const std::string path = testing::rewrite_gguf(src, with_charsmap(bad), "t5-charsmap");
        const auto f = gguf::File::open(path);
        try {
            Vocab::load(*f);
            ADD_FAILURE() << "a bad charsmap loaded";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("precompiled_charsmap"), std::string::npos) << e.what();
        }
        std::remove(path.c_str());
    }
    // A one-unit double array (a root without children) matches nothing: text is only whitespace-folded.
    const std::string path =
        testing::rewrite_gguf(src, with_charsmap({4, 0, 0, 0, 0, 0, 0, 0}), "t5-charsmap-empty");
    const auto f = gguf::File::open(path);
    const auto v = Vocab::load(*f);
    for (int32_t id : v->tokenize("  Hello\xFF world\xEF\xAC\x81  ", true, false))
        EXPECT_TRUE(id >= 0 && id < v->n_tokens());
    EXPECT_EQ(v->tokenize("The house", false, false),
              fixture_vocab("t5").tokenize("The house", false, false));
    std::remove(path.c_str());
}

}  // namespace
}  // namespace lctx::test::vocab_fixtures_test
