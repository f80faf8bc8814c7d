// Tool calling and reasoning for /v1/chat/completions: the prompt through the model's Jinja template with
// the request's tools (and chat_template_kwargs), the grammar that forces a call (tool_choice required or a
// named function), and the reply split into content, reasoning_content and tool_calls (src/chat's parsers),
// whole or as streamed deltas.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "server/engine.h"
#include "server/openai_json.h"
#include "server/request.h"

namespace lctx::server {

struct ChatReplyOptions {
    chat::ReasoningFormat reasoning = chat::ReasoningFormat::DeepSeek;  // --reasoning-format
    int reasoning_budget = -1;  // --reasoning-budget: -1 unlimited, 0 thinking off
};

struct ChatPlan {
    std::string prompt;   // the rendered conversation
    std::string grammar;  // "": none (the request's own grammar stays)
    bool parse = false;   // replies are split into content / reasoning / tool calls
    chat::ChatParseOptions parse_opts;
    std::vector<int32_t> preserved_tokens;  // special tokens of the format's markup, kept in the text
};

// Throws ApiError 400: tools with a built-in (non-Jinja) template, a template that fails, a tool schema that
// cannot become a grammar, a forced call combined with another grammar.
ChatPlan plan_chat(const Engine &eng, const GenRequest &r, const ChatReplyOptions &opts);

// Non-streamed: a choice's `message` and `finish_reason` from its whole text ("tool_calls" when it called).
void chat_choice_json(const ChatPlan &plan, const std::string &text, nlohmann::json &choice);

// Streamed: one per choice; the chunks each event adds.
class ChatReplyStream {
  public:
    explicit ChatReplyStream(const ChatPlan &plan);
    // A token's text: chunks for what it adds (none while markup is pending); `first` is the choice's
    // first chunk (it carries the role) and is cleared once one is written. A logprob token rides on the
    // first chunk, or on an empty one when nothing else is sent.
    std::vector<nlohmann::json> token(const ResponseMeta &m, const Event &e, bool &first);
    // The end: the rest of the reply, then the chunk with the finish reason.
    std::vector<nlohmann::json> done(const ResponseMeta &m, int32_t index, const std::string &finish,
                                     bool &first);

  private:
    void deltas(const ResponseMeta &m, int32_t index, const chat::ChatDelta &d, const Event *tok, bool &first,
                std::vector<nlohmann::json> &out);
    chat::ChatStreamParser parser_;
};

}  // namespace lctx::server
