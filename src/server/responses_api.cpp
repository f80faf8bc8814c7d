// OpenAI's Responses API (/v1/responses) over the chat template: `input` (a string, or message items with
// string content or input_text / output_text parts), `instructions` (the system turn), max_output_tokens,
// temperature, top_p, text.format (text, json_object, json_schema), stream. A reply is a response object
// {id, object: "response", created_at, status (completed, or incomplete with incomplete_details.reason
// max_output_tokens), model, output: [one assistant message with an output_text part], usage}; a stream
// sends response.created, response.in_progress, response.output_item.added, response.content_part.added,
// response.output_text.delta ..., response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed (or response.incomplete), each with a sequence_number.
// Nothing is stored: previous_response_id is a 400, as are tools, reasoning and other item types.
#include "server/apis.h"
#include "server/generation.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

[[noreturn]] void bad(const std::string &field, const std::string &what) {
    throw ApiError(400, "'" + field + "' " + what, "invalid_request_error", field);
}

const json *field(const json &body, const char *name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string item_text(const json &c, const std::string &name) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_array()) bad(name, "must be a string or an array of input_text parts");
    std::string out;
    for (size_t i = 0; i < c.size(); ++i) {
        const json &p = c[i];
        const std::string pn = name + "[" + std::to_string(i) + "]";
        if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
            bad(pn, "must be a part with a type");
        const std::string type = p["type"].get<std::string>();
        if (type != "input_text" && type != "output_text" && type != "text")
            bad(pn + ".type", "'" + type + "' is not supported (input_text and output_text parts only)");
        const json *t = field(p, "text");
        if (!t || !t->is_string()) bad(pn + ".text", "must be a string");
        if (!out.empty()) out += "\n";
        out += t->get<std::string>();
    }
    return out;
}

// The Responses request as the chat request it stands for.
GenRequest to_chat(const json &body, const RequestLimits &lim) {
    for (const char *unsupported : {"previous_response_id", "reasoning", "conversation", "prompt"})
        if (field(body, unsupported)) bad(unsupported, "is not supported by this server (nothing is stored)");
    if (const json *t = field(body, "tools"))
        if (!t->is_array() || !t->empty()) bad("tools", "is not supported by this server");
    if (const json *tc = field(body, "tool_choice"))
        if (*tc != "none" && *tc != "auto") bad("tool_choice", "is not supported by this server");
    json msgs = json::array();
    if (const json *ins = field(body, "instructions")) {
        if (!ins->is_string()) bad("instructions", "must be a string");
        msgs.push_back({{"role", "system"}, {"content", *ins}});
    }
    const json *in = field(body, "input");
    if (!in) bad("input", "is required");
    if (in->is_string()) {
        msgs.push_back({{"role", "user"}, {"content", *in}});
    } else if (in->is_array() && !in->empty()) {
        for (size_t i = 0; i < in->size(); ++i) {
            const json &it = (*in)[i];
            const std::string name = "input[" + std::to_string(i) + "]";
            if (!it.is_object()) bad(name, "must be a message item");
            if (const json *ty = field(it, "type"); ty && *ty != "message")
                bad(name + ".type", "must be 'message' (other item types are not supported)");
            const json *role = field(it, "role");
            if (!role || !role->is_string() ||
                (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer"))
                bad(name + ".role", "must be user, assistant, system or developer");
            const json *c = field(it, "content");
            if (!c) bad(name + ".content", "is required");
            msgs.push_back({{"role", *role}, {"content", item_text(*c, name + ".content")}});
        }
    } else {
        bad("input", "must be a string or a non-empty array of message items");
    }
    json chat = {{"messages", std::move(msgs)}};
    if (const json *mt = field(body, "max_output_tokens")) {
        if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > lim.max_tokens)
            bad("max_output_tokens", "must be an integer from 1 to " + std::to_string(lim.max_tokens));
        chat["max_tokens"] = *mt;
    }
    if (const json *text = field(body, "text")) {
        if (!text->is_object()) bad("text", "must be an object");
        if (const json *fm = field(*text, "format")) {
            if (!fm->is_object() || !fm->contains("type"))
                bad("text.format", "must be an object with a type");
            if ((*fm)["type"] == "json_schema") {
                const json *sc = field(*fm, "schema");
                if (!sc) bad("text.format.schema", "is required");
                chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", *sc}}}};
            } else if ((*fm)["type"] == "json_object") {
                chat["response_format"] = {{"type", "json_object"}};
            } else if ((*fm)["type"] != "text") {
                bad("text.format.type", "must be text, json_object or json_schema");
            }
        }
    }
    if (const json *md = field(body, "metadata"))
        if (!md->is_object()) bad("metadata", "must be an object");
    if (const json *st = field(body, "store"))
        if (!st->is_boolean()) bad("store", "must be a boolean");
    for (const char *k : {"temperature", "top_p", "stream", "model"})
        if (const json *v = field(body, k)) chat[k] = *v;
    return parse_chat_request(chat, lim);
}

struct Meta {
    std::string id, item_id, model;
    int64_t created = 0;
    json echo;  // the request's settings the response repeats
};

json output_message(const Meta &m, const std::string &text, const char *status) {
    json content = json::array();
    content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}});
    return {{"type", "message"},
            {"id", m.item_id},
            {"status", status},
            {"role", "assistant"},
            {"content", content}};
}

