// lctx embed: vectors per text against llama.cpp's golden embeddings of the same texts, the output forms
// (--json, --normalize, none pooling), texts split over several passes, rank scores, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

namespace lctx::testing::embed_cli_test {
namespace {

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";

std::vector<std::vector<float>> parse_rows(const std::string &out) {
    std::vector<std::vector<float>> rows;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::istringstream ls(line);
        std::vector<float> row;
        float v;
        while (ls >> v) row.push_back(v);
        rows.push_back(row);
    }
    return rows;
}

std::vector<float> golden_rows(const std::string &name) {
    const std::string path = std::string(LCTX_FIXTURES_DIR) + "/golden/cases/" + name + ".embeddings.f32";
    std::ifstream f(path, std::ios::binary);
    std::vector<float> v;
    float x;
    while (f.read(reinterpret_cast<char *>(&x), sizeof x)) v.push_back(x);
    return v;
}

// The golden cases embed these three texts (fixtures/golden/cases/bert_embd_*.json).
const std::string kTexts =
    "'hello world' 'The quick brown fox jumps over the lazy dog.' 'llama.cpp computes embeddings'";

// Printed with 6 decimals; the bound is the model tests' (tests/model/golden_embd_test.cpp: a GELU input
// rounded to the neighbouring half by another summation order moves a text's rows by up to ~5e-4).
TEST(EmbedCli, MatchesLlamaCppGoldens) {
    for (const std::string pooling : {"mean", "cls", "last"}) {
        const CliResult r = run_cli("embed -q -m " + kBert + " --pooling " + pooling + " " + kTexts);
        ASSERT_EQ(r.status, 0) << r.out;
        const std::vector<std::vector<float>> rows = parse_rows(r.out);
        const std::vector<float> want = golden_rows("bert_embd_" + pooling);
        ASSERT_EQ(rows.size(), 3u) << r.out;
        for (size_t i = 0; i < rows.size(); ++i) {
            ASSERT_EQ(rows[i].size(), 32u);
            for (size_t k = 0; k < 32; ++k) EXPECT_NEAR(rows[i][k], want[i * 32 + k], 2e-3) << pooling;
        }
    }
    // The model's own pooling (bert.pooling_type = CLS) when none is given.
    const CliResult def = run_cli("embed -q -m " + kBert + " " + kTexts);
    const CliResult cls = run_cli("embed -q -m " + kBert + " --pooling cls " + kTexts);
    EXPECT_EQ(def.out, cls.out);
}

TEST(EmbedCli, NonePoolingGivesEveryToken) {
    const CliResult r = run_cli("embed -q -m " + kBert + " --pooling none " + kTexts);
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<float> want = golden_rows("bert_embd_none");
    const std::vector<std::vector<float>> rows = parse_rows(r.out);
    ASSERT_EQ(rows.size() * 32, want.size());
    for (size_t i = 0; i < rows.size(); ++i)
        for (size_t k = 0; k < 32; ++k) EXPECT_NEAR(rows[i][k], want[i * 32 + k], 2e-3);
}

TEST(EmbedCli, JsonAndNormalize) {
    const CliResult r = run_cli("embed -m " + kBert + " --pooling mean --normalize --json " + kTexts);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["pooling"], "mean");
    ASSERT_EQ(j["data"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(j["data"][i]["index"], i);
        double sum = 0;
        for (float v : j["data"][i]["embedding"].get<std::vector<float>>()) sum += double(v) * v;
        EXPECT_NEAR(sum, 1.0, 1e-5);
    }
}

// One text per pass gives what one pass over all of them gives.
TEST(EmbedCli, SeveralPassesGiveTheSameVectors) {
    const CliResult one = run_cli("embed -q -m " + kBert + " --pooling mean " + kTexts);
    const CliResult split = run_cli("embed -q -m " + kBert + " --pooling mean --n-seq-max 1 " + kTexts);
    const CliResult small = run_cli("embed -q -m " + kBert + " --pooling mean -b 16 " + kTexts);
    ASSERT_EQ(one.status, 0);
    const std::vector<std::vector<float>> a = parse_rows(one.out), b = parse_rows(split.out),
                                          c = parse_rows(small.out);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    ASSERT_EQ(c.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
        for (size_t k = 0; k < 32; ++k) {
            EXPECT_NEAR(a[i][k], b[i][k], 2e-6);
            EXPECT_NEAR(a[i][k], c[i][k], 2e-6);
        }
}

// llama-embedding's -p: the texts separated by --embd-separator (a newline by default), each its own
// sequence.
TEST(EmbedCli, PromptSplitBySeparator) {
    const CliResult args = run_cli("embed -q -m " + kBert + " --pooling mean " + kTexts);
    const CliResult sep = run_cli(
        "embed -q -m " + kBert +
        " --pooling mean --embd-separator '<#sep#>' -p 'hello world<#sep#>The quick brown fox jumps over the "
        "lazy dog.<#sep#>llama.cpp computes embeddings'");
    const CliResult nl = run_cli("embed -q -m " + kBert +
                                 " --pooling mean -p $'hello world\\nThe quick brown fox jumps over the lazy "
                                 "dog.\\nllama.cpp computes embeddings'");
    ASSERT_EQ(args.status, 0) << args.out;
    ASSERT_EQ(sep.status, 0) << sep.out;
    ASSERT_EQ(nl.status, 0) << nl.out;
    EXPECT_EQ(parse_rows(args.out).size(), 3u);
    EXPECT_EQ(sep.out, args.out);
    EXPECT_EQ(nl.out, args.out);
    const CliResult empty_sep = run_cli("embed -m " + kBert + " --embd-separator '' -p 'a b'", true);
    EXPECT_EQ(empty_sep.status, 1);
    EXPECT_NE(empty_sep.out.find("--embd-separator"), std::string::npos) << empty_sep.out;
}

std::vector<std::vector<float>> json_rows(const nlohmann::json &a) {
    std::vector<std::vector<float>> rows;
    for (const nlohmann::json &r : a) rows.push_back(r.get<std::vector<float>>());
    return rows;
}

// --embd-normalize N against each norm computed here from the raw vectors (printed with 7 decimals).
TEST(EmbedCli, EmbdNormalizeKinds) {
    const std::string base = "embed -q -m " + kBert + " --pooling mean --embd-output-format array ";
    const CliResult raw = run_cli(base + "--embd-normalize -1 " + kTexts);
    ASSERT_EQ(raw.status, 0) << raw.out;
    const std::vector<std::vector<float>> x = json_rows(nlohmann::json::parse(raw.out));
    ASSERT_EQ(x.size(), 3u);
    // The raw rows are the plain output's (no normalization by default).
    const std::vector<std::vector<float>> plain =
        parse_rows(run_cli("embed -q -m " + kBert + " --pooling mean " + kTexts).out);
    ASSERT_EQ(plain.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
        for (size_t k = 0; k < 32; ++k) EXPECT_NEAR(plain[i][k], x[i][k], 1e-6);
    for (int kind : {0, 1, 2, 3, 5}) {
        const CliResult r = run_cli(base + "--embd-normalize " + std::to_string(kind) + " " + kTexts);
        ASSERT_EQ(r.status, 0) << r.out;
        const std::vector<std::vector<float>> y = json_rows(nlohmann::json::parse(r.out));
        ASSERT_EQ(y.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
            double d = 0;
            for (float v : x[i]) {
                const double a = std::fabs(double(v));
                d = kind == 0 ? std::max(d, a) : d + std::pow(a, kind);
            }
            d = kind == 0 ? d / 32760.0 : std::pow(d, 1.0 / kind);
            ASSERT_EQ(y[i].size(), x[i].size());
            for (size_t k = 0; k < x[i].size(); ++k) {
                if (kind == 0)  // printed as integers: the int16 range
                    EXPECT_NEAR(y[i][k], x[i][k] / d, 0.51 + 1e-3 * std::fabs(x[i][k] / d)) << kind;
                else
                    EXPECT_NEAR(y[i][k], x[i][k] / d, 2e-6 + 1e-4 * std::fabs(x[i][k] / d)) << kind;
            }
        }
    }
    // --normalize is --embd-normalize 2.
    const CliResult e2 = run_cli(base + "--embd-normalize 2 " + kTexts);
    const CliResult n2 = run_cli(base + "--normalize " + kTexts);
    EXPECT_EQ(e2.out, n2.out);
    const CliResult bad = run_cli("embed -m " + kBert + " --embd-normalize -2 hello", true);
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.out.find("--embd-normalize"), std::string::npos) << bad.out;
}

// --embd-output-format: llama-embedding's array, OpenAI-style json, and json+ with the cosine similarities.
TEST(EmbedCli, LlamaOutputFormats) {
    const std::string base =
        "embed -q -m " + kBert + " --pooling mean --embd-normalize -1 --embd-output-format ";
    const CliResult arr = run_cli(base + "array " + kTexts);
    ASSERT_EQ(arr.status, 0) << arr.out;
    const std::vector<std::vector<float>> x = json_rows(nlohmann::json::parse(arr.out));
    ASSERT_EQ(x.size(), 3u);
    const CliResult js = run_cli(base + "json " + kTexts);
    ASSERT_EQ(js.status, 0) << js.out;
    const nlohmann::json j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["object"], "list");
    ASSERT_EQ(j["data"].size(), 3u);
    EXPECT_FALSE(j.contains("cosineSimilarity"));
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(j["data"][i]["object"], "embedding");
        EXPECT_EQ(j["data"][i]["index"], i);
        EXPECT_EQ(j["data"][i]["embedding"].get<std::vector<float>>(), x[i]);
    }
    const CliResult jp = run_cli(base + "json+ " + kTexts);
    ASSERT_EQ(jp.status, 0) << jp.out;
    const nlohmann::json p = nlohmann::json::parse(jp.out);
    ASSERT_EQ(p["data"].size(), 3u);
    ASSERT_EQ(p["cosineSimilarity"].size(), 3u);
    for (size_t a = 0; a < 3; ++a) {
        ASSERT_EQ(p["cosineSimilarity"][a].size(), 3u);
        for (size_t b = 0; b < 3; ++b) {
            double ab = 0, aa = 0, bb = 0;
            for (size_t k = 0; k < x[a].size(); ++k) {
                ab += double(x[a][k]) * x[b][k];
                aa += double(x[a][k]) * x[a][k];
                bb += double(x[b][k]) * x[b][k];
            }
            EXPECT_NEAR(p["cosineSimilarity"][a][b].get<double>(), ab / std::sqrt(aa * bb), 0.0051);
        }
    }
    // One text: no matrix. None pooling: a row per token.
    const CliResult one = run_cli(base + "json+ hello");
    ASSERT_EQ(one.status, 0) << one.out;
    EXPECT_FALSE(nlohmann::json::parse(one.out).contains("cosineSimilarity"));
    const CliResult none =
        run_cli("embed -q -m " + kBert + " --pooling none --embd-output-format array hello");
    ASSERT_EQ(none.status, 0) << none.out;
    EXPECT_EQ(nlohmann::json::parse(none.out).size(), 3u);  // [CLS] hello [SEP]
    const CliResult bad = run_cli("embed -m " + kBert + " --embd-output-format xml hello", true);
    EXPECT_EQ(bad.status, 1);
    const CliResult both = run_cli("embed -m " + kBert + " --json --embd-output-format json hello", true);
    EXPECT_EQ(both.status, 1);
}

