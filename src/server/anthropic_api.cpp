// Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) over the chat template: `system` (a
// string or text blocks), `messages` (user and assistant turns, content a string or text blocks),
// max_tokens, stop_sequences, temperature, top_p, top_k, stream. Replies are message objects
// {id, type: "message", role, model, content: [{type: "text", text}], stop_reason (end_turn, max_tokens,
// stop_sequence), stop_sequence, usage {input_tokens, output_tokens}}; a stream sends Anthropic's events
// message_start, content_block_start, ping, content_block_delta (text_delta), content_block_stop,
// message_delta (stop reason, output tokens), message_stop. Errors have Anthropic's shape
// {type: "error", error: {type, message}}. What the endpoint does not do (images, documents, tools,
// extended thinking) is a 400 naming the field.
#include <string_view>

#include "server/apis.h"
#include "server/generation.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

json anthropic_error(int status, const std::string &message, const std::string &type, const std::string &) {
    std::string t = type;
    if (status == 503 || type == "unavailable_error")
        t = "overloaded_error";
    else if (status >= 500 || type == "server_error")
        t = "api_error";
    else if (status == 404)
        t = "not_found_error";
    return {{"type", "error"}, {"error", {{"type", t}, {"message", message}}}};
}

[[noreturn]] void bad(const std::string &field, const std::string &what) {
    throw ApiError(400, "'" + field + "' " + what, "invalid_request_error", field);
}

const json *field(const json &body, const char *name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

// Text of a content value: a string, or blocks of which only text ones are taken.
std::string content_text(const json &c, const std::string &name) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_array()) bad(name, "must be a string or an array of content blocks");
    std::string out;
    for (size_t i = 0; i < c.size(); ++i) {
        const json &b = c[i];
        const std::string bn = name + "[" + std::to_string(i) + "]";
        if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
            bad(bn, "must be a content block with a type");
        const std::string type = b["type"].get<std::string>();
        if (type != "text")
            bad(bn + ".type",
                "'" + type + "' is not supported (text blocks only: no images, documents or tools)");
        const json *t = field(b, "text");
        if (!t || !t->is_string()) bad(bn + ".text", "must be a string");
        out += t->get<std::string>();
    }
    return out;
}

// The Messages request as the chat request it stands for (validated by parse_chat_request), the names of the
// fields kept to Anthropic's where they differ.
GenRequest to_chat(const json &body, const RequestLimits &lim) {
    for (const char *unsupported : {"tools", "tool_choice", "thinking", "container", "mcp_servers"})
        if (field(body, unsupported)) bad(unsupported, "is not supported by this server");
    json chat = json::object();
    json msgs = json::array();
    if (const json *sys = field(body, "system"))
        msgs.push_back({{"role", "system"}, {"content", content_text(*sys, "system")}});
    const json *m = field(body, "messages");
    if (!m || !m->is_array() || m->empty()) bad("messages", "must be a non-empty array");
    for (size_t i = 0; i < m->size(); ++i) {
        const json &msg = (*m)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!msg.is_object()) bad(name, "must be an object");
        const json *role = field(msg, "role");
        if (!role || !role->is_string() || (*role != "user" && *role != "assistant"))
            bad(name + ".role", "must be 'user' or 'assistant'");
        const json *c = field(msg, "content");
        if (!c) bad(name + ".content", "is required");
        msgs.push_back({{"role", *role}, {"content", content_text(*c, name + ".content")}});
    }
    chat["messages"] = std::move(msgs);
    if (const json *mt = field(body, "max_tokens")) {
        if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > lim.max_tokens)
            bad("max_tokens", "must be an integer from 1 to " + std::to_string(lim.max_tokens));
        chat["max_tokens"] = *mt;
    }
    if (const json *ss = field(body, "stop_sequences")) {
        if (!ss->is_array()) bad("stop_sequences", "must be an array of strings");
        for (const json &x : *ss)
            if (!x.is_string() || x.get<std::string>().empty())
                bad("stop_sequences", "must hold non-empty strings");
        if (ss->size() > static_cast<size_t>(lim.max_stop))
            bad("stop_sequences", "may hold at most " + std::to_string(lim.max_stop) + " strings");
        if (!ss->empty()) chat["stop"] = *ss;
    }
    if (const json *md = field(body, "metadata"))
        if (!md->is_object()) bad("metadata", "must be an object");
    for (const char *k : {"temperature", "top_p", "top_k", "stream", "model"})
        if (const json *v = field(body, k)) chat[k] = *v;
    // Anthropic's default temperature is 1.0, as OpenAI's.
    return parse_chat_request(chat, lim);
}

