// What a llama.cpp user still tripped on (issue 38): usage errors of template and grammar, llama-tokenize's
// options, escapes by default, bench over several models and as SQL, llama.cpp's chat template names, a
// grammar that completes under --ignore-eos, a context above the training one, and the library's messages
// told in the user's words.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "gguf/gguf.h"
#include "llama.h"
#include "tools/lctx/bench_core.h"

namespace cli_usage_test {
namespace {

namespace fs = std::filesystem;
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

size_t occurrences(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

std::string golden_model(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name;
}

std::string default_model() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}

// ---- item 12: template and grammar usage errors ----

TEST(CliUsage, TemplateAndGrammarUsageErrorsAreOneLineWithTheCommand) {
    struct Case {
        const char *args;
        const char *prefix;
        int status;
    };
    for (const Case &c :
         {Case{"template", "lctx template: ", 1}, Case{"template --messages", "lctx template: ", 1},
          Case{"template --bogus --messages m.json", "lctx template: ", 1},
          Case{"grammar", "lctx grammar: ", 2}, Case{"grammar check only-one.gbnf", "lctx grammar: ", 2},
          Case{"grammar frobnicate", "lctx grammar: ", 2}}) {
        const auto r = run_cli(c.args, true);
        EXPECT_EQ(r.status, c.status) << c.args << ": " << r.out;
        EXPECT_EQ(r.out.rfind(c.prefix, 0), 0u) << c.args << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << c.args << ": " << r.out;
    }
}

// ---- item 3: llama-tokenize's options ----

TEST(CliUsage, TokenizeTakesLlamaTokenizesOptions) {
    const auto plain = run_cli("tokenize --ids 'Hello world'");
    ASSERT_EQ(plain.status, 0) << plain.out;
    // llama-tokenize --ids: a Python list.
    ASSERT_EQ(plain.out.rfind("[", 0), 0u) << plain.out;
    EXPECT_EQ(plain.out.substr(plain.out.size() - 2), "]\n") << plain.out;
    const std::vector<int> ids = nlohmann::json::parse(plain.out).get<std::vector<int>>();
    ASSERT_GT(ids.size(), 1u);

    const std::string f = temp_file("tokenize.txt");
    std::ofstream(f) << "Hello world";
    for (const std::string &args :
         {std::string("-p 'Hello world'"), std::string("--prompt 'Hello world'"), "-f " + f, "--stdin < " + f,
          std::string("--log-disable -p 'Hello world'")}) {
        const auto r = run_cli("tokenize --ids " + args, true);
        EXPECT_EQ(r.status, 0) << args << ": " << r.out;
        EXPECT_EQ(r.out, plain.out) << args;
    }
    const auto no_bos = run_cli("tokenize --ids --no-bos -p 'Hello world'");
    ASSERT_EQ(no_bos.status, 0) << no_bos.out;
    EXPECT_EQ(nlohmann::json::parse(no_bos.out).get<std::vector<int>>(),
              std::vector<int>(ids.begin() + 1, ids.end()));
    const auto count = run_cli("tokenize --show-count -p 'Hello world'");
    ASSERT_EQ(count.status, 0) << count.out;
    EXPECT_TRUE(has(count.out, "Total number of tokens: " + std::to_string(ids.size()) + "\n")) << count.out;

    // A mistyped option is no text; nor is a missing text or one given twice.
    for (const char *bad : {"--jsn Hello", "--stdinn", "", "-p Hello -f /etc/hostname"}) {
        const auto r = run_cli(std::string("tokenize ") + bad, true);
        EXPECT_EQ(r.status, 1) << bad << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << bad << ": " << r.out;
        EXPECT_EQ(r.out.rfind("lctx tokenize: ", 0), 0u) << bad << ": " << r.out;
    }
    EXPECT_TRUE(has(run_cli("tokenize --jsn Hello", true).out, "--jsn"));
    fs::remove(f);
}

// ---- item 2, after a flag: a multi-letter option is refused by its whole name there too ----

TEST(CliUsage, MultiLetterOptionAfterAFlagIsRefusedByName) {
    const auto r = run_cli("run --ignore-eos -ctx 512 -n 2", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(has(r.out, "-ctx: not an option of lctx")) << r.out;
    EXPECT_EQ(count_lines(r.out), 1u) << r.out;
}

// ---- item 6: escapes as llama-cli ----

TEST(CliUsage, RunProcessesEscapesByDefaultAsLlamaCli) {
    auto prompt_ids = [](const std::string &args) {
        const auto r = run_cli("run --json -n 1 --temp 0 " + args);
        EXPECT_EQ(r.status, 0) << args << ": " << r.out;
        return r.status == 0 ? nlohmann::json::parse(r.out)["prompt_ids"] : nlohmann::json();
    };
    const nlohmann::json newline = prompt_ids("-p $'one\\ntwo'");
    const nlohmann::json backslash_n = prompt_ids("-p 'one\\ntwo' --no-escape");
    ASSERT_NE(newline, backslash_n);
    EXPECT_EQ(prompt_ids("-p 'one\\ntwo'"), newline);
    EXPECT_EQ(prompt_ids("-e -p 'one\\ntwo'"), newline);
    const std::string f = temp_file("escaped.txt");
    std::ofstream(f) << "one\\ntwo";
    EXPECT_EQ(prompt_ids("-f " + f), newline);
    EXPECT_EQ(prompt_ids("-f " + f + " --no-escape"), backslash_n);
    // Text piped in is taken as it is, unless -e.
    EXPECT_EQ(prompt_ids("< " + f), backslash_n);
    EXPECT_EQ(prompt_ids("-e < " + f), newline);
    fs::remove(f);
}

// ---- item 5, bench's -ngl and -o sql ----

const char *const kQuickBench = " -p 8 -n 0 -r 1 -t 1 --bw-mib 0 --no-peak";

TEST(CliUsage, BenchRunsEachModel) {
    const std::string a = default_model(), b = golden_model("qwen2.gguf");
    for (const std::string &models : {"-m " + a + " -m " + b, "-m " + a + "," + b}) {
        const auto r = run_cli("bench " + models + kQuickBench + " -o jsonl");
        ASSERT_EQ(r.status, 0) << models << ": " << r.out;
        ASSERT_EQ(count_lines(r.out), 2u) << models << ": " << r.out;
        const size_t nl = r.out.find('\n');
        // llama-bench's model_filename: the path as given.
        EXPECT_EQ(nlohmann::json::parse(r.out.substr(0, nl))["model_filename"], a) << r.out;
        EXPECT_EQ(nlohmann::json::parse(r.out.substr(nl + 1))["model_filename"], b) << r.out;
    }
    EXPECT_EQ(run_cli("bench -m " + a + ",," + b + kQuickBench, true).status, 1);
}

TEST(CliUsage, BenchWritesSql) {
    const std::string models = " -m " + default_model() + "," + golden_model("qwen2.gguf");
    const auto r = run_cli("bench" + models + kQuickBench + " -o sql");
    ASSERT_EQ(r.status, 0) << r.out;
    ASSERT_EQ(r.out.rfind("CREATE TABLE IF NOT EXISTS test (\n", 0), 0u) << r.out;
    EXPECT_TRUE(has(r.out, "  model_filename TEXT,\n")) << r.out;
    EXPECT_TRUE(has(r.out, "  n_prompt INTEGER,\n")) << r.out;
    EXPECT_TRUE(has(r.out, "  avg_ts REAL,\n")) << r.out;
    EXPECT_EQ(occurrences(r.out, "INSERT INTO test ("), 2u) << r.out;
    EXPECT_TRUE(has(r.out, "'" + default_model() + "'")) << r.out;
    EXPECT_TRUE(has(r.out, "'" + golden_model("qwen2.gguf") + "'")) << r.out;
}

TEST(CliUsage, BenchSqlQuotesStringsAndFillsMissingFields) {
    nlohmann::ordered_json a = {{"name", "it's"}, {"n", 3}, {"ok", true}, {"ts", 1.5}};
    nlohmann::ordered_json b = {{"name", "plain"}, {"n", 4}, {"ok", false}, {"ts", 2.5}, {"extra", "x"}};
    const std::string s = lctx::bench::sql({a, b});
    EXPECT_EQ(s,
              "CREATE TABLE IF NOT EXISTS test (\n  name TEXT,\n  n INTEGER,\n  ok INTEGER,\n  ts REAL,\n"
              "  extra TEXT\n);\n\n"
              "INSERT INTO test (name, n, ok, ts, extra) VALUES ('it''s', 3, 1, 1.5, NULL);\n"
              "INSERT INTO test (name, n, ok, ts, extra) VALUES ('plain', 4, 0, 2.5, 'x');\n");
}

TEST(CliUsage, BenchTakesNglWithANote) {
    const auto r = run_cli(std::string("bench -ngl 99") + kQuickBench + " -o jsonl", true);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(has(r.out, "lctx bench: note: -ngl ignored, lctx runs on the CPU")) << r.out;
    EXPECT_EQ(run_cli(std::string("bench -ngl x") + kQuickBench, true).status, 1);
}

// ---- item 8: every chat template name the C API knows ----

TEST(CliUsage, ChatTakesEveryBuiltinTemplateNameOfTheCApi) {
    std::vector<const char *> names(64);
    const int32_t n = llama_chat_builtin_templates(names.data(), names.size());
    ASSERT_GT(n, 30);
    names.resize(static_cast<size_t>(n));
    for (const char *name : names) {
        const auto r = run_cli(std::string("chat -q -n 1 --temp 0 --verbose-prompt --chat-template ") + name +
                                   " -sys Sys <<< hi",
                               true);
        EXPECT_EQ(r.status, 0) << name << ": " << r.out;
        // The prompt is the C API's rendering of the same conversation.
        const llama_chat_message msgs[] = {{"system", "Sys"}, {"user", "hi"}};
        std::vector<char> buf(4096);
        const int32_t len = llama_chat_apply_template(name, msgs, 2, true, buf.data(), buf.size());
        ASSERT_GT(len, 0) << name;
        const std::string full(buf.data(), static_cast<size_t>(len));
        const int32_t sys_len = llama_chat_apply_template(name, msgs, 1, false, buf.data(), buf.size());
        ASSERT_GE(sys_len, 0) << name;
        const std::string delta = full.substr(std::min(full.size(), static_cast<size_t>(sys_len)));
        EXPECT_TRUE(has(r.out, "[prompt] " + delta)) << name << ": wanted " << delta << "\n" << r.out;
    }
    const auto bad = run_cli("chat --chat-template nosuch <<< hi", true);
    EXPECT_EQ(bad.status, 1) << bad.out;
    EXPECT_EQ(count_lines(bad.out), 1u) << bad.out;
    for (const char *name : names) EXPECT_TRUE(has(bad.out, name)) << name << " is not listed: " << bad.out;
}

// ---- item 10: --ignore-eos and a grammar that completes ----

TEST(CliUsage, IgnoreEosStopsWhenTheGrammarIsComplete) {
    for (const char *cmd : {"run --json -p Hi", "chat --json -q"}) {
        const auto r = run_cli(std::string(cmd) + " -n 12 --temp 0 --ignore-eos --grammar 'root ::= \"ab\"'" +
                                   (std::string(cmd).rfind("chat", 0) == 0 ? " <<< Hi" : ""),
                               true);
        ASSERT_EQ(r.status, 0) << cmd << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << cmd << ": no warnings wanted: " << r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j.contains("text") ? j["text"] : j["reply"], "ab") << r.out;
        EXPECT_EQ(j["stop"], "grammar complete") << r.out;
    }
    // A grammar that goes on (root ::= "a"+) is not stopped: -n is.
    const auto more =
        run_cli("run --json -p Hi -n 6 --temp 0 --ignore-eos --grammar 'root ::= \"a\"+'", true);
    ASSERT_EQ(more.status, 0) << more.out;
    EXPECT_EQ(nlohmann::json::parse(more.out)["stop"], "-n reached") << more.out;
}

// ---- item 14: a context above the training one ----

TEST(CliUsage, ContextAboveTheTrainingOneWarnsAndSaysTheMemory) {
    const auto file = lctx::gguf::File::open(default_model());
    const uint64_t n_train = static_cast<uint64_t>(*file->get_int("llama.context_length"));
    const uint64_t n_layer = static_cast<uint64_t>(*file->get_int("llama.block_count"));
    const uint64_t n_embd = static_cast<uint64_t>(*file->get_int("llama.embedding_length"));
    const uint64_t n_head = static_cast<uint64_t>(*file->get_int("llama.attention.head_count"));
    const uint64_t n_head_kv = static_cast<uint64_t>(
        file->get_int("llama.attention.head_count_kv").value_or(static_cast<int64_t>(n_head)));
    const uint64_t n_ctx = n_train * 4;
    // f16 K and V rows of n_embd / n_head * n_head_kv values per layer and cell.
    const uint64_t bytes = n_layer * n_ctx * 2 * (n_embd / n_head * n_head_kv) * 2;
    char mib[64];
    std::snprintf(mib, sizeof mib, "will take %.1f MiB", static_cast<double>(bytes) / 1048576.0);

    for (const char *cmd : {"run -p Hi", "chat"}) {
        const auto r = run_cli(std::string(cmd) + " -n 1 -c " + std::to_string(n_ctx) + " <<< hi", true);
        EXPECT_EQ(r.status, 0) << cmd << ": " << r.out;
        EXPECT_TRUE(has(r.out, "warning: -c " + std::to_string(n_ctx) +
                                   " is above the model's training context (" + std::to_string(n_train) +
                                   " tokens)"))
            << cmd << ": " << r.out;
        EXPECT_TRUE(has(r.out, "KV cache of " + std::to_string(n_ctx) + " cells (f16 K, f16 V) " + mib))
            << cmd << ": " << r.out;
        const auto within =
            run_cli(std::string(cmd) + " -n 1 -c " + std::to_string(n_train) + " <<< hi", true);
        EXPECT_EQ(within.status, 0) << within.out;
        EXPECT_FALSE(has(within.out, "training context")) << within.out;
        EXPECT_FALSE(has(within.out, "KV cache of")) << within.out;
    }
}

// ---- item 13: the library's messages in the user's words ----

TEST(CliUsage, AnEmbeddingModelCannotRunOrChatAndSaysWhatTo) {
    const std::string bert = golden_model("bert.gguf");
    for (const char *cmd : {"run -p Hello -n 2", "chat -n 2"}) {
        const auto r = run_cli(std::string(cmd) + " -m " + bert + " <<< hi", true);
        EXPECT_EQ(r.status, 1) << cmd << ": " << r.out;
        EXPECT_EQ(count_lines(r.out), 1u) << cmd << ": " << r.out;
        EXPECT_TRUE(has(r.out, "is an embedding model")) << cmd << ": " << r.out;
        EXPECT_TRUE(has(r.out, "'lctx embed -m " + bert)) << cmd << ": " << r.out;
        EXPECT_FALSE(has(r.out, "system prompt")) << r.out;
        EXPECT_FALSE(has(r.out, "decode")) << r.out;
    }
}

TEST(CliUsage, AnEncoderDecoderModelSaysWhatWorks) {
    const std::string t5 = std::string(LCTX_FIXTURES_DIR) + "/golden-t5/models/t5.gguf";
    const auto chat = run_cli("chat -n 2 -m " + t5 + " <<< hi", true);
    EXPECT_EQ(chat.status, 1) << chat.out;
    EXPECT_EQ(count_lines(chat.out), 1u) << chat.out;
    EXPECT_TRUE(has(chat.out, "encoder-decoder model")) << chat.out;
    EXPECT_FALSE(has(chat.out, "llama_encode")) << chat.out;
    // bench measures it in T5 mode (the encoder, and the decoder's steps); what does not apply is refused
    const auto bench = run_cli("bench -m " + t5 + kQuickBench, true);
    EXPECT_EQ(bench.status, 0) << bench.out;
    EXPECT_TRUE(has(bench.out, "| enc8 |")) << bench.out;
    const auto pg = run_cli("bench -m " + t5 + kQuickBench + " --pg 8,4", true);
    EXPECT_EQ(pg.status, 1) << pg.out;
    EXPECT_EQ(count_lines(pg.out), 1u) << pg.out;
    EXPECT_TRUE(has(pg.out, "encoder-decoder model")) << pg.out;
    EXPECT_FALSE(has(pg.out, "llama_encode first")) << pg.out;
    const auto embed = run_cli("embed -m " + t5 + " --pooling mean hello", true);
    EXPECT_EQ(embed.status, 1) << embed.out;
    EXPECT_EQ(count_lines(embed.out), 1u) << embed.out;
    EXPECT_TRUE(has(embed.out, "encoder-decoder model")) << embed.out;
    EXPECT_FALSE(has(embed.out, "get_embeddings_seq")) << embed.out;
}

TEST(CliUsage, ChatLoadOfAnotherModelsStateSaysWhatToLoad) {
    const std::string state = temp_file("other_model.session"), cmds = temp_file("other_cmds.txt");
    std::ofstream(temp_file("save_cmds.txt")) << "Hello\n/save " << state << "\n";
    const auto saved = run_cli("chat --json -n 2 --temp 0 -q < " + temp_file("save_cmds.txt"), true);
    ASSERT_EQ(saved.status, 0) << saved.out;
    ASSERT_TRUE(fs::exists(state)) << saved.out;
    std::ofstream(cmds) << "/load " << state << "\nHello\n";
    const auto r =
        run_cli("chat --json -n 2 --temp 0 -q -m " + golden_model("qwen2.gguf") + " < " + cmds, true);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(has(r.out, "/load: '" + state + "' does not fit this chat")) << r.out;
    EXPECT_TRUE(has(r.out, "that /save wrote in a chat with this model")) << r.out;
    EXPECT_FALSE(has(r.out, "[loaded")) << r.out;
    fs::remove(state);
    fs::remove(cmds);
    fs::remove(temp_file("save_cmds.txt"));
}

// ---- Done when: lctx --help lists every command, one line each ----

TEST(CliUsage, HelpListsEveryCommandOnOneLine) {
    const auto r = run_cli("--help");
    ASSERT_EQ(r.status, 0) << r.out;
    size_t listed = 0;
    size_t at = r.out.find("commands:\n");
    ASSERT_NE(at, std::string::npos) << r.out;
    for (size_t line = at + 10; line < r.out.size() && r.out.compare(line, 2, "  ") == 0;) {
        const size_t end = r.out.find('\n', line);
        const std::string text = r.out.substr(line + 2, end - line - 2);
        const std::string cmd = text.substr(0, text.find(' '));
        EXPECT_GT(text.size(), cmd.size() + 5) << "no description: " << text;
        const auto help = run_cli(cmd + " --help");
        EXPECT_EQ(help.status, 0) << cmd << ": " << help.out;
        EXPECT_TRUE(has(help.out, "lctx " + cmd)) << cmd << ": " << help.out;
        ++listed;
        line = end + 1;
    }
    // At least the commands of issue 38's time (main.cpp dispatches them).
    EXPECT_GE(listed, 14u) << r.out;
    for (const char *cmd : {"run", "chat", "infill", "tokenize", "embed", "perplexity", "bench", "synth",
                            "quantize", "template", "grammar", "serve", "split", "info"})
        EXPECT_TRUE(has(r.out, std::string("\n  ") + cmd + " ")) << cmd << ": " << r.out;
}

}  // namespace
}  // namespace cli_usage_test
