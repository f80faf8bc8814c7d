#include "chat/tool_grammar.h"

#include <stdexcept>

#include "grammar/json_schema.h"
#include "grammar/json_schema_rules.h"

namespace lctx::chat {

namespace {

using ojson = nlohmann::ordered_json;

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A string as a GBNF literal (the JSON-schema converter's quoting: control characters escaped too).
std::string literal(const std::string &s) {
    return grammar::schema::gbnf_literal(s);
}

// A tool's parameters as the schema of its arguments (always an object).
ojson arguments_schema(const ojson &parameters) {
    if (!parameters.is_object() || parameters.empty()) return ojson{{"type", "object"}};
    return parameters;
}

// The call object of JSON formats: {"<name key>": "<name>", "<arguments key>": {...}}.
ojson call_schema(const ToolSpec &t, const char *name_key, const char *args_key, bool with_id) {
    ojson props = ojson::object();
    if (with_id) props["tool_call_id"] = {{"type", "string"}, {"pattern", "^[0-9]{1,4}$"}};
    props[name_key] = {{"const", t.name}};
    props[args_key] = arguments_schema(t.parameters);
    ojson required = ojson::array();
    for (auto it = props.begin(); it != props.end(); ++it) required.push_back(it.key());
    return {{"type", "object"}, {"properties", props}, {"required", required}};
}

std::string convert(const ojson &schema, size_t tool) {
    try {
        return grammar::json_schema_to_gbnf(schema);
    } catch (const grammar::SchemaError &e) {
        throw grammar::SchemaError("tools[" + std::to_string(tool) + "]: " + e.what());
    }
}

}  // namespace

std::string gbnf_prefix_rules(const std::string &g, const std::string &prefix) {
    std::string out;
    out.reserve(g.size() * 2);
    for (size_t i = 0; i < g.size();) {
        const char c = g[i];
        if (c == '"' || c == '[') {
            // A literal or a character class, copied as it is (escapes included).
            const char close = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < g.size() && g[j] != close) j += g[j] == '\\' ? 2 : 1;
            j = std::min(j + 1, g.size());
            out.append(g, i, j - i);
            i = j;
        } else if (c == '{') {
            const size_t j = g.find('}', i);
            const size_t e = j == std::string::npos ? g.size() : j + 1;
            out.append(g, i, e - i);
            i = e;
        } else if (c == '#') {
            const size_t j = g.find('\n', i);
            const size_t e = j == std::string::npos ? g.size() : j;
            out.append(g, i, e - i);
            i = e;
        } else if (name_char(c)) {
            size_t j = i;
            while (j < g.size() && name_char(g[j])) ++j;
            out += prefix;
            out.append(g, i, j - i);
            i = j;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

std::string tool_call_grammar(ToolFormat format, const std::vector<ToolSpec> &tools, bool parallel,
                              bool allow_response) {
    if (tools.empty()) throw std::invalid_argument("no tools to call");
    if (format == ToolFormat::ContentOnly) throw std::invalid_argument("no tool-call format");

    if (format == ToolFormat::Generic) {
        ojson alts = ojson::array();
        for (const ToolSpec &t : tools) alts.push_back(call_schema(t, "name", "arguments", false));
        const ojson call = alts.size() == 1 ? alts[0] : ojson{{"anyOf", alts}};
        ojson options = ojson::array();
        if (parallel)
            options.push_back(
                {{"type", "object"},
                 {"properties", {{"tool_calls", {{"type", "array"}, {"items", call}, {"minItems", 1}}}}},
                 {"required", {"tool_calls"}}});
        else
            options.push_back(
                {{"type", "object"}, {"properties", {{"tool_call", call}}}, {"required", {"tool_call"}}});
        if (allow_response)
            options.push_back({{"type", "object"},
                               {"properties", {{"response", {{"type", "string"}}}}},
                               {"required", {"response"}}});
        return convert(options.size() == 1 ? options[0] : ojson{{"anyOf", options}}, 0);
    }

    // Each tool's own grammar, its rules renamed tN-..., and a root in the format's markup.
    std::string rules, alts;
    for (size_t i = 0; i < tools.size(); ++i) {
        const ToolSpec &t = tools[i];
        ojson schema;
        switch (format) {
            case ToolFormat::Hermes:
            case ToolFormat::Qwen3Coder:
            case ToolFormat::MistralNemo:
            case ToolFormat::FireFunctionV2:
                schema = call_schema(t, "name", "arguments", false);
                break;
            case ToolFormat::Llama3:
                schema = call_schema(t, "name", "parameters", false);
                break;
            case ToolFormat::CommandR7B:
                schema = call_schema(t, "tool_name", "parameters", true);
                break;
            default:
                schema = arguments_schema(t.parameters);
        }
        const std::string prefix = "t" + std::to_string(i) + "-";
        rules += gbnf_prefix_rules(convert(schema, i), prefix);
        std::string alt;
        switch (format) {
            case ToolFormat::FunctionaryV31:
                alt = literal("<function=" + t.name + ">") + " " + prefix + "root " + literal("</function>");
                break;
            case ToolFormat::FunctionaryV32:
                alt = literal(t.name + "\n") + " " + prefix + "root";
                break;
            case ToolFormat::GptOss:
                alt = literal("<|channel|>commentary to=functions." + t.name +
                              " <|constrain|>json<|message|>") +
                      " " + prefix + "root";
                break;
            default:
                alt = prefix + "root";
        }
        alts += (i ? " | " : "") + alt;
    }
    const std::string call = "tool-call";
    rules += call + " ::= " + alts + "\n";
    std::string root;
    switch (format) {
        case ToolFormat::Hermes:
        case ToolFormat::Qwen3Coder: {  // the JSON form inside <tool_call>, which its parser reads too
            const std::string one = literal("<tool_call>\n") + " " + call + " " + literal("\n</tool_call>");
            root = parallel ? one + " (" + literal("\n") + " " + one + ")*" : one;
            break;
        }
        case ToolFormat::Llama3:
            root = call;
            break;
        case ToolFormat::MistralNemo:
        case ToolFormat::FireFunctionV2:
        case ToolFormat::CommandR7B: {
            const std::string open = format == ToolFormat::MistralNemo      ? "[TOOL_CALLS]["
                                     : format == ToolFormat::FireFunctionV2 ? " functools["
                                                                            : "<|START_ACTION|>[";
            const std::string close = format == ToolFormat::CommandR7B ? "]<|END_ACTION|>" : "]";
            root = literal(open) + " " + call + (parallel ? " (" + literal(", ") + " " + call + ")*" : "") +
                   " " + literal(close);
            break;
        }
        case ToolFormat::FunctionaryV31:
            root = parallel ? call + "+" : call;
            break;
        case ToolFormat::FunctionaryV32:
            root = parallel ? call + " (" + literal(">>>") + " " + call + ")*" : call;
            break;
        case ToolFormat::GptOss:
            root = call;
            break;
        default:
            throw std::invalid_argument("no grammar for this tool-call format");
    }
    return "root ::= " + root + "\n" + rules;
}

}  // namespace lctx::chat