const char *stop_reason(const ChoiceResult &c) {
    if (c.finish_reason == "length") return "max_tokens";
    return c.stop_type == "word" ? "stop_sequence" : "end_turn";
}

json stop_sequence(const ChoiceResult &c) {
    return c.stop_type == "word" ? json(c.stopping_word) : json(nullptr);
}

void messages(ApiHost &host, const httplib::Request &req, httplib::Response &res) {
    Engine &eng = host.engine();
    need_generator(eng);
    const json body = parse_body(req.body);
    const GenRequest r = to_chat(body, host.limits(eng));
    const std::vector<int32_t> prompt =
        checked_prompt(eng, eng.tokenize_chat(eng.render_chat(r.messages)), "messages");
    Generation g = start_generation(eng, r, {prompt}, json::object(), -1, false);
    const std::string id = random_id("msg_");
    const std::string model = eng.model_name();
    auto message = [id, model](const std::string &text, const char *reason, json stop_seq, int64_t in,
                               int64_t out) {
        json content = json::array();
        if (!text.empty() || reason) content.push_back({{"type", "text"}, {"text", text}});
        return json{{"id", id},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", model},
                    {"content", content},
                    {"stop_reason", reason ? json(reason) : json(nullptr)},
                    {"stop_sequence", stop_seq},
                    {"usage", {{"input_tokens", in}, {"output_tokens", out}}}};
    };
    if (!r.stream) {
        if (!collect(g, host)) {
            res.status = 499;
            return;
        }
        const ChoiceResult &c = g.results[0];
        send_json(res, 200,
                  message(c.text, stop_reason(c), stop_sequence(c), c.prompt_tokens, c.completion_tokens));
        return;
    }
    StreamFormat f;
    json start = message("", nullptr, nullptr, static_cast<int64_t>(prompt.size()), 0);
    start["content"] = json::array();
    f.start = sse({{"type", "message_start"}, {"message", start}}, "message_start") +
              sse({{"type", "content_block_start"},
                   {"index", 0},
                   {"content_block", {{"type", "text"}, {"text", ""}}}},
                  "content_block_start") +
              sse({{"type", "ping"}}, "ping");
    f.on_event = [](const Event &e, ChoiceResult &c) {
        if (e.kind == Event::Token) {
            if (e.text.empty()) return std::string();
            return sse({{"type", "content_block_delta"},
                        {"index", 0},
                        {"delta", {{"type", "text_delta"}, {"text", e.text}}}},
                       "content_block_delta");
        }
        return sse({{"type", "content_block_stop"}, {"index", 0}}, "content_block_stop") +
               sse({{"type", "message_delta"},
                    {"delta", {{"stop_reason", stop_reason(c)}, {"stop_sequence", stop_sequence(c)}}},
                    {"usage", {{"output_tokens", c.completion_tokens}}}},
                   "message_delta") +
               sse({{"type", "message_stop"}}, "message_stop");
    };
    f.on_failure = [](const Event &e) { return sse(anthropic_error(e.status, e.error, "", ""), "error"); };
    f.on_end = [](std::vector<ChoiceResult> &) { return std::string(); };
    stream_generation(res, std::move(g), host, std::move(f));
}

void count_tokens(ApiHost &host, const httplib::Request &req, httplib::Response &res) {
    Engine &eng = host.engine();
    json body = parse_body(req.body);
    body.erase("max_tokens");  // optional here
    body.erase("stream");
    const GenRequest r = to_chat(body, host.limits(eng));
    const std::vector<int32_t> prompt = eng.tokenize_chat(eng.render_chat(r.messages));
    send_json(res, 200, {{"input_tokens", prompt.size()}});
}

}  // namespace

void register_anthropic_api(httplib::Server &svr, ApiHost &host) {
    svr.Post("/v1/messages", [&host](const httplib::Request &req, httplib::Response &res) {
        guarded(
            res, [&] { messages(host, req, res); }, &anthropic_error);
    });
    svr.Post("/v1/messages/count_tokens", [&host](const httplib::Request &req, httplib::Response &res) {
        guarded(
            res, [&] { count_tokens(host, req, res); }, &anthropic_error);
    });
}

}  // namespace lctx::server
