// Fuzzes the chat-template engine: the input is a template's source, parsed and rendered with a small
// conversation the way llama.cpp's pipeline renders it and as plain Jinja, then handed to
// llama_chat_apply_template (which only detects a built-in format from the text). Malformed templates
// must come back as JinjaError, never as a crash, a hang or unbounded memory.
// Seeds: the real templates, e.g. build-fuzz/fuzz/fuzz_template fixtures/templates
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "chat/jinja_eval.h"
#include "fuzz_util.h"
#include "llama.h"

using namespace lctx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi \u00e9 \ud83d\ude42"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": "think"},
        {"role": "user", "content": "More?"}])");
    static bool once = (fuzz::quiet_log(), true);
    (void)once;
    const std::string source(reinterpret_cast<const char *>(data), size);

    // Tight bounds so that a slow or greedy template ends quickly.
    jinja::Environment env;
    env.max_steps = 200000;
    env.max_string = 1 << 20;
    env.now = [] { return std::tm{}; };
    try {
        const jinja::Template t = jinja::Template::parse(source);
        jinja::Value ctx = jinja::Value::object();
        ctx.set("messages", chat::to_jinja_value(messages));
        ctx.set("add_generation_prompt", jinja::Value(true));
        ctx.set("bos_token", jinja::Value("<s>"));
        t.render(ctx, env);
    } catch (const jinja::JinjaError &) {
    }
    // The pipeline path: the system-role probe, merged system text, pipeline variables.
    try {
        chat::JinjaChatOptions o;
        o.now = env.now;
        o.max_steps = env.max_steps;
        o.max_string = env.max_string;
        chat::jinja_chat_render(source, messages, o);
    } catch (const jinja::JinjaError &) {
    }
    const llama_chat_message chat[2] = {{"system", "Be brief."}, {"user", "Hi"}};
    char buf[64];
    llama_chat_apply_template(source.c_str(), chat, 2, true, buf, sizeof buf);
    return 0;
}
