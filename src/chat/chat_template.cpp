#include "chat/chat_template.h"

#include "chat/builtin_templates.h"
#include "chat/jinja_eval.h"

namespace lctx::chat {

namespace {

template <class Json>
jinja::Value json_to_value(const Json &j) {
    using jinja::Value;
    switch (j.type()) {
        case nlohmann::json::value_t::null:
            return Value::none();
        case nlohmann::json::value_t::boolean:
            return Value(j.template get<bool>());
        case nlohmann::json::value_t::number_integer:
            return Value(j.template get<int64_t>());
        case nlohmann::json::value_t::number_unsigned:
            return Value(static_cast<int64_t>(j.template get<uint64_t>()));
        case nlohmann::json::value_t::number_float:
            return Value(j.template get<double>());
        case nlohmann::json::value_t::string:
            return Value(j.template get<std::string>());
        case nlohmann::json::value_t::array: {
            jinja::Array a;
            for (const auto &e : j) a.push_back(json_to_value(e));
            return Value::array(std::move(a));
        }
        case nlohmann::json::value_t::object: {
            jinja::Object o;
            for (auto it = j.begin(); it != j.end(); ++it)
                o.emplace_back(it.key(), json_to_value(it.value()));
            return Value::object(std::move(o));
        }
        default:
            return Value();
    }
}

std::tm system_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    return tm;
}

std::string format_time(const std::tm &tm, const char *fmt) {
    char buf[64];
    return std::string(buf, std::strftime(buf, sizeof buf, fmt, &tm));
}

// llama.cpp patches two templates at load so that plain assistant turns render (these exact checks
// would otherwise look into content that is not there for them).
std::string patch_source(std::string src) {
    const std::pair<const char *, const char *> patches[] = {
        {"{%- if \"<|channel|>analysis<|message|>\" in message.content or \"<|channel|>final<|message|>\" in "
         "message.content %}",
         "{%- if false %}"},
        {"{%- if (message['content'] is none or message['content'] == '' or message['content']|length == 0) "
         "and "
         "(message['tool_calls'] is not defined or message['tool_calls'] is none or "
         "message['tool_calls']|length == 0) %}",
         "{%- if false %}"},
    };
    for (const auto &[from, to] : patches) {
        const size_t p = src.find(from);
        if (p != std::string::npos) src.replace(p, std::string(from).size(), to);
    }
    return src;
}

std::string render_plain(const jinja::Template &t, const nlohmann::ordered_json &messages, bool add_gen,
                         const std::optional<bool> &thinking, jinja::Environment env = {}) {
    jinja::Value ctx = jinja::Value::object();
    ctx.set("messages", to_jinja_value(messages));
    ctx.set("bos_token", jinja::Value(""));
    ctx.set("eos_token", jinja::Value(""));
    if (add_gen) ctx.set("add_generation_prompt", jinja::Value(true));
    if (thinking) ctx.set("enable_thinking", jinja::Value(*thinking));
    env.now = system_now;
    return t.render(ctx, env);
}

}  // namespace

jinja::Value to_jinja_value(const nlohmann::ordered_json &j) {
    return json_to_value(j);
}
jinja::Value to_jinja_value(const nlohmann::json &j) {
    return json_to_value(j);
}

bool jinja_supports_system_role(const std::string &source) {
    return jinja_supports_system_role(source, {});
}

bool jinja_supports_system_role(const std::string &source, const jinja::Environment &limits) {
    static const char *probe = "<lctx system probe>";
    try {
        const jinja::Template t = jinja::Template::parse(patch_source(source));
        const nlohmann::ordered_json msgs = {{{"role", "system"}, {"content", probe}},
                                             {{"role", "user"}, {"content", "Hello"}}};
        return render_plain(t, msgs, true, false, limits).find(probe) != std::string::npos;
    } catch (const jinja::JinjaError &) {
        return false;
    }
}

bool jinja_supports_enable_thinking(const std::string &source) {
    // llama.cpp decides this with its reasoning-format detection; the template's own markers of a
    // reasoning model agree with its decision on 37 of the 41 golden templates (tests/chat lists the 4).
    for (const char *marker : {"thinking", "reasoning_content", "<think>"})
        if (source.find(marker) != std::string::npos) return true;
    return false;
}

