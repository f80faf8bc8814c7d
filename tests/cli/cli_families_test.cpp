// lctx synth writes small gemma2 and bloom models that lctx run generates from, through a context shift too.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_run.h"

namespace lctx::testing {
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

}  // namespace
}  // namespace lctx::testing
