// Unigram (T5, SentencePiece "unigram" models). Two steps, as SentencePiece describes them:
//  1. normalize: each longest prefix found in the model's precompiled character map (a darts-clone double
//     array over UTF-8 bytes; tokenizer.ggml.precompiled_charsmap) is replaced by its normalized string,
//     other characters are kept (malformed bytes become U+FFFD); with remove_extra_whitespaces, leading and
//     trailing spaces go and runs of spaces become one; add_space_prefix puts one space in front; every
//     space becomes U+2581.
//  2. segment: Viterbi over the normalized bytes, maximizing the sum of the pieces' scores (normal pieces
//     their own score, user-defined ones 0). Where no one-character piece starts, the character is
//     unknown, scored min(normal scores) - 10; consecutive unknown characters become one unknown token.
#include <cstring>
#include <limits>

#include "util/error.h"
#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace lctx {

namespace {

using unicode::kSpaceMarker;
constexpr float kUnknownPenalty = 10.0f;  // SentencePiece's kUnkPenalty

// One darts-clone unit: a node's label and child offset, or a leaf's value.
struct DartsUnit {
    uint32_t u;
    bool has_leaf() const { return ((u >> 8) & 1) != 0; }
    uint32_t value() const { return u & ((1u << 31) - 1); }
    uint32_t label() const { return u & ((1u << 31) | 0xFF); }
    uint32_t offset() const { return (u >> 10) << ((u & (1u << 9)) >> 6); }
};

}  // namespace

void Vocab::load_ugm(const gguf::File &f) {
    // Viterbi needs a token for characters no piece covers.
    if (unk_ < 0)
        throw Error("the Unigram vocabulary has no unknown token ('tokenizer.ggml.unknown_token_id')");
    // Scores: the unknown character's is below every normal piece's.
    float min_score = std::numeric_limits<float>::max();
    for (const TokenData &t : tokens_)
        if ((t.attr & kAttrNormal) && t.score < min_score) min_score = t.score;
    ugm_unk_score_ = (min_score == std::numeric_limits<float>::max() ? 0.0f : min_score) - kUnknownPenalty;

    // The charsmap: u32 size of the double array in bytes, the array (u32 units), then the normalized
    // strings, each NUL-terminated, which the leaves' values index.
    const gguf::Value *cm = f.find("tokenizer.ggml.precompiled_charsmap");
    if (!cm || cm->type != gguf::ValueType::ARRAY) return;  // no map: characters are kept as they are
    if (cm->array_type != gguf::ValueType::UINT8 && cm->array_type != gguf::ValueType::INT8)
        throw Error("'tokenizer.ggml.precompiled_charsmap' is not an array of bytes");
    const uint8_t *bytes = cm->array_view ? cm->array_view : cm->array_bytes.data();
    const size_t n = cm->array_view ? cm->array_view_count : cm->array_bytes.size();
    if (n == 0) return;
    if (n < 4) throw Error("'tokenizer.ggml.precompiled_charsmap' is shorter than its size field");
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, bytes, 4);
    if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > n - 4)
        throw Error("'tokenizer.ggml.precompiled_charsmap': its double array of " +
                    std::to_string(trie_bytes) + " bytes does not fit the " + std::to_string(n) +
                    " bytes of the map");
    ugm_trie_.resize(trie_bytes / 4);
    std::memcpy(ugm_trie_.data(), bytes + 4, trie_bytes);
    ugm_norm_.assign(reinterpret_cast<const char *>(bytes) + 4 + trie_bytes, n - 4 - trie_bytes);
}

// The longest prefix of `in` the charsmap replaces: its length (0: none) and replacement.
size_t Vocab::ugm_charsmap_prefix(std::string_view in, std::string_view *replacement) const {
    if (ugm_trie_.empty()) return 0;
    const size_t n_units = ugm_trie_.size();
    size_t best_len = 0;
    uint32_t best_value = 0;
    uint32_t pos = DartsUnit{ugm_trie_[0]}.offset();
    for (size_t i = 0; i < in.size(); ++i) {
        const uint8_t c = static_cast<uint8_t>(in[i]);
        pos ^= c;
        if (pos >= n_units) break;
        const DartsUnit unit{ugm_trie_[pos]};
        if (unit.label() != c) break;
        pos ^= unit.offset();
        if (pos >= n_units) break;
        if (unit.has_leaf()) {
            best_len = i + 1;
            best_value = DartsUnit{ugm_trie_[pos]}.value();
        }
    }
    if (best_len == 0 || best_value >= ugm_norm_.size()) return 0;  // a value outside the strings: no match
    const char *s = ugm_norm_.data() + best_value;
    const size_t max = ugm_norm_.size() - best_value;
    *replacement = std::string_view(s, strnlen(s, max));
    return best_len;
}

