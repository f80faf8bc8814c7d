// A schema's `pattern` as GBNF for the content of a JSON string.
//
// The subset (what llama.cpp's converter reads, plus \d \w \s and non-capturing groups): literal characters
// and escapes, classes ([a-z], [^"], with \d \w \s inside), `.`, groups `(...)` and `(?:...)`, alternation,
// `?` `*` `+` `{n}` `{m,}` `{m,n}` `{,n}` (a lazy `?` after them changes nothing for a whole-string match),
// and the anchors: the pattern must start with '^' and end with '$' (llama.cpp's rule: it matches the
// whole string). Backreferences, lookaround, word boundaries, \p{..} and flags are refused.
//
// The output keeps llama.cpp's shape: runs of plain characters become one literal, a quantified character
// stands alone ("ab" "c"?), and a {m,n} on a class or group repeats a rule of its own (name-1 ::= [0-9],
// then name-1{3,3}). What is matched is the JSON text of the string's content, so quotes, backslashes
// and control characters are written as their escapes, and `.` and negated classes never produce them
// raw (llama.cpp lets them through raw, which ends the string early or breaks the JSON).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_rules.h"
#include "vocab/unicode.h"

namespace lctx::grammar::schema {

namespace {

constexpr size_t kMaxGroupDepth = 256;

// `.` outside line breaks; quotes, backslashes and control characters only as escapes a JSON string
// allows (the rest of the control characters are not produced).
const char *const kDotRule = R"([^"\\\x00-\x1F] | [\\] ["\\/bft])";

struct Range {
    uint32_t lo, hi;
};

// One thing a quantifier applies to.
struct Atom {
    enum class Kind { Char, Class, Dot, Group } kind = Kind::Char;
    uint32_t cp = 0;            // Char
    std::vector<Range> ranges;  // Class, in the order written
    bool negated = false;       // Class
    size_t group = 0;           // Group: index into Parser::groups_
};

struct Piece {
    Atom atom;
    bool quantified = false;
    char op = 0;  // '?', '*', '+', or '{'
    uint64_t min = 1;
    std::optional<uint64_t> max = 1;
};

using Sequence = std::vector<Piece>;
using Alternatives = std::vector<Sequence>;

bool is_special(uint32_t cp) {
    return cp == '"' || cp == '\\' || cp < 0x20;
}

class Parser {
  public:
    explicit Parser(const std::string &pattern) : pattern_(pattern), cps_(decode_utf8(pattern)) {}

    // The alternatives of the whole pattern (between its anchors).
    Alternatives parse() {
        if (cps_.empty() || cps_[0] != '^' || !ends_with_anchor())
            fail("a pattern must start with '^' and end with '$' (only whole-string patterns are supported)");
        pos_ = 1;
        end_ = cps_.size() - 1;
        Alternatives alts = alternatives(0);
        if (pos_ < end_) fail("unbalanced ')'");
        return alts;
    }

    const std::vector<Alternatives> &groups() const { return groups_; }

    [[noreturn]] void fail(const std::string &what) const {
        throw SchemaError("pattern /" + pattern_ + "/: " + what);
    }

  private:
    bool ends_with_anchor() const {
        if (cps_.size() < 2 || cps_.back() != '$') return false;
        size_t backslashes = 0;
        for (size_t i = cps_.size() - 1; i > 0 && cps_[i - 1] == '\\'; --i) ++backslashes;
        return backslashes % 2 == 0;
    }

    bool more() const { return pos_ < end_; }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? cps_[pos_ + ahead] : 0; }

    Alternatives alternatives(size_t depth) {
        if (depth > kMaxGroupDepth)
            fail("groups nested more than " + std::to_string(kMaxGroupDepth) + " deep");
        Alternatives alts;
        alts.push_back(sequence(depth));
        while (more() && peek() == '|') {
            ++pos_;
            alts.push_back(sequence(depth));
        }
        return alts;
    }

    Sequence sequence(size_t depth) {
        Sequence seq;
        while (more() && peek() != '|' && !(peek() == ')' && depth > 0)) {
            const uint32_t c = peek();
            if (c == ')') fail("unbalanced ')'");
            // Anchors inside a top-level alternative's ends (^a$|^b$) change nothing; elsewhere they would.
            if (c == '^' && depth == 0 && seq.empty()) {
                ++pos_;
                continue;
            }
            if (c == '$' && depth == 0 && (pos_ + 1 == end_ || cps_[pos_ + 1] == '|')) {
                ++pos_;
                continue;
            }
            if (c == '^' || c == '$') fail("an anchor can only start or end the pattern");
            if (c == '*' || c == '+' || c == '?' || c == '{')
                fail("nothing to repeat before '" + utf8(c) + "'");
            Piece p;
            p.atom = atom(depth);
            quantifier(p);
            seq.push_back(std::move(p));
        }
        return seq;
    }

    static std::string utf8(uint32_t cp) { return unicode::encode_utf8(cp); }

    Atom atom(size_t depth) {
        Atom a;
        const uint32_t c = cps_[pos_++];
        if (c == '.') {
            a.kind = Atom::Kind::Dot;
        } else if (c == '(') {
            if (peek() == '?') {
                if (peek(1) != ':') fail("groups like (?" + utf8(peek(1)) + " are not supported");
                pos_ += 2;
            }
            Alternatives inner = alternatives(depth + 1);
            if (!more() || peek() != ')') fail("unbalanced '('");
            ++pos_;
            a.kind = Atom::Kind::Group;
            a.group = groups_.size();
            groups_.push_back(std::move(inner));
        } else if (c == '[') {
            a.kind = Atom::Kind::Class;
            char_class(a);
        } else if (c == '\\') {
            escape(a, false);
        } else {
            a.cp = c;
        }
        return a;
    }

    uint32_t hex(size_t digits) {
        uint32_t v = 0;
        for (size_t k = 0; k < digits; ++k) {
            const uint32_t d = peek();
            int h = -1;
            if (d >= '0' && d <= '9') h = static_cast<int>(d - '0');
            if (d >= 'a' && d <= 'f') h = static_cast<int>(d - 'a' + 10);
            if (d >= 'A' && d <= 'F') h = static_cast<int>(d - 'A' + 10);
            if (h < 0) fail("expecting " + std::to_string(digits) + " hex digits in an escape");
            v = v * 16 + static_cast<uint32_t>(h);
            ++pos_;
        }
        return v;
    }

    // After a backslash: a character (a.cp) or a class (\d \w \s, in a class only the positive ones).
    void escape(Atom &a, bool in_class) {
        if (!more()) fail("a pattern cannot end in a lone backslash");
        const uint32_t e = cps_[pos_++];
        auto set_class = [&](std::vector<Range> rs, bool negated) {
            if (in_class && negated) fail("\\" + utf8(e) + " inside a class is not supported");
            a.kind = Atom::Kind::Class;
            a.ranges = std::move(rs);
            a.negated = negated;
        };
        const std::vector<Range> digit = {{'0', '9'}};
        const std::vector<Range> word = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}};
        const std::vector<Range> space = {{' ', ' '}, {'\t', '\r'}};  // \t \n \v \f \r
        switch (e) {
            case 'd':
                return set_class(digit, false);
            case 'D':
                return set_class(digit, true);
            case 'w':
                return set_class(word, false);
            case 'W':
                return set_class(word, true);
            case 's':
                return set_class(space, false);
            case 'S':
                return set_class(space, true);
            case 'n':
                a.cp = '\n';
                return;
            case 'r':
                a.cp = '\r';
                return;
            case 't':
                a.cp = '\t';
                return;
            case 'f':
                a.cp = '\f';
                return;
            case 'v':
                a.cp = '\v';
                return;
            case '0':
                a.cp = 0;
                return;
            case 'x':
                a.cp = hex(2);
                return;
            case 'u':
                a.cp = hex(4);
                return;
            case 'b':
                if (in_class) {
                    a.cp = '\b';
                    return;
                }
                fail("word boundaries (\\b) are not supported");
            default:
                break;
        }
        if ((e >= '0' && e <= '9') || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
            fail("the escape \\" + utf8(e) + " is not supported");
        a.cp = e;  // an escaped punctuation character stands for itself
    }

