#include "sampling/grammar_sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "util/error.h"
#include "util/log.h"

namespace lctx {

// Every token text as a path of bytes; node 0 is the root.
struct GrammarSampler::Trie {
    struct Node {
        std::vector<std::pair<uint8_t, uint32_t>> children;  // sorted by byte
        std::vector<Token> tokens;                           // tokens whose text ends here
    };
    std::vector<Node> nodes;

    explicit Trie(const TokenTexts &t) {
        nodes.emplace_back();
        for (size_t id = 0; id < t.piece.size(); ++id) {
            const std::string &p = t.piece[id];
            // End-of-generation tokens are judged apart; an empty text, or one that starts with NUL, is never
            // allowed through bytes (b4748).
            if (p.empty() || p[0] == '\0' || t.is_eog[id]) continue;
            uint32_t n = 0;
            for (unsigned char b : p) {
                auto &ch = nodes[n].children;
                auto it = std::lower_bound(ch.begin(), ch.end(), std::make_pair(b, uint32_t{0}),
                                           [](const auto &x, const auto &y) { return x.first < y.first; });
                if (it == ch.end() || it->first != b) {
                    const auto next = static_cast<uint32_t>(nodes.size());
                    it = ch.insert(it, {b, next});
                    nodes.emplace_back();  // invalidates `ch`: not used after this
                    n = next;
                } else {
                    n = it->second;
                }
            }
            nodes[n].tokens.push_back(static_cast<Token>(id));
        }
    }
};

namespace {

grammar::Grammar parse_for(const TokenTexts &texts, const std::string &gbnf, const std::string &root,
                           const std::function<int32_t(std::string_view)> &token_of_text) {
    grammar::TokenVocabulary v;
    v.n_tokens = static_cast<int32_t>(texts.piece.size());
    v.by_text = token_of_text ? token_of_text : [&texts](std::string_view text) -> int32_t {
        for (size_t id = 0; id < texts.piece.size(); ++id)
            if (texts.piece[id] == text) return static_cast<int32_t>(id);
        return -1;
    };
    return grammar::parse_gbnf(gbnf, root, &v);
}

}  // namespace

GrammarSampler::GrammarSampler(std::shared_ptr<const TokenTexts> texts, const std::string &gbnf,
                               const std::string &root, GrammarTriggers triggers,
                               const std::function<int32_t(std::string_view)> &token_of_text)
    : texts_(std::move(texts)),
      grammar_(std::make_shared<const grammar::Grammar>(parse_for(*texts_, gbnf, root, token_of_text))),
      matcher_(grammar_),
      triggers_(std::move(triggers)),
      awaiting_trigger_(triggers_.lazy) {}

void GrammarSampler::reset() {
    matcher_.reset();
    partial_ = {};
    awaiting_trigger_ = triggers_.lazy;
    trigger_buffer_.clear();
}

std::unique_ptr<Sampler> GrammarSampler::clone() const {
    auto c = std::unique_ptr<GrammarSampler>(new GrammarSampler(*this));
    c->cache_.reset();  // a clone may run on another thread: it builds its own
    return c;
}

namespace {

// The smallest code point a UTF-8 character of n bytes may hold (shorter forms are overlong, invalid).
constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Advances a UTF-8 decoder by one byte: the completed code point, or -1 while a character is unfinished,
// or -2 for a byte that cannot continue the text (a stray continuation, an overlong form).
template <typename P>
int64_t utf8_step(P &p, unsigned char b) {
    if (p.remaining > 0) {
        if ((b & 0xC0) != 0x80) return -2;
        p.value = (p.value << 6) | (b & 0x3F);
        if (--p.remaining > 0) return -1;
        if (p.value < kMinOfLength[p.length] || p.value > kMaxCodePoint) return -2;
        return p.value;
    }
    if (b < 0x80) return b;
    const int extra = (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : (b & 0xF8) == 0xF0 ? 3 : -1;
    if (extra < 0) return -2;
    p.value = b & (0x3Fu >> extra);
    p.remaining = extra;
    p.length = extra + 1;
    return -1;
}

// The code points an unfinished character can still become (lo > hi: none).
template <typename P>
std::pair<uint32_t, uint32_t> completions(const P &p) {
    const uint32_t lo = p.value << (6 * p.remaining);
    const uint32_t hi = lo + (1u << (6 * p.remaining)) - 1;
    return {std::max(lo, kMinOfLength[p.length]), std::min(hi, kMaxCodePoint)};
}

}  // namespace

bool GrammarSampler::accept_bytes(const std::string &bytes) {
    std::vector<grammar::Stack> stacks = matcher_.stacks();
    Partial p = partial_;
    for (unsigned char b : bytes) {
        const int64_t cp = utf8_step(p, b);
        if (cp == -2) return false;
        if (cp < 0) continue;
        stacks = matcher_.step(stacks, static_cast<uint32_t>(cp));
        if (stacks.empty()) return false;
    }
    if (p.remaining > 0) {
        const auto [lo, hi] = completions(p);
        if (lo > hi || !matcher_.may_continue_with(stacks, lo, hi)) return false;
    }
    matcher_.set_stacks(std::move(stacks));
    partial_ = p;
    return true;
}

void GrammarSampler::advance(Token token) {
    const std::string &piece = texts_->piece[token];
    std::vector<grammar::Stack> by_token;
    if (partial_.remaining == 0) by_token = matcher_.step_token(matcher_.stacks(), token);
    if (by_token.empty()) {
        if (!accept_bytes(piece))
            LCTX_LOG_ERROR("grammar sampler: token %d does not continue the grammar; ignored", token);
        return;
    }
    // Matched as a whole token; the stacks that also take its text (ending on a whole character) stay.
    if (!piece.empty() && piece[0] != '\0' && accept_bytes(piece) && partial_.remaining == 0) {
        by_token.insert(by_token.end(), matcher_.stacks().begin(), matcher_.stacks().end());
        std::sort(by_token.begin(), by_token.end());
        by_token.erase(std::unique(by_token.begin(), by_token.end()), by_token.end());
    }
    matcher_.set_stacks(std::move(by_token));
    partial_ = {};
}

void GrammarSampler::accept(Token token) {
    if (token < 0 || static_cast<size_t>(token) >= texts_->piece.size())
        throw Error("grammar sampler: token " + std::to_string(token) + " is outside the vocabulary");
    const std::string &piece = texts_->piece[token];
    if (awaiting_trigger_) {
        if (std::find(triggers_.tokens.begin(), triggers_.tokens.end(), token) != triggers_.tokens.end()) {
            awaiting_trigger_ = false;
            trigger_buffer_.clear();
            advance(token);
            return;
        }
        trigger_buffer_ += piece;
        // The first word in the list that occurs, from where it occurs (b4748; "" occurs at 0).
        for (const std::string &w : triggers_.words) {
            const size_t at = trigger_buffer_.find(w);
            if (at == std::string::npos) continue;
            awaiting_trigger_ = false;
            const std::string constrained = trigger_buffer_.substr(at);
            trigger_buffer_.clear();
            if (!accept_bytes(constrained))
                LCTX_LOG_WARN("grammar sampler: the text from the trigger word does not fit the grammar");
            return;
        }
        return;
    }
    if (texts_->is_eog[token]) return;  // ends the output; nothing to match
    advance(token);
}

// Numbered parse states (distinct sets of stacks), their transitions, and the tokens each state allows at
// the start of a token. Everything here follows from the grammar and the token texts alone, so it stays
// valid across tokens and resets; it is cleared when it grows past its bounds.
struct GrammarSampler::StateCache {
    static constexpr uint32_t kDead = UINT32_MAX;         // no stack survives
    static constexpr uint32_t kUnknown = UINT32_MAX - 1;  // transition not computed yet
    static constexpr size_t kMaxStates = size_t{1} << 16;
    static constexpr size_t kMaxAllowedSets = 128;

