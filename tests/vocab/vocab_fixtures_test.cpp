// Every vocabulary test set in fixtures/vocab: tokenize(text, add_special = false, parse_special = false)
// must give exactly the ids llama.cpp gave. One test case per text.
#include <gtest/gtest.h>

#include <sstream>

#include "vocab/vocab_test_util.h"

namespace lctx::test {
namespace {

const char *const kSets[] = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon",   "gpt-2", "llama-spm",
                             "mpt",      "phi-3",          "refact",       "starcoder"};

struct Param {
    std::string set;
    size_t index;
};
void PrintTo(const Param &p, std::ostream *os) {
    *os << p.set << " #" << p.index;
}

// T5's SentencePiece unigram vocabulary with its precompiled charsmap (fixtures/golden-t5/FORMAT-T5.md):
// 20 texts, each also what SentencePiece itself gives.
constexpr size_t kT5Texts = 20;

std::vector<Param> all_params() {
    std::vector<Param> ps;
    for (size_t i = 0; i < kT5Texts; ++i) ps.push_back({"t5", i});
    for (const char *s : kSets) {
        const size_t n = read_cases(s).size();
        for (size_t i = 0; i < n; ++i) ps.push_back({s, i});
    }
    return ps;
}

std::string describe(const Vocab &v, const std::vector<int32_t> &ids) {
    std::ostringstream os;
    for (int32_t id : ids) {
        os << ' ' << id;
        if (id >= 0 && id < v.n_tokens()) os << "'" << escape(std::string(v.token_text(id))) << "'";
    }
    return os.str();
}

class VocabFixture : public ::testing::TestWithParam<Param> {};

TEST_P(VocabFixture, TokenizeMatchesReference) {
    const Param &p = GetParam();
    const Vocab &v = fixture_vocab(p.set);
    const VocabCase c = read_cases(p.set).at(p.index);
    const std::vector<int32_t> got = v.tokenize(c.text, false, false);
    EXPECT_EQ(got, c.ids) << "set " << p.set << ", text #" << p.index << ": \"" << escape(c.text) << "\"\n"
                          << "  expected:" << describe(v, c.ids) << "\n"
                          << "  got:     " << describe(v, got);
}

INSTANTIATE_TEST_SUITE_P(AllSets, VocabFixture, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param> &info) {
                             std::string name = info.param.set + "_" + std::to_string(info.param.index);
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

}  // namespace
}  // namespace lctx::test
