// lctx run and lctx chat with speculative decoding (-md, --lookup): greedy output is the output without it,
// token for token (a chat's every reply, context shifts included); a draft model of another vocabulary, a
// recurrent model and options speculation cannot combine with are refused with a clear error.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "gguf/gguf.h"
#include "gguf_rewrite.h"

namespace cli_speculative_test {
namespace {

using lctx::testing::CliResult;
using lctx::testing::run_cli;

std::string golden(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name + ".gguf";
}

// A piped chat's replies (one JSON object each), with what speculation did so far taken out into *drafted
// (the last reply's count).
std::vector<nlohmann::json> chat_json(const std::string &args, int64_t *drafted = nullptr) {
    const CliResult r = run_cli("chat " + args + " --json -t 1 -s 1 < " + std::string(LCTX_FIXTURES_DIR) +
                                "/../tests/cli/chat_input.txt");
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<nlohmann::json> replies;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
        nlohmann::json j = nlohmann::json::parse(line);
        if (j.contains("speculative")) {
            if (drafted) *drafted = j["speculative"]["drafted"].get<int64_t>();
            j.erase("speculative");
        }
        replies.push_back(std::move(j));
    }
    return replies;
}

nlohmann::json run_json(const std::string &args) {
    const CliResult r = run_cli("run " + args + " --json -t 1");
    EXPECT_EQ(r.status, 0) << r.out;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

// An F32 KV cache: batched rows then have one-token decodes' bits on every kernel level (README).
const std::string kPrompt = "-p 'Once upon a time, there was a little girl' -n 40 --temp 0 -ctk f32 -ctv f32";

TEST(CliSpeculative, GreedyOutputIsPlainOutput) {
    const std::string m = "-m " + golden("llama-F16") + " " + kPrompt;
    const nlohmann::json plain = run_json(m);
    ASSERT_EQ(plain["ids"].size(), 40u);
    // Self draft, a smaller (2-bit) draft of the same model, prompt lookup.
    for (const std::string &extra : {"-md " + golden("llama-F16") + " --draft-p-min 0",
                                     "-md " + golden("llama-Q2_K") + " --draft-p-min 0 --draft-min 0 -cd 128",
                                     std::string("--lookup --lookup-ngram-min 1 --lookup-ngram-max 3")}) {
        const nlohmann::json s = run_json(m + " " + extra);
        EXPECT_EQ(s["ids"], plain["ids"]) << extra;
        EXPECT_EQ(s["stop"], plain["stop"]) << extra;
        EXPECT_GT(s["speculative"]["drafted"].get<int>(), 0) << extra;
    }
}

TEST(CliSpeculative, StopsAtTheEndOfTheContextAsPlainRunDoes) {
    const std::string m = "-m " + golden("stories260K") +
                          " -p 'Once upon a time' -n 100 -c 32 --no-context-shift --temp 0 -ctk f32 -ctv f32";
    const nlohmann::json plain = run_json(m);
    const nlohmann::json s = run_json(m + " -md " + golden("stories260K") + " --draft-p-min 0");
    EXPECT_EQ(s["ids"], plain["ids"]);
    EXPECT_EQ(s["stop"], "context full");
}

// stories260K with token 100's text changed: a draft model of another vocabulary (the caller removes it).
std::string other_vocabulary(const std::string &tag) {
    auto f = lctx::gguf::File::open(golden("stories260K"));
    std::vector<std::string> texts = *f->get_string_array("tokenizer.ggml.tokens");
    texts[100] = "other";
    lctx::testing::Rewrite r;
    r.add = [&](lctx::gguf::Writer &w) { w.set_string_array("tokenizer.ggml.tokens", texts); };
    return lctx::testing::rewrite_gguf(golden("stories260K"), r, tag);
}

TEST(CliSpeculative, RefusesAnotherVocabulary) {
    const std::string path = other_vocabulary("cli-spec-vocab");
    const CliResult c = run_cli("run -m " + golden("stories260K") + " -md " + path + " -n 4", true);
    std::remove(path.c_str());
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("cannot draft for"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("token 100"), std::string::npos) << c.out;
}

// Every reply of a piped four-turn chat, greedy, is the plain chat's: in a 64-token context that shifts
// during the replies (stories260K), and on a larger model with a repeat penalty (whose history the verifier's
// filters must end each reply with as plain sampling does).
TEST(CliSpeculative, ChatGreedyRepliesArePlainReplies) {
    for (const std::string &m :
         {"-m " + golden("stories260K") + " -c 64 -n 40 --temp 0 -ctk f32 -ctv f32",
          "-m " + golden("llama-F16") + " -c 96 -n 40 --temp 0 --repeat-penalty 1.2 -ctk f32 -ctv f32"}) {
        const std::vector<nlohmann::json> plain = chat_json(m);
        ASSERT_EQ(plain.size(), 4u) << m;
        EXPECT_FALSE(plain[0].contains("speculative"));
        for (const std::string &extra :
             {"-md " + golden(m.find("stories") != std::string::npos ? "stories260K" : "llama-F16") +
                  " --draft-p-min 0 --draft-min 0",
              std::string("--lookup --lookup-ngram-min 1 --lookup-ngram-max 3")}) {
            int64_t drafted = 0;
            const std::vector<nlohmann::json> s = chat_json(m + " " + extra, &drafted);
            ASSERT_EQ(s.size(), plain.size()) << m << " " << extra;
            for (size_t i = 0; i < s.size(); ++i)
                EXPECT_EQ(s[i], plain[i]) << m << " " << extra << ", reply " << i;
            EXPECT_GT(drafted, 0) << m << " " << extra;
        }
    }
}

TEST(CliSpeculative, ChatRefusesAnotherVocabularyAndUnsupportedOptions) {
    const std::string path = other_vocabulary("cli-spec-chat-vocab");
    CliResult c = run_cli("chat -m " + golden("stories260K") + " -md " + path + " -n 4 <<< hello", true);
    std::remove(path.c_str());
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("lctx chat: "), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("cannot draft for"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("token 100"), std::string::npos) << c.out;
    c = run_cli("chat -m " + golden("stories260K") + " --lookup --n-probs 2 --json -n 4 <<< hello", true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("--n-probs: not with speculative decoding"), std::string::npos) << c.out;
    c = run_cli("chat -m " + golden("mamba") + " --lookup -n 4 <<< hello", true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("recurrent"), std::string::npos) << c.out;
}

TEST(CliSpeculative, RefusesRecurrentModelsAndUnsupportedOptions) {
    CliResult c = run_cli("run -m " + golden("mamba") + " --lookup -n 4", true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("recurrent"), std::string::npos) << c.out;
    c = run_cli("run -m " + golden("stories260K") + " --lookup --grammar 'root ::= \"a\"' -n 4", true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("--grammar: not with speculative decoding"), std::string::npos) << c.out;
    c = run_cli("run -m " + golden("stories260K") + " --lookup -md " + golden("stories260K") + " -n 4", true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("choose one"), std::string::npos) << c.out;
    c = run_cli("run -m " + golden("stories260K") + " -md " + golden("stories260K") + " --draft-min 20 -n 4",
                true);
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.out.find("--draft-min"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace cli_speculative_test