    struct SetHash {
        size_t operator()(const std::vector<grammar::Stack> &set) const {
            uint64_t h = 0x9E3779B97F4A7C15ull;
            for (const grammar::Stack &st : set) {
                for (uint32_t e : st) h = (h ^ e) * 0x100000001B3ull;
                h = (h ^ 0xFFFFFFFFull) * 0x100000001B3ull;  // stack boundary
            }
            return static_cast<size_t>(h ^ (h >> 29));
        }
    };

    std::unordered_map<std::vector<grammar::Stack>, uint32_t, SetHash> ids;
    std::vector<const std::vector<grammar::Stack> *> sets;  // state -> its stacks (keys of `ids`)
    std::vector<std::array<uint32_t, 128>> ascii;           // state -> next state per ASCII code point
    std::unordered_map<uint64_t, uint32_t> wide;            // (state, code point >= 128) -> next state
    std::unordered_map<uint64_t, bool> partial_ok;          // (state, unfinished character) -> may continue
    std::unordered_map<uint64_t, std::vector<uint64_t>> allowed;  // (state, unfinished character) -> bitset

    static uint64_t key(uint32_t state, const Partial &p) {
        return (uint64_t{state} << 32) | (uint64_t{p.value} << 8) | (uint64_t(p.remaining) << 4) |
               uint64_t(p.length);
    }

    // Bounds the memory: between tokens, a cache that grew too large starts over.
    void trim() {
        if (sets.size() > kMaxStates || wide.size() > kMaxStates || partial_ok.size() > kMaxStates) {
            ids.clear();
            sets.clear();
            ascii.clear();
            wide.clear();
            partial_ok.clear();
            allowed.clear();
        }
        if (allowed.size() > kMaxAllowedSets) allowed.clear();
    }