TEST(EmbedCli, RefusesWhatItCannotDo) {
    const CliResult rank = run_cli("embed -m " + kBert + " --pooling rank 'hello'", true);
    EXPECT_EQ(rank.status, 1);
    EXPECT_NE(rank.out.find("classification head"), std::string::npos) << rank.out;
    std::string long_text;
    for (int i = 0; i < 200; ++i) long_text += "word ";
    const CliResult too_long = run_cli("embed -m " + kBert + " '" + long_text + "'", true);
    EXPECT_EQ(too_long.status, 1);
    EXPECT_NE(too_long.out.find("tokens long"), std::string::npos) << too_long.out;
    const CliResult bad = run_cli("embed -m " + kBert + " --pooling median 'hello'", true);
    EXPECT_EQ(bad.status, 1);
    const CliResult none = run_cli("embed -m " + kBert, true);
    EXPECT_EQ(none.status, 1);
}

TEST(EmbedCli, RankScoresEachText) {
    const std::string path = temp_file("rerank.gguf");
    const CliResult s = run_cli("synth --shape bert-rerank-tiny --type F32 -o " + path, true);
    ASSERT_EQ(s.status, 0) << s.out;
    // The reranker's own pooling is rank: one score per text.
    const CliResult r = run_cli("embed -q -m " + path + " 'a cat' 'a dog' 'the stock market'");
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<std::vector<float>> rows = parse_rows(r.out);
    ASSERT_EQ(rows.size(), 3u);
    for (const std::vector<float> &row : rows) EXPECT_EQ(row.size(), 1u);
    const CliResult j = run_cli("embed -m " + path + " --json --query 'pets' 'a cat' 'a dog'");
    ASSERT_EQ(j.status, 0) << j.out;
    const nlohmann::json doc = nlohmann::json::parse(j.out);
    ASSERT_EQ(doc["data"].size(), 2u);
    EXPECT_TRUE(doc["data"][0]["score"].is_number());
    EXPECT_NE(doc["data"][0]["score"], doc["data"][1]["score"]);
    const CliResult norm = run_cli("embed -m " + path + " --normalize 'a cat'", true);
    EXPECT_EQ(norm.status, 1);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lctx::testing::embed_cli_test
