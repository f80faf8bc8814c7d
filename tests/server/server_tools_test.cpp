// Tool calling and reasoning in /v1/chat/completions: the shipped tiny model served with a real model's
// Jinja template (Qwen 2.5's: Hermes <tool_call> format; Qwen 3's: <think> reasoning), a grammar-forced call
// (tool_choice required / named) so that the reply really holds one, whole and streamed; the request's
// tool fields refused with a 400 naming the field; the official `openai` npm client's tool helpers.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "cli/cli_run.h"
#include "server_fixture.h"

using json = nlohmann::json;

namespace server_tools_test {
using namespace lctx;
using namespace lctx::testing;

namespace {

std::string fixture_template(const std::string &name) {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/templates/" + name, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

LocalServer *start(const std::string &template_file, server::ServerOptions so = {}, int32_t n_ctx = 4096,
                   int32_t n_slots = 2) {
    server::EngineOptions eo;
    eo.n_ctx = n_ctx;
    eo.n_slots = n_slots;
    eo.n_threads = 2;
    eo.chat_template_jinja = fixture_template(template_file);
    EXPECT_FALSE(eo.chat_template_jinja.empty()) << template_file;
    return new LocalServer(eo, so);
}

// City names from an enum: the forced call stays short whatever the tiny model prefers.
json weather_tools() {
    return json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
                       "required": ["city"]}}},
      {"type": "function", "function": {"name": "get_time", "description": "The time now",
        "parameters": {"type": "object", "properties": {}}}}
    ])");
}

json tool_request(const json &choice, bool stream = false) {
    return {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
            {"tools", weather_tools()},
            {"tool_choice", choice},
            {"temperature", 0},
            {"max_tokens", 120},
            {"stream", stream}};
}

// The streamed reply assembled as a client does: content, reasoning and tool calls by index.
struct Assembled {
    std::string content, reasoning, finish;
    json calls = json::array();
    bool markup_in_content = false;
};
Assembled assemble(const std::vector<json> &evs) {
    Assembled a;
    for (const json &e : evs) {
        if (!e.is_object() || !e.contains("choices") || e["choices"].empty()) continue;
        const json &c = e["choices"][0];
        if (c["finish_reason"].is_string()) a.finish = c["finish_reason"];
        const json &d = c["delta"];
        if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
        if (d.contains("reasoning_content")) a.reasoning += d["reasoning_content"].get<std::string>();
        if (d.contains("tool_calls"))
            for (const json &t : d["tool_calls"]) {
                const size_t i = t["index"];
                if (i == a.calls.size())
                    a.calls.push_back(
                        {{"id", t.value("id", "")},
                         {"type", t.value("type", "")},
                         {"function", {{"name", t["function"].value("name", "")}, {"arguments", ""}}}});
                a.calls[i]["function"]["arguments"] = a.calls[i]["function"]["arguments"].get<std::string>() +
                                                      t["function"].value("arguments", "");
            }
    }
    a.markup_in_content = a.content.find("<tool_call>") != std::string::npos ||
                          a.content.find("</tool_call>") != std::string::npos;
    return a;
}

class ToolServer : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { srv = start("Qwen-Qwen2.5-7B-Instruct.jinja"); }
    static void TearDownTestSuite() {
        delete srv;
        srv = nullptr;
    }
    static LocalServer *srv;
};
LocalServer *ToolServer::srv = nullptr;

TEST_F(ToolServer, RequiredToolChoiceGivesAToolCall) {
    auto [st, j] = srv->post("/v1/chat/completions", tool_request("required"));
    ASSERT_EQ(st, 200) << j.dump();
    const json &ch = j["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "tool_calls") << j.dump();
    ASSERT_TRUE(ch["message"]["tool_calls"].is_array()) << j.dump();
    ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u) << j.dump();
    const json &call = ch["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call.dump();
    const std::string name = call["function"]["name"];
    EXPECT_TRUE(name == "get_weather" || name == "get_time") << name;
    const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << call.dump();
    if (name == "get_weather") {
        EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo") << args.dump();
    }
    EXPECT_TRUE(ch["message"]["content"].is_null()) << j.dump();
}

TEST_F(ToolServer, NamedToolChoiceCallsThatFunction) {
    for (const char *name : {"get_weather", "get_time"}) {
        auto [st, j] = srv->post("/v1/chat/completions",
                                 tool_request({{"type", "function"}, {"function", {{"name", name}}}}));
        ASSERT_EQ(st, 200) << j.dump();
        ASSERT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 1u) << j.dump();
        EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"]["name"], name);
    }
}

