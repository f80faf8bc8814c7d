// lctx grammar check, run as a user runs it, on llama.cpp's own verdicts (fixtures/grammar): exit 0 for an
// accepted input, 1 with the code point and the reason for a rejected one, 2 for a refused grammar. Then
// lctx grammar from-schema on the fixture schemas, and lctx run --json-schema with the tiny model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "cli/cli_run.h"
#include "grammar/gbnf.h"

namespace grammar_cli_test {
namespace {

std::string grammar_dir() {
    return std::string(LCTX_FIXTURES_DIR) + "/grammar/";
}

std::string temp_file(const std::string &tag, const std::string &bytes) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx-grammar-" + std::to_string(getpid()) + "-" + tag))
            .string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

// Every case's verdict, position and reason is the library's test (tests/grammar/gbnf_test.cpp); the command
// runs, per fixture grammar, the first case of each outcome it prints (valid, unexpected end of input,
// unexpected character): every grammar file through the command and every line it writes, in 29 processes
// instead of 92 (each a second under the sanitizers).
TEST(CliGrammar, CheckGivesLlamaCppsVerdictForEachGrammarAndOutcome) {
    std::ifstream f(grammar_dir() + "grammar-cases.json");
    const nlohmann::json cases = nlohmann::json::parse(f);
    ASSERT_GE(cases.size(), 90u);
    std::set<std::string> seen;  // grammar file + outcome
    for (size_t i = 0; i < cases.size(); ++i) {
        const nlohmann::json &c = cases[i];
        const std::string outcome =
            c["accepted"].get<bool>() ? "valid" : c["error"].get<std::string>().substr(0, 14);
        if (!seen.insert(c["grammar"].get<std::string>() + "/" + outcome).second) continue;
        const std::string input = temp_file("in", c["input"].get<std::string>());
        const auto r = lctx::testing::run_cli("grammar check " + grammar_dir() +
                                              c["grammar"].get<std::string>() + " " + input);
        std::remove(input.c_str());
        const std::string what = c["grammar"].get<std::string>() + ": " + c["note"].get<std::string>();
        if (c["accepted"].get<bool>()) {
            EXPECT_EQ(r.status, 0) << what << ": " << r.out;
            EXPECT_EQ(r.out, "valid\n") << what;
            continue;
        }
        EXPECT_EQ(r.status, 1) << what << ": " << r.out;
        std::string reason = c["error"].get<std::string>();
        reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
        EXPECT_EQ(r.out, "invalid at code point " + std::to_string(c["error_pos"].get<size_t>()) + ": " +
                             reason + "\n")
            << what;
    }
    EXPECT_GE(seen.size(), 29u);  // the fixtures' grammar files and outcomes, each run once
}

TEST(CliGrammar, ARefusedGrammarExitsTwoWithTheReason) {
    const std::string g = temp_file("bad.gbnf", "root ::= root \"a\" | \"b\"\n");
    const std::string in = temp_file("bad.in", "b");
    const auto r = lctx::testing::run_cli("grammar check " + g + " " + in, true);
    std::remove(g.c_str());
    std::remove(in.c_str());
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("left recursion"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("line 1"), std::string::npos) << r.out;
    EXPECT_EQ(lctx::testing::run_cli("grammar check /no/such.gbnf /no/such.txt", true).status, 2);
}

TEST(CliGrammar, FromSchemaPrintsLlamaCppsGrammarForEveryFixtureSchema) {
    std::ifstream f(grammar_dir() + "schema-cases.json");
    const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(f);
    ASSERT_EQ(cases.size(), 15u);
    for (const nlohmann::ordered_json &c : cases) {
        const std::string schema = temp_file("schema.json", c["schema"].dump(2));
        const auto r = lctx::testing::run_cli("grammar from-schema " + schema);
        std::remove(schema.c_str());
        EXPECT_EQ(r.status, 0) << c["name"];
        EXPECT_EQ(r.out, c[c["samples_validated_against"].get<std::string>()].get<std::string>())
            << c["name"];
    }
}

TEST(CliGrammar, FromSchemaRefusesWhatItCannotConvert) {
    const std::string bad =
        temp_file("bad.json", R"({"type": "object", "properties": {"a": {"type": "kaboom"}}})");
    auto r = lctx::testing::run_cli("grammar from-schema " + bad, true);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(r.out, "lctx grammar: " + bad + ": unknown type 'kaboom' (at /properties/a/type)\n");
    std::ofstream(bad) << R"({"$ref": "https://example.com/s.json"})";
    r = lctx::testing::run_cli("grammar from-schema " + bad, true);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("only references inside it"), std::string::npos) << r.out;
    std::ofstream(bad) << "{not json";
    r = lctx::testing::run_cli("grammar from-schema " + bad, true);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("not valid JSON"), std::string::npos) << r.out;
    std::remove(bad.c_str());
    r = lctx::testing::run_cli("grammar from-schema /no/such/schema.json", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_EQ(r.out, "lctx grammar: cannot read '/no/such/schema.json': No such file or directory\n");
}

// The model writes JSON of the schema's shape and stops when the object is complete (the grammar then
// allows only the end of text).
TEST(CliGrammar, RunWithAJsonSchemaWritesMatchingJson) {
    const std::string schema =
        R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},)"
        R"( "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]})";
    for (const char *sampling : {"--temp 0", "--temp 0.8 -s 1", "--temp 0.8 -s 2", "--temp 1.5 -s 3"}) {
        const auto r = lctx::testing::run_cli("run --json -m " + std::string(LCTX_MODELS_DIR) +
                                              "/stories260K.gguf -p Once -n 96 " + sampling +
                                              " --json-schema '" + schema + "'");
        ASSERT_EQ(r.status, 0) << sampling << ": " << r.out;
        const nlohmann::json run = nlohmann::json::parse(r.out);
        EXPECT_EQ(run["stop"], "end of text") << sampling << ": " << r.out;
        const nlohmann::json out = nlohmann::json::parse(run["text"].get<std::string>(), nullptr, false);
        ASSERT_FALSE(out.is_discarded()) << sampling << ": " << run["text"];
        ASSERT_TRUE(out.is_object()) << out;
        EXPECT_EQ(out.size(), 2u) << out;
        ASSERT_TRUE(out.contains("name") && out["name"].is_string()) << out;
        EXPECT_LE(lctx::grammar::decode_utf8(out["name"].get<std::string>()).size(), 8u) << out;
        ASSERT_TRUE(out.contains("age") && out["age"].is_number_integer()) << out;
        EXPECT_GE(out["age"].get<int>(), 0) << out;
        EXPECT_LE(out["age"].get<int>(), 120) << out;
    }
}

// In a chat the grammar starts over with each reply.
TEST(CliGrammar, ChatWithAJsonSchemaAnswersEachTurnWithMatchingJson) {
    const auto r = lctx::testing::run_cli(
        "chat --json -m " + std::string(LCTX_MODELS_DIR) + "/stories260K.gguf -n 64 --temp 0 -j " +
        R"('{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a"]}')" +
        " <<< $'hi\\nhello again\\nand once more'");
    ASSERT_EQ(r.status, 0) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    size_t replies = 0;
    while (std::getline(lines, line)) {
        const nlohmann::json turn = nlohmann::json::parse(line);
        EXPECT_EQ(turn["stop"], "end of text") << line;
        const nlohmann::json out = nlohmann::json::parse(turn["reply"].get<std::string>(), nullptr, false);
        ASSERT_TRUE(out.is_object()) << line;
        ASSERT_TRUE(out.contains("a") && out["a"].is_number_integer()) << line;
        EXPECT_GE(out["a"].get<int>(), 0);
        EXPECT_LE(out["a"].get<int>(), 9);
        ++replies;
    }
    EXPECT_EQ(replies, 3u) << r.out;
}

}  // namespace
}  // namespace grammar_cli_test
