// JSON schema -> GBNF against llama.cpp's converter (fixtures/grammar/schema-cases.json, see its README):
// the same text byte for byte for every schema, and every sample judged as llama.cpp judged it. Then the
// parts the fixtures do not reach: integer ranges checked number by number, patterns, tuples, allOf,
// oneOf, recursion through $ref, and the errors.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "vocab/unicode.h"

namespace lctx::grammar::json_schema_test {
namespace {

using nlohmann::ordered_json;

ordered_json read_cases() {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/grammar/schema-cases.json");
    EXPECT_TRUE(f.good());
    return ordered_json::parse(f);
}

// The grammar for a schema, compiled.
std::shared_ptr<const Grammar> compile(const std::string &schema) {
    return std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(std::string_view(schema))));
}

bool accepts(const std::shared_ptr<const Grammar> &g, const std::string &text) {
    return match_text(g, decode_utf8(text)).accepted;
}

// The reason a schema is refused ("" when it converts).
std::string refusal(const std::string &schema) {
    try {
        json_schema_to_gbnf(std::string_view(schema));
        return "";
    } catch (const SchemaError &e) {
        return e.what();
    }
}

TEST(JsonSchema, EveryFixtureSchemaGivesLlamaCppsGrammarAndVerdicts) {
    const ordered_json cases = read_cases();
    ASSERT_EQ(cases.size(), 15u);
    size_t samples = 0;
    for (const ordered_json &c : cases) {
        const std::string name = c["name"];
        // Where llama.cpp's Python converter failed, its C++ converter's output is the reference.
        const std::string key = c["samples_validated_against"];
        ASSERT_TRUE(c[key].is_string()) << name;
        const std::string want = c[key];
        std::string got;
        ASSERT_NO_THROW(got = json_schema_to_gbnf(c["schema"])) << name;
        EXPECT_EQ(got, want) << name;
        // The text overload reads the schema in its written order too.
        EXPECT_EQ(json_schema_to_gbnf(std::string_view(c["schema"].dump(2))), want) << name;
        auto g = std::make_shared<const Grammar>(parse_gbnf(got));
        for (const ordered_json &s : c["samples"]) {
            const std::string text = s["json"];
            const std::vector<uint32_t> cps = decode_utf8(text);
            const MatchResult r = match_text(g, cps);
            EXPECT_EQ(r.accepted, s["accepted"].get<bool>()) << name << ": " << text;
            if (!r.accepted && !s["accepted"].get<bool>()) {
                const std::string error =
                    r.unexpected_end ? "Unexpected end of input"
                                     : "Unexpected character '" + unicode::encode_utf8(cps[r.position]) + "'";
                EXPECT_EQ(error, s["error"].get<std::string>()) << name << ": " << text;
                EXPECT_EQ(r.position, s["error_pos"].get<size_t>()) << name << ": " << text;
            }
            ++samples;
        }
    }
    EXPECT_GE(samples, 55u);
}

// Integers from a schema's bounds, checked one by one against what the bounds allow.
struct Bounds {
    std::string keywords;  // e.g. "\"minimum\": 5"
    std::optional<int64_t> lo, hi;
};

