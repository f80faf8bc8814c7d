#include "server/chat_reply.h"

#include <map>
#include <mutex>
#include <random>

#include "chat/chat_template.h"
#include "chat/tool_grammar.h"
#include "grammar/json_schema.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

uint64_t random64() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    return rng();
}

// Whether a template joins tool-call arguments as text (else it reads them as an object): probed once per
// template text.
bool wants_string_arguments(const std::string &src) {
    static std::mutex mu;
    static std::map<std::string, bool> known;
    {
        std::lock_guard<std::mutex> lk(mu);
        if (auto it = known.find(src); it != known.end()) return it->second;
    }
    const bool v = chat::template_wants_string_arguments([&](const ojson &msgs) {
        chat::JinjaChatOptions o;
        o.add_generation_prompt = false;
        return chat::jinja_chat_render(src, msgs, o);
    });
    std::lock_guard<std::mutex> lk(mu);
    if (known.size() > 64) known.clear();
    known[src] = v;
    return v;
}

// The markup of the formats: where one of these is a single special token, the reply keeps its text.
const char *const kMarkers[] = {
    "<tool_call>",        "</tool_call>",       "<think>",          "</think>",         "[TOOL_CALLS]",
    "<|python_tag|>",     "<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>",
    "<|START_RESPONSE|>", "<|END_RESPONSE|>",   "<|channel|>",      "<|message|>",      "<|end|>",
    "<|start|>",          "<|constrain|>",      "<|call|>",
};

// A template that knows no tools of its own (generic format): the tools and the reply's JSON shape go into
// the system message.
void add_generic_instructions(ojson &msgs, const ojson &tools, bool parallel) {
    std::string text =
        "You can call these tools (JSON schema of each function's arguments):\n" + tools.dump(2) +
        "\n\nReply with one JSON object only: " +
        (parallel ? std::string(R"({"tool_calls": [{"name": "<tool name>", "arguments": {...}}, ...]})")
                  : std::string(R"({"tool_call": {"name": "<tool name>", "arguments": {...}}})")) +
        " to call tools, or {\"response\": \"<your answer>\"} to answer the user directly.";
    if (!msgs.empty() && msgs[0].value("role", "") == "system") {
        msgs[0]["content"] = msgs[0].value("content", "") + "\n\n" + text;
    } else {
        msgs.insert(msgs.begin(), ojson{{"role", "system"}, {"content", text}});
    }
}

// A template that knows neither tool calls nor tool turns (generic format): an assistant's calls become its
// content in the generic reply's JSON, and a tool's result a user turn holding it as JSON.
void polyfill_tool_turns(ojson &msgs) {
    for (ojson &m : msgs) {
        if (m.contains("tool_calls")) {
            ojson calls = ojson::array();
            for (const ojson &c : m["tool_calls"])
                calls.push_back({{"name", c["function"]["name"]}, {"arguments", c["function"]["arguments"]}});
            const std::string text = m.value("content", "");
            ojson reply = {{"tool_calls", calls}};
            m["content"] = (text.empty() ? "" : text + "\n") + reply.dump();
            m.erase("tool_calls");
        } else if (m.value("role", "") == "tool") {
            ojson result = {{"tool_call_id", m.value("tool_call_id", "")},
                            {"content", m.value("content", "")}};
            m = ojson{{"role", "user"}, {"content", ojson{{"tool_response", result}}.dump()}};
        }
    }
}

json tool_calls_json(const std::vector<chat::ToolCall> &calls) {
    json arr = json::array();
    for (const chat::ToolCall &c : calls)
        arr.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    return arr;
}

}  // namespace