std::string Vocab::ugm_normalize(std::string_view text) const {
    // One normalized prefix of `in`: its replacement, and how many input bytes it stands for.
    std::string scratch;
    const auto next = [&](std::string_view in, size_t *consumed) -> std::string_view {
        std::string_view rep;
        if (const size_t len = ugm_charsmap_prefix(in, &rep); len > 0) {
            *consumed = len;
            return rep;
        }
        size_t off = 0;
        const uint32_t cp = unicode::decode_one(in, &off);
        *consumed = off;
        if (cp == 0xFFFD && !(off == 3 && in.substr(0, 3) == "\xEF\xBF\xBD")) {
            scratch = "\xEF\xBF\xBD";
            return scratch;
        }
        return in.substr(0, off);
    };

    std::string out;
    size_t consumed = 0;
    if (remove_extra_whitespaces_) {  // leading spaces go
        while (!text.empty() && next(text, &consumed) == " ") text.remove_prefix(consumed);
    }
    if (text.empty()) return out;
    if (add_space_prefix_) out += kSpaceMarker;
    bool prev_space = remove_extra_whitespaces_;
    while (!text.empty()) {
        std::string_view sp = next(text, &consumed);
        while (prev_space && !sp.empty() && sp.front() == ' ') sp.remove_prefix(1);
        if (!sp.empty()) {
            for (char c : sp) {
                if (c == ' ')
                    out += kSpaceMarker;
                else
                    out += c;
            }
            prev_space = sp.back() == ' ';
        }
        text.remove_prefix(consumed);
        prev_space = prev_space && remove_extra_whitespaces_;
    }
    if (remove_extra_whitespaces_) {  // trailing spaces go
        const size_t m = std::strlen(kSpaceMarker);
        while (out.size() >= m && out.compare(out.size() - m, m, kSpaceMarker) == 0)
            out.resize(out.size() - m);
    }
    return out;
}

void Vocab::tokenize_ugm(std::string_view raw, std::vector<int32_t> &out) const {
    const std::string text = ugm_normalize(raw);
    const size_t n = text.size();
    if (n == 0) return;

    // best[i]: the best segmentation of text[0, i): its score, last token and where that token starts.
    struct Best {
        double score = -std::numeric_limits<double>::infinity();
        int32_t token = -1;
        size_t start = 0;
        bool reached = false;
    };
    std::vector<Best> best(n + 1);
    best[0].score = 0.0;
    best[0].reached = true;
    const size_t max_len = static_cast<size_t>(max_token_len_);
    for (size_t i = 0; i < n; ++i) {
        if (!best[i].reached) continue;
        const size_t char_len = std::min(unicode::utf8_len(static_cast<uint8_t>(text[i])), n - i);
        bool single_char = false;
        for (size_t len = 1; len <= max_len && i + len <= n; ++len) {
            const int32_t id = text_to_token(std::string_view(text).substr(i, len));
            if (id < 0) continue;
            const TokenData &t = tokens_[size_t(id)];
            if (!(t.attr & (kAttrNormal | kAttrUserDefined))) continue;
            const double s = best[i].score + ((t.attr & kAttrUserDefined) ? 0.0 : double(t.score));
            Best &b = best[i + len];
            if (!b.reached || s > b.score) b = {s, id, i, true};
            if (len == char_len) single_char = true;
        }
        if (!single_char) {
            const double s = best[i].score + double(ugm_unk_score_);
            Best &b = best[i + char_len];
            if (!b.reached || s > b.score) b = {s, unk_, i, true};
        }
    }

    // Walk back from the end; runs of unknown characters give one unknown token.
    std::vector<int32_t> ids;
    bool prev_unknown = false;
    for (size_t i = n; i > 0; i = best[i].start) {
        const bool unknown = best[i].token == unk_;
        if (!(prev_unknown && unknown)) ids.push_back(best[i].token);
        prev_unknown = unknown;
    }
    out.insert(out.end(), ids.rbegin(), ids.rend());
}

}  // namespace lctx
