// The fill-in-the-middle prompt builder shared by `lctx infill` and the server's /infill: the layouts of
// llama-infill (prefix first, or suffix first with --spm-infill) and llama-server (input_extra before the
// prefix: the repo-level layout when the model has FIM_REP and FIM_SEP, else the texts one after another).
#include "generate/fim_prompt.h"

#include <gtest/gtest.h>

namespace lctx::generate::fim_prompt_test {
namespace {

// One token per byte, the byte's value + 1000 (apart from the special ids below).
std::vector<int32_t> bytes(const std::string &s) {
    std::vector<int32_t> out;
    for (unsigned char c : s) out.push_back(1000 + c);
    return out;
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (const auto &p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

FimTokens tokens() {
    FimTokens t;
    t.pre = 1;
    t.suf = 2;
    t.mid = 3;
    t.bos = 9;
    t.add_bos = true;
    return t;
}

TEST(FimPrompt, PrefixSuffixMiddle) {
    FimInput in;
    in.prefix = "ab";
    in.suffix = "c";
    EXPECT_EQ(fim_prompt(tokens(), in, bytes), cat({{9, 1}, bytes("ab"), {2}, bytes("c"), {3}}));
    in.spm = true;
    EXPECT_EQ(fim_prompt(tokens(), in, bytes), cat({{9, 2}, bytes("c"), {1}, bytes("ab"), {3}}));
    FimTokens nobos = tokens();
    nobos.add_bos = false;
    in.spm = false;
    in.middle = "x";
    EXPECT_EQ(fim_prompt(nobos, in, bytes), cat({{1}, bytes("ab"), {2}, bytes("c"), {3}, bytes("x")}));
    EXPECT_FALSE(FimTokens{}.usable());
    EXPECT_TRUE(tokens().usable());
}

TEST(FimPrompt, ExtraFiles) {
    FimInput in;
    in.prefix = "p";
    in.suffix = "s";
    in.extra = {{"a.py", "x"}, {"b.py", "y"}};
    // Without repository tokens: the texts first.
    EXPECT_EQ(fim_prompt(tokens(), in, bytes),
              cat({{9}, bytes("x"), bytes("y"), {1}, bytes("p"), {2}, bytes("s"), {3}}));
    // With them: FIM_REP project, then FIM_SEP name text per file, then FIM_SEP for the file being edited.
    FimTokens repo = tokens();
    repo.rep = 7;
    repo.sep = 8;
    EXPECT_EQ(fim_prompt(repo, in, bytes), cat({{9, 7},
                                                bytes("myproject\n"),
                                                {8},
                                                bytes("a.py\n"),
                                                bytes("x"),
                                                {8},
                                                bytes("b.py\n"),
                                                bytes("y"),
                                                {8},
                                                bytes("filename\n"),
                                                {1},
                                                bytes("p"),
                                                {2},
                                                bytes("s"),
                                                {3}}));
}

}  // namespace
}  // namespace lctx::generate::fim_prompt_test
