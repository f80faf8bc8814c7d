// `lctx template`: the rendered prompt exactly on stdout and exit 0, or the error and exit 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gguf/gguf.h"

namespace template_cli_test {
namespace {

struct Result {
    int status;
    std::string out;
};

Result run_lctx(const std::string &args, bool merge_stderr) {
    const std::string cmd =
        std::string(LCTX_BIN_DIR) + "/lctx " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
    Result r{-1, {}};
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

std::string write_temp(const std::string &name, const std::string &text) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("lctx_template_test_" + std::to_string(getpid()) + "_" + name))
                                 .string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

const std::string kFixtures = LCTX_FIXTURES_DIR;

TEST(CliTemplate, PrintsTheGoldenRenderingExactly) {
    // Conversation c (system + user + assistant + user) through Phi-3.5's template, as llama.cpp renders it.
    std::ifstream cf(kFixtures + "/chat/conversations.json"), rf(kFixtures + "/chat/renderings.json");
    const auto convs = nlohmann::json::parse(cf), gold = nlohmann::json::parse(rf);
    const std::string tmpl = "microsoft-Phi-3.5-mini-instruct.jinja";
    for (const auto &conv : convs) {
        const std::string msgs = write_temp("msgs.json", conv["messages"].dump());
        const Result r =
            run_lctx("template --file " + kFixtures + "/templates/" + tmpl + " --messages " + msgs +
                         " --bos '<s>' --eos '</s>'" +
                         (conv["add_generation_prompt"].get<bool>() ? " --add-generation-prompt" : ""),
                     false);
        EXPECT_EQ(r.status, 0);
        EXPECT_EQ(r.out, gold[tmpl][conv["id"].get<std::string>()]["prompt"].get<std::string>())
            << conv["id"];
        std::remove(msgs.c_str());
    }
}

TEST(CliTemplate, ModelTemplateAndTokensComeFromTheGguf) {
    // The Phi-3 vocabulary carries a chat template; -m must render exactly what --file does with that
    // template and the vocabulary's BOS/EOS pieces.
    const std::string model = kFixtures + "/vocab/ggml-vocab-phi-3.gguf";
    const auto file = lctx::gguf::File::open(model);
    const auto tmpl = file->get_string("tokenizer.chat_template");
    ASSERT_TRUE(tmpl.has_value());
    const std::string t = write_temp("phi3.jinja", *tmpl);
    const std::string msgs =
        write_temp("pm.json", R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])");
    const Result from_model =
        run_lctx("template -m " + model + " --messages " + msgs + " --add-generation-prompt", false);
    const Result from_file =
        run_lctx("template --file " + t + " --bos '<s>' --eos '<|endoftext|>' --messages " + msgs +
                     " --add-generation-prompt",
                 false);
    EXPECT_EQ(from_model.status, 0);
    EXPECT_EQ(from_file.status, 0);
    EXPECT_EQ(from_model.out, from_file.out);
    EXPECT_EQ(from_model.out.rfind("<s>", 0), 0u) << from_model.out;  // the template prints bos_token
    std::remove(t.c_str());
    std::remove(msgs.c_str());
}

TEST(CliTemplate, ErrorsExitOneWithTheLocation) {
    const std::string msgs = write_temp("m.json", R"([{"role": "user", "content": "Hi"}])");
    const std::string bad = write_temp("bad.jinja", "ok\n{% for m in messages %}{{ m.content }");
    Result r = run_lctx("template --file " + bad + " --messages " + msgs, true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("line 2, column 24"), std::string::npos) << r.out;
    const std::string raises = write_temp("raise.jinja", "{{ raise_exception('no users here') }}");
    r = run_lctx("template --file " + raises + " --messages " + msgs, true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("no users here"), std::string::npos) << r.out;
    const std::string not_json = write_temp("nj.json", "[{");
    r = run_lctx("template --file " + raises + " --messages " + not_json, true);
    EXPECT_EQ(r.status, 1);
    r = run_lctx("template --messages " + msgs, true);
    EXPECT_EQ(r.status, 1);
    r = run_lctx("template -m " + std::string(LCTX_MODELS_DIR) + "/stories260K.gguf --messages " + msgs,
                 true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("has no tokenizer.chat_template"), std::string::npos) << r.out;
    for (const std::string &p : {msgs, bad, raises, not_json}) std::remove(p.c_str());
}

}  // namespace
}  // namespace template_cli_test
