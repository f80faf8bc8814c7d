// Chat turns to prompt text and tokens, the one way every front end does it (lctx chat, lctx serve): the
// model's own template through the Jinja engine (src/chat/), or what the front end chose instead (a Jinja
// template's text, a built-in format by name), with the model's BOS and EOS texts; then the rendered text
// tokenized without a second BOS. What a front end makes of a failed Jinja render (a note, an error) is its
// own: the result says which format was used and why the template was not.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "llama.h"

namespace lctx::generate {

// The names a chat format option takes: llama.cpp's built-in formats (llama_chat_builtin_templates), then
// raw, as one comma-separated list for messages.
std::string chat_format_names();
// The built-in format `name` stands for ("" for raw), as llama_chat_apply_template reads it: an exact name,
// else b4748's heuristics (a template's text, "mistral"); false when it stands for none.
bool chat_format_by_name(const std::string &name, std::string *builtin);

// What a front end chose; with nothing chosen, the model's own template.
struct ChatTemplateChoice {
    // A Jinja template's text used instead of the model's own (chat --jinja, serve --chat-template-file);
    // it wins over `format`.
    std::string jinja;
    // A built-in format by name, or raw (--format, --chat-template); "" = the model's template.
    std::string format;
    // A model without a template: raw for lctx chat, chatml for lctx serve (as llama-server).
    ChatFormat no_template = ChatFormat::Raw;
    // When the Jinja template fails and its text is none of the built-in formats: this built-in format;
    // "" = the simple format its text looks like (chat_format_detect), lctx chat's choice.
    std::string jinja_fallback;
};

class ChatTurns {
  public:
    // The model (which must outlive this) gives its template and its BOS and EOS texts. Throws
    // std::invalid_argument when choice.format names no format (check it first with chat_format_by_name).
    ChatTurns(const llama_model *model, const ChatTemplateChoice &choice);

    // The messages as one prompt; add_generation_prompt ends it where the assistant's reply begins.
    // r.format: "jinja" or the built-in format used; r.jinja_error: why the Jinja template was not.
    // Throws what the template engine throws past its fallback (jinja::JinjaError: no format applies).
    chat::ChatRenderResult render(const std::vector<ChatMessage> &messages, bool add_generation_prompt) const;
    // OpenAI-style messages (tool calls, tool turns) through jinja_template() with the caller's options and
    // the model's BOS and EOS texts. Only when jinja_template() is not empty; throws what
    // jinja_chat_render throws.
    std::string render_jinja(const nlohmann::ordered_json &messages, chat::JinjaChatOptions opts) const;
    // Rendered text -> tokens, special tokens parsed; a BOS only when the text does not start with its text.
    std::vector<llama_token> tokenize(const std::string &prompt) const;
    bool starts_with_bos(const std::string &text) const;

    // The Jinja template chats go through; "" when a built-in format (or raw) is used.
    const std::string &jinja_template() const { return jinja_; }
    // The format chosen before any render: "jinja", a built-in format's name, or raw.
    std::string format() const;
    const std::string &bos_text() const { return bos_text_; }
    const std::string &eos_text() const { return eos_text_; }

  private:
    const llama_vocab *vocab_;
    std::string jinja_;    // the template rendered through Jinja ("" for none)
    std::string builtin_;  // the built-in format chosen by name ("" for none)
    bool raw_ = false;     // raw chosen by name
    ChatFormat no_template_;
    std::string jinja_fallback_;
    std::string bos_text_, eos_text_;
};

}  // namespace lctx::generate
