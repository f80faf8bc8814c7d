#include "grammar/gbnf.h"

#include <algorithm>
#include <functional>

namespace lctx::grammar {

namespace {

// A bound above this means "no bound" (llama.cpp's rule; grammars in the wild rely on it).
constexpr uint64_t kMaxRepetitionBound = 2000;
// The id a `<TEXT>` reference gets when parsed without a vocabulary (no token has it).
constexpr int64_t kUnresolvedToken = INT32_MAX;
// What repetitions may expand to (a few tens of MiB of elements).
constexpr uint64_t kMaxExpandedElements = uint64_t{1} << 22;

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// One code point of UTF-8 at s[i] (advancing i); a byte that starts no valid sequence stands for itself.
uint32_t next_code_point(std::string_view s, size_t &i) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    const int extra = b0 < 0x80            ? 0
                      : (b0 & 0xE0) == 0xC0 ? 1
                      : (b0 & 0xF0) == 0xE0 ? 2
                      : (b0 & 0xF8) == 0xF0 ? 3
                                            : -1;
    if (extra <= 0 || i + static_cast<size_t>(extra) >= s.size()) {
        ++i;
        return b0;
    }
    uint32_t cp = b0 & (0x3Fu >> extra);
    for (int k = 1; k <= extra; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            ++i;
            return b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    i += 1 + static_cast<size_t>(extra);
    return cp;
}

// The parsed form of one alternative before it is laid out: elements without the End marker.
using Seq = std::vector<Element>;

class Parser {
  public:
    Parser(std::string_view text, const TokenVocabulary *vocab) : src_(text), vocab_(vocab) {}

    Grammar run(std::string_view root_rule) {
        pos_ = skip_space(0, true);
        while (pos_ < src_.size()) parse_rule();
        if (defined_.empty()) fail(pos_, "the grammar defines no rules");
        for (size_t r = 0; r < names_.size(); ++r)
            if (!defined_[r]) fail(first_use_[r], "undefined rule '" + names_[r] + "'");
        const auto root = ids_.find(std::string(root_rule));
        if (root == ids_.end()) fail(src_.size(), "the grammar has no rule '" + std::string(root_rule) + "'");
        return layout(root->second);
    }

  private:
    [[noreturn]] void fail(size_t at, const std::string &what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        std::string near(src_.substr(std::min(at, src_.size()), 12));
        std::replace(near.begin(), near.end(), '\n', ' ');
        throw GrammarError("grammar: " + what + " at line " + std::to_string(line) + ", column " +
                           std::to_string(col) + (near.empty() ? " (end of input)" : " near \"" + near + "\""));
    }

    char at(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }

    // Skips blanks and comments; newlines too when `newlines` (inside groups, between rules).
    size_t skip_space(size_t i, bool newlines) const {
        while (i < src_.size()) {
            const char c = src_[i];
            if (c == ' ' || c == '\t' || ((c == '\r' || c == '\n') && newlines)) {
                ++i;
            } else if (c == '#') {
                while (i < src_.size() && src_[i] != '\n' && src_[i] != '\r') ++i;
            } else {
                break;
            }
        }
        return i;
    }

    uint32_t rule_id(const std::string &name, size_t used_at) {
        auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(names_.size()));
        if (inserted) {
            names_.push_back(name);
            alts_.emplace_back();
            defined_.push_back(false);
            first_use_.push_back(used_at);
            def_at_.push_back(used_at);
        }
        return it->second;
    }

    uint32_t new_rule(const std::string &base) {
        const std::string name = base + "_" + std::to_string(names_.size());
        const uint32_t id = rule_id(name, pos_);
        defined_[id] = true;
        return id;
    }

    void parse_rule() {
        const size_t name_at = pos_;
        size_t i = pos_;
        while (is_word_char(at(i))) ++i;
        if (i == name_at) fail(pos_, "expecting a rule name");
        const std::string name(src_.substr(name_at, i - name_at));
        i = skip_space(i, false);
        if (src_.substr(i, 3) != "::=") fail(i, "expecting ::=");
        pos_ = skip_space(i + 3, true);
        const uint32_t id = rule_id(name, name_at);
        def_at_[id] = name_at;
        std::vector<Seq> alts = parse_alternates(name, false);
        alts_[id] = std::move(alts);  // a later definition replaces an earlier one (as llama.cpp)
        defined_[id] = true;
        if (at(pos_) == '\r') ++pos_;
        if (at(pos_) == '\n') {
            ++pos_;
        } else if (pos_ < src_.size()) {
            fail(pos_, "expecting newline or end");
        }
        pos_ = skip_space(pos_, true);
    }