// The response object; c null: in progress (no output yet).
json response_object(const Meta &m, const ChoiceResult *c) {
    json r = {{"id", m.id},
              {"object", "response"},
              {"created_at", m.created},
              {"status", "in_progress"},
              {"error", nullptr},
              {"incomplete_details", nullptr},
              {"model", m.model},
              {"output", json::array()},
              {"parallel_tool_calls", false},
              {"tool_choice", "none"},
              {"tools", json::array()},
              {"usage", nullptr}};
    for (auto it = m.echo.begin(); it != m.echo.end(); ++it) r[it.key()] = it.value();
    if (c) {
        const bool cut = c->finish_reason == "length";
        r["status"] = cut ? "incomplete" : "completed";
        if (cut) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
        r["output"].push_back(output_message(m, c->text, cut ? "incomplete" : "completed"));
        r["usage"] = {{"input_tokens", c->prompt_tokens},
                      {"input_tokens_details", {{"cached_tokens", c->cached_tokens}}},
                      {"output_tokens", c->completion_tokens},
                      {"output_tokens_details", {{"reasoning_tokens", 0}}},
                      {"total_tokens", c->prompt_tokens + c->completion_tokens}};
    }
    return r;
}

void responses(ApiHost &host, const httplib::Request &req, httplib::Response &res) {
    Engine &eng = host.engine();
    need_generator(eng);
    const json body = parse_body(req.body);
    const GenRequest r = to_chat(body, host.limits(eng));
    const std::vector<int32_t> prompt =
        checked_prompt(eng, eng.tokenize_chat(eng.render_chat(r.messages)), "input");
    Generation g = start_generation(eng, r, {prompt}, json::object(), -1, false);
    auto m = std::make_shared<Meta>();
    m->id = random_id("resp_");
    m->item_id = random_id("msg_");
    m->model = eng.model_name();
    m->created = unix_now();
    m->echo = {{"instructions", body.contains("instructions") ? body["instructions"] : json(nullptr)},
               {"max_output_tokens", r.max_tokens > 0 ? json(r.max_tokens) : json(nullptr)},
               {"temperature", r.sampling.temperature},
               {"top_p", r.sampling.top_p},
               {"metadata", body.contains("metadata") ? body["metadata"] : json::object()}};
    if (!r.stream) {
        if (!collect(g, host)) {
            res.status = 499;
            return;
        }
        send_json(res, 200, response_object(*m, &g.results[0]));
        return;
    }
    auto seq = std::make_shared<int64_t>(0);
    auto ev = [m, seq](const char *type, json j) {
        j["type"] = type;
        j["sequence_number"] = (*seq)++;
        return sse(j, type);
    };
    const json part0 = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
    json in_progress = output_message(*m, "", "in_progress");
    in_progress["content"] = json::array();
    StreamFormat f;
    f.start = ev("response.created", {{"response", response_object(*m, nullptr)}}) +
              ev("response.in_progress", {{"response", response_object(*m, nullptr)}}) +
              ev("response.output_item.added", {{"output_index", 0}, {"item", in_progress}}) +
              ev("response.content_part.added",
                 {{"item_id", m->item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part0}});
    f.on_event = [m, ev](const Event &e, ChoiceResult &c) {
        if (e.kind == Event::Token) {
            if (e.text.empty()) return std::string();
            return ev(
                "response.output_text.delta",
                {{"item_id", m->item_id}, {"output_index", 0}, {"content_index", 0}, {"delta", e.text}});
        }
        const json full = response_object(*m, &c);
        const json item = full["output"][0];
        return ev("response.output_text.done",
                  {{"item_id", m->item_id}, {"output_index", 0}, {"content_index", 0}, {"text", c.text}}) +
               ev("response.content_part.done", {{"item_id", m->item_id},
                                                 {"output_index", 0},
                                                 {"content_index", 0},
                                                 {"part", item["content"][0]}}) +
               ev("response.output_item.done", {{"output_index", 0}, {"item", item}}) +
               ev(full["status"] == "completed" ? "response.completed" : "response.incomplete",
                  {{"response", full}});
    };
    f.on_failure = [ev](const Event &e) {
        return ev("error", {{"code", e.status == 503 ? "unavailable" : "server_error"},
                            {"message", e.error},
                            {"param", nullptr}});
    };
    f.on_end = [](std::vector<ChoiceResult> &) { return std::string(); };
    stream_generation(res, std::move(g), host, std::move(f));
}

}  // namespace

void register_responses_api(httplib::Server &svr, ApiHost &host) {
    svr.Post("/v1/responses", [&host](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] { responses(host, req, res); });
    });
}

}  // namespace lctx::server
