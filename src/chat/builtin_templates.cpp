#include "chat/builtin_templates.h"

#include <algorithm>
#include <cctype>

namespace lctx::chat {

namespace {

std::string trim(const std::string &s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

// Every format one file-local function: (messages, add_assistant) -> prompt.
using Render = std::string (*)(const std::vector<ChatMessage> &, bool);

std::string render_chatml(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add) o += "<|im_start|>assistant\n";
    return o;
}

// llama2 and its variants: with or without <<SYS>>, with <s> before each later [INST], with the
// contents stripped. The first [INST] carries no BOS (the tokenizer adds it).
std::string render_llama2(const std::vector<ChatMessage> &msgs, bool sys, bool bos_inside, bool strip) {
    std::string o = "[INST] ";
    bool in_turn = true;
    for (const auto &m : msgs) {
        const std::string c = strip ? trim(m.content) : m.content;
        if (!in_turn) {
            in_turn = true;
            o += bos_inside ? "<s>[INST] " : "[INST] ";
        }
        if (m.role == "system") {
            o += sys ? "<<SYS>>\n" + c + "\n<</SYS>>\n\n" : c + "\n";
        } else if (m.role == "user") {
            o += c + " [/INST]";
        } else {
            o += c + "</s>";
            in_turn = false;
        }
    }
    return o;
}
std::string render_llama2_plain(const std::vector<ChatMessage> &m, bool) {
    return render_llama2(m, false, false, false);
}
std::string render_llama2_sys(const std::vector<ChatMessage> &m, bool) {
    return render_llama2(m, true, false, false);
}
std::string render_llama2_sys_bos(const std::vector<ChatMessage> &m, bool) {
    return render_llama2(m, true, true, false);
}
std::string render_llama2_sys_strip(const std::vector<ChatMessage> &m, bool) {
    return render_llama2(m, true, false, true);
}

// Mistral v1 / v3 / v3-tekken differ in the spaces around [INST] and whether replies are trimmed.
std::string render_mistral(const std::vector<ChatMessage> &msgs, const char *lead, const char *trail,
                           bool trim_reply) {
    std::string o;
    bool in_turn = false;
    for (const auto &m : msgs) {
        if (!in_turn) {
            o += std::string(lead) + "[INST]" + trail;
            in_turn = true;
        }
        if (m.role == "system") {
            o += m.content + "\n\n";
        } else if (m.role == "user") {
            o += m.content + lead + "[/INST]";
        } else {
            o += trail + (trim_reply ? trim(m.content) : m.content) + "</s>";
            in_turn = false;
        }
    }
    return o;
}
std::string render_mistral_v1(const std::vector<ChatMessage> &m, bool) {
    return render_mistral(m, " ", " ", false);
}
std::string render_mistral_v3(const std::vector<ChatMessage> &m, bool) {
    return render_mistral(m, "", " ", true);
}
std::string render_mistral_v3_tekken(const std::vector<ChatMessage> &m, bool) {
    return render_mistral(m, "", "", false);
}

std::string render_mistral_v7(const std::vector<ChatMessage> &msgs, bool) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += "[SYSTEM_PROMPT] " + m.content + "[/SYSTEM_PROMPT]";
        else if (m.role == "user")
            o += "[INST] " + m.content + "[/INST]";
        else
            o += " " + m.content + "</s>";
    }
    return o;
}

std::string render_phi3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
    if (add) o += "<|assistant|>\n";
    return o;
}

std::string render_phi4(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|im_start|>" + m.role + "<|im_sep|>" + m.content + "<|im_end|>";
    if (add) o += "<|im_start|>assistant<|im_sep|>";
    return o;
}

std::string render_falcon3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n" + m.content + "\n";
    if (add) o += "<|assistant|>\n";
    return o;
}

std::string render_zephyr(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n" + m.content + "<|endoftext|>\n";
    if (add) o += "<|assistant|>\n";
    return o;
}

