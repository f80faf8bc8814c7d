// The request bodies of the APIs served over the chat template, as the chat request each stands for: pure
// functions of the JSON (the fuzz harness drives them), checked field by field; ApiError 400 names the
// field in the API's own terms.
#pragma once
#include <nlohmann/json.hpp>

#include "server/request.h"

namespace lctx::server {

// Anthropic's Messages: system (a string or text blocks), messages (user and assistant turns; content a
// string or text blocks), max_tokens, stop_sequences, temperature, top_p, top_k, stream, metadata. Images,
// documents, tools and extended thinking are refused.
GenRequest parse_anthropic_request(const nlohmann::json &body, const RequestLimits &limits);

// OpenAI's Responses: input (a string, or message items with string content or input_text / output_text
// parts), instructions, max_output_tokens, temperature, top_p, text.format, stream, store, metadata. Stored
// state (previous_response_id), tools, reasoning and other item types are refused.
GenRequest parse_responses_request(const nlohmann::json &body, const RequestLimits &limits);

}  // namespace lctx::server