TEST_F(ToolServer, StreamedToolCallEqualsTheWholeOne) {
    auto [st, whole] = srv->post("/v1/chat/completions", tool_request("required"));
    ASSERT_EQ(st, 200);
    auto r = srv->client()->Post("/v1/chat/completions", tool_request("required", true).dump(),
                                 "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Assembled a = assemble(sse_events(r->body));
    EXPECT_EQ(a.finish, "tool_calls");
    EXPECT_FALSE(a.markup_in_content) << a.content;
    EXPECT_EQ(a.content, "");
    ASSERT_EQ(a.calls.size(), 1u) << r->body;
    const json &w = whole["choices"][0]["message"]["tool_calls"][0];
    EXPECT_EQ(a.calls[0]["function"]["name"], w["function"]["name"]);
    EXPECT_EQ(a.calls[0]["function"]["arguments"], w["function"]["arguments"]);
    EXPECT_EQ(a.calls[0]["type"], "function");
    EXPECT_FALSE(a.calls[0]["id"].get<std::string>().empty());
}

TEST_F(ToolServer, ToolChoiceNoneRendersNoTools) {
    json body = tool_request("none");
    auto [st, p] = srv->post("/apply-template", body);
    ASSERT_EQ(st, 200) << p.dump();
    EXPECT_EQ(p["prompt"].get<std::string>().find("get_weather"), std::string::npos);
    body["tool_choice"] = "auto";
    auto [st2, p2] = srv->post("/apply-template", body);
    ASSERT_EQ(st2, 200) << p2.dump();
    EXPECT_NE(p2["prompt"].get<std::string>().find("get_weather"), std::string::npos);
    EXPECT_NE(p2["prompt"].get<std::string>().find("<tools>"), std::string::npos);
    // none: no grammar, nothing parsed: plain text back.
    body["tool_choice"] = "none";
    body["max_tokens"] = 8;
    auto [st3, j] = srv->post("/v1/chat/completions", body);
    ASSERT_EQ(st3, 200) << j.dump();
    EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
    EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
}

TEST_F(ToolServer, ToolTurnsRenderThroughTheTemplate) {
    const json body = {
        {"messages",
         {{{"role", "user"}, {"content", "Weather in Oslo?"}},
          {{"role", "assistant"},
           {"content", nullptr},
           {"tool_calls",
            {{{"id", "call_1"},
              {"type", "function"},
              {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Oslo\"}"}}}}}}},
          {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "12 degrees, rain"}}}},
        {"tools", weather_tools()}};
    auto [st, p] = srv->post("/apply-template", body);
    ASSERT_EQ(st, 200) << p.dump();
    const std::string prompt = p["prompt"];
    // Qwen 2.5 writes the call's arguments with tojson: an object, not a quoted string.
    EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"),
              std::string::npos)
        << prompt;
    EXPECT_NE(prompt.find("<tool_response>\n12 degrees, rain\n</tool_response>"), std::string::npos)
        << prompt;
    // And a generation from it works (the reply after a tool result).
    json gen = body;
    gen["max_tokens"] = 4;
    auto [st2, j] = srv->post("/v1/chat/completions", gen);
    EXPECT_EQ(st2, 200) << j.dump();
}

TEST_F(ToolServer, BadToolFieldsAre400NamingTheField) {
    const std::pair<json, const char *> bad[] = {
        {{{"tools", "x"}}, "tools"},
        {{{"tools", {{{"type", "code"}, {"function", {{"name", "f"}}}}}}}, "tools[0].type"},
        {{{"tools", {{{"type", "function"}}}}}, "tools[0].function"},
        {{{"tools", {{{"type", "function"}, {"function", {{"name", "bad name"}}}}}}},
         "tools[0].function.name"},
        {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "x"}}}}}}},
         "tools[0].function.parameters"},
        {{{"tools",
           {{{"type", "function"}, {"function", {{"name", "f"}}}},
            {{"type", "function"}, {"function", {{"name", "f"}}}}}}},
         "tools[1].function.name"},
        {{{"tool_choice", "sometimes"}}, "tool_choice"},
        {{{"tool_choice", "required"}}, "tool_choice"},
        {{{"tools", weather_tools()},
          {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
         "tool_choice.function.name"},
        {{{"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
        {{{"chat_template_kwargs", 3}}, "chat_template_kwargs"},
        {{{"chat_template_kwargs", {{"enable_thinking", "no"}}}}, "chat_template_kwargs"},
        {{{"tools", weather_tools()}, {"tool_choice", "required"}, {"grammar", "root ::= \"x\""}},
         "tool_choice"},
        {{{"tools",
           {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "nonsense"}}}}}}}},
          {"tool_choice", "required"}},
         "tools"},
    };
    for (const auto &[extra, field] : bad) {
        json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
        for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
        auto [st, j] = srv->post("/v1/chat/completions", body);
        EXPECT_EQ(st, 400) << body.dump() << " -> " << j.dump();
        EXPECT_EQ(j["error"]["param"], field) << body.dump() << " -> " << j.dump();
    }
    const json calls_bad = {
        {"messages",
         {{{"role", "user"}, {"content", "hi"}},
          {{"role", "assistant"},
           {"tool_calls", {{{"id", "1"}, {"function", {{"name", "f"}, {"arguments", "{bad"}}}}}}}}},
        {"max_tokens", 2}};
    auto [st, j] = srv->post("/v1/chat/completions", calls_bad);
    EXPECT_EQ(st, 400);
    EXPECT_EQ(j["error"]["param"], "messages[1].tool_calls[0].function.arguments") << j.dump();
}

