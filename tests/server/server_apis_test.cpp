// The other APIs people point at local servers: Anthropic's Messages (/v1/messages, count_tokens) and
// OpenAI's Responses (/v1/responses), whole and streamed with their own events. Their text is checked
// against the chat endpoint's greedy text for the same conversation.
#include <gtest/gtest.h>

#include "server/server_fixture.h"

namespace lctx::testing::server_apis_test {
namespace {
using json = nlohmann::json;

server::EngineOptions small_engine() {
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 2;
    eo.n_threads = 1;
    return eo;
}

// The chat endpoint's greedy reply to a system prompt and one user message.
json chat(const LocalServer &s, const std::string &system, const std::string &user, int n,
          json stop = nullptr) {
    json msgs = json::array();
    if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
    msgs.push_back({{"role", "user"}, {"content", user}});
    json b = {{"messages", msgs}, {"max_tokens", n}, {"temperature", 0}};
    if (!stop.is_null()) b["stop"] = stop;
    auto [st, j] = s.post("/v1/chat/completions", b);
    EXPECT_EQ(st, 200) << j.dump();
    return j;
}

// (event name, data) of each SSE event.
std::vector<std::pair<std::string, json>> named_events(const std::string &body) {
    std::vector<std::pair<std::string, json>> out;
    std::istringstream in(body);
    std::string line, name;
    while (std::getline(in, line)) {
        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
        if (line.rfind("data: ", 0) == 0) {
            out.emplace_back(name, json::parse(line.substr(6), nullptr, false));
            name.clear();
        }
    }
    return out;
}

TEST(ServerAnthropic, MessagesAsTheChatEndpoint) {
    LocalServer s(small_engine());
    const json c = chat(s, "Be brief.", "Tell a story", 12);
    const std::string text = c["choices"][0]["message"]["content"];
    const json body = {
        {"model", "x"},
        {"max_tokens", 12},
        {"temperature", 0},
        {"system", "Be brief."},
        {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell a story"}}}}}}}};
    auto [st, m] = s.post("/v1/messages", body);
    ASSERT_EQ(st, 200) << m.dump();
    EXPECT_EQ(m["type"], "message");
    EXPECT_EQ(m["role"], "assistant");
    EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
    ASSERT_EQ(m["content"].size(), 1u) << m.dump();
    EXPECT_EQ(m["content"][0]["type"], "text");
    EXPECT_EQ(m["content"][0]["text"], text);
    EXPECT_EQ(m["stop_reason"], c["choices"][0]["finish_reason"] == "length" ? "max_tokens" : "end_turn");
    EXPECT_EQ(m["stop_sequence"], nullptr);
    EXPECT_EQ(m["usage"]["input_tokens"], c["usage"]["prompt_tokens"]);
    EXPECT_EQ(m["usage"]["output_tokens"], c["usage"]["completion_tokens"]);
    // count_tokens: the same input tokens.
    json count = body;
    count.erase("max_tokens");
    auto [stc, n] = s.post("/v1/messages/count_tokens", count);
    ASSERT_EQ(stc, 200) << n.dump();
    EXPECT_EQ(n["input_tokens"], m["usage"]["input_tokens"]);
    // A stop sequence: stop_reason stop_sequence, the sequence named.
    ASSERT_GT(text.size(), 4u);
    const std::string word = text.substr(text.size() / 2, 3);
    json sb = body;
    sb["stop_sequences"] = json::array({word});
    auto [st2, w] = s.post("/v1/messages", sb);
    ASSERT_EQ(st2, 200) << w.dump();
    EXPECT_EQ(w["stop_reason"], "stop_sequence") << w.dump();
    EXPECT_EQ(w["stop_sequence"], word);
    EXPECT_EQ(w["content"][0]["text"], text.substr(0, text.find(word)));
}

TEST(ServerAnthropic, StreamSendsAnthropicsEvents) {
    LocalServer s(small_engine());
    const json body = {{"max_tokens", 10},
                       {"temperature", 0},
                       {"messages", {{{"role", "user"}, {"content", "Tell a story"}}}}};
    auto [st, whole] = s.post("/v1/messages", body);
    ASSERT_EQ(st, 200) << whole.dump();
    json sb = body;
    sb["stream"] = true;
    auto r = s.client()->Post("/v1/messages", sb.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto evs = named_events(r->body);
    std::vector<std::string> names;
    std::string text;
    for (const auto &[name, data] : evs) {
        ASSERT_TRUE(data.is_object()) << r->body;
        EXPECT_EQ(data["type"], name);  // the event's name is its type
        if (name == "content_block_delta") {
            EXPECT_EQ(data["delta"]["type"], "text_delta");
            text += data["delta"]["text"].get<std::string>();
        } else {
            names.push_back(name);
        }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping",
                                               "content_block_stop", "message_delta", "message_stop"}))
        << r->body;
    EXPECT_EQ(text, whole["content"][0]["text"]);
    EXPECT_EQ(evs.front().second["message"]["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
    const json &delta = evs[evs.size() - 2].second;
    EXPECT_EQ(delta["delta"]["stop_reason"], whole["stop_reason"]);
    EXPECT_EQ(delta["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
}

TEST(ServerAnthropic, RefusesWhatItDoesNotDo) {
    LocalServer s(small_engine());
    const json msgs = {{{"role", "user"}, {"content", "Hi"}}};
    for (const json &b :
         {json{{"max_tokens", 4}}, json{{"messages", msgs}, {"max_tokens", 0}},
          json{{"messages", {{{"role", "system"}, {"content", "x"}}}}},
          json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}}}}}}},
          json{{"messages", msgs}, {"tools", json::array({{{"name", "f"}}})}},
          json{{"messages", msgs}, {"stop_sequences", "x"}}, json{{"messages", msgs}, {"temperature", 5}}}) {
        auto [st, e] = s.post("/v1/messages", b);
        EXPECT_EQ(st, 400) << b.dump() << " " << e.dump();
        EXPECT_EQ(e["type"], "error") << e.dump();  // Anthropic's error shape
        EXPECT_EQ(e["error"]["type"], "invalid_request_error") << e.dump();
    }
}

