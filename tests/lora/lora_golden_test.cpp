// LoRA adapters at run time against llama.cpp's golden cases (fixtures/golden-lora/FORMAT-LORA-PPL.md).
#include <gtest/gtest.h>

#include <cmath>

#include "golden_runner.h"

namespace lctx::lora_golden_test {
namespace {

struct LoraCase {
    const char *name;
    float max_abs;  // every logit
    const char *why;
};

// The tolerances of the base cases of the first golden set (tests/model/golden_logits_test.cpp): the adapter
// adds an F32 (or F16) low-rank product whose own rounding is far below them, while a wrong scale, a missing
// alpha / rank or a transposed pair moves the logits by ~1.6 (FORMAT-LORA-PPL.md), 80x the F16 bound.
const LoraCase kCases[] = {
    {"lora_F16_none", 2e-2f, "as llama_F16: f16 activations and cache"},
    {"lora_F16_s1", 2e-2f, "as llama_F16"},
    {"lora_F16_s05", 2e-2f, "as llama_F16"},
    {"lora_F16_set_rm", 2e-2f, "as llama_F16; removal is checked bit for bit in lora_test.cpp"},
    {"lora_F16_f16w_s1", 2e-2f, "as llama_F16; the adapter's products take f16 activations as llama.cpp's"},
    {"lora_F16_switch_midseq", 2e-2f, "as llama_F16; the K/V cached with the adapter are kept"},
    {"lora_Q8_0_none", 0.15f, "as llama_Q8_0: q8_0 activations"},
    {"lora_Q8_0_s1", 0.15f, "as llama_Q8_0; the adapter's products stay f32"},
};

class GoldenLora : public ::testing::TestWithParam<LoraCase> {};

TEST_P(GoldenLora, MatchesLlamaCpp) {
    const LoraCase &tol = GetParam();
    const std::string dir = testing::fixtures_dir() + "/golden-lora/";
    const nlohmann::json c = testing::read_json(dir + "cases/" + tol.name + ".json");
    // The base models are the first golden set's files (FORMAT-LORA-PPL.md: "Note on paths").
    auto model = Model::load(testing::fixtures_dir() + "/golden/" + c["model"].get<std::string>());
    const testing::GoldenRun run = testing::run_logits_case(*model, c, 1, dir);
    const std::vector<float> want = testing::read_f32(dir + "cases/" + c["data_file"].get<std::string>());
    ASSERT_EQ(run.rows.size(), want.size()) << "row count differs";
    float max_diff = 0.0f;
    size_t worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_FALSE(std::isnan(run.rows[i])) << "NaN at " << i;
        const float d = std::fabs(run.rows[i] - want[i]);
        if (d > max_diff) {
            max_diff = d;
            worst = i;
        }
    }
    std::printf("[ %s ] max |diff| = %.6g (row %zu, tolerance %.3g: %s)\n", tol.name, max_diff,
                worst / run.row_len, tol.max_abs, tol.why);
    EXPECT_LE(max_diff, tol.max_abs) << "worst at row " << worst / run.row_len << " col "
                                     << worst % run.row_len;
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenLora, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<LoraCase> &info) {
                             return std::string(info.param.name);
                         });

// Each case must exercise what its name says: the adapter moves the logits by far more than the tolerance
// (so that a test of an adapter that is silently not applied fails).
TEST(GoldenLora, AdapterCasesDifferFromNone) {
    const std::string dir = testing::fixtures_dir() + "/golden-lora/cases/";
    const std::vector<float> none = testing::read_f32(dir + "lora_F16_none.logits.f32");
    for (const char *name : {"lora_F16_s1", "lora_F16_s05", "lora_F16_f16w_s1"}) {
        const std::vector<float> with = testing::read_f32(dir + std::string(name) + ".logits.f32");
        ASSERT_EQ(with.size(), none.size());
        float d = 0.0f;
        for (size_t i = 0; i < none.size(); ++i) d = std::max(d, std::fabs(with[i] - none[i]));
        EXPECT_GT(d, 0.5f) << name;
    }
}

}  // namespace
}  // namespace lctx::lora_golden_test
