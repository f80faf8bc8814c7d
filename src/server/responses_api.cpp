// OpenAI's Responses API (/v1/responses) over the chat template: `input` (a string, or message items with
// string content or input_text / output_text parts), `instructions` (the system turn), max_output_tokens,
// temperature, top_p, text.format (text, json_object, json_schema), stream. A reply is a response object
// {id, object: "response", created_at, status (completed, or incomplete with incomplete_details.reason
// max_output_tokens), model, output: [one assistant message with an output_text part], usage}; a stream
// sends response.created, response.in_progress, response.output_item.added, response.content_part.added,
// response.output_text.delta ..., response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed (or response.incomplete), each with a sequence_number.
// Nothing is stored: previous_response_id is a 400, as are tools, reasoning and other item types.
#include "server/api_requests.h"
#include "server/apis.h"
#include "server/generation.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

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
    const GenRequest r = parse_responses_request(body, host.limits(eng));
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
               {"temperature", r.sampling.config.temperature},
               {"top_p", r.sampling.config.top_p},
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
    // Each event takes the next sequence number: built one statement at a time, in order.
    f.start = ev("response.created", {{"response", response_object(*m, nullptr)}});
    f.start += ev("response.in_progress", {{"response", response_object(*m, nullptr)}});
    f.start += ev("response.output_item.added", {{"output_index", 0}, {"item", in_progress}});
    f.start += ev("response.content_part.added",
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
        std::string out =
            ev("response.output_text.done",
               {{"item_id", m->item_id}, {"output_index", 0}, {"content_index", 0}, {"text", c.text}});
        out += ev("response.content_part.done", {{"item_id", m->item_id},
                                                 {"output_index", 0},
                                                 {"content_index", 0},
                                                 {"part", item["content"][0]}});
        out += ev("response.output_item.done", {{"output_index", 0}, {"item", item}});
        out += ev(full["status"] == "completed" ? "response.completed" : "response.incomplete",
                  {{"response", full}});
        return out;
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
