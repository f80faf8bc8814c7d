// lctx serve's endpoints through HTTP: shapes, streaming, determinism under load, the scheduler, the
// prompt cache, and bad input.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>

#include "server/server_fixture.h"

namespace lctx::testing::server_http_test {
namespace {

using json = nlohmann::json;

class ServerTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server::EngineOptions eo;
        eo.n_ctx = 2048;
        eo.n_slots = 8;       // 256 cells each
        eo.step_tokens = 16;  // small steps: a long prompt takes many, which the scheduler test needs
        eo.n_threads = 2;
        server::ServerOptions so;
        so.api_key = "";
        srv = new LocalServer(eo, so);
    }
    static void TearDownTestSuite() {
        delete srv;
        srv = nullptr;
    }
    static LocalServer *srv;
};
LocalServer *ServerTest::srv = nullptr;

TEST_F(ServerTest, HealthAndModels) {
    auto c = srv->client();
    auto h = c->Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(json::parse(h->body)["status"], "ok");
    auto m = c->Get("/v1/models");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200);
    const json j = json::parse(m->body);
    EXPECT_EQ(j["object"], "list");
    ASSERT_EQ(j["data"].size(), 1u);
    EXPECT_EQ(j["data"][0]["id"], "stories260K.gguf");
    EXPECT_EQ(j["data"][0]["object"], "model");
    auto nf = c->Get("/nope");
    ASSERT_TRUE(nf);
    EXPECT_EQ(nf->status, 404);
    EXPECT_EQ(json::parse(nf->body)["error"]["code"], 404);
}

TEST_F(ServerTest, CompletionShapeAndUsage) {
    auto [st, j] = srv->post("/v1/completions",
                             {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["object"], "text_completion");
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_FALSE(j["choices"][0]["text"].get<std::string>().empty());
    EXPECT_EQ(j["usage"]["completion_tokens"], 12);
    EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // BOS + 4
    EXPECT_EQ(j["usage"]["total_tokens"], 17);
    EXPECT_TRUE(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));
}

TEST_F(ServerTest, ChatShapeAndDeterminism) {
    const json body = {
        {"messages", {{{"role", "system"}, {"content", "Be kind."}}, {{"role", "user"}, {"content", "Hi"}}}},
        {"max_tokens", 16},
        {"temperature", 0}};
    auto [st, a] = srv->post("/v1/chat/completions", body);
    ASSERT_EQ(st, 200) << a.dump();
    EXPECT_EQ(a["object"], "chat.completion");
    EXPECT_EQ(a["choices"][0]["message"]["role"], "assistant");
    auto [st2, b] = srv->post("/v1/chat/completions", body);
    ASSERT_EQ(st2, 200);
    EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]);
    // A model without a chat template gets chatml: the prompt holds its markers.
    EXPECT_GT(a["usage"]["prompt_tokens"].get<int>(), 10);
}