ChatPlan plan_chat(const Engine &eng, const GenRequest &r, const ChatReplyOptions &opts) {
    ChatPlan p;
    const ToolRequest &t = r.tools;
    const generate::ChatTurns &turns = eng.chat_turns();
    const std::string &src = turns.jinja_template();
    const bool tools = t.active();
    if (src.empty()) {
        if (tools)
            throw ApiError(
                400,
                "'tools' need a Jinja chat template, and this server renders chats with a built-in "
                "format: serve a model that has a chat template (without --chat-template), or pass "
                "one with --chat-template-file (llama-server needs --jinja for the same)",
                "invalid_request_error", "tools");
        if (!t.template_kwargs.empty())
            throw ApiError(
                400,
                "'chat_template_kwargs' need a Jinja chat template, and this server renders chats with "
                "a built-in format (see --chat-template-file)",
                "invalid_request_error", "chat_template_kwargs");
        p.prompt = eng.render_chat(r.messages);
        return p;
    }

    chat::ToolFormat format = chat::tool_format_detect(src);
    const bool polyfill = format == chat::ToolFormat::Generic && src.find("tool_call") == std::string::npos;
    // Without tools only the formats that carry reasoning in markup of their own are parsed.
    if (!tools && format != chat::ToolFormat::GptOss && format != chat::ToolFormat::CommandR7B)
        format = chat::ToolFormat::ContentOnly;

    chat::JinjaChatOptions jo;  // the model's BOS and EOS texts come from turns.render_jinja
    jo.extra = t.template_kwargs;
    if (auto it = jo.extra.find("enable_thinking"); it != jo.extra.end()) {
        if (!it->is_boolean())
            throw ApiError(400, "'chat_template_kwargs.enable_thinking' must be a boolean",
                           "invalid_request_error", "chat_template_kwargs");
        jo.enable_thinking = it->get<bool>();
    } else if (opts.reasoning_budget == 0) {
        jo.enable_thinking = false;
    }
    const bool own_render =
        tools || t.tool_turns || !t.template_kwargs.empty() || jo.enable_thinking.has_value();
    if (own_render) {
        ojson msgs = t.messages;
        if (t.tool_turns && !wants_string_arguments(src))
            for (ojson &m : msgs)
                if (m.contains("tool_calls"))
                    for (ojson &c : m["tool_calls"]) {
                        ojson &a = c["function"]["arguments"];
                        a = ojson::parse(a.get<std::string>(), nullptr, false);
                        if (a.is_discarded()) a = ojson::object();
                    }
        if (t.tool_turns && polyfill) polyfill_tool_turns(msgs);
        if (tools && !jo.extra.contains("tools")) jo.extra["tools"] = t.tools;
        if (tools && format == chat::ToolFormat::Generic && src.find("tools") == std::string::npos)
            add_generic_instructions(msgs, t.tools, t.parallel);
        try {
            p.prompt = turns.render_jinja(msgs, jo);
        } catch (const std::exception &e) {
            throw ApiError(400, std::string("the chat template failed: ") + e.what(), "invalid_request_error",
                           tools ? "tools" : "messages");
        }
    } else {
        p.prompt = eng.render_chat(r.messages);
    }

    // The grammar: a forced call (required, or the named function); the generic format always answers in
    // its JSON (a call or a response).
    const bool forced =
        tools && (t.choice == ToolRequest::Choice::Required || t.choice == ToolRequest::Choice::Named);
    if (forced || (tools && format == chat::ToolFormat::Generic)) {
        if (!r.grammar.empty())
            throw ApiError(
                400,
                forced ? "'tool_choice' cannot force a tool call together with a grammar, json_schema "
                         "or response_format"
                       : "'tools' with this template (generic JSON tool calls) cannot be combined with a "
                         "grammar, json_schema or response_format",
                "invalid_request_error", forced ? "tool_choice" : "tools");
        std::vector<chat::ToolSpec> specs;
        for (const ojson &tool : t.tools) {
            const ojson &fn = tool["function"];
            const std::string name = fn["name"].get<std::string>();
            if (t.choice == ToolRequest::Choice::Named && name != t.named) continue;
            specs.push_back({name, fn.contains("parameters") ? fn["parameters"] : ojson::object()});
        }
        try {
            p.grammar = chat::tool_call_grammar(
                format, specs, t.parallel && t.choice != ToolRequest::Choice::Named, !forced);
        } catch (const std::exception &e) {
            throw ApiError(400, std::string("'tools' cannot be turned into a grammar: ") + e.what(),
                           "invalid_request_error", "tools");
        }
    }

    const bool thinking_template = src.find("<think>") != std::string::npos ||
                                   format == chat::ToolFormat::GptOss ||
                                   format == chat::ToolFormat::CommandR7B;
    const bool reasoning = opts.reasoning != chat::ReasoningFormat::None;
    p.parse = tools || (reasoning && thinking_template);
    if (!p.parse) return p;
    p.parse_opts.format = format;
    p.parse_opts.reasoning = opts.reasoning;
    // A forced call starts at once, even where the prompt opened <think>.
    p.parse_opts.thinking_forced_open = reasoning && !forced && chat::prompt_opens_thinking(p.prompt);
    for (const char *m : kMarkers) {
        const std::vector<int32_t> toks = eng.tokenize(m, false, true);
        if (toks.size() == 1) p.preserved_tokens.push_back(toks[0]);
    }
    std::sort(p.preserved_tokens.begin(), p.preserved_tokens.end());
    return p;
}

