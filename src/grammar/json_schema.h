// JSON schema -> GBNF: the grammar that keeps generated text to JSON of a schema's shape (what llama.cpp's
// json_schema_to_grammar does, and byte for byte the text it writes for the schemas of
// fixtures/grammar/schema-cases.json).
//
// Supported: type (a name or a list), properties / required / additionalProperties, enum, const, items /
// prefixItems / minItems / maxItems, minLength / maxLength, pattern (a regular-expression subset,
// json_schema_regex.cpp), format (date, time, date-time, uuid), integer minimum / maximum and their
// exclusive forms (json_schema_int_range.cpp), anyOf / oneOf / allOf, and $ref to a pointer inside the
// schema ("#/$defs/x", "#/definitions/x", "#"). Like llama.cpp, properties come in a fixed order (required
// ones in schema order, then the optional ones, then additional ones), a missing additionalProperties
// allows none, number bounds are not enforced, an allOf makes every property of its members required, and
// the output allows no whitespace after the top-level value.
//
// Unlike llama.cpp: a pattern's literal quotes, backslashes and control characters, and what its `.` and
// negated classes match, are written as JSON escapes (llama.cpp lets them through raw, which breaks the
// JSON); integer lower bounds of three or more digits and negative upper bounds give exact ranges;
// `\d \w \s` and `(?:` are understood in patterns; a remote $ref is refused instead of fetched.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lctx::grammar {

// A schema that cannot be converted: malformed, unsupported, or recursive without consuming input. The
// message says what and where (a JSON pointer into the schema).
class SchemaError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The GBNF (start rule "root", one rule a line, sorted by name, ending in a newline). The schema must be
// an ordered_json: property order decides the order of keys in the output. The result always parses with
// grammar::parse_gbnf. Throws SchemaError.
std::string json_schema_to_gbnf(const nlohmann::ordered_json &schema);

// The same from JSON text; text that is not JSON throws SchemaError too.
std::string json_schema_to_gbnf(std::string_view schema_json);

}  // namespace lctx::grammar
