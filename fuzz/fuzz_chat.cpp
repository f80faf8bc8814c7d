// Fuzzes chat format recognition and rendering (src/chat): a model's tokenizer.chat_template is outside text.
// Input: the template (or format name) up to the first 0 byte; after it, message contents separated by 1
// bytes, with roles cycling system, user, assistant. The rendered prompt must hold every user and assistant
// message's content (a system message may be folded into the next user turn, and has none to go to at the
// end).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chat/chat_format.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lctx::fuzz::quiet_log();
    const std::string in(reinterpret_cast<const char *>(data), size);
    const size_t cut = in.find('\0');
    const std::string tmpl = in.substr(0, cut);
    std::vector<lctx::ChatMessage> messages;
    if (cut != std::string::npos) {
        static const char *const kRoles[] = {"system", "user", "assistant"};
        size_t pos = cut + 1;
        for (size_t i = 0; pos <= in.size(); ++i) {
            size_t end = in.find('\1', pos);
            if (end == std::string::npos) end = in.size();
            messages.push_back({kRoles[i % 3], in.substr(pos, end - pos)});
            pos = end + 1;
        }
    }
    const lctx::ChatFormat f = lctx::chat_format_detect(tmpl);
    const std::string out = lctx::chat_format_apply(f, messages, size % 2 == 0);
    for (const lctx::ChatMessage &m : messages) {
        if (m.role != "system" && out.find(m.content) == std::string::npos) {
            std::fprintf(stderr, "fuzz_chat: %s lost the content of a %s message\n",
                         lctx::chat_format_name(f), m.role.c_str());
            std::abort();
        }
    }
    return 0;
}
