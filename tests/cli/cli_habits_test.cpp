// What a llama.cpp user types: its multi-letter options, empty values, Ctrl-C, help, directories where
// files belong. Each gets the behaviour of llama.cpp or one clear error line, never a silent surprise.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"

namespace cli_habits_test {
namespace {

namespace fs = std::filesystem;
using lctx::testing::CliProcess;
using lctx::testing::run_cli;
using lctx::testing::temp_file;

size_t count_lines(const std::string &s) {
    size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

bool has(const std::string &s, const std::string &what) {
    return s.find(what) != std::string::npos;
}

// ---- llama.cpp's multi-letter options ----

TEST(CliHabits, DownloadOptionsAreRefusedByName) {
    for (const char *cmd : {"run", "bench", "serve", "embed"}) {
        for (const char *opt : {"-hf", "-hfr", "-hff", "-hft"}) {
            const auto r = run_cli(std::string(cmd) + " " + opt + " ggml-org/some-model-GGUF", true);
            EXPECT_EQ(r.status, 1) << cmd << " " << opt << ": " << r.out;
            EXPECT_TRUE(has(r.out, std::string(opt) + ": downloading is not supported: pass -m FILE"))
                << cmd << " " << opt << ": " << r.out;
            EXPECT_FALSE(has(r.out, "Usage")) << "help was printed: " << r.out;
            EXPECT_EQ(count_lines(r.out), 1u) << r.out;
        }
    }
}

TEST(CliHabits, UnknownMultiLetterOptionsAreRefusedByWholeName) {
    for (const char *args : {"run -ctx 512", "run -dt 0.1", "run -lv 3", "bench -mmp 0"}) {
        const auto r = run_cli(args, true);
        EXPECT_EQ(r.status, 1) << args << ": " << r.out;
        const std::string opt = std::string(args).substr(std::string(args).find(' ') + 1);
        EXPECT_TRUE(has(r.out, opt.substr(0, opt.find(' ')) + ": not an option of lctx"))
            << args << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << r.out;
    }
}

TEST(CliHabits, ColorShortFormIsAccepted) {
    const auto r = run_cli("run -co -n 2 --temp 0 -p Hello -q", true);
    EXPECT_EQ(r.status, 0) << r.out;
}

// ---- empty values ----

TEST(CliHabits, EmptyNumbersAreRefused) {
    for (const char *opt : {"--temp", "-n", "-c", "--top-k", "-t"}) {
        const auto r = run_cli(std::string("run -p Hello ") + opt + " ''", true);
        EXPECT_EQ(r.status, 1) << opt << ": " << r.out;
        EXPECT_TRUE(has(r.out, "an empty value is not a number")) << opt << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << r.out;
    }
}

// ---- run ----

TEST(CliHabits, CtrlCEndsRunWith130) {
    CliProcess p({"run", "-n", "-1", "--ignore-eos", "-c", "64", "-p", "Once upon a time"});
    ASSERT_TRUE(p.started());
    ASSERT_TRUE(p.wait_bytes(200)) << p.output();
    p.signal(SIGINT);
    EXPECT_EQ(p.wait_exit(), 130) << p.output();
    EXPECT_TRUE(has(p.output(), "stopped: interrupted")) << p.output();
}

TEST(CliHabits, PromptFromFileAndFlagIsRefused) {
    const std::string f = temp_file("prompt.txt");
    std::ofstream(f) << "Once upon a time";
    const auto r = run_cli("run -f " + f + " -p Hello -n 2", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(has(r.out, "-f and -p both give the prompt")) << r.out;
    EXPECT_EQ(count_lines(r.out), 1u) << r.out;
    fs::remove(f);
}

// The timing line counts every prompt token as prompt and every generated token once, whatever the batch.
TEST(CliHabits, TimingLineCountsPromptAndGeneration) {
    const auto j = run_cli("run --json -n 3 --temp 0 --ignore-eos -p Hello");
    ASSERT_EQ(j.status, 0) << j.out;
    const size_t n_prompt = nlohmann::json::parse(j.out)["prompt_ids"].size();
    ASSERT_GT(n_prompt, 1u);
    const auto b1 = run_cli("run -n 3 --temp 0 --ignore-eos -b 1 -p Hello", true);
    ASSERT_EQ(b1.status, 0) << b1.out;
    EXPECT_TRUE(has(b1.out, "prompt: " + std::to_string(n_prompt) + " tokens")) << b1.out;
    EXPECT_TRUE(has(b1.out, "generation: 3 tokens")) << b1.out;
    const auto one = run_cli("run -n 3 --temp 0 --ignore-eos -p ''", true);  // BOS alone
    ASSERT_EQ(one.status, 0) << one.out;
    EXPECT_TRUE(has(one.out, "prompt: 1 tokens")) << one.out;
    EXPECT_TRUE(has(one.out, "generation: 3 tokens")) << one.out;
}

// ---- serve, help, unknown options ----

TEST(CliHabits, ServeWithAMissingModelSaysNothingOfSignals) {
    const auto r = run_cli("serve -m /no/such/model.gguf --port 0", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(has(r.out, "/no/such/model.gguf")) << r.out;
    EXPECT_FALSE(has(r.out, "SIGTERM")) << r.out;
    EXPECT_FALSE(has(r.out, "shutting down")) << r.out;
}

TEST(CliHabits, HelpGoesToStdout) {
    for (const char *h : {"--help", "-h"}) {
        const auto r = run_cli(h);  // stderr dropped
        EXPECT_EQ(r.status, 0) << r.out;
        EXPECT_TRUE(has(r.out, "usage: lctx <command>")) << h << ": " << r.out;
    }
}

TEST(CliHabits, UnknownOptionsAreListedInTheOrderGiven) {
    const auto r = run_cli("run -n 2 --first-unknown --second-unknown third", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(has(r.out, "--first-unknown --second-unknown third")) << r.out;
}

// ---- directories where a file belongs ----

TEST(CliHabits, DirectoriesGivenAsFilesAreOneLineNamingThem) {
    const std::string dir = temp_file("a_dir");
    fs::create_directories(dir);
    const std::string text = temp_file("input.txt"), msgs = temp_file("msgs.json");
    std::ofstream(text) << "abc";
    std::ofstream(msgs) << R"([{"role": "user", "content": "hi"}])";
    struct Case {
        std::string args;
        int status;
    };
    for (const Case &c :
         {Case{"grammar check " + dir + " " + text, 2}, Case{"grammar check " + text + " " + dir, 2},
          Case{"run -n 2 -f " + dir, 1}, Case{"run -n 2 -p Hi --grammar-file " + dir, 1},
          Case{"template --file " + dir + " --messages " + msgs, 1}}) {
        const auto r = run_cli(c.args, true);
        EXPECT_EQ(r.status, c.status) << c.args << ": " << r.out;
        EXPECT_TRUE(has(r.out, "'" + dir + "' is a directory")) << c.args << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << c.args << ": " << r.out;
    }
    fs::remove_all(dir);
    fs::remove(text);
    fs::remove(msgs);
}

}  // namespace
}  // namespace cli_habits_test