    std::vector<Seq> parse_alternates(const std::string &rule_name, bool nested) {
        std::vector<Seq> alts;
        alts.push_back(parse_sequence(rule_name, nested));
        while (at(pos_) == '|') {
            pos_ = skip_space(pos_ + 1, true);
            alts.push_back(parse_sequence(rule_name, nested));
        }
        return alts;
    }

    uint32_t parse_char(size_t &i) {
        if (i >= src_.size()) fail(i, "unexpected end of input");
        if (src_[i] != '\\') return next_code_point(src_, i);
        const char e = at(i + 1);
        auto hex = [&](int n) {
            uint32_t v = 0;
            for (int k = 0; k < n; ++k) {
                const int h = hex_value(at(i + 2 + k));
                if (h < 0) fail(i, "expecting " + std::to_string(n) + " hex digits after \\" + std::string(1, e));
                v = v * 16 + static_cast<uint32_t>(h);
            }
            i += 2 + n;
            return v;
        };
        switch (e) {
            case 'x': return hex(2);
            case 'u': return hex(4);
            case 'U': return hex(8);
            case 't': i += 2; return '\t';
            case 'r': i += 2; return '\r';
            case 'n': i += 2; return '\n';
            case '\\':
            case '"':
            case '[':
            case ']': i += 2; return static_cast<uint8_t>(e);
            default: fail(i, e ? "unknown escape \\" + std::string(1, e) : "unexpected end of input");
        }
    }

    Element chars(const std::vector<CharRange> &rs, bool negated) {
        Element el;
        el.kind = Element::Kind::Chars;
        el.negated = negated;
        el.range_begin = static_cast<uint32_t>(ranges_.size());
        el.range_count = static_cast<uint32_t>(rs.size());
        ranges_.insert(ranges_.end(), rs.begin(), rs.end());
        return el;
    }

    // A token reference at src_[i] ('<'): `<[ID]>` or `<TEXT>`; i ends past the '>'.
    Element token_ref(size_t &i, bool negated) {
        const size_t open = i;
        const size_t close = src_.find('>', i + 1);
        const size_t eol = src_.find_first_of("\r\n", i + 1);
        if (close == std::string_view::npos || eol < close)
            fail(open, "unterminated token reference (expecting '>' on the same line)");
        const std::string_view inner = src_.substr(i + 1, close - i - 1);
        i = close + 1;
        int64_t id = -1;
        if (!inner.empty() && inner.front() == '[') {
            if (inner.size() < 3 || inner.back() != ']') fail(open, "expecting <[ID]> with a token id");
            id = 0;
            for (char c : inner.substr(1, inner.size() - 2)) {
                if (c < '0' || c > '9') fail(open, "expecting <[ID]> with a token id");
                id = std::min<int64_t>(id * 10 + (c - '0'), INT32_MAX);
            }
            if (vocab_ && id >= vocab_->n_tokens)
                fail(open, "token id " + std::to_string(id) + " is outside the vocabulary (" +
                               std::to_string(vocab_->n_tokens) + " tokens)");
        } else {
            const std::string_view text = src_.substr(open, close + 1 - open);
            if (inner.empty()) fail(open, "empty token reference <>");
            if (!vocab_) {
                id = kUnresolvedToken;  // a syntax check: no vocabulary to look the text up in
            } else {
                id = vocab_->by_text ? vocab_->by_text(text) : -1;
                if (id < 0 || id >= vocab_->n_tokens)
                    fail(open, "no token of the vocabulary is exactly " + std::string(text));
            }
        }
        Element el;
        el.kind = Element::Kind::Token;
        el.negated = negated;
        el.rule = static_cast<uint32_t>(id);
        return el;
    }

    static Element ref(uint32_t rule) {
        Element el;
        el.kind = Element::Kind::RuleRef;
        el.rule = rule;
        return el;
    }