TEST(JsonSchema, IntegerRangesAllowExactlyTheirNumbers) {
    const Bounds cases[] = {
        {R"("minimum": 0)", 0, {}},
        {R"("minimum": 1)", 1, {}},
        {R"("minimum": 7)", 7, {}},
        {R"("minimum": 10)", 10, {}},
        {R"("minimum": 25)", 25, {}},
        {R"("minimum": 105)", 105, {}},  // llama.cpp lets 15 and 100..104 through here
        {R"("minimum": 210)", 210, {}},  // ... and refuses 2000..2099
        {R"("minimum": 999)", 999, {}},
        {R"("minimum": -5)", -5, {}},
        {R"("minimum": -123)", -123, {}},
        {R"("maximum": 0)", {}, 0},
        {R"("maximum": 30)", {}, 30},
        {R"("maximum": 100)", {}, 100},
        {R"("maximum": -5)", {}, -5},  // llama.cpp allows "-05" here
        {R"("maximum": -120)", {}, -120},
        {R"("minimum": -5, "maximum": 120)", -5, 120},
        {R"("minimum": 15, "maximum": 300)", 15, 300},
        {R"("minimum": -123, "maximum": 42)", -123, 42},
        {R"("minimum": -300, "maximum": -15)", -300, -15},
        {R"("minimum": 0, "maximum": 0)", 0, 0},
        {R"("minimum": 1000, "maximum": 1000)", 1000, 1000},
        {R"("exclusiveMinimum": 0, "exclusiveMaximum": 10)", 1, 9},
        {R"("exclusiveMinimum": -1.5, "exclusiveMaximum": 2.5)", -1, 2},
        {R"("minimum": 2.5, "maximum": 7.5)", 3, 7},
        {R"("minimum": 3, "exclusiveMinimum": 5)", 6, {}},  // both given: the stricter
        {R"("minimum": 3, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": true)", 4,
         8},  // draft 4
    };
    for (const Bounds &b : cases) {
        const std::string schema = R"({"type": "integer", )" + b.keywords + "}";
        SCOPED_TRACE(schema);
        const auto g = compile(schema);
        for (int64_t n = -1300; n <= 1300; ++n) {
            const bool in = (!b.lo || n >= *b.lo) && (!b.hi || n <= *b.hi);
            ASSERT_EQ(accepts(g, std::to_string(n)), in) << n;
        }
        // Beyond the loop: big numbers, the 16-digit cap of an open end, and no leading zeros.
        const bool open_above = !b.hi, open_below = !b.lo;
        EXPECT_EQ(accepts(g, "1234567890123456"), open_above);
        EXPECT_FALSE(accepts(g, "12345678901234567"));
        EXPECT_EQ(accepts(g, "-1234567890123456"), open_below);
        for (const char *zero : {"00", "01", "007", "-01", "-007", "0.5", "1e3", ""})
            EXPECT_FALSE(accepts(g, zero)) << zero;
    }
}

TEST(JsonSchema, IntegerRangeShapesFollowLlamaCpp) {
    // llama.cpp's own test expectations (tests/test-json-schema-to-grammar.cpp), without its old trailing
    // " space".
    const std::pair<const char *, const char *> cases[] = {
        {R"({"type": "integer", "minimum": 25})",
         R"(([1] [0-9]{2,15} | [2] ([0-4] [0-9]{1,14} | [5-9] [0-9]{0,14}) | [3-9] [0-9]{1,15}))"},
        {R"({"type": "integer", "maximum": 30})",
         R"(("-" [1-9] [0-9]{0,15} | [0-9] | ([1-2] [0-9] | [3] "0")))"},
        {R"({"type": "integer", "minimum": -123})",
         R"(("-" ([0-9] | ([1-8] [0-9] | [9] [0-9]) | "1" ([0-1] [0-9] | [2] [0-3])) | [0] | [1-9] [0-9]{0,15}))"},
        {R"({"type": "integer", "minimum": 15, "maximum": 300})",
         R"((([1] ([5-9]) | [2-9] [0-9]) | ([1-2] [0-9]{2} | [3] "00")))"},
        {R"({"type": "integer", "minimum": -10, "maximum": 10})", R"(("-" ([0-9] | "10") | [0-9] | "10"))"},
    };
    for (const auto &[schema, root] : cases)
        EXPECT_EQ(json_schema_to_gbnf(std::string_view(schema)),
                  std::string("root ::= ") + root + "\nspace ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n")
            << schema;
}

