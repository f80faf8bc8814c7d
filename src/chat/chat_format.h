// Chat prompt formats: the common built-in conversation formats, recognized from a model's
// tokenizer.chat_template by their marker strings (the way llama.cpp's built-in templates are chosen).
// A full Jinja engine for arbitrary templates is separate work; this covers the formats most models use.
#pragma once
#include <string>
#include <vector>

namespace lctx {

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

enum class ChatFormat { Raw, ChatML, Llama2, Llama3, Phi3, Gemma, Zephyr, Mistral };

const char *chat_format_name(ChatFormat f);
// From a template's text or a format name ("chatml", "llama3", ...); Raw when nothing matches.
ChatFormat chat_format_detect(const std::string &template_or_name);
// Renders the messages; with add_assistant the text ends where the assistant's reply begins.
std::string chat_format_apply(ChatFormat f, const std::vector<ChatMessage> &messages, bool add_assistant);

}  // namespace lctx
