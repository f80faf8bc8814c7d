// lctx synth writes small gemma2 and bloom models that lctx run generates from, through a context shift too;
// lctx run on a T5 model encodes the prompt and generates from the decoder start token.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace lctx::testing::cli_families_test {
namespace {

class SynthFamily : public ::testing::TestWithParam<const char *> {};

TEST_P(SynthFamily, RunGenerates) {
    const std::string shape = GetParam(), path = temp_file(shape + ".gguf");
    const CliResult s = run_cli("synth --shape " + shape + " --type Q4_0 -o " + path, true);
    ASSERT_EQ(s.status, 0) << s.out;
    const CliResult r = run_cli("run -m " + path + " -p 'Once upon a time' -n 8 --temp 0 -t 2", true);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("generation: 8 tokens"), std::string::npos) << r.out;
    // A context of 16 cells: the generation shifts it (gemma2 re-rotates its keys, bloom has none to rotate).
    const CliResult c =
        run_cli("run -m " + path + " -p 'Once upon a time' -n 30 -c 16 --ignore-eos --temp 0", true);
    EXPECT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("context shifted"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("generation: 30 tokens"), std::string::npos) << c.out;
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SynthFamily, ::testing::Values("gemma2-tiny", "bloom-tiny"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                             std::string n = i.param;
                             for (char &ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

// The greedy case of fixtures/golden-t5 (llama.cpp's stream, 24 tokens): lctx run --temp 0 gives the same
// prompt tokens (with </s>) and the same tokens, and says how it stopped.
TEST(CliT5, RunEncodesThePromptAndGeneratesGreedily) {
    const std::string dir = std::string(LCTX_FIXTURES_DIR) + "/golden-t5/";
    std::ifstream f(dir + "cases/t5_greedy.json");
    const nlohmann::json step = nlohmann::json::parse(f)["steps"][0];
    const std::string prompt = step["prompt"];
    const int n = step["n_predict"];
    const CliResult r = run_cli("run -m " + dir + "models/t5.gguf -p '" + prompt + "' -n " +
                                std::to_string(n) + " --temp 0 --json");
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["prompt_ids"], step["prompt_tokens"]);
    EXPECT_EQ(j["ids"], step["generated_tokens"]);
    EXPECT_EQ(j["text"], step["generated_text"]);
    EXPECT_EQ(j["stop"], "-n reached");
    // Streamed: the prompt, then the text.
    const CliResult s =
        run_cli("run -m " + dir + "models/t5.gguf -p '" + prompt + "' -n " + std::to_string(n) + " --temp 0");
    ASSERT_EQ(s.status, 0) << s.out;
    EXPECT_EQ(s.out, prompt + step["generated_text"].get<std::string>() + "\n");
    // The decoder's cache of 16 cells shifts (its bias comes from relative positions: nothing to rotate).
    const CliResult shifted = run_cli(
        "run -m " + dir + "models/t5.gguf -p '" + prompt + "' -c 16 -n 30 --ignore-eos --temp 0", true);
    EXPECT_EQ(shifted.status, 0) << shifted.out;
    EXPECT_NE(shifted.out.find("context shifted"), std::string::npos) << shifted.out;
    // A prompt longer than a micro-batch cannot be encoded: a clear error.
    const CliResult big =
        run_cli("run -m " + dir + "models/t5.gguf -p '" + prompt + "' -ub 4 -b 4 -n 2", true);
    EXPECT_EQ(big.status, 1) << big.out;
    EXPECT_NE(big.out.find("micro-batch"), std::string::npos) << big.out;
}

}  // namespace
}  // namespace lctx::testing::cli_families_test
