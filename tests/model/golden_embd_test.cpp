// BERT embeddings against llama.cpp's golden cases (fixtures/golden/FORMAT.md:
// bert_embd_{mean,cls,last,none}, three texts in one batch, llama_encode), through llama_encode's path and
// through a decode with embeddings on, each with an f32 and with the default f16 cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "golden_runner.h"

namespace lctx::golden_embd_test {
namespace {

// The synthetic bert.gguf has F32 matrices (F16 only in the embedding table, whose lookup is exact) and an
// f32 cache on both paths here, and GELU goes through ggml's table of halves as llama.cpp's: so most rows
// agree to float rounding (~5e-7). A row can differ more where a GELU input lies within float rounding of the
// midpoint between two halves: another summation order rounds it to the neighbouring half (2^-11 of the
// value), which moves that token's state, and, in a layer before the last, every token of its sequence
// through the non-causal attention. Measured (2026-12-01): scalar and avx2 one flip, in the last layer (one
// row, 9e-5); avx512 one flip in layer 0 of the second text (its rows 3e-5 to 4.5e-4, pooled rows up to
// 8e-5); every other row within 1e-6. So max_abs bounds a flip (a half's rounding of an input below 10,
// through ffn_down and the norm) and exact_frac catches a systematic error, which would move every row: a
// missing bias, another epsilon, or an exact GELU.
constexpr float kMaxAbs = 2e-3f;
constexpr float kExactFrac = 0.3f;  // of the rows within 1e-5
// Each case with an f32 cache and with the default f16 one: an encoder keeps its keys and values in f32
// within the batch whatever the cache type (b4748 never touches the cache for it), so both meet the same
// bounds.
struct Case {
    const char *name;
    testing::EmbedPath path;
    GgmlType kv = GgmlType::F32;
};

void PrintTo(const Case &c, std::ostream *os) {
    *os << c.name << (c.path == testing::EmbedPath::Encode ? " encode" : " decode")
        << (c.kv == GgmlType::F16 ? " f16 cache" : " f32 cache");
}

class GoldenEmbeddings : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenEmbeddings, MatchesLlamaCpp) {
    const Case &tc = GetParam();
    const std::string dir = testing::fixtures_dir() + "/golden/";
    const nlohmann::json c = testing::read_json(dir + "cases/" + tc.name + ".json");
    auto model = Model::load(dir + c["model"].get<std::string>());
    const testing::GoldenRun run = testing::run_embed_case(*model, c, tc.path, tc.kv);
    const std::vector<float> want = testing::read_f32(dir + "cases/" + c["data_file"].get<std::string>());
    ASSERT_EQ(run.rows.size(), want.size()) << "row count differs";
    ASSERT_EQ(run.row_len, c["row_len"].get<size_t>());
    float max_diff = 0.0f;
    size_t worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_TRUE(std::isfinite(run.rows[i])) << "not finite at " << i;
        const float d = std::fabs(run.rows[i] - want[i]);
        if (d > max_diff) {
            max_diff = d;
            worst = i;
        }
    }
    const size_t n_rows = want.size() / run.row_len;
    size_t exact_rows = 0;
    for (size_t r = 0; r < n_rows; ++r) {
        float row_max = 0.0f;
        for (size_t k = 0; k < run.row_len; ++k)
            row_max = std::max(row_max, std::fabs(run.rows[r * run.row_len + k] - want[r * run.row_len + k]));
        exact_rows += row_max <= 1e-5f;
    }
    const double frac = static_cast<double>(exact_rows) / static_cast<double>(n_rows);
    std::printf("[ %s %s %s ] max |diff| = %.3g (row %zu), tolerance %.3g; rows within 1e-5: %zu of %zu\n",
                tc.name, tc.path == testing::EmbedPath::Encode ? "encode" : "decode",
                tc.kv == GgmlType::F16 ? "f16" : "f32", max_diff, worst / run.row_len, kMaxAbs, exact_rows,
                n_rows);
    EXPECT_GE(frac, kExactFrac) << exact_rows << " of " << n_rows << " rows agree to 1e-5";
    EXPECT_LE(max_diff, kMaxAbs) << "worst at row " << worst / run.row_len << " col " << worst % run.row_len;
}

INSTANTIATE_TEST_SUITE_P(Bert, GoldenEmbeddings,
                         ::testing::Values(Case{"bert_embd_mean", testing::EmbedPath::Encode},
                                           Case{"bert_embd_cls", testing::EmbedPath::Encode},
                                           Case{"bert_embd_last", testing::EmbedPath::Encode},
                                           Case{"bert_embd_none", testing::EmbedPath::Encode},
                                           Case{"bert_embd_mean", testing::EmbedPath::Decode},
                                           Case{"bert_embd_cls", testing::EmbedPath::Decode},
                                           Case{"bert_embd_last", testing::EmbedPath::Decode},
                                           Case{"bert_embd_none", testing::EmbedPath::Decode},
                                           Case{"bert_embd_mean", testing::EmbedPath::Encode, GgmlType::F16},
                                           Case{"bert_embd_cls", testing::EmbedPath::Encode, GgmlType::F16},
                                           Case{"bert_embd_last", testing::EmbedPath::Encode, GgmlType::F16},
                                           Case{"bert_embd_none", testing::EmbedPath::Encode, GgmlType::F16},
                                           Case{"bert_embd_mean", testing::EmbedPath::Decode, GgmlType::F16},
                                           Case{"bert_embd_cls", testing::EmbedPath::Decode, GgmlType::F16},
                                           Case{"bert_embd_last", testing::EmbedPath::Decode, GgmlType::F16},
                                           Case{"bert_embd_none", testing::EmbedPath::Decode, GgmlType::F16}),
                         [](const ::testing::TestParamInfo<Case> &info) {
                             return std::string(info.param.name) +
                                    (info.param.path == testing::EmbedPath::Encode ? "_encode" : "_decode") +
                                    (info.param.kv == GgmlType::F16 ? "_kvf16" : "");
                         });

}  // namespace
}  // namespace lctx::golden_embd_test