TEST_F(ServerTest, StreamingFormat) {
    for (const bool chat : {false, true}) {
        json body = {{"max_tokens", 10},
                     {"temperature", 0},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
        if (chat)
            body["messages"] = {{{"role", "user"}, {"content", "Tell a story"}}};
        else
            body["prompt"] = "Once upon a time";
        auto r = srv->client()->Post(chat ? "/v1/chat/completions" : "/v1/completions", body.dump(),
                                     "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
        const auto evs = sse_events(r->body);
        ASSERT_GE(evs.size(), 3u);
        for (size_t i = 0; i + 1 < evs.size(); ++i)
            ASSERT_TRUE(evs[i].is_object()) << "event " << i << " is not JSON";
        EXPECT_EQ(evs.back(), "[DONE]");
        const json &usage = evs[evs.size() - 2];
        EXPECT_TRUE(usage["choices"].empty());
        EXPECT_EQ(usage["usage"]["completion_tokens"], 10);
        const json &fin = evs[evs.size() - 3];
        EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
        if (chat) {
            EXPECT_EQ(evs[0]["choices"][0]["delta"]["role"], "assistant");
        }
        // The streamed text is the non-streamed text.
        body["stream"] = false;
        auto [st, j] = srv->post(chat ? "/v1/chat/completions" : "/v1/completions", body);
        ASSERT_EQ(st, 200);
        EXPECT_EQ(sse_text(evs), chat ? j["choices"][0]["message"]["content"] : j["choices"][0]["text"]);
    }
}

TEST_F(ServerTest, StopStringsEndTheText) {
    auto [st, full] = srv->post("/v1/completions",
                                {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}});
    ASSERT_EQ(st, 200);
    const std::string text = full["choices"][0]["text"];
    ASSERT_GT(text.size(), 12u);
    const std::string stop = text.substr(8, 3);
    const size_t at = text.find(stop);
    for (const bool stream : {false, true}) {
        json body = {{"prompt", "Once upon a time"},
                     {"max_tokens", 30},
                     {"temperature", 0},
                     {"stop", {stop}},
                     {"stream", stream}};
        auto r = srv->client()->Post("/v1/completions", body.dump(), "application/json");
        ASSERT_TRUE(r);
        std::string got;
        std::string reason;
        if (stream) {
            const auto evs = sse_events(r->body);
            got = sse_text(evs);
            reason = evs[evs.size() - 2]["choices"][0]["finish_reason"];
        } else {
            const json j = json::parse(r->body);
            got = j["choices"][0]["text"];
            reason = j["choices"][0]["finish_reason"];
        }
        EXPECT_EQ(got, text.substr(0, at)) << "stream " << stream;
        EXPECT_EQ(reason, "stop");
    }
}

TEST_F(ServerTest, SeedNLogitBiasAndLogprobs) {
    json body = {{"prompt", "Lily"}, {"max_tokens", 8}, {"temperature", 1.0}, {"seed", 42}, {"n", 3}};
    auto [st, a] = srv->post("/v1/completions", body);
    ASSERT_EQ(st, 200) << a.dump();
    ASSERT_EQ(a["choices"].size(), 3u);
    EXPECT_EQ(a["usage"]["completion_tokens"], 24);
    auto [st2, b] = srv->post("/v1/completions", body);
    ASSERT_EQ(st2, 200);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(a["choices"][i]["text"], b["choices"][i]["text"]) << "seeded choice " << i;

    // Greedy picks token T; banning T with logit_bias -100 changes the first token.
    auto [s3, g] = srv->post("/v1/completions",
                             {{"prompt", "Lily"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 3}});
    ASSERT_EQ(s3, 200) << g.dump();
    const json &lp = g["choices"][0]["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 1u);
    ASSERT_EQ(lp["top_logprobs"][0].size(), 3u);
    const double first = lp["token_logprobs"][0];
    EXPECT_LE(first, 0.0);
    for (auto &[k, v] : lp["top_logprobs"][0].items()) EXPECT_LE(v.get<double>(), first + 1e-6) << k;
    auto toks = srv->client()->Post(
        "/tokenize", json{{"content", lp["tokens"][0]}, {"add_special", false}}.dump(), "application/json");
    ASSERT_TRUE(toks);
    const json tj = json::parse(toks->body);
    ASSERT_FALSE(tj["tokens"].empty());
    // The piece may tokenize into more than one token (a leading space); banning them all bans it.
    json bias = json::object();
    for (const json &t : tj["tokens"]) bias[std::to_string(t.get<int>())] = -100;
    auto [s4, h] = srv->post(
        "/v1/completions", {{"prompt", "Lily"}, {"max_tokens", 1}, {"temperature", 0}, {"logit_bias", bias}});
    ASSERT_EQ(s4, 200);
    EXPECT_NE(h["choices"][0]["text"], g["choices"][0]["text"]);

    // Chat logprobs shape.
    auto [s5, c] = srv->post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                                      {"max_tokens", 3},
                                                      {"temperature", 0},
                                                      {"logprobs", true},
                                                      {"top_logprobs", 2}});
    ASSERT_EQ(s5, 200) << c.dump();
    const json &content = c["choices"][0]["logprobs"]["content"];
    ASSERT_FALSE(content.empty());
    EXPECT_EQ(content[0]["top_logprobs"].size(), 2u);
    EXPECT_TRUE(content[0]["bytes"].is_array());
}