    uint32_t intern(std::vector<grammar::Stack> set) {
        if (set.empty()) return kDead;
        const auto [it, added] = ids.try_emplace(std::move(set), static_cast<uint32_t>(sets.size()));
        if (added) {
            sets.push_back(&it->first);
            ascii.emplace_back();
            ascii.back().fill(kUnknown);
        }
        return it->second;
    }

    uint32_t next(const grammar::Matcher &m, uint32_t state, uint32_t cp) {
        if (cp < 128) {
            uint32_t r = ascii[state][cp];
            if (r == kUnknown) {
                r = intern(m.step(*sets[state], cp));
                ascii[state][cp] = r;  // after intern(), which may move `ascii`
            }
            return r;
        }
        const uint64_t k = (uint64_t{state} << 32) | cp;
        const auto it = wide.find(k);
        if (it != wide.end()) return it->second;
        const uint32_t r = intern(m.step(*sets[state], cp));
        wide.emplace(k, r);
        return r;
    }

    bool may_continue(const grammar::Matcher &m, uint32_t state, const Partial &p) {
        const auto [it, added] = partial_ok.try_emplace(key(state, p), false);
        if (added) {
            const auto [lo, hi] = completions(p);
            it->second = lo <= hi && m.may_continue_with(*sets[state], lo, hi);
        }
        return it->second;
    }
};

void GrammarSampler::walk(const Trie &trie, uint32_t node, uint32_t state, Partial partial,
                          std::vector<char> &allowed) const {
    StateCache &c = *cache_;
    for (const auto &[byte, child] : trie.nodes[node].children) {
        Partial p = partial;
        const int64_t cp = utf8_step(p, byte);
        if (cp == -2) continue;
        uint32_t next = state;
        if (cp >= 0) {
            next = c.next(matcher_, state, static_cast<uint32_t>(cp));
            if (next == StateCache::kDead) continue;
        } else if (!c.may_continue(matcher_, state, p)) {
            continue;
        }
        for (Token t : trie.nodes[child].tokens) allowed[t] = 1;
        walk(trie, child, next, p, allowed);
    }
}

// The tokens the token references on top of `stacks` match, whatever their text.
void GrammarSampler::allow_token_references(const std::vector<grammar::Stack> &stacks,
                                            std::vector<char> &allowed) const {
    const grammar::Grammar &g = *grammar_;
    for (const grammar::Stack &st : stacks) {
        if (st.empty()) continue;
        const grammar::Element &e = g.elements[st.back()];
        if (e.kind != grammar::Element::Kind::Token) continue;
        if (!e.negated) {
            if (e.rule < allowed.size()) allowed[e.rule] = 1;
            continue;
        }
        for (size_t id = 0; id < allowed.size(); ++id)
            if (id != e.rule) allowed[id] = 1;
    }
}

void GrammarSampler::allowed_tokens(std::vector<char> &allowed) const {
    if (!trie_) trie_ = std::make_shared<const Trie>(*texts_);
    if (!cache_) cache_ = std::make_shared<StateCache>();
    StateCache &c = *cache_;
    c.trim();
    const size_t n = texts_->piece.size();
    allowed.assign(n, 0);
    const uint32_t root = c.intern(matcher_.stacks());
    if (root != StateCache::kDead) {
        const uint64_t k = StateCache::key(root, partial_);
        const auto it = c.allowed.find(k);
        if (it != c.allowed.end()) {
            const std::vector<uint64_t> &bits = it->second;
            for (size_t id = 0; id < n; ++id)
                allowed[id] = static_cast<char>((bits[id >> 6] >> (id & 63)) & 1);
        } else {
            walk(*trie_, 0, root, partial_, allowed);
            if (partial_.remaining == 0) allow_token_references(*c.sets[root], allowed);
            std::vector<uint64_t> bits((n + 63) / 64, 0);
            for (size_t id = 0; id < n; ++id) bits[id >> 6] |= uint64_t(allowed[id] != 0) << (id & 63);
            c.allowed.emplace(k, std::move(bits));
        }
    }
    const bool may_end = partial_.remaining == 0 && matcher_.complete();
    for (size_t id = 0; id < n; ++id)
        if (texts_->is_eog[id]) allowed[id] = may_end;
}

void GrammarSampler::apply(TokenDataArray &cur) {
    if (awaiting_trigger_) return;
    allowed_tokens(allowed_);
    for (size_t i = 0; i < cur.size; ++i) {
        const Token id = cur.data[i].id;
        if ((id < 0 || static_cast<size_t>(id) >= allowed_.size() || !allowed_[id]) &&
            cur.data[i].logit != -std::numeric_limits<float>::infinity()) {
            cur.data[i].logit = -std::numeric_limits<float>::infinity();
            cur.sorted = false;
        }
    }
}

}  // namespace lctx