    void char_class(Atom &a) {
        if (more() && peek() == '^') {
            a.negated = true;
            ++pos_;
        }
        if (more() && peek() == ']') fail("empty character classes are not supported");
        while (more() && peek() != ']') {
            Atom lo;
            if (cps_[pos_++] == '\\') {
                escape(lo, true);
            } else {
                lo.cp = cps_[pos_ - 1];
            }
            if (lo.kind == Atom::Kind::Class) {
                a.ranges.insert(a.ranges.end(), lo.ranges.begin(), lo.ranges.end());
                continue;
            }
            if (peek() == '-' && pos_ + 1 < end_ && peek(1) != ']') {
                ++pos_;
                Atom hi;
                if (cps_[pos_++] == '\\') {
                    escape(hi, true);
                } else {
                    hi.cp = cps_[pos_ - 1];
                }
                if (hi.kind == Atom::Kind::Class) fail("a class escape cannot end a range");
                if (hi.cp < lo.cp) fail("the range " + utf8(lo.cp) + "-" + utf8(hi.cp) + " is out of order");
                a.ranges.push_back({lo.cp, hi.cp});
            } else {
                a.ranges.push_back({lo.cp, lo.cp});
            }
        }
        if (!more()) fail("unbalanced '['");
        ++pos_;
    }