std::string render_monarch(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (size_t i = 0; i < msgs.size(); ++i)  // the first message has no <s>: the tokenizer adds BOS
        o += (i == 0 ? "" : "<s>") + msgs[i].role + "\n" + msgs[i].content + "</s>\n";
    if (add) o += "<s>assistant\n";
    return o;
}

std::string render_gemma(const std::vector<ChatMessage> &msgs, bool add) {
    // Gemma has no system turn: the system text opens the next user turn (of several system messages
    // before it, the last one, as b4748).
    std::string o, system;
    for (const auto &m : msgs) {
        if (m.role == "system") {
            system = trim(m.content);
            continue;
        }
        const std::string role = m.role == "assistant" ? "model" : m.role;
        o += "<start_of_turn>" + role + "\n";
        if (!system.empty() && role != "model") {
            o += system + "\n\n";
            system.clear();
        }
        o += trim(m.content) + "<end_of_turn>\n";
    }
    if (add) o += "<start_of_turn>model\n";
    return o;
}

// The system text opens the next user turn; of several system messages before it, the last one (b4748).
std::string render_orion(const std::vector<ChatMessage> &msgs, bool) {
    std::string o, system;
    for (const auto &m : msgs) {
        if (m.role == "system") {
            system = m.content;
        } else if (m.role == "user") {
            o += "Human: ";
            if (!system.empty()) {
                o += system + "\n\n";
                system.clear();
            }
            o += m.content + "\n\nAssistant: </s>";
        } else {
            o += m.content + "</s>";
        }
    }
    return o;
}

std::string render_openchat(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system") {
            o += m.content + "<|end_of_turn|>";
        } else {
            std::string role = m.role;
            if (!role.empty()) role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
            o += "GPT4 Correct " + role + ": " + m.content + "<|end_of_turn|>";
        }
    }
    if (add) o += "GPT4 Correct Assistant:";
    return o;
}

std::string render_vicuna(const std::vector<ChatMessage> &msgs, bool add, bool orca) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += orca ? "SYSTEM: " + m.content + "\n" : m.content + "\n\n";
        else if (m.role == "user")
            o += "USER: " + m.content + "\n";
        else if (m.role == "assistant")
            o += "ASSISTANT: " + m.content + "</s>\n";
    }
    if (add) o += "ASSISTANT:";
    return o;
}
std::string render_vicuna_plain(const std::vector<ChatMessage> &m, bool add) {
    return render_vicuna(m, add, false);
}
std::string render_vicuna_orca(const std::vector<ChatMessage> &m, bool add) {
    return render_vicuna(m, add, true);
}

std::string render_deepseek(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += m.content;
        else if (m.role == "user")
            o += "### Instruction:\n" + m.content + "\n";
        else if (m.role == "assistant")
            o += "### Response:\n" + m.content + "\n<|EOT|>\n";
    }
    if (add) o += "### Response:\n";
    return o;
}

std::string render_command_r(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        const char *tok = m.role == "system"      ? "<|SYSTEM_TOKEN|>"
                          : m.role == "user"      ? "<|USER_TOKEN|>"
                          : m.role == "assistant" ? "<|CHATBOT_TOKEN|>"
                                                  : nullptr;
        if (tok)
            o += std::string("<|START_OF_TURN_TOKEN|>") + tok + trim(m.content) + "<|END_OF_TURN_TOKEN|>";
    }
    if (add) o += "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>";
    return o;
}

std::string render_llama3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs)
        o += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
    if (add) o += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return o;
}

std::string render_chatglm3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o = "[gMASK]sop";
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n " + m.content;
    if (add) o += "<|assistant|>";
    return o;
}

std::string render_chatglm4(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o = "[gMASK]<sop>";
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n" + m.content;
    if (add) o += "<|assistant|>";
    return o;
}

std::string render_glmedge(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|" + m.role + "|>\n" + m.content;
    if (add) o += "<|assistant|>";
    return o;
}

std::string render_minicpm(const std::vector<ChatMessage> &msgs, bool) {
    std::string o;
    for (const auto &m : msgs)
        o += m.role == "user" ? "<\xe7\x94\xa8\xe6\x88\xb7>" + trim(m.content) + "<AI>" : trim(m.content);
    return o;
}

