// Fuzzes the GBNF parser and matcher: the input up to the first NUL byte is a grammar, the rest is text fed
// to it code point by code point, where a code point below 32 stands for the whole token with that id (for
// the token references `<[ID]>` / `!<...>`). A grammar must either parse or throw GrammarError; matching
// must never crash, whatever the grammar.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view all(reinterpret_cast<const char *>(data), size);
    const size_t nul = all.find('\0');
    const std::string_view gbnf = all.substr(0, nul);
    const std::string_view text = nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);
    std::shared_ptr<const lctx::grammar::Grammar> g;
    try {
        g = std::make_shared<const lctx::grammar::Grammar>(lctx::grammar::parse_gbnf(gbnf));
    } catch (const lctx::grammar::GrammarError &) {
        return 0;
    }
    lctx::grammar::Matcher m(g);
    for (uint32_t cp : lctx::grammar::decode_utf8(text.substr(0, 256))) {
        if (cp < 32) {
            std::vector<lctx::grammar::Stack> next = m.step_token(m.stacks(), static_cast<int32_t>(cp));
            if (next.empty()) break;
            m.set_stacks(std::move(next));
        } else if (!m.accept(cp)) {
            break;
        }
        if (m.stacks().size() > 4096) break;  // an ambiguous grammar: enough for one input
    }
    (void)m.complete();
    return 0;
}
