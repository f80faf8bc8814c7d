// The grammar that makes a model call a tool (tool_choice "required" or a named function): GBNF that
// accepts exactly the calls of the request's tools written in the template's tool-call format
// (tool_calls.h), each call's arguments kept to its function's JSON schema (src/grammar/json_schema).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/tool_calls.h"

namespace lctx::chat {

struct ToolSpec {
    std::string name;
    nlohmann::ordered_json parameters;  // a JSON schema (an object schema; {} when the tool gave none)
};

// GBNF (start rule "root") for one call of one of `tools` (one or more when `parallel`). For the generic
// format, `allow_response` also lets the model answer {"response": "..."} instead (tool_choice auto).
// Throws grammar::SchemaError (with the tool's index in the message) when a schema cannot be converted,
// std::invalid_argument for ContentOnly or an empty list.
std::string tool_call_grammar(ToolFormat format, const std::vector<ToolSpec> &tools, bool parallel,
                              bool allow_response = false);

// Renames every rule of a GBNF text `prefix` + name (references included): grammars made separately can
// then be joined. Exposed for its test.
std::string gbnf_prefix_rules(const std::string &gbnf, const std::string &prefix);

}  // namespace lctx::chat
