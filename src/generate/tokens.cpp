#include "generate/tokens.h"

#include <algorithm>

namespace lctx::generate {

std::vector<llama_token> tokenize(const llama_vocab *vocab, const std::string &text, bool add_special,
                                  bool parse_special) {
    std::vector<llama_token> out(text.size() + 8);
    const int32_t len = static_cast<int32_t>(text.size());
    int32_t n = llama_tokenize(vocab, text.data(), len, out.data(), static_cast<int32_t>(out.size()),
                               add_special, parse_special);
    if (n < 0) {
        out.resize(static_cast<size_t>(-n));
        n = llama_tokenize(vocab, text.data(), len, out.data(), static_cast<int32_t>(out.size()), add_special,
                           parse_special);
    }
    out.resize(static_cast<size_t>(std::max(0, n)));
    return out;
}

std::string token_piece(const llama_vocab *vocab, llama_token token, bool special) {
    std::string out(64, '\0');
    int32_t n = llama_token_to_piece(vocab, token, out.data(), static_cast<int32_t>(out.size()), 0, special);
    if (n < 0) {
        out.resize(static_cast<size_t>(-n));
        n = llama_token_to_piece(vocab, token, out.data(), static_cast<int32_t>(out.size()), 0, special);
    }
    out.resize(static_cast<size_t>(std::max(0, n)));
    return out;
}

}  // namespace lctx::generate
