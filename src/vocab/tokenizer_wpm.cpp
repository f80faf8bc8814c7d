// WordPiece (BERT): normalize (NFD first code point, lowercase, drop controls), split on whitespace and
// around punctuation / CJK characters, then cover each word greedily with the longest vocabulary entries.
// The GGUF stores word-initial pieces with a leading U+2581 and continuation pieces without "##", so a
// word is matched as "\u2581word"; a word that cannot be covered becomes [UNK].
#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace lctx {

namespace {

bool is_cjk(uint32_t c) {
    // the CJK ideograph blocks BERT splits into single characters
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) ||
           (c >= 0x2B920 && c <= 0x2CEAF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::vector<std::string> wpm_words(std::string_view text) {
    std::vector<std::string> words(1);
    for (uint32_t c : unicode::decode_utf8(text)) {
        c = unicode::nfd_first(c);
        if (unicode::is_whitespace(c)) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        const unicode::Category cat = unicode::category(c);
        if (c == 0 || c == unicode::kReplacement || cat == unicode::Category::kControl) continue;
        const std::string s = unicode::encode_utf8(unicode::to_lower(c));
        if (cat == unicode::Category::kPunctuation || (c < 0x7F && cat == unicode::Category::kSymbol) ||
            is_cjk(c)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = s;  // a word of its own
            words.emplace_back();
        } else {
            words.back() += s;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

void Vocab::tokenize_wpm(std::string_view text, std::vector<int32_t> &out) const {
    for (const std::string &w : wpm_words(text)) {
        if (w.empty()) continue;
        const std::string word = "\xE2\x96\x81" + w;
        const size_t n = word.size();
        const size_t mark = out.size();
        for (size_t i = 0; i < n;) {
            // longest match starting at byte i
            bool found = false;
            for (size_t j = std::min(n, i + size_t(max_token_len_) + 1); j > i; --j) {
                const int32_t id = text_to_token(std::string_view(word).substr(i, j - i));
                if (id >= 0) {
                    out.push_back(id);
                    i = j;
                    found = true;
                    break;
                }
            }
            if (!found) {
                out.resize(mark);
                break;
            }
        }
        if (out.size() == mark && unk_ >= 0) out.push_back(unk_);
    }
}

}  // namespace lctx
