// llama.cpp's built-in chat formats as of b4748 (what llama_chat_apply_template renders without a Jinja
// engine): 33 formats chosen by name, or recognized in a template's source text by the same substring
// heuristics b4748 uses.
#pragma once
#include <string>
#include <vector>

#include "chat/chat_format.h"

namespace lctx::chat {

// The 33 names, in alphabetical order (llama_chat_builtin_templates).
const std::vector<const char *> &builtin_template_names();

// The built-in format `name_or_source` stands for: an exact name, else the first heuristic of b4748's
// detection that matches the text; "" when none does.
std::string builtin_template_detect(const std::string &name_or_source);

// Renders `messages` with built-in format `name` (an exact name); add_assistant opens the assistant's
// turn where the format has one. Returns false for an unknown name.
bool builtin_template_apply(const std::string &name, const std::vector<ChatMessage> &messages,
                            bool add_assistant, std::string &out);

}  // namespace lctx::chat