TEST(JsonSchema, PatternsMatchTheJsonTextOfTheirStrings) {
    const auto g = compile(R"({"type": "string", "pattern": "^\\d{3}-[a-z]+(?:x|yz)?\\.$"})");
    EXPECT_TRUE(accepts(g, R"("123-ab.")"));
    EXPECT_TRUE(accepts(g, R"("123-abyz.")"));
    EXPECT_FALSE(accepts(g, R"("12-ab.")"));
    EXPECT_FALSE(accepts(g, R"("123-.")"));
    EXPECT_FALSE(accepts(g, R"("123-abq")"));
    // A quote, a backslash or a newline in the content is an escape in the JSON text.
    const auto quote = compile(R"({"type": "string", "pattern": "^a\"b\\\\c\\n$"})");
    EXPECT_TRUE(accepts(quote, R"("a\"b\\c\n")"));
    EXPECT_FALSE(accepts(quote, "\"a\"b\\c\n\""));
    // `.` and negated classes never end the string or break the JSON.
    const auto dot = compile(R"({"type": "string", "pattern": "^.[^a]$"})");
    EXPECT_TRUE(accepts(dot, R"("xy")"));
    EXPECT_TRUE(accepts(dot, R"("\"y")"));
    EXPECT_FALSE(accepts(dot, R"(""y")"));
    EXPECT_FALSE(accepts(dot, R"("x"")"));
    EXPECT_FALSE(accepts(dot, R"("xa")"));
    EXPECT_FALSE(accepts(dot, "\"\nx\""));
    // A class holding a quote offers it as an escape; \s offers its control characters as escapes.
    const auto cls = compile(R"({"type": "string", "pattern": "^[ -~]\\s$"})");
    EXPECT_TRUE(accepts(cls, R"("a ")"));
    EXPECT_TRUE(accepts(cls, R"("\"\t")"));
    EXPECT_FALSE(accepts(cls, "\"a\t\""));
    // Alternatives with anchors of their own, and llama.cpp's shape for repeated classes and groups.
    EXPECT_EQ(
        json_schema_to_gbnf(std::string_view(R"({"type": "string", "pattern": "^ab|^[0-9]{2}(cd){1,2}$"})")),
        "root ::= \"\\\"\" (\"ab\" | root-1{2,2} root-2{1,2}) \"\\\"\"\n"
        "root-1 ::= [0-9]\n"
        "root-2 ::= (\"cd\")\n"
        "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n");
}

TEST(JsonSchema, TuplesFromPrefixItemsAndItemsLists) {
    const std::string want =
        "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
        "root ::= \"[\" space string \",\" space tuple-1 space \"]\"\n"
        "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
        "string ::= \"\\\"\" char* \"\\\"\"\n"
        "tuple-1 ::= (\"-\" ([0-9]) | [0-9] | \"10\")\n";
    EXPECT_EQ(
        json_schema_to_gbnf(std::string_view(
            R"({"prefixItems": [{"type": "string"}, {"type": "integer", "minimum": -9, "maximum": 10}]})")),
        want);
    EXPECT_EQ(json_schema_to_gbnf(std::string_view(
                  R"({"items": [{"type": "string"}, {"type": "integer", "minimum": -9, "maximum": 10}]})")),
              want);
    const auto g = compile(R"({"prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false})");
    EXPECT_TRUE(accepts(g, R"(["a", true])"));
    EXPECT_FALSE(accepts(g, R"(["a"])"));
    EXPECT_FALSE(accepts(g, R"(["a", true, true])"));
    EXPECT_FALSE(accepts(g, R"([true, "a"])"));
}

TEST(JsonSchema, AllOfMergesPropertiesAndAnyOfInsideItIsOptional) {
    const char *schema = R"({
        "$defs": {"named": {"properties": {"name": {"type": "string"}}},
                  "aged": {"properties": {"age": {"type": "integer"}}}},
        "allOf": [{"$ref": "#/$defs/named"}, {"anyOf": [{"$ref": "#/$defs/aged"}]},
                  {"properties": {"id": {"type": "integer"}}}]})";
    EXPECT_EQ(json_schema_to_gbnf(std::string_view(schema)),
              "age-kv ::= \"\\\"age\\\"\" space \":\" space integer\n"
              "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
              "id-kv ::= \"\\\"id\\\"\" space \":\" space integer\n"
              "integer ::= (\"-\"? integral-part)\n"
              "integral-part ::= [0] | [1-9] [0-9]{0,15}\n"
              "name-kv ::= \"\\\"name\\\"\" space \":\" space string\n"
              "root ::= \"{\" space name-kv \",\" space id-kv ( \",\" space ( age-kv ) )? space \"}\"\n"
              "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
              "string ::= \"\\\"\" char* \"\\\"\"\n");
    // Members without properties or enums are merged keyword by keyword.
    const auto g = compile(R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})");
    EXPECT_TRUE(accepts(g, R"("ab")"));
    EXPECT_FALSE(accepts(g, R"("abc")"));
    // Enums: the values every member allows.
    EXPECT_EQ(
        json_schema_to_gbnf(std::string_view(R"({"allOf": [{"enum": [1, 2, "x"]}, {"enum": ["x", 2, 3]}]})")),
        "root ::= (\"2\" | \"\\\"x\\\"\")\nspace ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n");
    EXPECT_NE(refusal(R"({"allOf": [{"enum": [1]}, {"enum": [2]}]})").find("no value in common"),
              std::string::npos);
}

