#include "chat/chat_format.h"

namespace lctx {

const char *chat_format_name(ChatFormat f) {
    switch (f) {
        case ChatFormat::Raw: return "raw";
        case ChatFormat::ChatML: return "chatml";
        case ChatFormat::Llama2: return "llama2";
        case ChatFormat::Llama3: return "llama3";
        case ChatFormat::Phi3: return "phi3";
        case ChatFormat::Gemma: return "gemma";
        case ChatFormat::Zephyr: return "zephyr";
        case ChatFormat::Mistral: return "mistral";
    }
    return "raw";
}

ChatFormat chat_format_detect(const std::string &t) {
    for (ChatFormat f : {ChatFormat::Raw, ChatFormat::ChatML, ChatFormat::Llama2, ChatFormat::Llama3, ChatFormat::Phi3,
                         ChatFormat::Gemma, ChatFormat::Zephyr, ChatFormat::Mistral})
        if (t == chat_format_name(f)) return f;
    auto has = [&](const char *s) { return t.find(s) != std::string::npos; };
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) return ChatFormat::Llama3;
    if (has("<|im_start|>")) return ChatFormat::ChatML;
    if (has("<|assistant|>") && has("<|end|>")) return ChatFormat::Phi3;
    if (has("<start_of_turn>")) return ChatFormat::Gemma;
    if (has("<|user|>") && has("</s>")) return ChatFormat::Zephyr;
    if (has("[SYSTEM_PROMPT]")) return ChatFormat::Mistral;
    if (has("[INST]")) return ChatFormat::Llama2;
    return ChatFormat::Raw;
}

std::string chat_format_apply(ChatFormat f, const std::vector<ChatMessage> &msgs, bool add_assistant) {
    std::string out;
    switch (f) {
        case ChatFormat::ChatML:
            for (const ChatMessage &m : msgs) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
            if (add_assistant) out += "<|im_start|>assistant\n";
            break;
        case ChatFormat::Llama3:
            for (const ChatMessage &m : msgs)
                out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
            if (add_assistant) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            break;
        case ChatFormat::Phi3:
            for (const ChatMessage &m : msgs) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
            if (add_assistant) out += "<|assistant|>\n";
            break;
        case ChatFormat::Zephyr:
            for (const ChatMessage &m : msgs) out += "<|" + m.role + "|>\n" + m.content + "</s>\n";
            if (add_assistant) out += "<|assistant|>\n";
            break;
        case ChatFormat::Gemma: {
            std::string system;
            for (const ChatMessage &m : msgs) {
                if (m.role == "system") {
                    system += m.content + "\n\n";  // gemma has no system turn: it prefixes the next user turn
                    continue;
                }
                const std::string role = m.role == "assistant" ? "model" : m.role;
                out += "<start_of_turn>" + role + "\n" + system + m.content + "<end_of_turn>\n";
                system.clear();
            }
            if (add_assistant) out += "<start_of_turn>model\n";
            break;
        }
        case ChatFormat::Llama2:
        case ChatFormat::Mistral: {
            std::string system;
            for (const ChatMessage &m : msgs) {
                if (m.role == "system") {
                    system = f == ChatFormat::Llama2 ? "<<SYS>>\n" + m.content + "\n<</SYS>>\n\n" : m.content + "\n\n";
                } else if (m.role == "user") {
                    out += "[INST] " + system + m.content + " [/INST]";
                    system.clear();
                } else {
                    out += " " + m.content + "</s>";
                }
            }
            break;
        }
        case ChatFormat::Raw:
            // No template: the conversation is plain text, one turn after another.
            for (const ChatMessage &m : msgs) out += m.content + "\n";
            break;
    }
    return out;
}

}  // namespace lctx