const char *kDeepseekEos =
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";      // <｜end▁of▁sentence｜>
const char *kDeepseekUser = "<\xef\xbd\x9cUser\xef\xbd\x9c>";  // <｜User｜>
const char *kDeepseekAssistant =
    "<\xef\xbd\x9c"
    "Assistant\xef\xbd\x9c>";  // <｜Assistant｜>

std::string render_deepseek2(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += m.content + "\n\n";
        else if (m.role == "user")
            o += "User: " + m.content + "\n\n";
        else if (m.role == "assistant")
            o += "Assistant: " + m.content + kDeepseekEos;
    }
    if (add) o += "Assistant:";
    return o;
}

std::string render_deepseek3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += m.content + "\n\n";
        else if (m.role == "user")
            o += kDeepseekUser + m.content;
        else if (m.role == "assistant")
            o += kDeepseekAssistant + m.content + kDeepseekEos;
    }
    if (add) o += kDeepseekAssistant;
    return o;
}

std::string render_exaone3(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        if (m.role == "system")
            o += "[|system|]" + trim(m.content) + "[|endofturn|]\n";
        else if (m.role == "user")
            o += "[|user|]" + trim(m.content) + "\n";
        else if (m.role == "assistant")
            o += "[|assistant|]" + trim(m.content) + "[|endofturn|]\n";
    }
    if (add) o += "[|assistant|]";
    return o;
}

// b4748's RWKV World format (before the RWKV7 rework): each user turn opens the assistant's reply.
std::string render_rwkv_world(const std::vector<ChatMessage> &msgs, bool) {
    std::string o;
    for (const auto &m : msgs)
        o += m.role == "user" ? "User: " + m.content + "\n\nAssistant:" : m.content + "\n\n";
    return o;
}

std::string render_granite(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) {
        o += "<|start_of_role|>" + m.role + "<|end_of_role|>";
        if (m.role == "assistant_tool_call") o += "<|tool_call|>";
        o += m.content + "<|end_of_text|>\n";
    }
    if (add) o += "<|start_of_role|>assistant<|end_of_role|>\n";
    return o;
}

std::string render_gigachat(const std::vector<ChatMessage> &msgs, bool add) {
    const bool has_system = !msgs.empty() && msgs[0].role == "system";
    std::string o = has_system ? "<s>" + msgs[0].content + "<|message_sep|>" : "<s>";
    for (size_t i = has_system ? 1 : 0; i < msgs.size(); ++i) {
        if (msgs[i].role == "user")
            o += "user<|role_sep|>" + msgs[i].content +
                 "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>";
        else if (msgs[i].role == "assistant")
            o += "assistant<|role_sep|>" + msgs[i].content + "<|message_sep|>";
    }
    if (add) o += "assistant<|role_sep|>";
    return o;
}

std::string render_megrez(const std::vector<ChatMessage> &msgs, bool add) {
    std::string o;
    for (const auto &m : msgs) o += "<|role_start|>" + m.role + "<|role_end|>" + m.content + "<|turn_end|>";
    if (add) o += "<|role_start|>assistant<|role_end|>";
    return o;
}

struct Builtin {
    const char *name;
    Render render;
};

