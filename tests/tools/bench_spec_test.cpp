// lctx bench --spec (tools/lctx/bench_spec.h): every mode on the same prompt, greedy, with its acceptance,
// and the same tokens as plain decoding.
#include "tools/lctx/bench_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/cli_run.h"

namespace bench_spec_test {
namespace {

std::string golden(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

TEST(BenchSpec, EveryModeAgainstPlain) {
    lctx::bench::SpecBenchInputs in;
    in.model = golden("llama-F16");
    in.prompt = "one two three four five one two three four five one two three";
    in.n_gen = 24;
    in.reps = 1;
    in.type_k = in.type_v = GGML_TYPE_F32;  // batched rows with one-token decodes' bits on every kernel level
    lctx::cli::SpecOptions s;
    s.model_draft = golden("llama-Q2_K");
    s.draft_p_min = 0.0f;
    s.draft_max = 6;
    s.draft_min = 1;
    std::string error;
    const std::vector<lctx::bench::SpecBenchRow> rows = lctx::bench::run_spec_bench(in, s, &error);
    ASSERT_EQ(error, "");
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].mode, "plain");
    EXPECT_EQ(rows[0].drafted, 0);
    EXPECT_EQ(rows[1].mode, "self-draft");
    EXPECT_EQ(rows[2].mode, "lookup");
    EXPECT_EQ(rows[3].mode, "draft llama-Q2_K.gguf");
    for (const auto &r : rows) {
        EXPECT_TRUE(r.same_as_plain) << r.mode;
        EXPECT_GT(r.tokens_per_s, 0.0) << r.mode;
    }
    // The model drafting for itself keeps its drafts, in fewer target decodes than tokens.
    EXPECT_GT(rows[1].accepted, 0);
    EXPECT_LT(rows[1].steps, in.n_gen);
    EXPECT_GT(rows[3].drafted, 0);
    const std::string table = lctx::bench::spec_bench_table(rows);
    EXPECT_NE(table.find("| self-draft | 24 |"), std::string::npos) << table;
}

TEST(BenchSpec, CommandLine) {
    const lctx::testing::CliResult r = lctx::testing::run_cli(
        "bench --spec -m " + golden("stories260K") + " -n 16 -t 1 -r 1 --draft-p-min 0", true);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("| lookup | 16 |"), std::string::npos) << r.out;
    const lctx::testing::CliResult bad = lctx::testing::run_cli(
        "bench --spec -m " + golden("stories260K") + " -md " + golden("mamba") + " -n 4 -r 1", true);
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.out.find("recurrent"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace bench_spec_test