    uint64_t number() {
        uint64_t v = 0;
        while (more() && peek() >= '0' && peek() <= '9') {
            v = std::min<uint64_t>(v * 10 + (peek() - '0'), UINT32_MAX);
            ++pos_;
        }
        return v;
    }

    void quantifier(Piece &p) {
        if (!more()) return;
        const uint32_t c = peek();
        if (c == '?' || c == '*' || c == '+') {
            ++pos_;
            p.quantified = true;
            p.op = static_cast<char>(c);
        } else if (c == '{') {
            const size_t open = pos_++;
            const bool has_min = more() && peek() >= '0' && peek() <= '9';
            p.min = number();
            p.max = p.min;
            if (more() && peek() == ',') {
                ++pos_;
                const bool has_max = more() && peek() >= '0' && peek() <= '9';
                p.max = has_max ? std::optional<uint64_t>(number()) : std::nullopt;
                if (!has_min && !has_max) pos_ = open;
            } else if (!has_min) {
                pos_ = open;
            }
            if (pos_ == open || !more() || peek() != '}') fail("invalid quantifier at '{'");
            ++pos_;
            if (p.max && *p.max < p.min) fail("the quantifier's minimum is above its maximum");
            p.quantified = true;
            p.op = '{';
        } else {
            return;
        }
        if (more() && peek() == '?') ++pos_;  // lazy: the same strings match
        if (more() && (peek() == '?' || peek() == '*' || peek() == '+' || peek() == '{'))
            fail("nothing to repeat before '" + utf8(peek()) + "'");
    }

    std::string pattern_;
    std::vector<uint32_t> cps_;
    size_t pos_ = 0, end_ = 0;
    std::vector<Alternatives> groups_;
};

// Writes the parsed pattern as GBNF.
class Writer {
  public:
    Writer(const Parser &parser, const std::string &name, RuleSet &rules)
        : parser_(parser), name_(name), rules_(rules) {}

    std::string alternatives(const Alternatives &alts) {
        std::string out;
        for (size_t i = 0; i < alts.size(); ++i) {
            if (i > 0) out += " | ";
            out += sequence(alts[i]);
        }
        return out;
    }

