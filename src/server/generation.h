// What every generating endpoint shares once its request is parsed: the prompts' tokens, the choices' tasks
// queued on the engine, and their results gathered whole or streamed as server-sent events in the
// endpoint's own shape. The endpoints (completions_api.cpp: /v1/completions, /completion, /infill;
// anthropic_api.cpp: /v1/messages; responses_api.cpp: /v1/responses) only turn requests and results
// into their JSON.
#pragma once
#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/engine.h"
#include "server/openai_json.h"
#include "server/request.h"

namespace lctx::server {

// What the endpoints need from the HTTP server.
struct ApiHost {
    std::function<Engine &()> engine;               // the engine, or ApiError 503 (loading, shutting down)
    std::function<bool()> stopping;                 // the server is shutting down
    std::atomic<int> *open_streams = nullptr;       // streams not yet ended (stop() waits for them)
    std::function<void(int64_t)> log_tokens;        // tokens for the request log line
    std::function<RequestLimits(Engine &)> limits;  // the limits a generation request is checked against
};

void send_json(httplib::Response &res, int status, const nlohmann::json &j);  // 503s carry Retry-After
bool peer_gone(int fd);  // the client closed its end (or the connection broke)
std::string random_id(const char *prefix);
int64_t unix_now();

// Runs a handler body, turning ApiError (and anything unexpected) into an error object of the endpoint's
// shape (OpenAI's by default).
using ErrorShape = nlohmann::json (*)(int status, const std::string &message, const std::string &type,
                                      const std::string &param);
template <class F>
void guarded(httplib::Response &res, F &&f, ErrorShape shape = &error_json) {
    try {
        f();
    } catch (const ApiError &e) {
        send_json(res, e.status, shape(e.status, e.what(), e.type, e.param));
    } catch (const std::exception &e) {
        send_json(res, 500, shape(500, e.what(), "server_error", ""));
    }
}

// The generation limits of this engine: each choice takes a slot or a place in the queue.
RequestLimits generation_limits(Engine &eng);
// 400 for an embedding model (it makes no text).
void need_generator(Engine &eng);

// One prompt's tokens: text pieces tokenized with special tokens parsed, a BOS first when the first piece is
// text and the model adds one. 400 naming `field` when it is empty or does not fit a slot with a reply.
std::vector<int32_t> prompt_tokens(Engine &eng, const PromptInput &p, const char *field = "prompt");
std::vector<int32_t> checked_prompt(Engine &eng, std::vector<int32_t> toks, const char *field);

// A request's choices in flight: each prompt n times (choice index = prompt index * n + i).
struct Generation {
    std::shared_ptr<Channel> channel;
    std::vector<ChoiceResult> results;
    bool keep_tokens = false;  // results keep each token's event (logprobs, token ids)
};

// Queues the tasks (all or none; ApiError 503 when they cannot wait). `body` gives the per-request LoRA
// scales (its `lora`); top_logprobs -1: none.
Generation start_generation(Engine &eng, const GenRequest &r,
                            const std::vector<std::vector<int32_t>> &prompts, const nlohmann::json &body,
                            int32_t top_logprobs, bool keep_tokens);

// Waits for every choice. False when the client left (the request is cancelled, nobody reads an answer);
// a failed choice throws ApiError (503 when the server is shutting down, else 500).
bool collect(Generation &g, ApiHost &host);

// The endpoint's stream shape: the text of the events each engine event becomes ("" : nothing to send).
struct StreamFormat {
    std::function<std::string(const Event &, ChoiceResult &)> on_event;  // Token or Done (result updated)
    std::function<std::string(const Event &)> on_failure;
    std::function<std::string(std::vector<ChoiceResult> &)> on_end;  // after every choice ended
    std::string start;  // sent first (the endpoint's opening events)
};
// Streams the generation as text/event-stream; a write that fails cancels the request.
void stream_generation(httplib::Response &res, Generation g, ApiHost &host, StreamFormat fmt);

// "data: JSON\n\n", or with an event name "event: NAME\ndata: JSON\n\n".
std::string sse(const nlohmann::json &j, const char *event = nullptr);

}  // namespace lctx::server