TEST(JsonSchema, OneOfAndTypeListsAreAlternatives) {
    EXPECT_EQ(json_schema_to_gbnf(std::string_view(R"({"oneOf": [{"type": "boolean"}, {"const": 7}]})")),
              "alternative-1 ::= \"7\"\n"
              "boolean ::= (\"true\" | \"false\")\n"
              "root ::= boolean | alternative-1\n"
              "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n");
    const auto g = compile(
        R"({"type": "object", "properties": {"v": {"type": ["integer", "null"]}}, "required": ["v"]})");
    EXPECT_TRUE(accepts(g, R"({"v": 3})"));
    EXPECT_TRUE(accepts(g, R"({"v":null})"));
    EXPECT_FALSE(accepts(g, R"({"v": "3"})"));
}

TEST(JsonSchema, RecursionThroughRefBecomesARuleReference) {
    const char *schema = R"({
        "$defs": {"tree": {"type": "object",
                           "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
                           "required": ["v"]}},
        "type": "object", "properties": {"root": {"$ref": "#/$defs/tree"}, "self": {"$ref": "#"}}, "required": ["root"]})";
    const auto g = compile(schema);
    EXPECT_TRUE(
        accepts(g, R"({"root": {"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]}})"));
    EXPECT_TRUE(accepts(g, R"({"root": {"v": 1}, "self": {"root": {"v": 2}, "self": {"root": {"v": 3}}}})"));
    EXPECT_FALSE(accepts(g, R"({"root": {"v": 1, "kids": [{"kids": []}]}})"));
    // Recursion that reads nothing in between can never end: refused, not looped on.
    for (const char *looping :
         {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})",
          R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})",
          R"({"$ref": "#"})"})
        EXPECT_NE(refusal(looping), "") << looping;
}

TEST(JsonSchema, RuleNamesAreSanitizedAndKeptApart) {
    const std::string gbnf = json_schema_to_gbnf(std::string_view(
        R"({"type": "object", "properties": {"first name": {"const": 1}, "first_name": {"const": 2},
            "string": {"type": "object", "properties": {"x": {"type": "null"}}}}})"));
    EXPECT_NE(gbnf.find("first-name ::= \"1\"\n"), std::string::npos) << gbnf;
    EXPECT_NE(gbnf.find("first-name0 ::= \"2\"\n"), std::string::npos) << gbnf;
    EXPECT_NE(gbnf.find("first-name-kv ::= \"\\\"first name\\\"\" space \":\" space first-name\n"),
              std::string::npos)
        << gbnf;
    EXPECT_NE(gbnf.find("first-name-kv0 ::= \"\\\"first_name\\\"\" space \":\" space first-name0\n"),
              std::string::npos)
        << gbnf;
    EXPECT_NE(gbnf.find("string- ::= \"{\" space  (string-x-kv )? space \"}\"\n"), std::string::npos) << gbnf;
    // Keys the additional-properties rule must avoid may hold characters that mean something in a class.
    const auto g = compile(
        R"({"type": "object", "properties": {"a-]^": {"type": "null"}}, "additionalProperties": true})");
    EXPECT_TRUE(accepts(g, R"({"a-]^": null, "b": 1})"));
    EXPECT_TRUE(accepts(g, R"({"a-x": 1})"));
    EXPECT_FALSE(accepts(g, R"({"a-]^": 1})"));
    // A property named "" keeps "root" for the object.
    const auto empty =
        compile(R"({"type": "object", "properties": {"": {"type": "integer"}}, "required": [""]})");
    EXPECT_TRUE(accepts(empty, R"({"": 5})"));
    EXPECT_FALSE(accepts(empty, "5"));
}

