// The request parser and validator (no server): every field's type and range.
#include "server/request.h"

#include <gtest/gtest.h>

namespace lctx::server::request_test {
namespace {

using json = nlohmann::json;

int status_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const ApiError &e) {
        return e.status;
    }
    return 200;
}

TEST(ServerRequest, CompletionFields) {
    RequestLimits lim;
    lim.n_vocab = 100;
    const GenRequest r =
        parse_completion_request(json::parse(R"({"prompt":"hi","max_tokens":7,"temperature":0,
        "top_p":0.5,"top_k":3,"min_p":0.1,"seed":12345678901,"stop":["a","b"],"presence_penalty":1,
        "frequency_penalty":-1,"logit_bias":{"5":-100,"7":2.5},"logprobs":2,"n":2,"stream":true,
        "stream_options":{"include_usage":true},"response_format":{"type":"json_object"}})"),
                                 lim);
    EXPECT_EQ(r.prompt, "hi");
    EXPECT_EQ(r.max_tokens, 7);
    EXPECT_EQ(r.sampling.config.temperature, 0.0f);
    EXPECT_EQ(r.sampling.config.top_k, 3);
    EXPECT_EQ(*r.sampling.seed, static_cast<uint32_t>(12345678901ull));
    EXPECT_EQ(r.stop.size(), 2u);
    ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 2);
    EXPECT_EQ(r.n, 2);
    EXPECT_TRUE(r.stream && r.include_usage);
    EXPECT_FALSE(r.grammar.empty());
    const GenRequest t = parse_completion_request(json::parse(R"({"prompt":[1,2,3]})"), lim);
    EXPECT_TRUE(t.prompt_is_tokens);
    EXPECT_EQ(t.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(t.max_tokens, -1);
}

TEST(ServerRequest, NativeDefaultsAreLlamaServers) {
    RequestLimits lim;
    lim.n_vocab = 100;
    const GenRequest n = parse_native_completion_request(json::parse(R"({"prompt":"a"})"), lim);
    EXPECT_FLOAT_EQ(n.sampling.config.temperature, 0.8f);
    EXPECT_EQ(n.sampling.config.top_k, 40);
    EXPECT_FLOAT_EQ(n.sampling.config.top_p, 0.95f);
    EXPECT_FLOAT_EQ(n.sampling.config.min_p, 0.05f);
    EXPECT_EQ(n.sampling.config.repeat_last_n, 64);
    const GenRequest g =
        parse_native_completion_request(json::parse(R"({"prompt":"a","temperature":0.3,"top_k":0})"), lim);
    EXPECT_FLOAT_EQ(g.sampling.config.temperature, 0.3f);
    EXPECT_EQ(g.sampling.config.top_k, 0);
    // The OpenAI endpoint keeps OpenAI's.
    const GenRequest o = parse_completion_request(json::parse(R"({"prompt":"a"})"), lim);
    EXPECT_FLOAT_EQ(o.sampling.config.temperature, 1.0f);
    EXPECT_EQ(o.sampling.config.top_k, 0);
    EXPECT_FLOAT_EQ(o.sampling.config.top_p, 1.0f);
}

TEST(ServerRequest, RefusesWrongTypesAndRanges) {
    RequestLimits lim;
    lim.n_vocab = 100;
    for (const char *body :
         {R"({})",
          R"({"prompt":null})",
          R"({"prompt":{}})",
          R"({"prompt":[]})",
          R"({"prompt":[1.5]})",
          R"({"prompt":[100]})",
          R"({"prompt":"a","max_tokens":0})",
          R"({"prompt":"a","max_tokens":1e3})",
          R"({"prompt":"a","temperature":-1})",
          R"({"prompt":"a","temperature":3})",
          R"({"prompt":"a","top_p":1.5})",
          R"({"prompt":"a","n":17})",
          R"({"prompt":"a","stop":""})",
          R"({"prompt":"a","stop":{}})",
          R"({"prompt":"a","seed":"x"})",
          R"({"prompt":"a","logit_bias":[1]})",
          R"({"prompt":"a","logit_bias":{"1":1000}})",
          R"({"prompt":"a","logit_bias":{"-1":1}})",
          R"({"prompt":"a","stream_options":true})",
          R"({"prompt":"a","response_format":{"type":"xml"}})",
          R"({"prompt":"a","response_format":{"type":"json_schema"}})",
          R"({"prompt":"a","grammar":"root ::= x"})",
          R"({"prompt":"a","json_schema":{"type":"object","properties":{"a":{"$ref":"#/x"}}}})",
          R"({"prompt":"a","logprobs":21})",
          R"({"prompt":"a","echo":true,"logprobs":1})",
          R"({"prompt":["a",{}]})",
          R"({"prompt":[[]]})",
          R"({"prompt":"a","samplers":["top_k","nope"]})",
          R"({"prompt":"a","samplers":"kq"})",
          R"({"prompt":"a","mirostat":3})",
          R"({"prompt":"a","dry_sequence_breakers":[""]})",
          R"({"prompt":"a","post_sampling_probs":true})",
          R"({"prompt":"a","n_probs":2})"})
        EXPECT_EQ(status_of([&] { parse_completion_request(json::parse(body), lim); }), 400) << body;
    for (const char *body :
         {R"({"messages":"hi"})", R"({"messages":[1]})", R"({"messages":[{"content":"x"}]})",
          R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
          R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})"})
        EXPECT_EQ(status_of([&] { parse_chat_request(json::parse(body), lim); }), 400) << body;
    EXPECT_EQ(status_of([] { parse_body("{\"a\":"); }), 400);
    EXPECT_EQ(status_of([] { parse_body("\"text\""); }), 400);
    // null means absent; content parts are joined.
    const GenRequest c = parse_chat_request(
        json::parse(
            R"({"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
                        "temperature":null,"max_completion_tokens":3})"),
        lim);
    EXPECT_EQ(c.messages[0].role, "system");
    EXPECT_EQ(c.messages[0].content, "a\nb");
    EXPECT_EQ(c.sampling.config.temperature, 1.0f);
    EXPECT_EQ(c.max_tokens, 3);
}

}  // namespace
}  // namespace lctx::server::request_test
