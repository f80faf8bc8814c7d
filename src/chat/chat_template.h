// Chat templates: a conversation rendered into a prompt with the model's own Jinja template the way
// llama.cpp's chat pipeline renders it, or with one of llama.cpp's built-in formats by name.
// The entry point for the chat layer is chat_render(); jinja_chat_render() is the Jinja part alone.
#pragma once
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_format.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_value.h"

namespace lctx::chat {

struct JinjaChatOptions {
    bool add_generation_prompt = true;
    std::string bos_token, eos_token;
    // nullopt: true when the template reacts to it (llama.cpp's rule for its default `--reasoning auto`).
    std::optional<bool> enable_thinking;
    // The local time for strftime_now(), date_string and datetime; null means the system clock.
    std::function<std::tm()> now;
    // Extra variables for the template (chat_template_kwargs); they override the ones above.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    // true: the context and fixes of llama.cpp's chat pipeline (see chat_template.cpp); false: a plain
    // render with messages, bos_token, eos_token and add_generation_prompt only.
    bool pipeline = true;
    // Bounds for a hostile template (jinja::Environment).
    uint64_t max_steps = 50'000'000;
    size_t max_string = 256u << 20;
};

// Renders `messages` (an OpenAI-style array of {role, content, ...}) with the Jinja template `source`.
// Throws jinja::JinjaError (with line and column) for a malformed template or raise_exception().
std::string jinja_chat_render(const std::string &source, const nlohmann::ordered_json &messages,
                              const JinjaChatOptions &opts);

// What llama.cpp detects about a template by rendering probe conversations.
bool jinja_supports_system_role(const std::string &source);
bool jinja_supports_system_role(const std::string &source, const jinja::Environment &limits);
bool jinja_supports_enable_thinking(const std::string &source);

// The chat layer's entry point: the model's own template through the Jinja engine; when the model has
// none, or it cannot be rendered, the built-in format its text stands for (llama.cpp's heuristics), else
// the built-in format `fallback`.
struct ChatRenderOptions {
    bool add_generation_prompt = true;
    std::string bos_token, eos_token;
    std::string fallback = "chatml";
    std::function<std::tm()> now;  // null: the system clock
};
struct ChatRenderResult {
    std::string prompt;
    std::string format;       // "jinja", or the name of the built-in format used
    std::string jinja_error;  // why the model's template was not used, when it was given but failed
};
// Throws jinja::JinjaError when no format applies (an unknown fallback name).
ChatRenderResult chat_render(const std::string &model_template, const std::vector<ChatMessage> &messages,
                             const ChatRenderOptions &opts = {});

// JSON -> template value, keeping the key order of the JSON object.
jinja::Value to_jinja_value(const nlohmann::ordered_json &j);
jinja::Value to_jinja_value(const nlohmann::json &j);

}  // namespace lctx::chat
