// GBNF, llama.cpp's grammar format: rules `name ::= alternatives`, string literals, character classes
// (ranges, negation, `.`), rule references, groups, repetition (`*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`) and
// `#` comments. A rule ends at the end of its line unless a group is still open.
//
// Token references (newer llama.cpp's syntax): `<[123]>` matches exactly the token with id 123, `<think>`
// the token whose text is exactly "<think>" (looked up in the vocabulary given to the parser), and
// `!<[123]>` / `!<think>` any one token other than it. These match whole tokens by id; everything else
// matches the bytes of the tokens' texts.
//
// Character classes are sets: `[]` matches nothing and `[^]` any character (b4748 reads both as matching
// the empty string).
//
// The parser compiles a grammar into a flat table of elements: each rule is a list of alternatives, each
// alternative a run of elements ended by an End element. Groups and repetitions become generated rules
// (x* -> R ::= x R | empty), so the matcher (grammar/matcher.h) only ever sees character sets, rule
// references and ends. Semantics follow llama.cpp where a grammar's meaning depends on it: a later
// definition of a rule replaces the earlier one, and a repetition bound above 2000 means "unbounded".
// Unlike llama.cpp, left recursion through nullable rules and `{m,n}` with m > n are refused with an error.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lctx::grammar {

struct Element {
    enum class Kind : uint8_t { End, Chars, RuleRef, Token };
    Kind kind = Kind::End;
    bool negated = false;  // Chars: matches code points outside the ranges; Token: any other token
    uint32_t rule = 0;     // RuleRef: rule id; Token: the token id
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

    bool token_match(const Element &e, int32_t token) const {
        return (static_cast<uint32_t>(token) == e.rule) != e.negated;
    }
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

// What token references resolve against: ids below n_tokens, and `<TEXT>` through by_text (the id of the
// token whose text is exactly TEXT, angle brackets included, or -1).
struct TokenVocabulary {
    int32_t n_tokens = 0;
    std::function<int32_t(std::string_view)> by_text;
};

// Parses GBNF text and checks it: every referenced rule defined, `root_rule` present, no left recursion,
// every token reference a token of `vocab` (without one, only their syntax is checked: `<[ID]>` keeps its
// id and `<TEXT>` matches no token).
// Throws GrammarError.
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root",
                   const TokenVocabulary *vocab = nullptr);

// Decodes UTF-8 into code points; an invalid byte is taken as its own value (the validator's reading).
std::vector<uint32_t> decode_utf8(std::string_view s);

}  // namespace lctx::grammar
