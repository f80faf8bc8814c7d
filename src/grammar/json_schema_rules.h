// The pieces the JSON-schema converter's parts share (json_schema.cpp, json_schema_regex.cpp,
// json_schema_int_range.cpp): the rule table with llama.cpp's naming, and how text is written as GBNF.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace lctx::grammar::schema {

// GBNF repetitions ask for at most this many copies (grammar/gbnf.h refuses a larger minimum and reads a
// larger maximum as "no maximum").
constexpr uint64_t kMaxRepetition = 2000;

// Rules by name, printed sorted. Names keep [a-zA-Z0-9-] (every other run of characters becomes one '-');
// adding a body under a name that holds another body takes the first free name with a numeric suffix
// (name0, name1, ...), and adding the same body again reuses the rule.
class RuleSet {
  public:
    RuleSet();
    // The name the body went in under.
    std::string add(const std::string &name, const std::string &body);
    bool has(const std::string &name) const { return rules_.count(name) != 0; }
    // The first of name, name0, name1, ... that no rule holds yet.
    std::string free_name(const std::string &name) const;
    std::string format() const;

  private:
    std::map<std::string, std::string> rules_;
    size_t bytes_ = 0;  // of every body, to refuse schemas whose grammar would not fit
};

std::string sanitize_rule_name(std::string_view name);

// A GBNF string literal for bytes (quotes, backslashes and control characters escaped).
std::string gbnf_literal(std::string_view bytes);

// A code point as it is written inside a GBNF character class.
std::string gbnf_class_char(uint32_t cp);

// The JSON text of one code point inside a JSON string ("\"" for a quote, "\\n" for a newline, "\\u0001"
// for other control characters, else the UTF-8 bytes).
std::string json_string_char(uint32_t cp);

// `item` repeated min..max times (no max: unbounded), with `separator` between copies when one is given,
// in llama.cpp's notation: "x?", "x*", "x+", "x{m,n}", or "x (sep x){m-1,n-1}" for separated lists.
// Throws SchemaError when the grammar would have to ask for more than kMaxRepetition copies; `what`
// names the keyword for the message.
std::string repetition(const std::string &item, uint64_t min, std::optional<uint64_t> max,
                       const std::string &separator, const char *what);

// The body of an integer-range rule, inside its parentheses: JSON integers from lo to hi (either may be
// open). Throws SchemaError for an empty range.
std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// The body of a string rule whose content matches `pattern` (llama.cpp's rule: it must start with '^' and
// end with '$'); repeated groups and classes get rules of their own named name-1, name-2, ... Throws
// SchemaError for what the regular-expression subset does not cover.
std::string pattern_string(const std::string &pattern, const std::string &name, RuleSet &rules);

}  // namespace lctx::grammar::schema
