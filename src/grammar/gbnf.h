// GBNF, llama.cpp's grammar format: rules `name ::= alternatives`, string literals, character classes
// (ranges, negation, `.`), rule references, groups, repetition (`*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`) and
// `#` comments. A rule ends at the end of its line unless a group is still open.
//
// The parser compiles a grammar into a flat table of elements: each rule is a list of alternatives, each
// alternative a run of elements ended by an End element. Groups and repetitions become generated rules
// (x* -> R ::= x R | empty), so the matcher (grammar/matcher.h) only ever sees character sets, rule
// references and ends. Semantics follow llama.cpp where a grammar's meaning depends on it: a later
// definition of a rule replaces the earlier one, and a repetition bound above 2000 means "unbounded".
// Unlike llama.cpp, left recursion through nullable rules and `{m,n}` with m > n are refused with an error.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lctx::grammar {

struct Element {
    enum class Kind : uint8_t { End, Chars, RuleRef };
    Kind kind = Kind::End;
    bool negated = false;  // Chars: matches code points outside the ranges
    uint32_t rule = 0;     // RuleRef: rule id
    uint32_t range_begin = 0, range_count = 0;  // Chars: ranges[range_begin .. + range_count)
};

struct CharRange {
    uint32_t lo = 0, hi = 0;  // inclusive; lo > hi is an empty range (as written: [z-a] matches nothing)
};

struct Grammar {
    std::vector<Element> elements;                  // every alternative, each ended by an End element
    std::vector<CharRange> ranges;                  // referenced by Chars elements
    std::vector<std::vector<uint32_t>> rule_alts;   // rule id -> start index of each alternative
    std::vector<std::string> rule_names;            // generated rules get "name_N"
    uint32_t root = 0;

    bool chars_match(const Element &e, uint32_t cp) const {
        bool in = false;
        for (uint32_t i = 0; i < e.range_count && !in; ++i) {
            const CharRange &r = ranges[e.range_begin + i];
            in = cp >= r.lo && cp <= r.hi;
        }
        return in != e.negated;
    }
    // Whether some code point in [lo, hi] matches e (a partial UTF-8 sequence's possible completions).
    bool chars_match_any(const Element &e, uint32_t lo, uint32_t hi) const;
};

// A grammar that cannot be used: the message says what and where (line:column).
class GrammarError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Parses GBNF text and checks it: every referenced rule defined, `root_rule` present, no left recursion.
// Throws GrammarError.
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root");

// Decodes UTF-8 into code points; an invalid byte is taken as its own value (the validator's reading).
std::vector<uint32_t> decode_utf8(std::string_view s);

}  // namespace lctx::grammar
