// OpenAI request bodies -> a generation request: every field's type and range is checked here, before
// anything reaches the scheduler, so a bad request is a 400 with a message naming the field and changes
// nothing. Pure functions of the JSON (the fuzz harness drives them); tokenizing and the chat template
// happen later, in the server, because they need the model.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "generate/sampling_chain.h"
#include "server/tool_request.h"

namespace lctx::server {

// An error that becomes an OpenAI error object {"error":{"message","type","code"}} with an HTTP status.
class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string message, std::string type = "invalid_request_error",
             std::string param = "")
        : std::runtime_error(std::move(message)),
          status(status),
          type(std::move(type)),
          param(std::move(param)) {}
    int status;
    std::string type;
    std::string param;  // the offending field, or ""
};

// The request parsers' shared pieces: the 400 that names a field that is wrong, and a field's value, or null
// when it is absent or null (OpenAI clients send null for "not set").
[[noreturn]] inline void bad_field(const std::string &field, const std::string &what) {
    throw ApiError(400, "'" + field + "' " + what, "invalid_request_error", field);
}
inline const nlohmann::json *find_field(const nlohmann::json &body, const char *name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A request's sampling: the generation layer's parameters, which the request's fields write straight into
// (their defaults, SamplingConfig's, are OpenAI's; /completion sets llama-server's), and what only requests
// have, which sampling_config (server/sampling_config.h) turns into parameters.
struct SamplingParams {
    generate::SamplingConfig config;                    // its seed, logit_bias and order: below
    std::optional<uint32_t> seed;                       // absent: a random one per request
    std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias; -100 bans the token
    // The order of the distribution samplers (llama-server's `samplers`: names such as top_k, typ_p, top_p,
    // min_p, xtc, temperature, dry, penalties, kept canonical); empty: llama.cpp's default order.
    std::vector<std::string> samplers;
};

// One prompt of a completion: pieces of text and token ids in order (llama-server takes [12, "text", 34]);
// a BOS goes first when the first piece is text and the model adds one.
struct PromptPiece {
    bool is_token = false;
    int32_t token = -1;
    std::string text;
};
using PromptInput = std::vector<PromptPiece>;

struct ChatTurn {
    std::string role, content;
};

enum class Endpoint { Completion, Chat };

struct GenRequest {
    Endpoint endpoint = Endpoint::Completion;
    std::string model;
    // Completion: the prompt as text, or as token ids (prompt_is_tokens).
    std::string prompt;
    std::vector<int32_t> prompt_tokens;
    bool prompt_is_tokens = false;
    // Every prompt of the request (a list of prompts gives a choice, or n, per prompt); prompt and
    // prompt_tokens above hold the first one when it is all text or all tokens.
    std::vector<PromptInput> prompts;
    // Chat: the conversation (string content, or an array of text parts joined).
    std::vector<ChatTurn> messages;
    int32_t max_tokens = -1;  // -1: until end of text or the slot's context is full
    int32_t n = 1;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    std::vector<std::string> stop;
    SamplingParams sampling;
    // logprobs: completions take an integer (0..20 alternatives); chat takes logprobs: true and
    // top_logprobs 0..20.
    bool logprobs = false;
    int32_t top_logprobs = 0;
    bool echo = false;        // completions: the prompt's text goes before each choice's text
    bool ignore_eos = false;  // llama-server's: the end-of-generation tokens are banned
    // llama-server's native fields.
    int32_t n_probs = 0;       // /completion: the top tokens of each generated one (completion_probabilities)
    int32_t id_slot = -1;      // the slot to run on (-1: the server picks)
    bool cache_prompt = true;  // false: the prompt is evaluated whole, no cached prefix reused
    bool return_tokens = false;  // /completion: the generated token ids in `tokens`
    // A GBNF grammar from response_format (json_object, json_schema), `grammar` or `json_schema`; "" none.
    std::string grammar;
    // Chat: tools, tool_choice, chat_template_kwargs and the conversation for a Jinja template.
    ToolRequest tools;
};

struct RequestLimits {
    int32_t max_tokens = 1 << 20;
    int32_t max_prompts = 16;   // prompts in one completion request
    int32_t max_choices = 256;  // prompts times n (what the slots and the queue can hold)
    int32_t n_slots = 0;        // id_slot is checked against it when > 0
    int32_t max_n = 16;
    int32_t max_stop = 16;
    int32_t n_vocab = 0;  // logit_bias token ids are checked against it when > 0
};

// Throws ApiError (status 400) naming the field.
GenRequest parse_completion_request(const nlohmann::json &body, const RequestLimits &limits);
GenRequest parse_chat_request(const nlohmann::json &body, const RequestLimits &limits);
// llama-server's /completion (and /infill when infill): n_probs, return_tokens; one choice per prompt.
GenRequest parse_native_completion_request(const nlohmann::json &body, const RequestLimits &limits,
                                           bool infill = false);

// /infill's own fields: the code before and after the cursor, and other files as context.
struct InfillChunk {
    std::string filename, text;
};
struct InfillInput {
    std::string prefix, suffix;
    std::vector<InfillChunk> extra;
};
InfillInput parse_infill_input(const nlohmann::json &body);
// Parses the body text: malformed JSON or a body that is not an object is a 400 too.
nlohmann::json parse_body(const std::string &body);

// POST /v1/embeddings: `input` is a string, an array of strings, an array of token ids or an array of
// arrays of ids; `encoding_format` float (default) or base64; `model` is ignored.
struct EmbeddingInput {
    bool is_tokens = false;
    std::string text;
    std::vector<int32_t> tokens;
};
struct EmbeddingRequest {
    std::vector<EmbeddingInput> inputs;
    bool base64 = false;
};
EmbeddingRequest parse_embedding_request(const nlohmann::json &body, int32_t n_vocab);

// POST /v1/rerank: {query, documents: [string...], top_n?}.
struct RerankRequest {
    std::string query;
    std::vector<std::string> documents;
    int64_t top_n = -1;  // -1: every document
};
RerankRequest parse_rerank_request(const nlohmann::json &body);

// POST /tokenize: {content: string, add_special?: bool, with_pieces?: bool} (null: the default, false).
struct TokenizeRequest {
    std::string content;
    bool add_special = false;
    bool with_pieces = false;
};
TokenizeRequest parse_tokenize_request(const nlohmann::json &body);

// POST /detokenize: {tokens: [id...]}, each id in [0, n_vocab).
std::vector<int32_t> parse_detokenize_request(const nlohmann::json &body, int32_t n_vocab);

// POST /slots/ID?action=save|restore: {filename}, a plain file name (valid_slot_filename below).
std::string parse_slot_filename(const nlohmann::json &body);

// A slot file name for --slot-save-path: a plain name (letters, digits, '.', '_', '-'; no leading dot, at
// most 255 bytes), so that it cannot leave that folder.
bool valid_slot_filename(const std::string &name);

// The GBNF of response_format {"type":"json_object"}: any JSON object.
const std::string &json_object_grammar();

}  // namespace lctx::server