TEST_F(ServerTest, ResponseFormatJsonSchema) {
    const json schema = {
        {"type", "object"},
        {"properties", {{"name", {{"type", "string"}, {"maxLength", 8}}}, {"age", {{"type", "integer"}}}}},
        {"required", {"name", "age"}}};
    auto [st, j] =
        srv->post("/v1/chat/completions",
                  {{"messages", {{{"role", "user"}, {"content", "Who?"}}}},
                   {"max_tokens", 60},
                   {"temperature", 0},
                   {"response_format",
                    {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", schema}}}}}});
    ASSERT_EQ(st, 200) << j.dump();
    const std::string text = j["choices"][0]["message"]["content"];
    if (j["choices"][0]["finish_reason"] == "stop") {
        const json out = json::parse(text, nullptr, false);
        ASSERT_FALSE(out.is_discarded()) << text;
        EXPECT_TRUE(out["name"].is_string());
        EXPECT_TRUE(out["age"].is_number_integer());
    } else {
        EXPECT_EQ(text.rfind("{\"name\":", 0), 0u) << text;  // cut by max_tokens, still on the schema's path
    }
}

TEST_F(ServerTest, BadInput) {
    auto c = srv->client();
    auto expect = [&](const std::string &path, const std::string &body, int status, const char *what) {
        auto r = c->Post(path.c_str(), body, "application/json");
        ASSERT_TRUE(r) << what;
        EXPECT_EQ(r->status, status) << what << ": " << r->body;
        const json j = json::parse(r->body, nullptr, false);
        ASSERT_TRUE(j.is_object()) << what;
        EXPECT_TRUE(j["error"]["message"].is_string()) << what;
        EXPECT_EQ(j["error"]["code"], status) << what;
        EXPECT_TRUE(j["error"]["type"].is_string()) << what;
    };
    expect("/v1/completions", "{\"prompt\":", 400, "malformed JSON");
    expect("/v1/completions", "[1,2]", 400, "not an object");
    expect("/v1/completions", R"({"prompt":5})", 400, "prompt of the wrong type");
    expect("/v1/completions", R"({"prompt":"a","temperature":"hot"})", 400, "temperature of the wrong type");
    expect("/v1/completions", R"({"prompt":"a","stream":1})", 400, "stream of the wrong type");
    expect("/v1/completions", R"({"prompt":"a","stop":[1]})", 400, "stop of the wrong shape");
    expect("/v1/completions", R"({"prompt":"a","max_tokens":0})", 400, "max_tokens 0");
    expect("/v1/completions", R"({"prompt":"a","max_tokens":-5})", 400, "max_tokens negative");
    expect("/v1/completions", R"({"prompt":"a","max_tokens":99999999999})", 400, "max_tokens huge");
    expect("/v1/completions", R"({"prompt":"a","n":0})", 400, "n 0");
    expect("/v1/completions", R"({"prompt":"a","logit_bias":{"x":1}})", 400, "logit_bias key");
    expect("/v1/completions", R"({"prompt":"a","logit_bias":{"99999":1}})", 400, "logit_bias token");
    expect("/v1/completions", R"({"prompt":[1,2,999999]})", 400, "token outside the vocabulary");
    expect("/v1/completions", R"({"prompt":"a","grammar":"root ::= \"x"})", 400, "bad grammar");
    expect(
        "/v1/completions",
        R"({"prompt":"a","response_format":{"type":"json_schema","json_schema":{"schema":{"$ref":"#/nope"}}}})",
        400, "bad schema");
    expect("/v1/chat/completions", R"({"messages":[]})", 400, "empty messages");
    expect("/v1/chat/completions", R"({"messages":[{"role":"wizard","content":"x"}]})", 400, "unknown role");
    expect("/v1/chat/completions", R"({"messages":[{"role":"user","content":7}]})", 400,
           "content of the wrong type");
    std::string longp;
    for (int i = 0; i < 400; ++i) longp += "Once upon a time ";
    expect("/v1/completions", json{{"prompt", longp}}.dump(), 400, "prompt longer than the context");
    // The server still serves.
    auto [st, j] = srv->post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
    EXPECT_EQ(st, 200);
}

TEST_F(ServerTest, HugeBodyIsRefusedBeforeItIsRead) {
    // Claims 100 MB, sends 64 KB: the 413 must come without the server waiting for the rest.
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(srv->port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    const std::string head =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        "104857600\r\n\r\n";
    ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
    const std::string chunk(64 * 1024, ' ');
    (void)!send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    close(fd);
    ASSERT_GT(n, 0) << "no answer within 5 s";
    const std::string resp(buf, static_cast<size_t>(n));
    EXPECT_EQ(resp.rfind("HTTP/1.1 413", 0), 0u) << resp;
}

TEST_F(ServerTest, SameTextAloneAndUnderLoad) {
    // Temperature 0: each request's text alone equals its text while 7 others run at once (no mixed-up
    // responses, nothing from another sequence leaking in).
    const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom",       "The cat sat",
                                              "One day, a big",   "Tim had a red ball", "The sun was",
                                              "Sue and her mom",  "A little bird"};
    std::vector<std::string> alone;
    for (const std::string &p : prompts) {
        auto [st, j] = srv->post("/v1/completions", {{"prompt", p}, {"max_tokens", 24}, {"temperature", 0}});
        ASSERT_EQ(st, 200);
        alone.push_back(j["choices"][0]["text"]);
    }
    for (int round = 0; round < 2; ++round) {
        std::vector<std::future<std::string>> fs;
        for (size_t i = 0; i < prompts.size(); ++i)
            fs.push_back(std::async(std::launch::async, [&, i] {
                json body = {{"prompt", prompts[i]},
                             {"max_tokens", 24},
                             {"temperature", 0},
                             {"stream", (i + round) % 2 == 0}};
                auto r = srv->client()->Post("/v1/completions", body.dump(), "application/json");
                if (!r || r->status != 200) return std::string("<failed>");
                if (body["stream"]) return sse_text(sse_events(r->body));
                return json::parse(r->body)["choices"][0]["text"].get<std::string>();
            }));
        for (size_t i = 0; i < prompts.size(); ++i)
            EXPECT_EQ(fs[i].get(), alone[i]) << "prompt " << i << " round " << round;
    }
}

// The bounded load test: 32 concurrent clients send 400 requests (streamed and not, completions and chat);
// none fails, each text equals the same request run alone at temperature 0, and the metrics' counters
// grow by exactly what the responses report.
TEST_F(ServerTest, LoadTest) {
    struct Req {
        bool chat;
        std::string text;
        int max_tokens;
    };
    const std::vector<Req> kinds = {{false, "Once upon a time", 12}, {true, "Hello", 10},
                                    {false, "Lily and Tom", 8},      {true, "Tell a story", 14},
                                    {false, "The dog ran", 6},       {false, "Sue had", 16}};
    auto body = [&](const Req &r, bool stream) {
        json b = {{"max_tokens", r.max_tokens}, {"temperature", 0}, {"stream", stream}};
        if (r.chat)
            b["messages"] = {{{"role", "user"}, {"content", r.text}}};
        else
            b["prompt"] = r.text;
        return b;
    };
    auto run = [&](httplib::Client &client, const Req &r, bool stream, int *tokens) -> std::string {
        auto res = client.Post(r.chat ? "/v1/chat/completions" : "/v1/completions", body(r, stream).dump(),
                               "application/json");
        if (!res || res->status != 200)
            return "<failed " + (res ? std::to_string(res->status) : httplib::to_string(res.error())) + ">";
        if (stream) {
            const auto evs = sse_events(res->body);
            if (evs.empty() || evs.back() != "[DONE]") return "<no [DONE]>";
            *tokens = r.max_tokens;  // counted from the finish chunk below
            for (const auto &e : evs)
                if (e.is_object() && !e["choices"].empty() && !e["choices"][0]["finish_reason"].is_null() &&
                    e["choices"][0]["finish_reason"] == "stop")
                    *tokens = -1;  // ended early: the exact count is not in the stream without usage
            return sse_text(evs);
        }
        const json j = json::parse(res->body);
        *tokens = j["usage"]["completion_tokens"];
        return r.chat ? j["choices"][0]["message"]["content"].get<std::string>()
                      : j["choices"][0]["text"].get<std::string>();
    };
    std::vector<std::string> alone;
    std::vector<int> alone_tokens;
    auto c0 = srv->client();
    for (const Req &r : kinds) {
        int t = 0;
        alone.push_back(run(*c0, r, false, &t));
        alone_tokens.push_back(t);
    }
    const double req0 = srv->metric("lctx:requests_success_total");
    const double tok0 = srv->metric("lctx:tokens_predicted_total");
    const int n_requests = 400, n_clients = 32;
    std::atomic<int> next{0}, bad{0};
    std::atomic<long> tokens{0};
    std::vector<std::thread> clients;
    std::mutex mu;
    std::string first_bad;
    for (int c = 0; c < n_clients; ++c)
        clients.emplace_back([&] {
            auto client = srv->client();  // one keep-alive connection per client, as real clients do
            for (int i; (i = next++) < n_requests;) {
                const size_t k = static_cast<size_t>(i) % kinds.size();
                int t = 0;
                const std::string got = run(*client, kinds[k], i % 2 == 1, &t);
                tokens += alone_tokens[k];
                if (got != alone[k]) {
                    std::lock_guard<std::mutex> lk(mu);
                    if (bad++ == 0)
                        first_bad = "request " + std::to_string(i) + ": '" + got + "' vs '" + alone[k] + "'";
                }
            }
        });
    for (auto &t : clients) t.join();
    EXPECT_EQ(bad.load(), 0) << first_bad;
    EXPECT_EQ(srv->metric("lctx:requests_success_total") - req0, n_requests);
    EXPECT_EQ(srv->metric("lctx:tokens_predicted_total") - tok0, static_cast<double>(tokens.load()));
    EXPECT_EQ(srv->metric("lctx:requests_processing"), 0);
    EXPECT_EQ(srv->metric("lctx:requests_deferred"), 0);
    EXPECT_EQ(srv->metric("lctx:kv_cache_used_cells"), 0);
}

TEST_F(ServerTest, ShortRequestIsNotStalledByLongPrompts) {
    // Four prompts of ~230 tokens take many steps each (16 tokens a step, shared by every prompt being
    // evaluated); a short request sent while they are being evaluated joins at the next step and
    // finishes first. Without chunking (first come, first served) the first long request would finish
    // long before it.
    std::string longp;
    for (int i = 0; i < 45; ++i) longp += "Once upon a time ";
    // One request with n = 4: its four choices are queued together, so none runs alone (a lone request
    // takes large steps).
    std::atomic<int> order{0};
    auto longs = std::async(std::launch::async, [&] {
        auto [st, j] = srv->post("/v1/completions",
                                 {{"prompt", longp}, {"max_tokens", 1}, {"temperature", 0}, {"n", 4}});
        return st == 200 ? ++order : -1;
    });
    for (int i = 0; i < 2000 && srv->metric("lctx:requests_processing") < 4; ++i)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_EQ(order.load(), 0) << "the long prompts finished before the short request could be sent";
    auto [st, j] = srv->post("/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}, {"temperature", 0}});
    const int short_done = ++order;
    ASSERT_EQ(st, 200);
    const int first_long = longs.get();
    ASSERT_GT(first_long, 0);
    EXPECT_LT(short_done, first_long) << "the short request waited for the long prompts";
}

TEST_F(ServerTest, PromptCacheReportsCachedTokens) {
    const std::string p = "Once upon a time, there was a little dog named Max. Max liked to run in the park";
    auto [s1, a] = srv->post("/v1/completions", {{"prompt", p}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_EQ(s1, 200);
    const double hits0 = srv->metric("vllm:prefix_cache_hits_total{model_name=\"stories260K.gguf\"}");
    auto [s2, b] =
        srv->post("/v1/completions", {{"prompt", p + " and play"}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_EQ(s2, 200);
    const int prompt_tokens = a["usage"]["prompt_tokens"];
    const int cached = b["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, prompt_tokens - 1);
    EXPECT_LT(cached, b["usage"]["prompt_tokens"].get<int>());
    EXPECT_GE(srv->metric("vllm:prefix_cache_hits_total{model_name=\"stories260K.gguf\"}"), hits0 + cached);
}

TEST_F(ServerTest, MetricsText) {
    auto r = srv->client()->Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    for (const char *name :
         {"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
          "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"128\"}",
          "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "lctx:prompt_tokens_total",
          "lctx:tokens_predicted_total", "lctx:prompt_seconds_total"})
        EXPECT_NE(r->body.find(name), std::string::npos) << name;
    const double usage = srv->metric("vllm:kv_cache_usage_perc{model_name=\"stories260K.gguf\"}");
    EXPECT_GE(usage, 0.0);
    EXPECT_LE(usage, 1.0);
}

TEST_F(ServerTest, TokenizeDetokenizeTemplateRender) {
    auto post = [&](const char *path, const json &b) { return srv->post(path, b); };
    auto [s1, t] = post("/tokenize", {{"content", "Once upon a time"}});
    ASSERT_EQ(s1, 200) << t.dump();
    ASSERT_EQ(t["tokens"].size(), 4u);
    auto [s2, d] = post("/detokenize", {{"tokens", t["tokens"]}});
    ASSERT_EQ(s2, 200);
    EXPECT_EQ(d["content"].get<std::string>().find("Once upon a time") != std::string::npos, true)
        << d.dump();
    auto [s3, wp] = post("/tokenize", {{"content", "Once"}, {"with_pieces", true}, {"add_special", true}});
    ASSERT_EQ(s3, 200);
    EXPECT_TRUE(wp["tokens"][0].contains("piece"));
    EXPECT_EQ(wp["tokens"].size(), 2u);  // BOS + Once
    const json msgs = {{{"role", "user"}, {"content", "Hello"}}};
    auto [s4, at] = post("/apply-template", {{"messages", msgs}});
    ASSERT_EQ(s4, 200);
    EXPECT_NE(at["prompt"].get<std::string>().find("<|im_start|>user\nHello<|im_end|>"), std::string::npos)
        << at.dump();
    // render gives the token ids a generation would evaluate: prompt_tokens of the same request.
    auto [s5, rc] = post("/v1/chat/completions/render", {{"messages", msgs}});
    ASSERT_EQ(s5, 200);
    auto [s6, gen] = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 1}});
    ASSERT_EQ(s6, 200);
    EXPECT_EQ(rc["token_ids"].size(), gen["usage"]["prompt_tokens"].get<size_t>());
    auto [s7, rp] = post("/v1/completions/render", {{"prompt", "Once upon a time"}});
    ASSERT_EQ(s7, 200);
    EXPECT_EQ(rp["token_ids"].size(), 5u);
    EXPECT_EQ(post("/detokenize", {{"tokens", {1, 99999}}}).first, 400);
    EXPECT_EQ(post("/tokenize", {{"content", 5}}).first, 400);
    auto sl = srv->client()->Get("/slots");
    ASSERT_TRUE(sl);
    const json slots = json::parse(sl->body);
    ASSERT_EQ(slots.size(), 8u);
    EXPECT_EQ(slots[0]["n_ctx"], 256);
}

TEST_F(ServerTest, LengthWhenTheSlotIsFull) {
    // No max_tokens: generation runs until end of text or the slot's 256 cells are full.
    auto [st, j] =
        srv->post("/v1/completions",
                  {{"prompt", "Once upon a time"}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}});
    ASSERT_EQ(st, 200);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    // 256 cells: the prompt's 5 and 251 generated ones; the last token sampled needs no cell.
    EXPECT_EQ(j["usage"]["total_tokens"], 257);
}

TEST_F(ServerTest, WebPage) {
    auto r = srv->client()->Get("/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->get_header_value("Content-Type").find("text/html"), std::string::npos);
    EXPECT_NE(r->body.find("/v1/chat/completions"), std::string::npos);
    EXPECT_EQ(r->body.find("<script src"), std::string::npos);  // nothing fetched from elsewhere
}

// A real browser (headless chromium, driven through the DevTools protocol by a node script) loads the
// page, a message typed and sent gets a streamed reply, and the model name and tokens/s show. Skipped
// where chromium or node is not installed (.ci/run installs them).
TEST_F(ServerTest, WebPageInHeadlessChromium) {
    std::string browser;
    for (const char *b : {"chromium", "chromium-browser", "google-chrome"})
        if (std::system((std::string("command -v ") + b + " >/dev/null 2>&1").c_str()) == 0) {
            browser = b;
            break;
        }
    if (browser.empty())
        GTEST_SKIP() << "chromium is not installed: the browser test of the web page is skipped";
    if (std::system(
            "node --experimental-websocket -e 'if (typeof WebSocket !== \"function\") process.exit(1)' "
            ">/dev/null 2>&1") != 0)
        GTEST_SKIP() << "node (20 or newer) is not installed: the browser test of the web page is skipped";
    const std::string cmd = "node --experimental-websocket " + std::string(LCTX_TESTS_DIR) +
                            "/server/browser_chat.mjs " + browser +
                            " http://127.0.0.1:" + std::to_string(srv->port) + "/ 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << out;
    const json j = json::parse(out.substr(out.find('{')), nullptr, false);
    ASSERT_TRUE(j.is_object()) << out;
    EXPECT_EQ(j["model"], "lctx: stories260K.gguf");
    EXPECT_FALSE(j["reply"].get<std::string>().empty());
    EXPECT_NE(j["speed"].get<std::string>().find("tokens/s"), std::string::npos) << out;
}

// The official OpenAI client library (npm `openai`), installed by name with npm into the build folder on
// first use. Skipped where node or npm is missing or the package cannot be installed (offline).
TEST_F(ServerTest, OpenAiNpmClient) {
    const lctx::testing::NpmScriptRun r =
        lctx::testing::run_openai_npm_script("openai_client.mjs", srv->port);
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

TEST(ServerOwn, ContextShiftGoesPastAFullSlot) {
    server::EngineOptions eo;
    eo.n_ctx = 128;
    eo.n_slots = 2;  // 64 cells each
    eo.context_shift = true;
    LocalServer s(eo);
    // End of text banned: 150 tokens need the slot's 64 cells to shift several times.
    auto [st, j] = s.post("/v1/completions", {{"prompt", "Once upon a time"},
                                              {"max_tokens", 150},
                                              {"temperature", 0},
                                              {"logit_bias", {{"2", -100}}}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["completion_tokens"], 150);
    // Without max_tokens a full slot still ends the request.
    auto [st2, k] =
        s.post("/v1/completions",
               {{"prompt", "Once upon a time"}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}});
    ASSERT_EQ(st2, 200);
    EXPECT_EQ(k["usage"]["total_tokens"], 65);
    EXPECT_LE(s.metric("lctx:kv_cache_tokens"), 128);
}

TEST(ServerOwn, SlotSaveRestoreErase) {
    const std::string dir =
        std::filesystem::temp_directory_path() / ("lctx_slots_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    server::EngineOptions eo;
    eo.n_ctx = 1024;
    eo.n_slots = 2;
    server::ServerOptions so;
    so.slot_save_path = dir;
    LocalServer s(eo, so);
    const std::string p = "Once upon a time, there was a little dog named Max";
    auto [st, a] = s.post("/v1/completions", {{"prompt", p}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_EQ(st, 200);
    auto sl = json::parse(s.client()->Get("/slots")->body);
    int slot = -1;
    for (const json &x : sl)
        if (x["n_cached"].get<int>() > 0) slot = x["id"];
    ASSERT_GE(slot, 0);
    const std::string base = "/slots/" + std::to_string(slot) + "?action=";
    auto [s1, sv] = s.post(base + "save", {{"filename", "max.bin"}});
    ASSERT_EQ(s1, 200) << sv.dump();
    EXPECT_GT(sv["n_saved"].get<int>(), 0);
    EXPECT_TRUE(std::filesystem::exists(dir + "/max.bin"));
    auto [s2, er] = s.post(base + "erase", json::object());
    ASSERT_EQ(s2, 200) << er.dump();
    EXPECT_EQ(s.metric("lctx:kv_cache_tokens"), 0);
    auto [s3, rs] = s.post(base + "restore", {{"filename", "max.bin"}});
    ASSERT_EQ(s3, 200) << rs.dump();
    EXPECT_EQ(rs["n_restored"], sv["n_saved"]);
    // The restored cells serve as a prompt cache, and the text is the same.
    auto [s4, b] = s.post("/v1/completions", {{"prompt", p}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_EQ(s4, 200);
    EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
    EXPECT_GT(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
    // Names that leave the folder, unknown slots and actions, and a file that is not a slot state.
    for (const char *bad : {"../x", "/etc/passwd", ".hidden", "a/b", ""})
        EXPECT_EQ(s.post(base + "save", {{"filename", bad}}).first, 400) << bad;
    EXPECT_EQ(s.post("/slots/7?action=erase", json::object()).first, 404);
    EXPECT_EQ(s.post(base + "explode", json::object()).first, 400);
    { std::ofstream(dir + "/junk.bin") << "not a state"; }
    EXPECT_EQ(s.post(base + "restore", {{"filename", "junk.bin"}}).first, 400);
    EXPECT_EQ(s.post(base + "restore", {{"filename", "missing.bin"}}).first, 400);
    std::filesystem::remove_all(dir);
}

// Servers of their own: loading, a full queue, an API key, a client that disconnects.
TEST(ServerOwn, HealthIs503WhileLoading) {
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.log = false;
    server::HttpServer http(so);
    const int port = http.bind();
    ASSERT_GT(port, 0);
    std::thread t([&] { http.listen(); });
    httplib::Client c("127.0.0.1", port);
    auto h = c.Get("/health");
    auto g = c.Post("/v1/completions", R"({"prompt":"a"})", "application/json");
    http.stop();
    t.join();
    ASSERT_TRUE(h && g);
    EXPECT_EQ(h->status, 503);
    EXPECT_EQ(g->status, 503);
    EXPECT_EQ(json::parse(g->body)["error"]["type"], "unavailable_error");
}

TEST(ServerOwn, FullQueueIs503) {
    server::EngineOptions eo;
    eo.n_ctx = 8192;
    eo.n_slots = 1;
    eo.max_queue = 1;
    eo.n_threads = 1;
    LocalServer s(eo);
    // One long request holds the slot, one waits; a third finds the queue full.
    const json slow = {
        {"prompt", "Once"}, {"temperature", 0.8}, {"logit_bias", {{"2", -100}}}, {"max_tokens", 1500}};
    auto a = std::async(std::launch::async, [&] { return s.post("/v1/completions", slow).first; });
    for (int i = 0; i < 1000 && s.metric("lctx:requests_processing") < 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto b = std::async(std::launch::async, [&] {
        return s.post("/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}}).first;
    });
    for (int i = 0; i < 1000 && s.metric("lctx:requests_deferred") < 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto [st, e] = s.post("/v1/completions", {{"prompt", "Sue"}, {"max_tokens", 2}});
    EXPECT_EQ(st, 503) << e.dump();
    EXPECT_EQ(a.get(), 200);
    EXPECT_EQ(b.get(), 200);
}

TEST(ServerOwn, ApiKey) {
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 1;
    server::ServerOptions so;
    so.api_key = "sekrit";
    LocalServer s(eo, so);
    const json body = {{"prompt", "Once"}, {"max_tokens", 2}};
    EXPECT_EQ(s.post("/v1/completions", body).first, 401);
    EXPECT_EQ(s.post("/v1/completions", body, "wrong").first, 401);
    auto [st, j] = s.post("/v1/completions", body, "sekrit");
    EXPECT_EQ(st, 200) << j.dump();
    auto [st2, e] = s.post("/v1/completions", body, "wrong");
    EXPECT_EQ(e["error"]["type"], "authentication_error");
    auto h = s.client()->Get("/health");  // public
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
}

TEST(ServerOwn, ClientGoneMidStreamFreesCells) {
    server::EngineOptions eo;
    eo.n_ctx = 8192;
    eo.n_slots = 2;  // 4096 cells each: the stream runs long enough to be cut
    eo.n_threads = 2;
    LocalServer s(eo);
    std::atomic<int> chunks{0};
    auto c = s.client();
    // End of text banned (token 2 in this vocabulary): the story cannot end before the client hangs up.
    const json body = {{"prompt", "Once upon a time"},
                       {"temperature", 0.8},
                       {"stream", true},
                       {"logit_bias", {{"2", -100}}}};
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char *, size_t, uint64_t, uint64_t) { return ++chunks < 5; };  // hang up
    c->send(req);
    EXPECT_GE(chunks.load(), 5);
    bool freed = false;
    for (int i = 0; i < 500 && !freed; ++i) {
        freed = s.metric("lctx:kv_cache_tokens") == 0 && s.metric("lctx:requests_processing") == 0;
        if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(freed) << "cells in use: " << s.metric("lctx:kv_cache_tokens");
    // Other requests still work.
    EXPECT_EQ(s.post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}).first, 200);
}

TEST(ServerOwn, ClientGoneBeforeANonStreamedAnswerFreesCells) {
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 1;
    eo.n_threads = 2;
    eo.context_shift = true;  // with end of text banned and a huge max_tokens: runs until cancelled
    LocalServer s(eo);
    auto c = s.client();
    c->set_read_timeout(0, 300000);  // the client gives up after 0.3 s and closes the connection
    const json body = {{"prompt", "Once upon a time"},
                       {"temperature", 0.8},
                       {"max_tokens", 1000000},
                       {"logit_bias", {{"2", -100}}}};
    auto r = c->Post("/v1/completions", body.dump(), "application/json");
    EXPECT_FALSE(r) << r->status << " " << r->body.substr(0, 300);  // timed out
    c.reset();
    bool freed = false;
    for (int i = 0; i < 300 && !freed; ++i) {
        freed = s.metric("lctx:kv_cache_tokens") == 0 && s.metric("lctx:requests_processing") == 0;
        if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(freed) << "cells in use: " << s.metric("lctx:kv_cache_tokens");
    EXPECT_EQ(s.post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}).first, 200);
}

}  // namespace
}  // namespace lctx::testing::server_http_test