std::string jinja_chat_render(const std::string &source, const nlohmann::ordered_json &messages,
                              const JinjaChatOptions &opts) {
    const std::function<std::tm()> now = opts.now ? opts.now : system_now;
    jinja::Environment env;
    env.now = now;
    env.max_steps = opts.max_steps;
    env.max_string = opts.max_string;
    jinja::Value ctx = jinja::Value::object();
    if (!opts.pipeline) {
        const jinja::Template t = jinja::Template::parse(source);
        ctx.set("messages", to_jinja_value(messages));
        ctx.set("bos_token", jinja::Value(opts.bos_token));
        ctx.set("eos_token", jinja::Value(opts.eos_token));
        ctx.set("add_generation_prompt", jinja::Value(opts.add_generation_prompt));
        for (auto it = opts.extra.begin(); it != opts.extra.end(); ++it)
            ctx.set(it.key(), to_jinja_value(it.value()));
        return t.render(ctx, env);
    }

    const jinja::Template t = jinja::Template::parse(patch_source(source));
    // The pipeline re-serializes each message; a template without a system role gets the system
    // text prepended to the next message ("system\nuser") instead of failing.
    nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
    const bool merge_system = !jinja_supports_system_role(source, env);
    std::string pending_system;
    bool has_pending = false;
    for (const auto &m : messages) {
        nlohmann::ordered_json out = m;
        if (merge_system && m.value("role", "") == "system") {
            pending_system = m.value("content", "");
            has_pending = true;
            continue;
        }
        if (has_pending && out.contains("content") && out["content"].is_string()) {
            out["content"] = pending_system + "\n" + out["content"].get<std::string>();
            has_pending = false;
        }
        msgs.push_back(std::move(out));
    }
    if (has_pending) msgs.push_back({{"role", "user"}, {"content", pending_system}});

    const std::tm tm = now();
    ctx.set("messages", to_jinja_value(msgs));
    ctx.set("bos_token", jinja::Value(opts.bos_token));
    ctx.set("eos_token", jinja::Value(opts.eos_token));
    // Defined only when true: two real templates treat an undefined add_generation_prompt as true.
    if (opts.add_generation_prompt) ctx.set("add_generation_prompt", jinja::Value(true));
    ctx.set("enable_thinking", jinja::Value(opts.enable_thinking ? *opts.enable_thinking
                                                                 : jinja_supports_enable_thinking(source)));
    ctx.set("date_string", jinja::Value(format_time(tm, "%d %b %Y")));
    ctx.set("datetime", jinja::Value(format_time(tm, "%b %d %Y")));
    for (auto it = opts.extra.begin(); it != opts.extra.end(); ++it)
        ctx.set(it.key(), to_jinja_value(it.value()));
    std::string prompt = t.render(ctx, env);
    // gpt-oss ends a final assistant turn with <|return|>, which marks the end of generation and must never
    // be model input: as in the prompt llama.cpp builds, it becomes <|end|> (the turn's end otherwise).
    static const std::string kReturn = "<|return|>", kEnd = "<|end|>";
    if (!opts.add_generation_prompt && source.find("<|channel|>") != std::string::npos) {
        const size_t at = prompt.rfind(kReturn);
        if (at != std::string::npos) prompt.replace(at, kReturn.size(), kEnd);
    }
    return prompt;
}

ChatRenderResult chat_render(const std::string &model_template, const std::vector<ChatMessage> &messages,
                             const ChatRenderOptions &opts) {
    ChatRenderResult r;
    if (!model_template.empty()) {
        nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
        for (const ChatMessage &m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
        JinjaChatOptions jo;
        jo.add_generation_prompt = opts.add_generation_prompt;
        jo.bos_token = opts.bos_token;
        jo.eos_token = opts.eos_token;
        jo.now = opts.now;
        try {
            r.prompt = jinja_chat_render(model_template, msgs, jo);
            r.format = "jinja";
            return r;
        } catch (const jinja::JinjaError &e) {
            r.jinja_error = e.what();
        }
    }
    std::string name = model_template.empty() ? "" : builtin_template_detect(model_template);
    if (name.empty()) name = opts.fallback;
    if (!builtin_template_apply(name, messages, opts.add_generation_prompt, r.prompt))
        throw jinja::JinjaError(
            "unknown built-in chat template '" + name + "'" +
            (r.jinja_error.empty() ? "" : " (the model's template failed: " + r.jinja_error + ")"));
    r.format = name;
    return r;
}

}  // namespace lctx::chat
