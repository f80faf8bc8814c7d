// The OpenAI JSON shapes the server answers with: error objects, completion and chat completion
// objects, their streamed chunks, usage and logprobs. One place, so both endpoints and both modes agree.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/engine.h"
#include "server/request.h"

namespace lctx::server {

// {"error":{"message","type","code","param"}}; code is the HTTP status.
nlohmann::json error_json(int status, const std::string &message, const std::string &type,
                          const std::string &param = "");
// Never throws on invalid UTF-8 in generated text (replaced by U+FFFD).
std::string dump(const nlohmann::json &j);

// What one choice accumulated (non-streaming answers).
struct ChoiceResult {
    std::string text;
    std::string finish_reason;
    std::vector<Event> tokens;  // with logprobs: one per generated token
    int32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    double prompt_ms = 0.0, predicted_ms = 0.0;
    int32_t prompt_index = 0;  // which of the request's prompts (usage counts each prompt once)
    std::string stop_type, stopping_word;
    int32_t slot = -1;
    bool drafted = false;  // speculative decoding drafted for it: draft_n and draft_accepted mean something
    int32_t draft_n = 0, draft_accepted = 0;

    // Takes what a choice's Done event reports (finish reason, token counts, timings).
    void finish(const Event &done) {
        finish_reason = done.finish_reason;
        stop_type = done.stop_type;
        stopping_word = done.stopping_word;
        slot = done.slot;
        prompt_tokens = done.prompt_tokens;
        cached_tokens = done.cached_tokens;
        completion_tokens = done.completion_tokens;
        prompt_ms = done.prompt_ms;
        predicted_ms = done.predicted_ms;
        drafted = done.drafted;
        draft_n = done.draft_n;
        draft_accepted = done.draft_accepted;
    }
};

// llama-server's "timings" of a choice: prompt_n (the uncached prompt tokens), prompt_ms, per token and per
// second, and the same for predicted_n (the generated tokens); draft_n and draft_n_accepted when the choice
// was decoded speculatively.
nlohmann::json timings_json(const ChoiceResult &c);

struct ResponseMeta {
    Endpoint endpoint = Endpoint::Completion;
    std::string id, model;
    int64_t created = 0;
    bool logprobs = false;
};

nlohmann::json usage_json(const std::vector<ChoiceResult> &choices);
nlohmann::json response_json(const ResponseMeta &m, const std::vector<ChoiceResult> &choices);
// One streamed chunk for a choice: text (chat: delta.content; the first chunk of a choice carries the
// role), its token's logprobs when asked for, or the finish reason (finish non-empty: no text).
nlohmann::json chunk_json(const ResponseMeta &m, int32_t index, const std::string &text,
                          const Event *logprob_token, bool first, const std::string &finish);
// llama-server's completion_probabilities item of a generated token (/completion's n_probs):
// {id, token, logprob, bytes, top_logprobs: [{id, token, logprob, bytes}]}.
nlohmann::json completion_probability_json(const Event &token);

// The last chunk when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseMeta &m, const std::vector<ChoiceResult> &choices);

}  // namespace lctx::server