// Alphabetical, as llama_chat_builtin_templates lists them.
const Builtin kBuiltins[] = {
    {"chatglm3", render_chatglm3},
    {"chatglm4", render_chatglm4},
    {"chatml", render_chatml},
    {"command-r", render_command_r},
    {"deepseek", render_deepseek},
    {"deepseek2", render_deepseek2},
    {"deepseek3", render_deepseek3},
    {"exaone3", render_exaone3},
    {"falcon3", render_falcon3},
    {"gemma", render_gemma},
    {"gigachat", render_gigachat},
    {"glmedge", render_glmedge},
    {"granite", render_granite},
    {"llama2", render_llama2_plain},
    {"llama2-sys", render_llama2_sys},
    {"llama2-sys-bos", render_llama2_sys_bos},
    {"llama2-sys-strip", render_llama2_sys_strip},
    {"llama3", render_llama3},
    {"megrez", render_megrez},
    {"minicpm", render_minicpm},
    {"mistral-v1", render_mistral_v1},
    {"mistral-v3", render_mistral_v3},
    {"mistral-v3-tekken", render_mistral_v3_tekken},
    {"mistral-v7", render_mistral_v7},
    {"monarch", render_monarch},
    {"openchat", render_openchat},
    {"orion", render_orion},
    {"phi3", render_phi3},
    {"phi4", render_phi4},
    {"rwkv-world", render_rwkv_world},
    {"vicuna", render_vicuna_plain},
    {"vicuna-orca", render_vicuna_orca},
    {"zephyr", render_zephyr},
};

}  // namespace

const std::vector<const char *> &builtin_template_names() {
    static const std::vector<const char *> names = [] {
        std::vector<const char *> v;
        for (const Builtin &b : kBuiltins) v.push_back(b.name);
        return v;
    }();
    return names;
}

std::string builtin_template_detect(const std::string &t) {
    for (const Builtin &b : kBuiltins)
        if (t == b.name) return b.name;
    auto has = [&](const char *s) { return t.find(s) != std::string::npos; };
    // The order matters: b4748 tries these one after the other.
    if (has("<|im_start|>")) return has("<|im_sep|>") ? "phi4" : "chatml";
    if (t.rfind("mistral", 0) == 0 || has("[INST]")) {
        if (has("[SYSTEM_PROMPT]")) return "mistral-v7";
        if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
            // mistral's official v1, v3 and v3-tekken templates
            if (has(" [INST]")) return "mistral-v1";
            if (has("\"[INST]\"")) return "mistral-v3-tekken";
            return "mistral-v3";
        }
        if (has("content.strip()")) return "llama2-sys-strip";
        if (has("bos_token + '[INST]")) return "llama2-sys-bos";
        if (has("<<SYS>>")) return "llama2-sys";
        return "llama2";
    }
    if (has("<|assistant|>") && has("<|end|>")) return "phi3";
    // A "[gMASK]<sop>" template naming <|user|> and <|assistant|> (GLM-4.6, GLM-4.7-Flash) is glmedge:
    // b4748 looks for chatglm4 only after these.
    if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? "falcon3" : "glmedge";
    if (has("<|user|>") && has("<|endoftext|>")) return "zephyr";
    if (has("bos_token + message['role']")) return "monarch";
    if (has("<start_of_turn>")) return "gemma";
    if (has("'\\n\\nAssistant: ' + eos_token")) return "orion";
    if (has("GPT4 Correct ")) return "openchat";
    if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? "vicuna-orca" : "vicuna";
    if (has("### Instruction:") && has("<|EOT|>")) return "deepseek";
    if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return "command-r";
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) return "llama3";
    if (has("[gMASK]sop")) return "chatglm3";
    if (has("[gMASK]<sop>")) return "chatglm4";
    if (has("<\xe7\x94\xa8\xe6\x88\xb7>")) return "minicpm";  // <用户>
    if (has("'Assistant: ' + message['content'] + eos_token")) return "deepseek2";
    if (has(kDeepseekAssistant) && has(kDeepseekUser) && has(kDeepseekEos)) return "deepseek3";
    if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return "exaone3";
    if (has("rwkv-world")) return "rwkv-world";
    if (has("<|start_of_role|>")) return "granite";
    if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
            "additional_special_tokens[1]"))
        return "gigachat";
    if (has("<|role_start|>")) return "megrez";
    return "";
}

bool builtin_template_apply(const std::string &name, const std::vector<ChatMessage> &messages,
                            bool add_assistant, std::string &out) {
    for (const Builtin &b : kBuiltins)
        if (name == b.name) {
            out = b.render(messages, add_assistant);
            return true;
        }
    return false;
}

}  // namespace lctx::chat