// A model served with a built-in format cannot render tools: refused, naming the way out, as llama-server
// refuses tools without --jinja.
TEST(ServerTools, BuiltinTemplateRefusesTools) {
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 1;
    LocalServer s(eo);  // the tiny model has no template: chatml
    auto [st, j] = s.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                   {"tools", weather_tools()}});
    EXPECT_EQ(st, 400);
    EXPECT_EQ(j["error"]["param"], "tools");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("Jinja"), std::string::npos) << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find("--chat-template-file"), std::string::npos);
    // tool_choice none asks for no tools: served.
    auto [st2, k] = s.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                    {"tools", weather_tools()},
                                                    {"tool_choice", "none"},
                                                    {"max_tokens", 2}});
    EXPECT_EQ(st2, 200) << k.dump();
}

// Reasoning: Qwen 3's template; a grammar makes the tiny model write a <think> block.
TEST(ServerTools, ThinkBecomesReasoningContent) {
    const std::string reply = "<think>\nI should greet.\n</think>\n\nHello there";
    const json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                       {"grammar", "root ::= " + json(reply).dump()},
                       {"temperature", 0},
                       {"max_tokens", 100}};
    {
        std::unique_ptr<LocalServer> s(start("Qwen-Qwen3-0.6B.jinja"));
        auto [st, j] = s->post("/v1/chat/completions", body);
        ASSERT_EQ(st, 200) << j.dump();
        EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "I should greet.") << j.dump();
        EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there") << j.dump();
        EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
        json sb = body;
        sb["stream"] = true;
        auto r = s->client()->Post("/v1/chat/completions", sb.dump(), "application/json");
        ASSERT_TRUE(r);
        const Assembled a = assemble(sse_events(r->body));
        EXPECT_EQ(a.reasoning, "I should greet.") << r->body;
        EXPECT_EQ(a.content, "Hello there") << r->body;
        EXPECT_EQ(a.content.find("<think>"), std::string::npos);
        // chat_template_kwargs reach the template: Qwen 3 closes an empty think block when thinking is off.
        json kw = body;
        kw["chat_template_kwargs"] = {{"enable_thinking", false}};
        auto [st3, p] = s->post("/apply-template", kw);
        ASSERT_EQ(st3, 200) << p.dump();
        const std::string prompt = p["prompt"];
        EXPECT_NE(prompt.find("<think>\n\n</think>"), std::string::npos) << prompt;
        auto [st4, p2] = s->post("/apply-template", body);
        EXPECT_EQ(p2["prompt"].get<std::string>().find("<think>"), std::string::npos) << p2.dump();
    }
    {
        server::ServerOptions so;
        so.reasoning_format = "none";
        std::unique_ptr<LocalServer> s(start("Qwen-Qwen3-0.6B.jinja", so));
        auto [st, j] = s->post("/v1/chat/completions", body);
        ASSERT_EQ(st, 200) << j.dump();
        EXPECT_EQ(j["choices"][0]["message"]["content"], reply) << j.dump();
        EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
    }
    {
        server::ServerOptions so;
        so.reasoning_budget = 0;  // thinking off: the template's enable_thinking false
        std::unique_ptr<LocalServer> s(start("Qwen-Qwen3-0.6B.jinja", so));
        auto [st, p] = s->post("/apply-template", body);
        ASSERT_EQ(st, 200) << p.dump();
        EXPECT_NE(p["prompt"].get<std::string>().find("<think>\n\n</think>"), std::string::npos) << p.dump();
    }
}

// QwQ's generation prompt opens <think>: the reply starts as reasoning.
TEST(ServerTools, PromptThatOpensThinking) {
    std::unique_ptr<LocalServer> s(start("Qwen-QwQ-32B.jinja"));
    const json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                       {"grammar", R"(root ::= "Let me see.\n</think>\n\nHi!")"},
                       {"temperature", 0},
                       {"max_tokens", 100}};
    auto [st, j] = s->post("/v1/chat/completions", body);
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Let me see.") << j.dump();
    EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi!") << j.dump();
}

