// lctx grammar check, run as a user runs it, on llama.cpp's own verdicts (fixtures/grammar): exit 0 for an
// accepted input, 1 with the code point and the reason for a rejected one, 2 for a refused grammar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli_run.h"

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

TEST(CliGrammar, CheckGivesLlamaCppsVerdictOnEveryCase) {
    std::ifstream f(grammar_dir() + "grammar-cases.json");
    const nlohmann::json cases = nlohmann::json::parse(f);
    ASSERT_GE(cases.size(), 90u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const nlohmann::json &c = cases[i];
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

}  // namespace