    Seq parse_sequence(const std::string &rule_name, bool nested) {
        Seq seq;
        size_t last_start = SIZE_MAX;  // where the last symbol (what a repetition repeats) begins in seq
        while (pos_ < src_.size()) {
            const char c = src_[pos_];
            if (c == '"') {
                size_t i = pos_ + 1;
                last_start = seq.size();
                while (at(i) != '"') {
                    if (i >= src_.size()) fail(i, "unexpected end of input (unterminated string)");
                    const uint32_t cp = parse_char(i);
                    seq.push_back(chars({{cp, cp}}, false));
                }
                pos_ = skip_space(i + 1, nested);
            } else if (c == '[') {
                size_t i = pos_ + 1;
                const bool negated = at(i) == '^';
                if (negated) ++i;
                std::vector<CharRange> rs;
                while (at(i) != ']') {
                    if (i >= src_.size()) fail(i, "unexpected end of input (unterminated character class)");
                    const uint32_t lo = parse_char(i);
                    uint32_t hi = lo;
                    if (at(i) == '-' && at(i + 1) != ']' && i + 1 < src_.size()) {
                        ++i;
                        hi = parse_char(i);
                    }
                    rs.push_back({lo, hi});
                }
                last_start = seq.size();
                seq.push_back(chars(rs, negated));
                pos_ = skip_space(i + 1, nested);
            } else if (c == '<' || (c == '!' && at(pos_ + 1) == '<')) {
                size_t i = c == '!' ? pos_ + 1 : pos_;
                last_start = seq.size();
                seq.push_back(token_ref(i, c == '!'));
                pos_ = skip_space(i, nested);
            } else if (c == '.') {
                last_start = seq.size();
                seq.push_back(chars({}, true));  // anything
                pos_ = skip_space(pos_ + 1, nested);
            } else if (is_word_char(c)) {
                size_t i = pos_;
                while (is_word_char(at(i))) ++i;
                last_start = seq.size();
                seq.push_back(ref(rule_id(std::string(src_.substr(pos_, i - pos_)), pos_)));
                pos_ = skip_space(i, nested);
            } else if (c == '(') {
                const size_t open = pos_;
                pos_ = skip_space(pos_ + 1, true);
                const uint32_t sub = new_rule(rule_name);
                std::vector<Seq> alts = parse_alternates(rule_name, true);
                alts_[sub] = std::move(alts);
                if (at(pos_) != ')') fail(pos_ < src_.size() ? pos_ : open, "expecting ')'");
                last_start = seq.size();
                seq.push_back(ref(sub));
                pos_ = skip_space(pos_ + 1, nested);
            } else if (c == '*' || c == '+' || c == '?') {
                if (last_start == SIZE_MAX) fail(pos_, std::string("expecting an item before '") + c + "'");
                repeat(seq, last_start, rule_name, c == '+' ? 1 : 0, c == '?' ? 1 : UINT64_MAX);
                last_start = SIZE_MAX;
                pos_ = skip_space(pos_ + 1, nested);
            } else if (c == '{') {
                if (last_start == SIZE_MAX) fail(pos_, "expecting an item before '{'");
                size_t i = skip_space(pos_ + 1, nested);
                const uint64_t lo = parse_int(i, nested);
                uint64_t hi = lo;
                if (at(i) == ',') {
                    i = skip_space(i + 1, nested);
                    hi = at(i) == '}' ? UINT64_MAX : parse_int(i, nested);
                }
                if (at(i) != '}') fail(i, "expecting '}'");
                if (hi != UINT64_MAX && hi < lo)
                    fail(pos_, "repetition {" + std::to_string(lo) + "," + std::to_string(hi) +
                                   "} has its minimum above its maximum");
                if (lo > kMaxRepetitionBound)
                    fail(pos_, "repetition minimum " + std::to_string(lo) + " is above " +
                                   std::to_string(kMaxRepetitionBound));
                repeat(seq, last_start, rule_name, lo, hi > kMaxRepetitionBound ? UINT64_MAX : hi);
                last_start = SIZE_MAX;
                pos_ = skip_space(i + 1, nested);
            } else {
                break;
            }
        }
        return seq;
    }

    uint64_t parse_int(size_t &i, bool nested) {
        const size_t start = i;
        uint64_t v = 0;
        while (at(i) >= '0' && at(i) <= '9') {
            v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(at(i) - '0'), UINT32_MAX);
            ++i;
        }
        if (i == start) fail(i, "expecting an integer");
        i = skip_space(i, nested);
        return v;
    }

