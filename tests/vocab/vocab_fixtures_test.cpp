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

std::vector<Param> all_params() {
    std::vector<Param> ps;
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
}

}  // namespace
}  // namespace lctx::test
