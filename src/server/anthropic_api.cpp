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

#include "server/api_requests.h"
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
    const GenRequest r = parse_anthropic_request(body, host.limits(eng));
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
    const GenRequest r = parse_anthropic_request(body, host.limits(eng));
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
