// Byte-level BPE (GPT-2 style): the pre-tokenizer cuts the text into words, each word's bytes are mapped
// into the printable byte alphabet, and within a word the adjacent pair with the lowest merge rank is
// merged until no pair has a rank (leftmost first on equal ranks). Final symbols that are no token fall
// back to their single-byte tokens.
#include <queue>

#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace lctx {

namespace {

struct Symbol {
    int32_t prev;
    int32_t next;
    size_t begin;  // byte range in the encoded word
    size_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
    int32_t left;
    int32_t right;
    int32_t rank;
    size_t len;  // byte length of the pair when queued
};

struct BigramOrder {
    // lowest rank on top, then leftmost
    bool operator()(const Bigram &a, const Bigram &b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

void Vocab::tokenize_bpe(std::string_view text, std::vector<int32_t> &out) const {
    std::vector<Symbol> syms;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    for (const std::string &raw_word : pretokenizer_->split(text)) {
        const std::string word = unicode::byte_encode(raw_word);
        if (word.empty()) continue;
        if (ignore_merges_) {
            const int32_t id = text_to_token(word);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        syms.clear();
        for (size_t off = 0; off < word.size();) {
            const size_t len = std::min(unicode::utf8_len(uint8_t(word[off])), word.size() - off);
            const int32_t idx = int32_t(syms.size());
            syms.push_back({idx - 1, off + len == word.size() ? -1 : idx + 1, off, len});
            off += len;
        }
        const auto piece = [&](const Symbol &s) { return std::string_view(word).substr(s.begin, s.len); };
        const auto try_pair = [&](int32_t l, int32_t r) {
            if (l < 0 || r < 0) return;
            const int32_t rank = merge_rank(piece(syms[size_t(l)]), piece(syms[size_t(r)]));
            if (rank >= 0) queue.push({l, r, rank, syms[size_t(l)].len + syms[size_t(r)].len});
        };
        for (int32_t i = 1; i < int32_t(syms.size()); ++i) try_pair(i - 1, i);

        while (!queue.empty()) {
            const Bigram b = queue.top();
            queue.pop();
            Symbol &l = syms[size_t(b.left)];
            Symbol &r = syms[size_t(b.right)];
            // stale: one side was merged elsewhere since the pair was queued
            if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
            l.len += r.len;
            r.len = 0;
            l.next = r.next;
            if (r.next >= 0) syms[size_t(r.next)].prev = b.left;
            try_pair(l.prev, b.left);
            try_pair(b.left, l.next);
        }

        for (int32_t i = 0; i != -1; i = syms[size_t(i)].next) {
            const std::string_view p = piece(syms[size_t(i)]);
            const int32_t id = text_to_token(p);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
            // no such token: try each byte of the encoded text on its own (ASCII alphabet members)
            for (char c : p) {
                const int32_t b = text_to_token(std::string_view(&c, 1));
                if (b >= 0) out.push_back(b);
            }
        }
    }
}

}  // namespace lctx