// The official OpenAI client library (npm `openai`): tools through its helpers
// (tests/server/openai_tools.mjs). Installed and skipped as the OpenAiNpmClient test of server_http_test.cpp.
TEST_F(ToolServer, OpenAiNpmClientTools) {
    const lctx::testing::NpmScriptRun r = lctx::testing::run_openai_npm_script("openai_tools.mjs", srv->port);
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

// Every tool-call format through a real template of it: the tools render, the grammar forces a call in
// that format, and the reply parses back into it, whole and streamed alike.
TEST(ServerTools, ForcedCallInEveryFormat) {
    const std::pair<const char *, const char *> templates[] = {
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3"},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3"},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral-nemo"},
        {"meetkai-functionary-medium-v3.1.jinja", "functionary-3.1"},
        {"meetkai-functionary-medium-v3.2.jinja", "functionary-3.2"},
        {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command-r7b"},
        {"fireworks-ai-llama-3-firefunction-v2.jinja", "firefunction-2"},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "hermes"},
        {"Qwen-Qwen3-0.6B.jinja", "hermes"},
        {"Qwen3-Coder.jinja", "qwen3-coder"},
        {"openai-gpt-oss-120b.jinja", "gpt-oss"},
        {"google-gemma-2-2b-it.jinja", "generic"},
    };
    for (const auto &[file, format] : templates) {
        SCOPED_TRACE(std::string(file) + " (" + format + ")");
        std::unique_ptr<LocalServer> s(start(file, {}, 8192, 1));  // command-r7b's prompt is 4000 tokens
        json body = tool_request({{"type", "function"}, {"function", {{"name", "get_weather"}}}});
        body["max_tokens"] = 400;  // the tiny model spells the markup a character at a time
        auto [st, j] = s->post("/v1/chat/completions", body);
        ASSERT_EQ(st, 200) << j.dump();
        const json &msg = j["choices"][0]["message"];
        ASSERT_TRUE(msg.contains("tool_calls")) << j.dump();
        ASSERT_EQ(msg["tool_calls"].size(), 1u) << j.dump();
        EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
        const json &call = msg["tool_calls"][0];
        EXPECT_EQ(call["function"]["name"], "get_weather");
        const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
        EXPECT_TRUE(args.is_object() && (args["city"] == "Paris" || args["city"] == "Oslo")) << call.dump();
        if (std::string(format) == "mistral-nemo") {
            EXPECT_EQ(call["id"].get<std::string>().size(), 9u) << call.dump();  // its template insists
        }
        body["stream"] = true;
        auto r = s->client()->Post("/v1/chat/completions", body.dump(), "application/json");
        ASSERT_TRUE(r);
        const Assembled a = assemble(sse_events(r->body));
        ASSERT_EQ(a.calls.size(), 1u) << r->body;
        EXPECT_EQ(a.calls[0]["function"]["arguments"], call["function"]["arguments"]);
        EXPECT_EQ(a.content, "") << r->body;
        // The call fed back renders through the same template.
        json back = tool_request("auto");
        back["messages"].push_back(msg);
        back["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "sunny"}});
        auto [st2, p] = s->post("/apply-template", back);
        EXPECT_EQ(st2, 200) << p.dump();
        EXPECT_NE(p.value("prompt", "").find("sunny"), std::string::npos) << p.dump();
    }
}

// `lctx serve --chat-template-file` as a process: the file's template is the one /props shows and the one
// tools render through (a forced call comes back).
TEST(ServerTools, ServeProcessTakesAChatTemplateFile) {
    const std::string file = std::string(LCTX_FIXTURES_DIR) + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja";
    CliProcess p({"serve", "--port", "0", "-c", "4096", "-np", "1", "-t", "1", "--log-disable",
                  "--chat-template-file", file, "--reasoning-format", "deepseek"});
    ASSERT_TRUE(p.started());
    ASSERT_TRUE(p.wait_for("open http://", 0, 30)) << p.output();
    std::smatch m;
    const std::string out = p.output();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("127\\.0\\.0\\.1:([0-9]+)/"))) << out;
    httplib::Client c("127.0.0.1", std::stoi(m[1]));
    c.set_read_timeout(60, 0);
    auto props = c.Get("/props");
    ASSERT_TRUE(props);
    EXPECT_NE(json::parse(props->body)["chat_template"].get<std::string>().find("<tool_call>"),
              std::string::npos);
    auto r = c.Post("/v1/chat/completions", tool_request("required").dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
    EXPECT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 1u) << r->body;
    p.signal(SIGINT);
    EXPECT_EQ(p.wait_exit(15), 0) << p.output();
}

}  // namespace
}  // namespace server_tools_test