TEST(JsonSchema, UnsupportedOrMalformedSchemasAreRefusedWithAReason) {
    const std::pair<const char *, const char *> cases[] = {
        {R"({"$ref": "https://example.com/schema.json"})", "only references inside it"},
        {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
        {R"({"type": "kaboom"})", "unknown type 'kaboom'"},
        {R"({"type": 123})", "type must be"},
        {R"({"type": "string", "pattern": "[a-z]+"})", "must start with '^'"},
        {R"({"type": "string", "pattern": "^(?=a)b$"})", "(?="},
        {R"({"type": "string", "pattern": "^(a)\\1$"})", "\\1"},
        {R"({"type": "string", "pattern": "^\\bword$"})", "word boundaries"},
        {R"({"type": "string", "pattern": "^(ab$"})", "unbalanced '('"},
        {R"({"type": "string", "pattern": "^[ab$"})", "unbalanced '['"},
        {R"({"type": "string", "pattern": "^+$"})", "nothing to repeat"},
        {R"({"type": "string", "pattern": "^a{5,2}$"})", "minimum is above its maximum"},
        {R"({"type": "string", "pattern": "^a{2001}$"})", "more than a grammar can ask for"},
        {R"({"type": "string", "minLength": 3000})", "minLength of 3000"},
        {R"({"type": "string", "minLength": -1})", "non-negative integer"},
        {R"({"type": "string", "minLength": 5, "maxLength": 2})", "minLength is above maxLength"},
        {R"({"type": "array", "items": {}, "minItems": 3, "maxItems": 1})", "minItems is above maxItems"},
        {R"({"type": "integer", "minimum": 10, "maximum": 5})", "range is empty"},
        {R"({"type": "integer", "minimum": 1e300})", "64-bit integers"},
        {R"({"enum": []})", "non-empty array"},
        {R"({"anyOf": []})", "non-empty array"},
        {R"({"type": "object", "properties": []})", "properties must be an object"},
        {R"({"type": "object", "properties": {"a": {}}, "required": "a"})", "required must be an array"},
        {R"({"type": "object", "properties": {"a": 5}})", "a schema must be an object"},
        {R"({"properties": {"a": false}})", "false allows no value"},
        {R"({"type": "object", "additionalProperties": 5})", "additionalProperties must be"},
        {R"({"type": "object", "properties": {"a": )", "not valid JSON"},
    };
    for (const auto &[schema, reason] : cases) {
        const std::string why = refusal(schema);
        EXPECT_NE(why.find(reason), std::string::npos) << schema << " -> " << why;
    }
    // Where it happened, as a JSON pointer.
    EXPECT_NE(refusal(R"({"properties": {"a/b": {"properties": {"c": {"type": "x"}}}}})")
                  .find("(at /properties/a~1b/properties/c/type)"),
              std::string::npos);
}

TEST(JsonSchema, SchemasThatExpandTooFarAreRefusedNotBuilt) {
    // allOf members whose properties hold allOfs of the level below: the visits double at every level.
    std::string defs = R"("d0": {"properties": {"p": {"type": "null"}}})";
    for (int i = 1; i < 40; ++i)
        defs += ", \"d" + std::to_string(i) + R"(": {"properties": {"p": {"allOf": [{"$ref": "#/$defs/d)" +
                std::to_string(i - 1) + R"("}, {"$ref": "#/$defs/d)" + std::to_string(i - 1) +
                R"("}]}, "q": {"allOf": [{"$ref": "#/$defs/d)" + std::to_string(i - 1) + R"("}]}}})";
    const std::string expanding = R"({"$defs": {)" + defs + R"(}, "$ref": "#/$defs/d39"})";
    EXPECT_NE(refusal(expanding).find("too large"), std::string::npos) << refusal(expanding);
    // Nesting without end.
    std::string deep = R"({"type": "null"})";
    for (int i = 0; i < 300; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
    EXPECT_NE(refusal(deep).find("levels deep"), std::string::npos);
}

}  // namespace
}  // namespace lctx::grammar::json_schema_test
