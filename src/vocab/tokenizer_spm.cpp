// SentencePiece BPE as llama.cpp runs it: start from UTF-8 characters, repeatedly merge the adjacent pair
// whose concatenation is the highest-scoring token (leftmost on ties), then emit each final symbol as its
// token, or as byte tokens (<0xNN>) when it is not one. Only pairs that form a token are ever merged, so a
// symbol that is no token is always a single character.
#include <queue>

#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace lctx {

namespace {

struct SpmSymbol {
    int32_t prev;  // -1: none
    int32_t next;
    size_t begin;  // byte range in the text
    size_t len;    // 0 once merged into its left neighbour
};

struct SpmBigram {
    int32_t left;
    int32_t right;
    float score;
    size_t len;  // byte length of the pair when it was queued (stale entries no longer match)
};

struct SpmBigramOrder {
    // priority_queue keeps the "largest" on top: highest score, then leftmost
    bool operator()(const SpmBigram &a, const SpmBigram &b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void Vocab::tokenize_spm(std::string_view text, std::vector<int32_t> &out) const {
    if (text.empty()) return;
    std::vector<SpmSymbol> syms;  // a doubly linked list over the characters
    syms.reserve(text.size());
    for (size_t off = 0; off < text.size();) {
        const size_t len = std::min(unicode::utf8_len(uint8_t(text[off])), text.size() - off);
        const int32_t idx = int32_t(syms.size());
        syms.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, off, len});
        off += len;
    }

    std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramOrder> queue;
    const auto try_pair = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const std::string_view pair =
            text.substr(syms[size_t(l)].begin, syms[size_t(l)].len + syms[size_t(r)].len);
        const int32_t id = text_to_token(pair);
        if (id < 0) return;
        queue.push({l, r, tokens_[size_t(id)].score, pair.size()});
    };
    for (int32_t i = 1; i < int32_t(syms.size()); ++i) try_pair(i - 1, i);

    while (!queue.empty()) {
        const SpmBigram b = queue.top();
        queue.pop();
        SpmSymbol &l = syms[size_t(b.left)];
        SpmSymbol &r = syms[size_t(b.right)];
        if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // stale
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) syms[size_t(r.next)].prev = b.left;
        try_pair(l.prev, b.left);
        try_pair(b.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = syms[size_t(i)].next) {
        const std::string_view piece = text.substr(syms[size_t(i)].begin, syms[size_t(i)].len);
        const int32_t id = text_to_token(piece);
        if (id >= 0) {
            out.push_back(id);
        } else {
            for (char c : piece) {
                const int32_t b = byte_to_token(uint8_t(c));
                if (b >= 0) out.push_back(b);
            }
        }
    }
}

}  // namespace lctx
