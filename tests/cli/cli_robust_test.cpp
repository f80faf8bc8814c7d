// The CLI as a llama.cpp user drives it: bad values are clear errors (never an abort), partial outputs
// are removed, Ctrl-C stops a reply without ending the chat, and llama.cpp's options behave as there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/cli_run.h"

namespace cli_robust_test {
namespace {

using lctx::testing::CliProcess;
using lctx::testing::run_cli;
using lctx::testing::temp_file;

std::string models_dir() {
    return LCTX_MODELS_DIR;
}

size_t count_lines(const std::string &s) {
    size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

// ---- crashes and lost work ----

TEST(CliRobust, NanAndOutOfRangeSamplingValuesAreClearErrors) {
    for (const char *cmd : {"run", "chat"}) {
        for (const char *opt : {"--temp nan", "--temp inf", "--top-p nan", "--top-p 1.5", "--min-p -1",
                                "--repeat-penalty nan", "--seed -5", "--mirostat 7", "--xtc-probability 2"}) {
            const auto r = run_cli(std::string(cmd) + " -n 4 " + opt, true);
            EXPECT_EQ(r.status, 1) << cmd << " " << opt << ": " << r.out;
            const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
            EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
            EXPECT_EQ(count_lines(r.out), 1u) << r.out;
        }
    }
}

// A model whose weights hold NaN: 4 KiB of the stories model's tensor data overwritten.
TEST(CliRobust, NanWeightsAreReportedNotAborted) {
    const std::string src = models_dir() + "/stories260K.gguf";
    std::ifstream in(src, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 8192u);
    const float nan = std::nanf("");
    for (size_t off = bytes.size() - 4096; off < bytes.size(); off += 4) std::memcpy(&bytes[off], &nan, 4);
    const std::string path = temp_file("nan.gguf");
    std::ofstream(path, std::ios::binary) << bytes;
    for (const char *cmd : {"run -n 4 -p hi", "run -n 4 -p hi --temp 0"}) {
        const auto r = run_cli(std::string(cmd) + " -m " + path, true);
        EXPECT_EQ(r.status, 1) << r.out;
        EXPECT_NE(r.out.find("NaN"), std::string::npos) << r.out;
    }
    const auto c = run_cli("chat -n 4 -m " + path + " <<< hello", true);
    EXPECT_EQ(c.status, 1) << c.out;
    EXPECT_NE(c.out.find("NaN"), std::string::npos) << c.out;
    std::filesystem::remove(path);
}

TEST(CliRobust, SynthToADirectoryFailsAndLeavesNoPartialFile) {
    const std::string dir = temp_file("outdir");
    std::filesystem::create_directories(dir + "/x");
    const auto r = run_cli("synth --shape tiny --type Q4_0 -o " + dir, true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("directory"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir + ".part"));
    std::filesystem::remove_all(dir);
}

// Ctrl-C during a reply stops that reply; the conversation goes on; at the prompt it ends the chat.
TEST(CliRobust, CtrlCStopsTheReplyAndTheChatGoesOn) {
    // -n -1 with --ignore-eos: a reply that only Ctrl-C ends (the context shifts forever).
    CliProcess p({"chat", "-c", "64", "-n", "-1", "--ignore-eos", "--seed", "7"});
    ASSERT_TRUE(p.started());
    p.write_line("Once upon a time");
    ASSERT_TRUE(p.wait_bytes(500)) << p.output();  // the reply is well under way
    p.signal(SIGINT);
    ASSERT_TRUE(p.wait_for("[reply stopped]")) << p.output();
    const size_t after_first = p.output().size();
    p.write_line("The dog ran");
    ASSERT_TRUE(p.wait_bytes(500, after_first)) << p.output();
    p.signal(SIGINT);
    ASSERT_TRUE(p.wait_for("[reply stopped]", after_first)) << p.output();
    // The context shifts of a reply are noted after it, on their own lines.
    EXPECT_NE(p.output().find("\n[context shift"), std::string::npos);
    // At the prompt (no reply running) Ctrl-C ends the chat.
    p.signal(SIGINT);
    EXPECT_EQ(p.wait_exit(), 130) << p.output();
}

TEST(CliRobust, SecondCtrlCDuringAReplyEndsTheChat) {
    CliProcess p({"chat", "-c", "64", "-n", "-1", "--ignore-eos"});
    ASSERT_TRUE(p.started());
    p.write_line("Once upon a time");
    ASSERT_TRUE(p.wait_bytes(500)) << p.output();
    ASSERT_TRUE(p.signal_delivered(SIGINT));  // taken before the second is sent: two cannot merge into one
    p.signal(SIGINT);
    EXPECT_EQ(p.wait_exit(), 130) << p.output();
}

TEST(CliRobust, PipeEndsTheChatNormally) {
    CliProcess p({"chat", "-n", "8", "--temp", "0", "--json", "-q"});
    p.write_line("Hello");
    p.close_stdin();
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
    EXPECT_EQ(count_lines(p.output()), 1u) << p.output();
}

// ---- llama.cpp's options ----

nlohmann::json run_json(const std::string &args) {
    const auto r = run_cli("run --json " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.out;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(CliOptions, NPredictMinusTwoFillsTheContextAndSaysSo) {
    const nlohmann::json j = run_json("-c 32 -n -2 --ignore-eos --temp 0");
    EXPECT_EQ(j["stop"], "context full");
    EXPECT_EQ(j["prompt_ids"].size() + j["ids"].size(), 32u);
}

TEST(CliOptions, NPredictMinusOneShiftsTheContextAndGoesOn) {
    // Greedy stories text reaches "park." after 27 tokens, beyond a 24-token context.
    const nlohmann::json j = run_json("-c 24 -n -1 --temp 0 -r park.");
    EXPECT_EQ(j["stop"], "reverse prompt");
    EXPECT_GT(j["prompt_ids"].size() + j["ids"].size(), 24u);
    const nlohmann::json k = run_json("-c 24 -n -1 --temp 0 -r park. --no-context-shift");
    EXPECT_EQ(k["stop"], "context full");
    EXPECT_EQ(run_json("-n 5 --temp 0")["stop"], "-n reached");
    EXPECT_EQ(run_cli("run -n -3", true).status, 1);
}

TEST(CliOptions, RandomSeedIsReportedAndReproduces) {
    const nlohmann::json a = run_json("-n 16 --temp 1 --seed -1");
    ASSERT_TRUE(a.contains("seed"));
    const nlohmann::json b = run_json("-n 16 --temp 1 --seed " + std::to_string(a["seed"].get<uint32_t>()));
    EXPECT_EQ(a["ids"], b["ids"]);
    const auto r = run_cli("run -n 4 --temp 1", true);  // no seed: a random one, printed
    EXPECT_NE(r.out.find("seed: "), std::string::npos) << r.out;
}

TEST(CliOptions, PromptFromFileStdinAndEscapes) {
    const std::string f = temp_file("prompt.txt");
    std::ofstream(f) << "Lily and Tom";
    const nlohmann::json want = run_json("-n 4 --temp 0 -p 'Lily and Tom'");
    EXPECT_EQ(run_json("-n 4 --temp 0 -f " + f)["prompt_ids"], want["prompt_ids"]);
    EXPECT_EQ(run_json("-n 4 --temp 0 -p - < " + f)["prompt_ids"], want["prompt_ids"]);
    EXPECT_EQ(run_json("-n 4 --temp 0 < " + f)["prompt_ids"], want["prompt_ids"]);
    // Empty stdin and no -p: the default prompt.
    EXPECT_EQ(run_json("-n 4 --temp 0")["prompt_ids"],
              run_json("-n 4 --temp 0 -p 'Once upon a time'")["prompt_ids"]);
    EXPECT_EQ(run_json("-n 1 --temp 0 -e -p 'a\\nb'")["prompt_ids"],
              run_json("-n 1 --temp 0 -p $'a\\nb'")["prompt_ids"]);
    // Escapes are processed by default, as llama-cli (issue 38); --no-escape keeps them.
    EXPECT_NE(run_json("-n 1 --temp 0 --no-escape -p 'a\\nb'")["prompt_ids"],
              run_json("-n 1 --temp 0 -p $'a\\nb'")["prompt_ids"]);
    const auto shown = run_cli("run -n 4 --temp 0 -p 'Lily and Tom'");
    const auto hidden = run_cli("run -n 4 --temp 0 -p 'Lily and Tom' --no-display-prompt");
    EXPECT_EQ(shown.out.rfind("Lily and Tom", 0), 0u);
    EXPECT_EQ(shown.out.substr(std::string("Lily and Tom").size()), hidden.out);
    EXPECT_EQ(run_cli("run -f /nonexistent/prompt.txt", true).status, 1);
    std::filesystem::remove(f);
}

TEST(CliOptions, HelpShowsTheDefaults) {
    for (const char *cmd : {"run", "chat", "bench", "synth", "tokenize"}) {
        const auto r = run_cli(std::string(cmd) + " --help");
        EXPECT_EQ(r.status, 0) << cmd;
        if (std::string(cmd) == "run" || std::string(cmd) == "chat") {
            EXPECT_NE(r.out.find("--temp FLOAT=0.8"), std::string::npos) << r.out;
            EXPECT_NE(r.out.find("--top-k INT=40"), std::string::npos) << r.out;
            EXPECT_NE(r.out.find("--repeat-last-n INT=64"), std::string::npos) << r.out;
        }
    }
    EXPECT_NE(run_cli("bench --help").out.find("=512"), std::string::npos);
}

TEST(CliOptions, LlamaCppSpellingsAreAccepted) {
    const std::string all =
        "-n 4 -b 8 -ub 4 -t 1 -tb 1 -c 64 -ctk f16 -ctv f32 -fa --keep 2 -r xyz --repeat-last-n -1 "
        "--repeat-penalty 1.1 --mirostat 2 --mirostat-lr 0.2 --mirostat-ent 4 --xtc-probability 0.5 "
        "--xtc-threshold 0.2 --dynatemp-range 0.5 --dynatemp-exp 1.2 --logit-bias 5+1 --logit-bias 6-inf "
        "--ignore-eos --dry-base 2 --no-mmap --mlock --color -q -ngl 99 -s 3 --frequency-penalty 0.1";
    const auto r = run_cli("run " + all, true);
    EXPECT_EQ(r.status, 0) << r.out;
    const auto c = run_cli("chat " + all + " -sys 'Be nice.' --chat-template chatml -cnv -i <<< hello", true);
    EXPECT_EQ(c.status, 0) << c.out;
    // -cnv on run is a conversation, as with llama-cli.
    const auto cnv = run_cli("run -cnv -n 4 --temp 0 --json -q <<< hello");
    EXPECT_EQ(cnv.status, 0) << cnv.out;
    EXPECT_TRUE(nlohmann::json::parse(cnv.out).contains("reply")) << cnv.out;
    EXPECT_NE(run_cli("run -ngl 5 -n 1", true).out.find("runs on the CPU"), std::string::npos);
    EXPECT_EQ(run_cli("--version").status, 0);
    EXPECT_NE(run_cli("run --version").out.find("lctx"), std::string::npos);
}

TEST(CliOptions, GrammarConstrainsTheOutputAndDryRuns) {
    // Sampled (not greedy), so only the grammar keeps the text to lowercase letters and spaces.
    const nlohmann::json j = run_json("-n 24 --temp 1.5 -s 11 --grammar 'root ::= [a-z ]+'");
    const std::string text = j.value("text", std::string("?"));
    EXPECT_FALSE(text.empty());
    for (char c : text) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == ' ') << "'" << text << "'";
    const auto bad = run_cli("run -n 1 --grammar 'root ::= root \"a\"'", true);
    EXPECT_EQ(bad.status, 1) << bad.out;
    EXPECT_NE(bad.out.find("left recursion"), std::string::npos) << bad.out;
    const auto schema = run_cli("run -n 1 --json-schema '{\"type\": \"kaboom\"}'", true);
    EXPECT_EQ(schema.status, 1) << schema.out;
    EXPECT_NE(schema.out.find("--json-schema: unknown type 'kaboom'"), std::string::npos) << schema.out;
    const auto both = run_cli("run -n 1 --json-schema '{}' --grammar 'root ::= \"a\"'", true);
    EXPECT_EQ(both.status, 1) << both.out;
    EXPECT_NE(both.out.find("give one of them"), std::string::npos) << both.out;
    EXPECT_EQ(run_json("-n 8 --temp 0 --dry-multiplier 0.8")["ids"].size(), 8u);
}

TEST(CliOptions, LastOccurrenceWins) {
    EXPECT_EQ(run_json("-n 8 --temp 1 --temp 0 -s 1")["ids"], run_json("-n 8 --temp 0")["ids"]);
    EXPECT_EQ(run_json("-n 3 -n 5 --temp 0")["ids"].size(), 5u);
}

TEST(CliOptions, ParseErrorsNameTheOptionInOneLine) {
    for (const char *bad :
         {"--temp abc", "--top-k 99999999999999999999", "-t x", "--no-such-option", "-c -5"}) {
        const auto r = run_cli(std::string("run ") + bad, true);
        EXPECT_EQ(r.status, 1) << bad << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << r.out;
        EXPECT_LT(r.out.size(), 200u) << r.out;
    }
    EXPECT_NE(run_cli("run --temp abc", true).out.find("--temp"), std::string::npos);
    EXPECT_EQ(run_cli("run --logit-bias 999999+1 -n 1", true).status, 1);
}

TEST(CliOptions, TokenizeTakesTextThatStartsWithADash) {
    const auto a = run_cli("tokenize --ids -- -hello");
    const auto b = run_cli("tokenize --ids -hello");
    const auto c = run_cli("tokenize -hello --ids");
    EXPECT_EQ(a.status, 0);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.out, c.out);
    EXPECT_EQ(run_cli("tokenize --ids -- -n").out, run_cli("tokenize --ids -n").out);
}

TEST(CliOptions, TokenizeWorksOnAVocabularyOnlyFileOfAnyArchitecture) {
    const std::string vocab = std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-falcon.gguf";
    const auto r = run_cli("tokenize --ids -m " + vocab + " 'Hello world'", true);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_FALSE(r.out.empty());
    const auto run = run_cli("run -n 1 -m " + vocab, true);
    EXPECT_EQ(run.status, 1);
    EXPECT_NE(run.out.find("this file has no weights"), std::string::npos) << run.out;
}

TEST(CliChat, UnknownFormatIsAnErrorAndVerboseNamesTheFormat) {
    EXPECT_EQ(run_cli("chat --format nosuch <<< hi", true).status, 1);
    EXPECT_EQ(run_cli("chat --chat-template nosuch <<< hi", true).status, 1);
    const auto v = run_cli("chat -v --format chatml -n 4 <<< hi", true);
    EXPECT_EQ(v.status, 0) << v.out;
    EXPECT_NE(v.out.find("format chatml"), std::string::npos) << v.out;
    const auto p = run_cli("chat --verbose-prompt --format chatml -n 4 <<< hi", true);
    EXPECT_NE(p.out.find("<|im_start|>user\nhi<|im_end|>"), std::string::npos) << p.out;
}

TEST(CliChat, PipeGivesOneJsonObjectPerReply) {
    const std::string f = temp_file("turns.txt");
    std::ofstream(f) << "Hello\nThe dog ran\nLily was sad\n";
    const auto r = run_cli("chat --json -n 6 --temp 0 -q < " + f);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(count_lines(r.out), 3u) << r.out;
    size_t start = 0;
    for (int i = 0; i < 3; ++i) {
        const size_t end = r.out.find('\n', start);
        const nlohmann::json j = nlohmann::json::parse(r.out.substr(start, end - start));
        EXPECT_TRUE(j.contains("reply") && j.contains("stop")) << j.dump();
        start = end + 1;
    }
    std::filesystem::remove(f);
}

TEST(CliChat, CommandsSaveClearAndLoad) {
    const std::string state = temp_file("chat.session");
    const std::string f = temp_file("cmds.txt");
    // The reply after /load continues the saved conversation: it equals the reply without the detour.
    std::ofstream(f) << "Hello\n/save " << state << "\n/clear\nThe dog ran\n/load " << state
                     << "\nLily was sad\n/help\n/quit\nnever read\n";
    const auto r = run_cli("chat --json -n 6 --temp 0 -q < " + f, true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(std::filesystem::exists(state));
    EXPECT_NE(r.out.find("[saved"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[loaded"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/save FILE"), std::string::npos) << r.out;  // the /help text
    const std::string g = temp_file("direct.txt");
    std::ofstream(g) << "Hello\nLily was sad\n";
    const auto d = run_cli("chat --json -n 6 --temp 0 -q < " + g);
    ASSERT_EQ(d.status, 0);
    auto last_reply = [](const std::string &out) {
        std::string last;
        size_t start = 0;
        while (start < out.size()) {
            const size_t end = out.find('\n', start);
            const std::string line = out.substr(start, end - start);
            if (!line.empty() && line[0] == '{') last = nlohmann::json::parse(line)["reply"];
            start = end == std::string::npos ? out.size() : end + 1;
        }
        return last;
    };
    EXPECT_EQ(last_reply(r.out), last_reply(d.out));
    EXPECT_EQ(run_cli("chat -q <<< '/load /nonexistent.session'", true).status, 0);
    std::filesystem::remove(state);
    std::filesystem::remove(f);
    std::filesystem::remove(g);
}

TEST(CliChat, ContextShiftNoteIsOnItsOwnLine) {
    const std::string f = temp_file("shift.txt");
    std::ofstream(f) << "Once upon a time\nThe dog ran\nLily was sad\nThen\n";
    const auto r = run_cli("chat -c 64 -n 40 --temp 0 < " + f, true);
    ASSERT_EQ(r.status, 0) << r.out;
    size_t at = r.out.find("[context shift");
    ASSERT_NE(at, std::string::npos) << r.out;
    for (; at != std::string::npos; at = r.out.find("[context shift", at + 1))
        EXPECT_EQ(r.out[at - 1], '\n') << r.out;
    std::filesystem::remove(f);
}

}  // namespace

namespace {

TEST(CliChat, NPredictMinusTwoStopsAtAFullContext) {
    for (const char *opts : {"-n -2", "-n -1 --no-context-shift"}) {
        const auto r = lctx::testing::run_cli(std::string("chat -c 48 --ignore-eos --json -q ") + opts +
                                              " <<< 'Once upon a time'");
        ASSERT_EQ(r.status, 0) << opts << ": " << r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["stop"], "context full") << opts;
        EXPECT_GT(j["n_tokens"].get<int>(), 30) << opts;
    }
}

}  // namespace
}  // namespace cli_robust_test
