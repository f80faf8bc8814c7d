// lctx run --lora FILE[:SCALE] / --lora-scaled FILE SCALE.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace lctx::testing::lora_cli_test {
namespace {

std::string fx(const std::string &rel) {
    return std::string(LCTX_FIXTURES_DIR) + "/" + rel;
}

// The generated ids of a greedy run on the golden llama with these extra options.
std::vector<int32_t> ids(const std::string &extra) {
    const CliResult r = run_cli("run -m " + fx("golden/models/llama-F16.gguf") +
                                " -p 'Once upon' -n 16 --temp 0 -t 1 -q --json " + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return {};
    return j["ids"].get<std::vector<int32_t>>();
}

TEST(LoraCli, RunAppliesAdapters) {
    const std::string a = fx("golden-lora/models/lora-llama-F16.gguf");
    const std::vector<int32_t> none = ids("");
    const std::vector<int32_t> one = ids("--lora " + a);
    ASSERT_EQ(none.size(), 16u);
    EXPECT_NE(one, none);
    EXPECT_EQ(ids("--lora " + a + ":1"), one);
    EXPECT_EQ(ids("--lora " + a + ":0"), none);
    const std::vector<int32_t> half = ids("--lora " + a + ":0.5");
    EXPECT_EQ(ids("--lora-scaled " + a + " 0.5"), half);
    // Two adapters at once: each half of the same adapter is the whole one (up to the F16 copy's rounding,
    // which a greedy choice of this model does not feel).
    EXPECT_EQ(ids("--lora " + a + ":0.5 --lora-scaled " + fx("golden-lora/models/lora-llama-F16-f16w.gguf") +
                  " 0.5"),
              one);
}

TEST(LoraCli, BadAdapterIsOneLine) {
    // This adapter does not fit stories260K (the default model).
    const CliResult r =
        run_cli("run -n 4 -q --lora " + fx("golden-lora/models/lora-llama-F16.gguf"), /*merge_stderr=*/true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("lctx run: --lora"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("incorrect shape"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    const CliResult missing = run_cli("run -n 4 -q --lora /nonexistent.gguf", true);
    EXPECT_EQ(missing.status, 1);
    const CliResult bad_scale = run_cli("run -n 4 -q --lora-scaled x.gguf big", true);
    EXPECT_EQ(bad_scale.status, 1);
    EXPECT_NE(bad_scale.out.find("--lora-scaled"), std::string::npos) << bad_scale.out;
}

}  // namespace
}  // namespace lctx::testing::lora_cli_test
