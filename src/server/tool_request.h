// The tool-calling and template fields of a chat request: `tools` (OpenAI's function list), `tool_choice`,
// `parallel_tool_calls`, `chat_template_kwargs`, and the conversation as the model's Jinja template reads
// it (assistant `tool_calls`, `tool` turns with `tool_call_id`). Checked here like every other field: a bad
// shape is a 400 naming the field.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lctx::server {

struct ToolRequest {
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // [{type: function, function: {..}}]
    enum class Choice { Auto, None, Required, Named } choice = Choice::Auto;
    std::string named;  // Named: the function's name
    // parallel_tool_calls: whether a forced call may be several (false by default, as llama-server; a
    // reply that holds several calls is parsed into all of them either way).
    bool parallel = false;
    // The conversation for a Jinja template: role, content (text; null for an assistant turn that only
    // calls tools), tool_calls (arguments as the JSON text), tool_call_id, name.
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    bool tool_turns = false;  // some message has tool_calls or is a tool result
    nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs

    // Tools are offered to the model (some given, tool_choice not none).
    bool active() const { return !tools.empty() && choice != Choice::None; }
};

// `contents`: each message's content as text (parse_chat_request joined the text parts). Throws ApiError.
ToolRequest parse_tool_request(const nlohmann::json &body, const std::vector<std::string> &contents);

}  // namespace lctx::server
