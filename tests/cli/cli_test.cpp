// The lctx command-line tool, run as a user runs it.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"
#include "golden_runner.h"

namespace cli_test {
namespace {

using Result = lctx::testing::CliResult;
Result run(const std::string &args, bool merge_stderr = false) {
    return lctx::testing::run_cli(args, merge_stderr);
}

TEST(Cli, RunGreedyJsonMatchesLlamaCppGolden) {
    const nlohmann::json c =
        lctx::testing::read_json(lctx::testing::fixtures_dir() + "/golden/cases/stories_greedy_0.json");
    const nlohmann::json &step = c["steps"][0];
    const Result r = run("run --temp 0 -n 48 -t 1 --json -p 'Once upon a time'");
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["prompt_ids"], step["prompt_tokens"]);
    EXPECT_EQ(j["ids"], step["generated_tokens"]);
    EXPECT_EQ(j["text"], step["generated_text"]);
}

TEST(Cli, RunStreamsPromptAndContinuation) {
    const Result r = run("run --temp 0 -n 16 -p 'Lily and Tom'");
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.out.rfind("Lily and Tom", 0), 0u) << r.out;
    EXPECT_GT(r.out.size(), std::string("Lily and Tom").size() + 20);
}

TEST(Cli, SeededSamplingIsReproducible) {
    const Result a = run("run --temp 0.9 --seed 1234 -n 24 --json");
    const Result b = run("run --temp 0.9 --seed 1234 -n 24 --json");
    ASSERT_EQ(a.status, 0);
    EXPECT_EQ(a.out, b.out);
}

TEST(Cli, TokenizeJson) {
    const Result r = run("tokenize --json 'Once upon a time'");
    ASSERT_EQ(r.status, 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ids"], (std::vector<int>{1, 403, 407, 261, 378}));
}

TEST(Cli, MissingModelIsAClearError) {
    const Result r = run("run -m /nonexistent.gguf", true);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("/nonexistent.gguf"), std::string::npos) << r.out;
}

TEST(Cli, UnknownCommandFails) {
    EXPECT_NE(run("frobnicate").status, 0);
}

// A synthesized model of each family that is not llama generates: synth writes it, run loads and decodes it.
TEST(Cli, RunGeneratesWithSynthesizedQwen2AndPhi3) {
    for (const char *shape : {"qwen2-tiny", "phi3-tiny"}) {
        const std::string path = lctx::testing::temp_file(std::string(shape) + ".gguf");
        const Result s = run("synth --shape " + std::string(shape) + " --type Q4_0 -t 2 -o " + path, true);
        ASSERT_EQ(s.status, 0) << s.out;
        const Result r =
            run("run -m " + path + " --temp 0 --ignore-eos -n 8 -t 2 --json -p 'Hello world'", true);
        std::remove(path.c_str());
        ASSERT_EQ(r.status, 0) << shape << ": " << r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
        EXPECT_EQ(j["ids"].size(), 8u) << shape << ": " << r.out;
    }
}

}  // namespace

namespace {

TEST(Cli, ChatShiftsTheContextAndGoesOn) {
    // A 64-token context cannot hold four turns of 40 tokens: the chat must shift and keep answering.
    const Result r = run(
        "chat -c 64 -n 40 --temp 0 -v < " + std::string(LCTX_FIXTURES_DIR) + "/../tests/cli/chat_input.txt",
        true);
    const std::string &out = r.out;
    EXPECT_EQ(r.status, 0) << out;
    EXPECT_NE(out.find("[context shift"), std::string::npos) << out;
    size_t lines = 0;
    for (char c : out) lines += c == '\n';
    EXPECT_GE(lines, 4u) << out;
}

}  // namespace

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "gguf/gguf.h"

namespace {

// stories260K with a Jinja chat template of its own: lctx chat renders each turn through it.
TEST(Cli, ChatRendersTheModelsOwnTemplateThroughJinja) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx-chat-jinja-" + std::to_string(getpid()) + ".gguf"))
            .string();
    {
        auto f = lctx::gguf::File::open(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
        lctx::gguf::Writer w;
        for (const lctx::gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
        w.set_string("tokenizer.chat_template",
                     "{{ bos_token }}{% for m in messages %}[{{ m.role | upper }}] {{ m.content | trim }}\n"
                     "{% endfor %}{% if add_generation_prompt %}[ASSISTANT]{% endif %}");
        for (const lctx::gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        w.write_file(path);
    }
    const Result r =
        run("chat -m " + path + " -n 4 --temp 0 -v --verbose-prompt -sys 'Be brief.' <<< '  hello  '", true);
    std::remove(path.c_str());
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("jinja"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[SYSTEM] Be brief."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[USER] hello\n[ASSISTANT]"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cli_test
