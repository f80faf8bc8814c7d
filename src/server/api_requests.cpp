#include "server/api_requests.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

// Text of a content value: a string, or blocks of which only text ones are taken.
std::string content_text(const json &c, const std::string &name) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_array()) bad_field(name, "must be a string or an array of content blocks");
    std::string out;
    for (size_t i = 0; i < c.size(); ++i) {
        const json &b = c[i];
        const std::string bn = name + "[" + std::to_string(i) + "]";
        if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
            bad_field(bn, "must be a content block with a type");
        const std::string type = b["type"].get<std::string>();
        if (type != "text")
            bad_field(bn + ".type",
                      "'" + type + "' is not supported (text blocks only: no images, documents or tools)");
        const json *t = find_field(b, "text");
        if (!t || !t->is_string()) bad_field(bn + ".text", "must be a string");
        out += t->get<std::string>();
    }
    return out;
}

}  // namespace

// The Messages request as the chat request it stands for (validated by parse_chat_request), the names of the
// fields kept to Anthropic's where they differ.
GenRequest parse_anthropic_request(const json &body, const RequestLimits &lim) {
    for (const char *unsupported : {"tools", "tool_choice", "thinking", "container", "mcp_servers"})
        if (find_field(body, unsupported)) bad_field(unsupported, "is not supported by this server");
    json chat = json::object();
    json msgs = json::array();
    if (const json *sys = find_field(body, "system"))
        msgs.push_back({{"role", "system"}, {"content", content_text(*sys, "system")}});
    const json *m = find_field(body, "messages");
    if (!m || !m->is_array() || m->empty()) bad_field("messages", "must be a non-empty array");
    for (size_t i = 0; i < m->size(); ++i) {
        const json &msg = (*m)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!msg.is_object()) bad_field(name, "must be an object");
        const json *role = find_field(msg, "role");
        if (!role || !role->is_string() || (*role != "user" && *role != "assistant"))
            bad_field(name + ".role", "must be 'user' or 'assistant'");
        const json *c = find_field(msg, "content");
        if (!c) bad_field(name + ".content", "is required");
        msgs.push_back({{"role", *role}, {"content", content_text(*c, name + ".content")}});
    }
    chat["messages"] = std::move(msgs);
    if (const json *mt = find_field(body, "max_tokens")) {
        if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > lim.max_tokens)
            bad_field("max_tokens", "must be an integer from 1 to " + std::to_string(lim.max_tokens));
        chat["max_tokens"] = *mt;
    }
    if (const json *ss = find_field(body, "stop_sequences")) {
        if (!ss->is_array()) bad_field("stop_sequences", "must be an array of strings");
        for (const json &x : *ss)
            if (!x.is_string() || x.get<std::string>().empty())
                bad_field("stop_sequences", "must hold non-empty strings");
        if (ss->size() > static_cast<size_t>(lim.max_stop))
            bad_field("stop_sequences", "may hold at most " + std::to_string(lim.max_stop) + " strings");
        if (!ss->empty()) chat["stop"] = *ss;
    }
    if (const json *md = find_field(body, "metadata"))
        if (!md->is_object()) bad_field("metadata", "must be an object");
    for (const char *k : {"temperature", "top_p", "top_k", "stream", "model"})
        if (const json *v = find_field(body, k)) chat[k] = *v;
    // Anthropic's default temperature is 1.0, as OpenAI's.
    return parse_chat_request(chat, lim);
}

namespace {
std::string item_text(const json &c, const std::string &name) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_array()) bad_field(name, "must be a string or an array of input_text parts");
    std::string out;
    for (size_t i = 0; i < c.size(); ++i) {
        const json &p = c[i];
        const std::string pn = name + "[" + std::to_string(i) + "]";
        if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
            bad_field(pn, "must be a part with a type");
        const std::string type = p["type"].get<std::string>();
        if (type != "input_text" && type != "output_text" && type != "text")
            bad_field(pn + ".type",
                      "'" + type + "' is not supported (input_text and output_text parts only)");
        const json *t = find_field(p, "text");
        if (!t || !t->is_string()) bad_field(pn + ".text", "must be a string");
        if (!out.empty()) out += "\n";
        out += t->get<std::string>();
    }
    return out;
}

}  // namespace

// The Responses request as the chat request it stands for.
GenRequest parse_responses_request(const json &body, const RequestLimits &lim) {
    for (const char *unsupported : {"previous_response_id", "reasoning", "conversation", "prompt"})
        if (find_field(body, unsupported))
            bad_field(unsupported, "is not supported by this server (nothing is stored)");
    if (const json *t = find_field(body, "tools"))
        if (!t->is_array() || !t->empty()) bad_field("tools", "is not supported by this server");
    if (const json *tc = find_field(body, "tool_choice"))
        if (*tc != "none" && *tc != "auto") bad_field("tool_choice", "is not supported by this server");
    json msgs = json::array();
    if (const json *ins = find_field(body, "instructions")) {
        if (!ins->is_string()) bad_field("instructions", "must be a string");
        msgs.push_back({{"role", "system"}, {"content", *ins}});
    }
    const json *in = find_field(body, "input");
    if (!in) bad_field("input", "is required");
    if (in->is_string()) {
        msgs.push_back({{"role", "user"}, {"content", *in}});
    } else if (in->is_array() && !in->empty()) {
        for (size_t i = 0; i < in->size(); ++i) {
            const json &it = (*in)[i];
            const std::string name = "input[" + std::to_string(i) + "]";
            if (!it.is_object()) bad_field(name, "must be a message item");
            if (const json *ty = find_field(it, "type"); ty && *ty != "message")
                bad_field(name + ".type", "must be 'message' (other item types are not supported)");
            const json *role = find_field(it, "role");
            if (!role || !role->is_string() ||
                (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer"))
                bad_field(name + ".role", "must be user, assistant, system or developer");
            const json *c = find_field(it, "content");
            if (!c) bad_field(name + ".content", "is required");
            msgs.push_back({{"role", *role}, {"content", item_text(*c, name + ".content")}});
        }
    } else {
        bad_field("input", "must be a string or a non-empty array of message items");
    }
    json chat = {{"messages", std::move(msgs)}};
    if (const json *mt = find_field(body, "max_output_tokens")) {
        if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > lim.max_tokens)
            bad_field("max_output_tokens", "must be an integer from 1 to " + std::to_string(lim.max_tokens));
        chat["max_tokens"] = *mt;
    }
    if (const json *text = find_field(body, "text")) {
        if (!text->is_object()) bad_field("text", "must be an object");
        if (const json *fm = find_field(*text, "format")) {
            if (!fm->is_object() || !fm->contains("type"))
                bad_field("text.format", "must be an object with a type");
            if ((*fm)["type"] == "json_schema") {
                const json *sc = find_field(*fm, "schema");
                if (!sc) bad_field("text.format.schema", "is required");
                chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", *sc}}}};
            } else if ((*fm)["type"] == "json_object") {
                chat["response_format"] = {{"type", "json_object"}};
            } else if ((*fm)["type"] != "text") {
                bad_field("text.format.type", "must be text, json_object or json_schema");
            }
        }
    }
    if (const json *md = find_field(body, "metadata"))
        if (!md->is_object()) bad_field("metadata", "must be an object");
    if (const json *st = find_field(body, "store"))
        if (!st->is_boolean()) bad_field("store", "must be a boolean");
    for (const char *k : {"temperature", "top_p", "stream", "model"})
        if (const json *v = find_field(body, k)) chat[k] = *v;
    return parse_chat_request(chat, lim);
}

}  // namespace lctx::server