  private:
    std::string sequence(const Sequence &seq) {
        std::vector<std::string> items;
        std::string literal;  // a run of plain characters, as JSON text
        auto flush = [&] {
            if (!literal.empty()) items.push_back(gbnf_literal(literal));
            literal.clear();
        };
        for (const Piece &p : seq) {
            if (p.atom.kind == Atom::Kind::Char && !p.quantified) {
                literal += json_string_char(p.atom.cp);
                continue;
            }
            flush();
            items.push_back(piece(p));
        }
        flush();
        std::string out;
        for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? " " : "") + items[i];
        return out;
    }

    std::string piece(const Piece &p) {
        const bool is_char = p.atom.kind == Atom::Kind::Char;
        std::string item = atom(p.atom);
        if (!p.quantified) return item;
        if (p.op != '{') return item + p.op;
        // A repeated class or group gets a rule of its own, so the copies stay small.
        if (!is_char) {
            auto it = sub_rules_.find(item);
            if (it == sub_rules_.end())
                it = sub_rules_
                         .emplace(item, rules_.add(name_ + "-" + std::to_string(sub_rules_.size() + 1), item))
                         .first;
            item = it->second;
        }
        try {
            return repetition(item, p.min, p.max, "", "a pattern's repetition");
        } catch (const SchemaError &e) {
            parser_.fail(e.what());
        }
    }

    std::string atom(const Atom &a) {
        switch (a.kind) {
            case Atom::Kind::Char:
                return gbnf_literal(json_string_char(a.cp));
            case Atom::Kind::Dot:
                return rules_.add("dot", kDotRule);
            case Atom::Kind::Group:
                return "(" + alternatives(parser_.groups()[a.group]) + ")";
            case Atom::Kind::Class:
                return char_class(a);
        }
        return "";
    }

    // A class of content characters; quotes, backslashes and control characters in it become escapes.
    static std::string char_class(const Atom &a) {
        std::string plain;
        if (a.negated) {
            for (const Range &r : a.ranges) plain += range_text(r);
            return "[^" + plain + R"("\\\x00-\x1F])";
        }
        std::vector<std::string> escapes;
        std::map<uint32_t, bool> seen;
        for (const Range &r : a.ranges) {
            uint32_t lo = r.lo;
            // Split the range around the characters that JSON escapes.
            for (uint64_t cp = r.lo; cp <= r.hi; ++cp) {
                const auto c = static_cast<uint32_t>(cp);
                if (!is_special(c)) {
                    if (c > 0x5C) break;  // nothing special lies above the backslash
                    continue;
                }
                if (lo < c) plain += range_text({lo, c - 1});
                lo = c + 1;
                if (!seen[c]) escapes.push_back(gbnf_literal(json_string_char(c)));
                seen[c] = true;
            }
            if (lo <= r.hi) plain += range_text({lo, r.hi});
        }
        std::vector<std::string> alts;
        if (!plain.empty()) alts.push_back("[" + plain + "]");
        alts.insert(alts.end(), escapes.begin(), escapes.end());
        if (alts.size() == 1) return alts[0];
        std::string out = "(";
        for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : "") + alts[i];
        return out + ")";
    }

    static std::string range_text(Range r) {
        return r.lo == r.hi ? gbnf_class_char(r.lo) : gbnf_class_char(r.lo) + "-" + gbnf_class_char(r.hi);
    }

    const Parser &parser_;
    const std::string &name_;
    RuleSet &rules_;
    std::map<std::string, std::string> sub_rules_;  // body -> rule name
};

}  // namespace

std::string pattern_string(const std::string &pattern, const std::string &name, RuleSet &rules) {
    Parser parser(pattern);
    const Alternatives alts = parser.parse();
    Writer writer(parser, name, rules);
    return "\"\\\"\" (" + writer.alternatives(alts) + ") \"\\\"\"";
}

}  // namespace lctx::grammar::schema