void chat_choice_json(const ChatPlan &plan, const std::string &text, json &choice) {
    if (!plan.parse) return;
    chat::ChatParsed r = chat::chat_parse(text, plan.parse_opts, false);
    json msg = {{"role", "assistant"}};
    msg["content"] = r.content.empty() && !r.tool_calls.empty() ? json(nullptr) : json(r.content);
    if (!r.reasoning.empty()) msg["reasoning_content"] = r.reasoning;
    if (!r.tool_calls.empty()) {
        for (chat::ToolCall &c : r.tool_calls) c.id = chat::tool_call_id(plan.parse_opts.format, random64());
        msg["tool_calls"] = tool_calls_json(r.tool_calls);
        if (choice.value("finish_reason", "") == "stop") choice["finish_reason"] = "tool_calls";
    }
    choice["message"] = std::move(msg);
}

ChatReplyStream::ChatReplyStream(const ChatPlan &plan)
    : parser_(plan.parse_opts, [f = plan.parse_opts.format] { return chat::tool_call_id(f, random64()); }) {}

void ChatReplyStream::deltas(const ResponseMeta &m, int32_t index, const chat::ChatDelta &d, const Event *tok,
                             bool &first, std::vector<json> &out) {
    auto chunk = [&](const std::string &content) {
        json c = chunk_json(m, index, content, tok, first, "");
        tok = nullptr;
        first = false;
        return c;
    };
    if (!d.reasoning.empty()) {
        json c = chunk("");
        json &delta = c["choices"][0]["delta"];
        delta.erase("content");
        delta["reasoning_content"] = d.reasoning;
        out.push_back(std::move(c));
    }
    if (!d.content.empty()) out.push_back(chunk(d.content));
    for (const chat::ToolCallDelta &td : d.tool_calls) {
        json c = chunk("");
        json &delta = c["choices"][0]["delta"];
        delta.erase("content");
        json call = {{"index", td.index}};
        if (!td.id.empty()) {
            call["id"] = td.id;
            call["type"] = "function";
        }
        call["function"] = json::object();
        if (!td.name.empty()) call["function"]["name"] = td.name;
        call["function"]["arguments"] = td.arguments;
        delta["tool_calls"] = json::array({call});
        out.push_back(std::move(c));
    }
    if (tok) out.push_back(chunk(""));  // the token's logprobs, with nothing to show yet
}

std::vector<json> ChatReplyStream::token(const ResponseMeta &m, const Event &e, bool &first) {
    std::vector<json> out;
    const chat::ChatDelta d = parser_.push(e.text);
    deltas(m, e.index, d, m.logprobs && e.token >= 0 ? &e : nullptr, first, out);
    return out;
}

std::vector<json> ChatReplyStream::done(const ResponseMeta &m, int32_t index, const std::string &finish,
                                        bool &first) {
    std::vector<json> out;
    deltas(m, index, parser_.finish(), nullptr, first, out);
    const std::string reason =
        finish == "stop" && !parser_.result().tool_calls.empty() ? "tool_calls" : finish;
    out.push_back(chunk_json(m, index, "", nullptr, first, reason));
    first = false;
    return out;
}

}  // namespace lctx::server
