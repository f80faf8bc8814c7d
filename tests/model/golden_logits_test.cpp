// Logits of each family against llama.cpp's golden cases (fixtures/golden/FORMAT.md).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "golden_runner.h"

namespace lctx::golden_logits_test {
namespace {

struct Tolerance {
    const char *name;
    float max_abs;     // every logit
    float exact_frac;  // at least this fraction of rows must agree to 1e-4 (float rounding only)
    const char *why;
};

// lctx quantizes activations exactly as llama.cpp does (Q8_0 / Q8_1 / Q8_K blocks, F16 / BF16 for half
// weights), so most rows agree to float rounding (~1e-6). A row can still differ more: a last-bit
// difference in an activation (another summation order) flips one 8-bit code (or one f16/bf16 value)
// to its neighbour, which moves a dot product by about one quantization step and then follows that
// sequence's later positions through the cache. Where the flips fall depends on the summation order of
// the ISA's kernels: rows within 1e-4 measured 43-100% across the scalar, AVX2 and AVX-512 paths for the
// quantized types. A kernel with a systematic error gets (almost) no row within 1e-4, so exact_frac
// (0.3 for those types) catches it without depending on one ISA's flip pattern. With an f16 cache
// (and f16 activations) one flipped value is read by every later row, so there only max_abs applies,
// and it is tight (10-20x below one logit step that would change a greedy choice).
// Measured max |diff| (2026-12-01, the ctest copies at each level; scalar / avx2 / avx512): F16 0.0030 /
// 0.0031 / 0.0036; BF16 0.020 at each; Q8_0 0.050 / 0.055 / 0.055; Q4_0 0.068 at each; Q4_1 0.077 / 0.079 /
// 0.079; Q5_0 0.016 / 1e-6 / 1e-6; Q5_1 0.082 / 0.070 / 0.070; IQ4_NL 0.076 / 0 / 0; Q2_K 0.134 at each;
// Q3_K 3e-6 at each; Q4_K 0.145 / 0.108 / 0.108; Q5_K 0.138 / 0.110 / 0.110; Q6_K 0.130 at each; IQ4_XS
// 0.126 / 6e-6 / 0.106. The scalar Q4_K and Q5_K sit close to the 0.15 bound, and its reason still holds
// there: each is one flipped activation code followed through the cache, not a systematic error (49% and
// 84% of their rows agree to 1e-4, and llama.cpp's own builds differ by 0.134 on Q6_K).
const Tolerance kTolerances[] = {
    {"stories_1seq_kvf32", 1e-3f, 1.0f, "f32 weights and cache: summation order only (FORMAT.md: ~1e-3)"},
    {"stories_3seq_ubsplit_kvf32", 1e-3f, 1.0f, "f32 cache: summation order only"},
    {"stories_1seq_kvf16", 1e-2f, 0.0f, "f16 cache: a key or value may round to the neighbouring half"},
    {"stories_3seq_ubsplit_kvf16", 1e-2f, 0.0f, "f16 cache, as above"},
    {"stories_3seq_unified_ubsplit_kvf16", 1e-2f, 0.0f, "f16 cache, as above"},
    {"llama_F16", 2e-2f, 0.0f, "f16 activations: a flip is one half ulp (2^-11) of an activation"},
    {"llama_BF16", 5e-2f, 0.3f, "bf16 activations: a flip is one bf16 ulp (2^-8), 8x an f16 flip"},
    {"llama_Q8_0", 0.15f, 0.3f, "q8_0 activations: a flip moves a dot by one code step of the block"},
    {"llama_Q4_0", 0.15f, 0.3f, "q8_0 activations"},
    {"llama_Q4_1", 0.15f, 0.3f, "q8_1 activations"},
    {"llama_Q5_0", 0.15f, 0.3f, "q8_0 activations"},
    {"llama_Q5_1", 0.15f, 0.3f, "q8_1 activations"},
    {"llama_IQ4_NL", 0.15f, 0.3f, "q8_0 activations"},
    {"llama_Q2_K", 0.2f, 0.3f, "q8_K activations; 2-bit weights make the model's own logits move most"},
    {"llama_Q3_K", 0.15f, 0.3f, "q8_K activations"},
    {"llama_Q4_K", 0.15f, 0.3f, "q8_K activations"},
    {"llama_Q5_K", 0.15f, 0.3f, "q8_K activations"},
    {"llama_Q6_K", 0.15f, 0.3f, "q8_K activations (llama.cpp's own versions differ by 0.134 here)"},
    {"llama_IQ4_XS", 0.15f, 0.3f, "q8_K activations"},
    {"stories_kv_cp_rm_kvf32", 1e-3f, 1.0f, "f32 cache"},
    {"stories_kv_cp_rm_kvf16", 1e-2f, 0.0f, "f16 cache"},
    {"stories_ctxshift_kvf32", 1e-3f, 1.0f, "f32 cache; the shift re-rotates keys in f32"},
    {"stories_ctxshift_kvf16", 1e-2f, 0.0f, "f16 cache; the shift re-rotates f16 keys"},
    // Other families: F32 weights, f16 cache, 3 interleaved sequences split into micro-batches of 16.
    // Measured max |diff| (2026-12-01; scalar / avx2 / avx512): qwen2 0.00081 / 0.00097 / 0.00098, phi3
    // 0.0024 at each.
    {"qwen2_3seq", 1e-2f, 0.0f, "qwen2 (q/k/v biases, NeoX rope); f16 cache, as the stories cases"},
    {"phi3_3seq", 1e-2f, 0.0f, "phi3 (fused q|k|v and gate|up, NeoX rope); f16 cache, as above"},
    // gemma2: the sliding window (8) in layer 0, soft-capped scores and logits, GeGLU; bloom: ALiBi,
    // LayerNorms, GELU. Measured max |diff| (2026-12-01; scalar / avx2 / avx512) below. Both GELUs go
    // through ggml's table of halves as llama.cpp's do: with an exact GELU instead no row agrees to 1e-4 and
    // the largest difference grows to 0.004 / 0.006, so exact_frac also checks that the table is used.
    {"gemma2_3seq", 1e-2f, 0.2f, "f16 cache, as above; measured 0.0016 / 0.0017 / 0.0009, 31-43% of rows"},
    {"bloom_3seq", 1e-2f, 0.2f, "f16 cache, as above; measured 0.0021 / 0.0020 / 0.0020, 65-71% of rows"},
    // mamba: no attention; each sequence's recurrent state (convolution and SSM, f32 as in llama.cpp) goes on
    // across the micro-batches of 16. F32 weights and state: summation order only, as the f32 stories cases.
    // Measured max |diff| (2026-12-01; scalar / avx2 / avx512): 1.9e-6 at each.
    {"mamba_3seq", 1e-3f, 1.0f, "recurrent state (f32), conv and selective scan across micro-batches"},
};

class GoldenLogits : public ::testing::TestWithParam<Tolerance> {};

TEST_P(GoldenLogits, MatchesLlamaCpp) {
    const Tolerance &tol = GetParam();
    const std::string dir = testing::fixtures_dir() + "/golden/";
    const nlohmann::json c = testing::read_json(dir + "cases/" + tol.name + ".json");
    auto model = Model::load(dir + c["model"].get<std::string>());
    const testing::GoldenRun run = testing::run_logits_case(*model, c);
    const std::vector<float> want = testing::read_f32(dir + "cases/" + c["data_file"].get<std::string>());
    ASSERT_EQ(run.rows.size(), want.size()) << "row count differs";
    float max_diff = 0.0f;
    size_t worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const float d = std::fabs(run.rows[i] - want[i]);
        ASSERT_FALSE(std::isnan(run.rows[i])) << "NaN at " << i;
        if (d > max_diff) {
            max_diff = d;
            worst = i;
        }
    }
    size_t exact_rows = 0;
    const size_t n_rows = want.size() / run.row_len;
    for (size_t r = 0; r < n_rows; ++r) {
        float row_max = 0.0f;
        for (size_t i = 0; i < run.row_len; ++i)
            row_max = std::max(row_max, std::fabs(run.rows[r * run.row_len + i] - want[r * run.row_len + i]));
        exact_rows += row_max <= 1e-4f;
    }
    const double frac = static_cast<double>(exact_rows) / static_cast<double>(n_rows);
    EXPECT_GE(frac, tol.exact_frac) << exact_rows << " of " << n_rows << " rows agree to 1e-4";
    RecordProperty("max_abs_diff", std::to_string(max_diff));
    std::printf("[ %s ] max |diff| = %.6g (row %zu, tolerance %.3g: %s); rows within 1e-4: %.0f%%\n",
                tol.name, max_diff, worst / run.row_len, tol.max_abs, tol.why, 100.0 * frac);
    EXPECT_LE(max_diff, tol.max_abs) << "worst at row " << worst / run.row_len << " col "
                                     << worst % run.row_len;
}

INSTANTIATE_TEST_SUITE_P(Families, GoldenLogits, ::testing::ValuesIn(kTolerances),
                         [](const ::testing::TestParamInfo<Tolerance> &info) {
                             return std::string(info.param.name);
                         });

}  // namespace
}  // namespace lctx::golden_logits_test