    // Rewrites seq[from..] (the last symbol, X) as X{lo,hi}: lo copies, then either one rule
    // S ::= X S | empty (unbounded) or a chain O1 ::= X O2 | empty ... of hi - lo optional copies.
    void repeat(Seq &seq, size_t from, const std::string &rule_name, uint64_t lo, uint64_t hi) {
        const Seq x(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.end());
        // Nested bounds multiply ("a"{2000}){2000}: refuse a grammar that would not fit in memory.
        const uint64_t copies = lo + (hi == UINT64_MAX ? 1 : hi - lo);
        expanded_ += (x.size() + 2) * copies;
        if (expanded_ > kMaxExpandedElements)
            fail(pos_, "the repetitions expand to more than " + std::to_string(kMaxExpandedElements) +
                           " grammar elements");
        seq.resize(from);
        for (uint64_t k = 0; k < lo; ++k) seq.insert(seq.end(), x.begin(), x.end());
        if (hi == UINT64_MAX) {
            const uint32_t s = new_rule(rule_name);
            Seq more = x;
            more.push_back(ref(s));
            alts_[s] = {more, Seq{}};
            seq.push_back(ref(s));
        } else if (hi > lo) {
            uint32_t next = UINT32_MAX;
            for (uint64_t k = hi - lo; k > 0; --k) {  // built from the innermost level out
                const uint32_t o = new_rule(rule_name);
                Seq more = x;
                if (next != UINT32_MAX) more.push_back(ref(next));
                alts_[o] = {more, Seq{}};
                next = o;
            }
            seq.push_back(ref(next));
        }
    }

    Grammar layout(uint32_t root) {
        Grammar g;
        g.ranges = std::move(ranges_);
        g.rule_names = names_;
        g.root = root;
        g.rule_alts.resize(alts_.size());
        for (size_t r = 0; r < alts_.size(); ++r) {
            for (const Seq &alt : alts_[r]) {
                g.rule_alts[r].push_back(static_cast<uint32_t>(g.elements.size()));
                g.elements.insert(g.elements.end(), alt.begin(), alt.end());
                g.elements.push_back(Element{});
            }
        }
        check_left_recursion(g);
        return g;
    }

    // Left recursion would make the matcher expand a rule into itself forever: refuse it, including
    // recursion behind rules that can match nothing.
    void check_left_recursion(const Grammar &g) {
        const size_t n = g.rule_alts.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (uint32_t start : g.rule_alts[r]) {
                    bool all = true;
                    for (uint32_t i = start; g.elements[i].kind != Element::Kind::End && all; ++i)
                        all = g.elements[i].kind == Element::Kind::RuleRef && nullable[g.elements[i].rule];
                    if (all) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
                }
            }
        }
        // Edges to the rules that can come first in each rule.
        std::vector<std::vector<uint32_t>> first(n);
        for (size_t r = 0; r < n; ++r)
            for (uint32_t start : g.rule_alts[r])
                for (uint32_t i = start; g.elements[i].kind == Element::Kind::RuleRef; ++i) {
                    first[r].push_back(g.elements[i].rule);
                    if (!nullable[g.elements[i].rule]) break;
                }
        std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
        std::function<void(uint32_t)> visit = [&](uint32_t r) {
            state[r] = 1;
            for (uint32_t s : first[r]) {
                if (state[s] == 1)
                    fail(def_at_[s], "left recursion through rule '" + names_[s] +
                                         "' (it can reach itself before matching any character)");
                if (state[s] == 0) visit(s);
            }
            state[r] = 2;
        };
        for (uint32_t r = 0; r < n; ++r)
            if (state[r] == 0) visit(r);
    }

    std::string_view src_;
    const TokenVocabulary *vocab_;
    size_t pos_ = 0;
    std::map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<std::vector<Seq>> alts_;
    std::vector<char> defined_;
    std::vector<size_t> first_use_;
    std::vector<size_t> def_at_;  // where each rule is defined (generated rules: where they were made)
    std::vector<CharRange> ranges_;
    uint64_t expanded_ = 0;  // elements written by repetitions so far
};

}  // namespace

bool Grammar::chars_match_any(const Element &e, uint32_t lo, uint32_t hi) const {
    if (!e.negated) {
        for (uint32_t i = 0; i < e.range_count; ++i) {
            const CharRange &r = ranges[e.range_begin + i];
            if (r.lo <= r.hi && r.lo <= hi && r.hi >= lo) return true;
        }
        return false;
    }
    // Negated: some code point of [lo, hi] lies outside every range.
    uint64_t cp = lo;
    while (cp <= hi) {
        bool covered = false;
        for (uint32_t i = 0; i < e.range_count; ++i) {
            const CharRange &r = ranges[e.range_begin + i];
            if (cp >= r.lo && cp <= r.hi) {
                cp = static_cast<uint64_t>(r.hi) + 1;
                covered = true;
                break;
            }
        }
        if (!covered) return true;
    }
    return false;
}

Grammar parse_gbnf(std::string_view text, std::string_view root_rule, const TokenVocabulary *vocab) {
    return Parser(text, vocab).run(root_rule);
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) out.push_back(next_code_point(s, i));
    return out;
}

}  // namespace lctx::grammar
