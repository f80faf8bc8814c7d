#include "server/tool_request.h"

#include <set>

#include "server/request.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// OpenAI's rule for function names: letters, digits, '_' and '-', at most 64.
bool valid_function_name(const std::string &n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
    return true;
}

ojson to_ordered(const json &j) {
    return ojson::parse(j.dump());
}

ojson parse_tools(const json &t) {
    if (!t.is_array())
        bad_field("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}");
    ojson out = ojson::array();
    std::set<std::string> names;
    for (size_t i = 0; i < t.size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const json &tool = t[i];
        if (!tool.is_object()) bad_field(at, "must be an object");
        const json *type = find_field(tool, "type");
        if (!type || !type->is_string() || *type != "function")
            bad_field(at + ".type", "must be \"function\"");
        const json *fn = find_field(tool, "function");
        if (!fn || !fn->is_object()) bad_field(at + ".function", "must be an object");
        const json *name = find_field(*fn, "name");
        if (!name || !name->is_string() || !valid_function_name(name->get<std::string>()))
            bad_field(at + ".function.name",
                      "must be a name of letters, digits, '_', '-' or '.' (at most 64)");
        if (!names.insert(name->get<std::string>()).second)
            bad_field(at + ".function.name", "repeats the name of another tool");
        if (const json *d = find_field(*fn, "description"); d && !d->is_string())
            bad_field(at + ".function.description", "must be a string");
        if (const json *p = find_field(*fn, "parameters"); p && !p->is_object())
            bad_field(at + ".function.parameters", "must be a JSON schema object");
        if (const json *s = find_field(*fn, "strict"); s && !s->is_boolean())
            bad_field(at + ".function.strict", "must be a boolean");
        out.push_back(to_ordered(tool));
    }
    return out;
}

}  // namespace

ToolRequest parse_tool_request(const json &body, const std::vector<std::string> &contents) {
    ToolRequest r;
    if (const json *t = find_field(body, "tools")) r.tools = parse_tools(*t);

    if (const json *c = find_field(body, "tool_choice")) {
        if (c->is_string()) {
            const std::string s = c->get<std::string>();
            if (s == "auto")
                r.choice = ToolRequest::Choice::Auto;
            else if (s == "none")
                r.choice = ToolRequest::Choice::None;
            else if (s == "required")
                r.choice = ToolRequest::Choice::Required;
            else
                bad_field("tool_choice",
                          "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", ...}");
        } else if (c->is_object()) {
            const json *type = find_field(*c, "type");
            const json *fn = find_field(*c, "function");
            const json *name = fn && fn->is_object() ? find_field(*fn, "name") : nullptr;
            if (!type || *type != "function" || !name || !name->is_string())
                bad_field(
                    "tool_choice",
                    "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
                    "{\"name\": "
                    "...}}");
            r.choice = ToolRequest::Choice::Named;
            r.named = name->get<std::string>();
            bool found = false;
            for (const ojson &t : r.tools) found = found || t["function"]["name"] == r.named;
            if (!found) bad_field("tool_choice.function.name", "names no tool of 'tools'");
        } else {
            bad_field("tool_choice", "must be a string or an object");
        }
        if ((r.choice == ToolRequest::Choice::Required || r.choice == ToolRequest::Choice::Named) &&
            r.tools.empty())
            bad_field("tool_choice", "asks for a tool call but 'tools' is empty");
    }
    if (const json *p = find_field(body, "parallel_tool_calls")) {
        if (!p->is_boolean()) bad_field("parallel_tool_calls", "must be a boolean");
        r.parallel = p->get<bool>();
    }
    if (const json *k = find_field(body, "chat_template_kwargs")) {
        if (!k->is_object()) bad_field("chat_template_kwargs", "must be an object");
        r.template_kwargs = to_ordered(*k);
    }

    const json *msgs = find_field(body, "messages");
    if (!msgs || !msgs->is_array()) return r;
    for (size_t i = 0; i < msgs->size() && i < contents.size(); ++i) {
        const json &m = (*msgs)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        std::string role = m.value("role", "");
        if (role == "developer") role = "system";
        ojson out = {{"role", role}, {"content", contents[i]}};
        if (const json *calls = find_field(m, "tool_calls")) {
            if (role != "assistant") bad_field(at + ".tool_calls", "is only allowed in an assistant message");
            if (!calls->is_array()) bad_field(at + ".tool_calls", "must be an array");
            ojson list = ojson::array();
            for (size_t j = 0; j < calls->size(); ++j) {
                const std::string ct = at + ".tool_calls[" + std::to_string(j) + "]";
                const json &c = (*calls)[j];
                if (!c.is_object()) bad_field(ct, "must be an object");
                const json *id = find_field(c, "id");
                if (id && !id->is_string()) bad_field(ct + ".id", "must be a string");
                if (const json *type = find_field(c, "type"); type && *type != "function")
                    bad_field(ct + ".type", "must be \"function\"");
                const json *fn = find_field(c, "function");
                if (!fn || !fn->is_object()) bad_field(ct + ".function", "must be an object");
                const json *name = find_field(*fn, "name");
                if (!name || !name->is_string() || name->get<std::string>().empty())
                    bad_field(ct + ".function.name", "must be a non-empty string");
                std::string args = "{}";
                if (const json *a = find_field(*fn, "arguments")) {
                    if (a->is_string()) {
                        args = a->get<std::string>();
                        const json parsed = json::parse(args, nullptr, false);
                        if (parsed.is_discarded() || !parsed.is_object())
                            bad_field(ct + ".function.arguments",
                                      "must be a JSON object written as a string");
                    } else if (a->is_object()) {
                        args = a->dump();
                    } else {
                        bad_field(ct + ".function.arguments", "must be a JSON object written as a string");
                    }
                }
                ojson call = {{"id", id ? id->get<std::string>() : ""},
                              {"type", "function"},
                              {"function", {{"name", name->get<std::string>()}, {"arguments", args}}}};
                list.push_back(std::move(call));
            }
            if (!list.empty()) {
                out["tool_calls"] = std::move(list);
                r.tool_turns = true;
            }
        }
        if (const json *id = find_field(m, "tool_call_id")) {
            if (!id->is_string()) bad_field(at + ".tool_call_id", "must be a string");
            out["tool_call_id"] = id->get<std::string>();
        }
        if (const json *n = find_field(m, "name")) {
            if (!n->is_string()) bad_field(at + ".name", "must be a string");
            out["name"] = n->get<std::string>();
        }
        if (role == "tool") r.tool_turns = true;
        r.messages.push_back(std::move(out));
    }
    return r;
}

}  // namespace lctx::server
