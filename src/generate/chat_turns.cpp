#include "generate/chat_turns.h"

#include <stdexcept>

#include "chat/builtin_templates.h"
#include "generate/tokens.h"

namespace lctx::generate {

std::string chat_format_names() {
    std::string s;
    for (const char *n : chat::builtin_template_names()) s += std::string(n) + ", ";
    return s + "raw";
}

bool chat_format_by_name(const std::string &name, std::string *builtin) {
    if (name == "raw") {
        builtin->clear();
        return true;
    }
    *builtin = chat::builtin_template_detect(name);
    return !builtin->empty();
}

ChatTurns::ChatTurns(const llama_model *model, const ChatTemplateChoice &choice)
    : vocab_(llama_model_get_vocab(model)), no_template_(choice.no_template) {
    if (!choice.jinja.empty()) {
        jinja_ = choice.jinja;
    } else if (!choice.format.empty()) {
        if (!chat_format_by_name(choice.format, &builtin_))
            throw std::invalid_argument("unknown chat format '" + choice.format +
                                        "' (known: " + chat_format_names() + ")");
        raw_ = builtin_.empty();
    } else if (const char *t = llama_model_chat_template(model, nullptr)) {
        jinja_ = t;
    }
    // The fallback is fixed by the template's text, so it is worked out once.
    jinja_fallback_ =
        !choice.jinja_fallback.empty() ? choice.jinja_fallback : chat_format_name(chat_format_detect(jinja_));
    const llama_token bos = llama_vocab_bos(vocab_), eos = llama_vocab_eos(vocab_);
    if (bos >= 0) bos_text_ = token_piece(vocab_, bos, true);
    if (eos >= 0) eos_text_ = token_piece(vocab_, eos, true);
}

chat::ChatRenderResult ChatTurns::render(const std::vector<ChatMessage> &messages,
                                         bool add_generation_prompt) const {
    if (!jinja_.empty()) {
        chat::ChatRenderOptions ro;
        ro.add_generation_prompt = add_generation_prompt;
        ro.bos_token = bos_text_;
        ro.eos_token = eos_text_;
        ro.fallback = jinja_fallback_;
        return chat::chat_render(jinja_, messages, ro);
    }
    chat::ChatRenderResult r;
    if (!builtin_.empty()) {
        chat::builtin_template_apply(builtin_, messages, add_generation_prompt, r.prompt);
        r.format = builtin_;
        return r;
    }
    const ChatFormat f = raw_ ? ChatFormat::Raw : no_template_;
    r.prompt = chat_format_apply(f, messages, add_generation_prompt);
    r.format = chat_format_name(f);
    return r;
}

std::string ChatTurns::render_jinja(const nlohmann::ordered_json &messages,
                                    chat::JinjaChatOptions opts) const {
    opts.bos_token = bos_text_;
    opts.eos_token = eos_text_;
    return chat::jinja_chat_render(jinja_, messages, opts);
}

std::vector<llama_token> ChatTurns::tokenize(const std::string &prompt) const {
    return generate::tokenize(vocab_, prompt, !starts_with_bos(prompt), true);
}

bool ChatTurns::starts_with_bos(const std::string &text) const {
    // Text that starts with the BOS the template printed must not get a second one from the tokenizer.
    return !bos_text_.empty() && text.rfind(bos_text_, 0) == 0;
}

std::string ChatTurns::format() const {
    if (!jinja_.empty()) return "jinja";
    if (!builtin_.empty()) return builtin_;
    return chat_format_name(raw_ ? ChatFormat::Raw : no_template_);
}

}  // namespace lctx::generate