TEST(ServerResponses, ResponseAsTheChatEndpoint) {
    LocalServer s(small_engine());
    const json c = chat(s, "Be brief.", "Tell a story", 12);
    auto [st, r] = s.post(
        "/v1/responses",
        {{"model", "x"},
         {"instructions", "Be brief."},
         {"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Tell a story"}}}}}}},
         {"max_output_tokens", 12},
         {"temperature", 0}});
    ASSERT_EQ(st, 200) << r.dump();
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
    const bool cut = c["choices"][0]["finish_reason"] == "length";
    EXPECT_EQ(r["status"], cut ? "incomplete" : "completed");
    if (cut) {
        EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    }
    ASSERT_EQ(r["output"].size(), 1u) << r.dump();
    EXPECT_EQ(r["output"][0]["type"], "message");
    EXPECT_EQ(r["output"][0]["role"], "assistant");
    EXPECT_EQ(r["output"][0]["content"][0]["type"], "output_text");
    EXPECT_EQ(r["output"][0]["content"][0]["text"], c["choices"][0]["message"]["content"]);
    EXPECT_EQ(r["usage"]["input_tokens"], c["usage"]["prompt_tokens"]);
    EXPECT_EQ(r["usage"]["output_tokens"], c["usage"]["completion_tokens"]);
    EXPECT_EQ(r["instructions"], "Be brief.");
    // A plain string input is one user message.
    const json c2 = chat(s, "", "Tell a story", 6);
    auto [st2, r2] =
        s.post("/v1/responses", {{"input", "Tell a story"}, {"max_output_tokens", 6}, {"temperature", 0}});
    ASSERT_EQ(st2, 200) << r2.dump();
    EXPECT_EQ(r2["output"][0]["content"][0]["text"], c2["choices"][0]["message"]["content"]);
    for (const json &b :
         {json::object(), json{{"input", 3}}, json{{"input", "x"}, {"previous_response_id", "resp_1"}},
          json{{"input", "x"}, {"tools", json::array({{{"type", "function"}}})}},
          json{{"input", {{{"type", "function_call_output"}, {"output", "x"}}}}},
          json{{"input", "x"}, {"max_output_tokens", 0}}}) {
        auto [st3, e] = s.post("/v1/responses", b);
        EXPECT_EQ(st3, 400) << b.dump() << " " << e.dump();
        EXPECT_TRUE(e["error"]["param"].is_string()) << e.dump();
    }
}

TEST(ServerResponses, StreamSendsResponsesEvents) {
    LocalServer s(small_engine());
    const json body = {{"input", "Tell a story"}, {"max_output_tokens", 10}, {"temperature", 0}};
    auto [st, whole] = s.post("/v1/responses", body);
    ASSERT_EQ(st, 200) << whole.dump();
    json sb = body;
    sb["stream"] = true;
    auto r = s.client()->Post("/v1/responses", sb.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto evs = named_events(r->body);
    std::vector<std::string> names;
    std::string text;
    int64_t seq = 0;
    for (const auto &[name, data] : evs) {
        ASSERT_TRUE(data.is_object()) << r->body;
        EXPECT_EQ(data["type"], name);
        EXPECT_EQ(data["sequence_number"], seq++);
        if (name == "response.output_text.delta")
            text += data["delta"].get<std::string>();
        else
            names.push_back(name);
    }
    const std::string end = whole["status"] == "completed" ? "response.completed" : "response.incomplete";
    EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress",
                                               "response.output_item.added", "response.content_part.added",
                                               "response.output_text.done", "response.content_part.done",
                                               "response.output_item.done", end}))
        << r->body;
    const std::string want = whole["output"][0]["content"][0]["text"];
    EXPECT_EQ(text, want);
    EXPECT_EQ(evs[evs.size() - 4].second["text"], want);
    EXPECT_EQ(evs.front().second["response"]["status"], "in_progress");
    EXPECT_EQ(evs.back().second["response"]["output"][0]["content"][0]["text"], want);
    EXPECT_EQ(evs.back().second["response"]["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
    EXPECT_EQ(evs.back().second["response"]["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
}

}  // namespace
}  // namespace lctx::testing::server_apis_test
