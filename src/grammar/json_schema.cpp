// JSON schema -> GBNF (see json_schema.h): a walk over the schema that writes one rule per sub-schema,
// named after where it sits (the root's property "user" -> "user", its "id" -> "user-id", "user-id-kv" for
// the key and value together), over a fixed set of shared rules for JSON's primitive values.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema_rules.h"
#include "vocab/unicode.h"

namespace lctx::grammar {

using nlohmann::ordered_json;

namespace schema {

// ---- the rule table and how text is written -------------------------------------------------------------

namespace {

// Between JSON tokens: nothing, a space, or one or two line breaks and an indent (llama.cpp's rule).
const char *const kSpaceRule = R"(| " " | "\n"{1,2} [ \t]{0,20})";

// A grammar larger than this is refused rather than built (schemas that expand, e.g. allOf chains).
constexpr size_t kMaxGrammarBytes = size_t{8} << 20;

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

std::string hex2(uint32_t v) {
    const char *digits = "0123456789ABCDEF";
    return std::string{digits[(v >> 4) & 15], digits[v & 15]};
}

}  // namespace

RuleSet::RuleSet() {
    rules_["space"] = kSpaceRule;
}

std::string sanitize_rule_name(std::string_view name) {
    std::string out;
    bool in_run = false;
    for (char c : name) {
        if (name_char(c)) {
            out += c;
            in_run = false;
        } else if (!in_run) {
            out += '-';
            in_run = true;
        }
    }
    return out;
}

std::string RuleSet::add(const std::string &name, const std::string &body) {
    const std::string base = sanitize_rule_name(name);
    std::string key = base;
    for (uint64_t i = 0;; ++i) {
        const auto it = rules_.find(key);
        if (it == rules_.end() || it->second == body) break;
        key = base + std::to_string(i);
    }
    auto [it, inserted] = rules_.emplace(key, body);
    if (inserted) {
        bytes_ += key.size() + body.size();
        if (bytes_ > kMaxGrammarBytes)
            throw SchemaError("the grammar for this schema would be too large (over " +
                              std::to_string(kMaxGrammarBytes >> 20) + " MiB)");
    }
    return key;
}

std::string RuleSet::free_name(const std::string &name) const {
    const std::string base = sanitize_rule_name(name);
    if (!has(base)) return base;
    for (uint64_t i = 0;; ++i)
        if (!has(base + std::to_string(i))) return base + std::to_string(i);
}

std::string RuleSet::format() const {
    std::string out;
    for (const auto &[name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
}

std::string gbnf_literal(std::string_view bytes) {
    std::string out = "\"";
    for (char c : bytes) {
        const auto b = static_cast<uint8_t>(c);
        if (c == '"') {
            out += "\\\"";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (b < 0x20) {
            out += "\\x" + hex2(b);
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string gbnf_class_char(uint32_t cp) {
    switch (cp) {
        case '\\':
            return "\\\\";
        case ']':
            return "\\]";
        case '[':
            return "\\[";
        case '-':
            return "\\x2D";  // would read as a range
        case '^':
            return "\\x5E";  // would negate the class when first
        default:
            break;
    }
    if (cp < 0x20 || cp == 0x7F) return "\\x" + hex2(cp);
    return unicode::encode_utf8(cp);
}

std::string json_string_char(uint32_t cp) {
    switch (cp) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        default:
            break;
    }
    if (cp < 0x20) {
        std::string h = hex2(cp);
        for (char &c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return "\\u00" + h;
    }
    return unicode::encode_utf8(cp);
}

std::string repetition(const std::string &item, uint64_t min, std::optional<uint64_t> max,
                       const std::string &separator, const char *what) {
    if (max && *max == 0) return "";
    if (min == 0 && max && *max == 1) return item + "?";
    if (separator.empty()) {
        if (min > kMaxRepetition)
            throw SchemaError(std::string(what) + " of " + std::to_string(min) +
                              " is more than a grammar can ask for (" + std::to_string(kMaxRepetition) + ")");
        if (min == 1 && !max) return item + "+";
        if (min == 0 && !max) return item + "*";
        return item + "{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
    }
    if (min > kMaxRepetition + 1)
        throw SchemaError(std::string(what) + " of " + std::to_string(min) +
                          " is more than a grammar can ask for (" + std::to_string(kMaxRepetition + 1) + ")");
    // The first copy, then (separator item) for the rest.
    const std::string rest = repetition("(" + separator + " " + item + ")", min > 0 ? min - 1 : 0,
                                        max ? std::optional<uint64_t>(*max - 1) : std::nullopt, "", what);
    const std::string all = item + " " + rest;
    return min == 0 ? "(" + all + ")?" : all;
}

// ---- the converter ---------------------------------------------------------------------------------------

namespace {

// Nesting deeper than this is refused (the walk is recursive).
constexpr size_t kMaxDepth = 256;
// Sub-schemas visited at most (allOf can make a schema expand).
constexpr size_t kMaxVisits = 100000;

struct PrimitiveRule {
    const char *body;
    std::vector<const char *> deps;
};

// JSON's values, and the string formats llama.cpp knows. The names are reserved: a schema rule that would
// take one gets a '-' appended.
const std::map<std::string, PrimitiveRule> &primitive_rules() {
    static const std::map<std::string, PrimitiveRule> rules = {
        {"boolean", {R"(("true" | "false"))", {}}},
        {"decimal-part", {R"([0-9]{1,16})", {}}},
        {"integral-part", {R"([0] | [1-9] [0-9]{0,15})", {}}},
        {"number",
         {R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?)",
          {"integral-part", "decimal-part"}}},
        {"integer", {R"(("-"? integral-part))", {"integral-part"}}},
        {"value",
         {"object | array | string | number | boolean | null",
          {"object", "array", "string", "number", "boolean", "null"}}},
        {"object",
         {R"("{" space ( string ":" space value ("," space string ":" space value)* )? space "}")",
          {"string", "value"}}},
        {"array", {R"("[" space ( value ("," space value)* )? space "]")", {"value"}}},
        {"uuid",
         {R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")",
          {}}},
        {"char", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}}},
        {"string", {R"("\"" char* "\"")", {"char"}}},
        {"null", {R"("null")", {}}},
        {"date",
         {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}}},
        {"time",
         {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
          {}}},
        {"date-time", {R"(date "T" time)", {"date", "time"}}},
        {"date-string", {R"("\"" date "\"")", {"date"}}},
        {"time-string", {R"("\"" time "\"")", {"time"}}},
        {"date-time-string", {R"("\"" date-time "\"")", {"date-time"}}},
    };
    return rules;
}

bool reserved_name(const std::string &name) {
    return name == "root" || name == "dot" || primitive_rules().count(name) != 0;
}

// One property of an object rule.
struct Property {
    std::string name;
    const ordered_json *schema;
    std::string where;
};

std::string pointer_token(const std::string &key) {
    std::string out;
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::string dump(const ordered_json &v) {
    return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// A value as a message shows it: short, on one line.
std::string shown(const ordered_json &v) {
    const std::string s = dump(v);
    return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

class Converter {
  public:
    explicit Converter(const ordered_json &root) : root_(root) {}

    std::string run() {
        visit(root_, "", "");
        return rules_.format();
    }

  private:
    // Throws the reason, on one line (a pattern or a name in it may hold line breaks).
    [[noreturn]] static void fail(const std::string &where, const std::string &what) {
        std::string msg = what + (where.empty() ? " (at the schema's root)" : " (at " + where + ")");
        for (char &c : msg)
            if (c == '\n' || c == '\r') c = ' ';
        throw SchemaError(msg);
    }

    static const ordered_json *find(const ordered_json &s, const char *key) {
        const auto it = s.find(key);
        return it == s.end() ? nullptr : &*it;
    }

    std::string add_primitive(const std::string &name, const std::string &kind) {
        const PrimitiveRule &p = primitive_rules().at(kind);
        const std::string got = rules_.add(name, p.body);
        for (const char *dep : p.deps)
            if (!rules_.has(dep)) add_primitive(dep, dep);
        return got;
    }

    // A non-negative integer keyword (minLength, minItems, ...), or none.
    static std::optional<uint64_t> count(const ordered_json &s, const char *key, const std::string &where) {
        const ordered_json *v = find(s, key);
        if (!v) return std::nullopt;
        if (v->is_number_unsigned()) return v->get<uint64_t>();
        if (v->is_number_float()) {
            const double d = v->get<double>();
            if (d >= 0 && d < 1.8e19 && d == std::floor(d)) return static_cast<uint64_t>(d);
        }
        fail(where, std::string(key) + " must be a non-negative integer, not " + shown(*v));
    }

    std::string visit(const ordered_json &s, const std::string &name, const std::string &where) {
        if (++visits_ > kMaxVisits)
            fail(where, "the schema expands to a grammar too large to use (more than " +
                            std::to_string(kMaxVisits) + " sub-schemas)");
        if (depth_ >= kMaxDepth)
            fail(where, "the schema nests more than " + std::to_string(kMaxDepth) + " levels deep");
        ++depth_;
        std::string got = visit_schema(s, name, where);
        --depth_;
        return got;
    }

    std::string visit_schema(const ordered_json &s, const std::string &name, const std::string &where) {
        const std::string rule_name = reserved_name(name) ? name + "-" : name.empty() ? "root" : name;
        if (s.is_boolean()) {
            if (!s.get<bool>()) fail(where, "the schema false allows no value");
            return rules_.add(rule_name, add_primitive("value", "value"));
        }
        if (!s.is_object()) fail(where, "a schema must be an object or a boolean, not " + shown(s));

        const ordered_json *type = find(s, "type");
        std::string type_name;  // "" when there is no type or a list of them
        if (type && type->is_string()) {
            type_name = type->get<std::string>();
        } else if (type && (!type->is_array() || type->empty())) {
            fail(where, "type must be a type name or a list of them, not " + shown(*type));
        }
        auto typed = [&](const char *t) { return type_name.empty() || type_name == t; };

        if (const ordered_json *ref = find(s, "$ref")) {
            if (!ref->is_string()) fail(where, "$ref must be a string");
            return rules_.add(rule_name, resolve_ref(ref->get<std::string>(), where + "/$ref"));
        }
        const ordered_json *one_of = find(s, "oneOf");
        const ordered_json *any_of = find(s, "anyOf");
        if (one_of || any_of) {
            const bool use_one = one_of && !(one_of->is_array() && one_of->empty() && any_of);
            const ordered_json &alts = use_one ? *one_of : *any_of;
            const std::string key = use_one ? "/oneOf" : "/anyOf";
            if (!alts.is_array() || alts.empty())
                fail(where + key, key.substr(1) + " must be a non-empty array");
            std::vector<const ordered_json *> list;
            for (const ordered_json &a : alts) list.push_back(&a);
            return rules_.add(rule_name, union_rule(name, list, where + key));
        }
        if (type && type->is_array()) {
            std::vector<ordered_json> copies;
            for (const ordered_json &t : *type) {
                if (!t.is_string()) fail(where + "/type", "a type list holds type names, not " + shown(t));
                copies.push_back(s);
                copies.back()["type"] = t;
            }
            std::vector<const ordered_json *> list;
            for (const ordered_json &c : copies) list.push_back(&c);
            return rules_.add(rule_name, union_rule(name, list, where + "/type"));
        }
        if (const ordered_json *c = find(s, "const")) return rules_.add(rule_name, gbnf_literal(dump(*c)));
        if (const ordered_json *e = find(s, "enum")) {
            if (!e->is_array() || e->empty()) fail(where + "/enum", "enum must be a non-empty array");
            return rules_.add(rule_name, "(" + constants(*e) + ")");
        }
        const ordered_json *properties = find(s, "properties");
        const ordered_json *additional = find(s, "additionalProperties");
        if (typed("object") && (properties || (additional && *additional != true))) {
            std::vector<Property> props;
            if (properties) {
                if (!properties->is_object()) fail(where + "/properties", "properties must be an object");
                for (const auto &[k, v] : properties->items())
                    props.push_back({k, &v, where + "/properties/" + pointer_token(k)});
            }
            std::set<std::string> required;
            if (const ordered_json *req = find(s, "required")) {
                if (!req->is_array())
                    fail(where + "/required", "required must be an array of property names");
                for (const ordered_json &r : *req) {
                    if (!r.is_string())
                        fail(where + "/required", "required must be an array of property names");
                    required.insert(r.get<std::string>());
                }
            }
            return rules_.add(rule_name, object_rule(props, required, name, additional, where));
        }
        if (typed("object") && find(s, "allOf")) return all_of(s, name, rule_name, where);
        const ordered_json *items = find(s, "items");
        const ordered_json *prefix_items = find(s, "prefixItems");
        if (typed("array") && (items || prefix_items))
            return array_rule(s, items, prefix_items, name, rule_name, where);
        const ordered_json *format = find(s, "format");
        const std::string format_name = format && format->is_string() ? format->get<std::string>() : "";
        if (typed("string")) {
            if (const ordered_json *pattern = find(s, "pattern")) {
                if (!pattern->is_string()) fail(where + "/pattern", "pattern must be a string");
                try {
                    return rules_.add(rule_name,
                                      pattern_string(pattern->get<std::string>(), rule_name, rules_));
                } catch (const SchemaError &e) {
                    fail(where + "/pattern", e.what());
                }
            }
            const bool uuid =
                format_name == "uuid" || (format_name.size() == 5 && format_name.rfind("uuid", 0) == 0 &&
                                          format_name[4] >= '1' && format_name[4] <= '5');
            if (uuid) return add_primitive(rule_name == "root" ? "root" : format_name, "uuid");
            if (format_name == "date" || format_name == "time" || format_name == "date-time")
                return rules_.add(rule_name, add_primitive(format_name + "-string", format_name + "-string"));
        }
        if (type_name == "string" && (find(s, "minLength") || find(s, "maxLength"))) {
            const uint64_t min = count(s, "minLength", where).value_or(0);
            const std::optional<uint64_t> max = count(s, "maxLength", where);
            if (max && *max < min) fail(where, "minLength is above maxLength");
            const std::string ch = add_primitive("char", "char");
            try {
                return rules_.add(rule_name,
                                  "\"\\\"\" " + repetition(ch, min, max, "", "minLength") + " \"\\\"\"");
            } catch (const SchemaError &e) {
                fail(where, e.what());
            }
        }
        if (typed("integer")) {
            // (A draft-4 exclusiveMinimum: false alone bounds nothing.)
            if (const auto [lo, hi] = integer_bounds(s, where); lo || hi) {
                std::string range;
                try {
                    range = integer_range(lo, hi);
                } catch (const SchemaError &e) {
                    fail(where, e.what());
                }
                return rules_.add(rule_name, "(" + range + ")");
            }
        }
        if (type_name == "object" || s.empty())
            return rules_.add(rule_name, add_primitive("object", "object"));
        if (!type) return rules_.add(rule_name, add_primitive("value", "value"));
        static const std::set<std::string> kTypes = {"string",  "number", "integer",
                                                     "boolean", "null",   "array"};
        if (!kTypes.count(type_name)) fail(where + "/type", "unknown type '" + type_name + "'");
        return add_primitive(rule_name == "root" ? "root" : type_name, type_name);
    }

    std::string constants(const ordered_json &values) {
        std::string out;
        for (const ordered_json &v : values) out += (out.empty() ? "" : " | ") + gbnf_literal(dump(v));
        return out;
    }

    std::string union_rule(const std::string &name, const std::vector<const ordered_json *> &alts,
                           const std::string &where) {
        std::string out;
        for (size_t i = 0; i < alts.size(); ++i) {
            const std::string alt_name =
                name.empty() ? "alternative-" + std::to_string(i) : name + "-" + std::to_string(i);
            out += (i > 0 ? " | " : "") + visit(*alts[i], alt_name, where + "/" + std::to_string(i));
        }
        return out;
    }

    // A bound as an integer: `up` rounds a fraction up (lower bounds), else down.
    static int64_t integer_bound(const ordered_json &v, bool up, const char *key, const std::string &where) {
        if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
        if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
            return v.get<int64_t>();
        if (v.is_number_float()) {
            const double d = up ? std::ceil(v.get<double>()) : std::floor(v.get<double>());
            if (d > -9.2e18 && d < 9.2e18) return static_cast<int64_t>(d);
        }
        fail(where + "/" + key,
             std::string(key) + " must be a number within the 64-bit integers, not " + shown(v));
    }

    // The integer range a schema's minimum / maximum keywords allow (both given: the stricter one); none
    // when it has none.
    std::pair<std::optional<int64_t>, std::optional<int64_t>> integer_bounds(const ordered_json &s,
                                                                             const std::string &where) {
        std::optional<int64_t> lo, hi;
        auto tighten = [](std::optional<int64_t> &b, int64_t v, bool lower) {
            b = !b ? v : lower ? std::max(*b, v) : std::min(*b, v);
        };
        auto step = [&](int64_t v, int64_t by, const char *key) {
            if ((by > 0 && v == INT64_MAX) || (by < 0 && v == INT64_MIN))
                fail(where + "/" + key, std::string(key) + " leaves no integer");
            return v + by;
        };
        const ordered_json *min = find(s, "minimum"), *max = find(s, "maximum");
        const ordered_json *xmin = find(s, "exclusiveMinimum"), *xmax = find(s, "exclusiveMaximum");
        if (min) tighten(lo, integer_bound(*min, true, "minimum", where), true);
        if (max) tighten(hi, integer_bound(*max, false, "maximum", where), false);
        // The first integer above an exclusive minimum is floor(x) + 1, below an exclusive maximum
        // ceil(x) - 1. Draft 4 spells an exclusive bound as a flag beside minimum / maximum instead.
        if (xmin && xmin->is_boolean()) {
            if (xmin->get<bool>() && min) lo = step(*lo, 1, "exclusiveMinimum");
        } else if (xmin) {
            tighten(lo, step(integer_bound(*xmin, false, "exclusiveMinimum", where), 1, "exclusiveMinimum"),
                    true);
        }
        if (xmax && xmax->is_boolean()) {
            if (xmax->get<bool>() && max) hi = step(*hi, -1, "exclusiveMaximum");
        } else if (xmax) {
            tighten(hi, step(integer_bound(*xmax, true, "exclusiveMaximum", where), -1, "exclusiveMaximum"),
                    false);
        }
        return {lo, hi};
    }

    // "{" key-value pairs "}": required properties first (in the order given), then the optional ones,
    // then additional ones. Optional ones may each be left out, so after the one that comes first
    // each rest of the list gets a rule of its own (a-rest ::= ( "," space b-kv )? b-rest).
    std::string object_rule(const std::vector<Property> &props, const std::set<std::string> &required,
                            const std::string &name, const ordered_json *additional,
                            const std::string &where) {
        const std::string prefix = name.empty() ? "" : name + "-";
        std::vector<std::string> kv(props.size());
        for (size_t i = 0; i < props.size(); ++i) {
            const Property &p = props[i];
            ++nesting_;  // "{" and the key come before the value
            // (A top-level property named "" would otherwise take the name "root" from the object, which
            // llama.cpp lets happen.)
            const std::string sub = prefix + p.name;
            const std::string value = visit(*p.schema, sub.empty() ? "-" : sub, p.where);
            --nesting_;
            kv[i] = rules_.add(prefix + p.name + "-kv",
                               gbnf_literal(dump(ordered_json(p.name))) + " space \":\" space " + value);
        }
        std::vector<size_t> required_ids, optional_ids;  // into kv; kv.size() stands for additional ones
        for (size_t i = 0; i < props.size(); ++i)
            (required.count(props[i].name) ? required_ids : optional_ids).push_back(i);
        std::string additional_kv;
        if (additional && *additional != false) {
            if (!additional->is_boolean() && !additional->is_object())
                fail(where + "/additionalProperties", "additionalProperties must be a boolean or a schema");
            const std::string sub = prefix + "additional";
            ++nesting_;
            const std::string value =
                additional->is_object() ? visit(*additional, sub + "-value", where + "/additionalProperties")
                                        : add_primitive("value", "value");
            --nesting_;
            std::vector<std::string> names;
            for (const Property &p : props) names.push_back(p.name);
            const std::string key = props.empty() ? add_primitive("string", "string")
                                                  : rules_.add(sub + "-k", not_strings(names));
            additional_kv = rules_.add(sub + "-kv", key + " \":\" space " + value);
            optional_ids.push_back(kv.size());
        }
        auto kv_name = [&](size_t id) { return id == kv.size() ? additional_kv : kv[id]; };
        // The optional pairs from ids[from] on, the first one present (or, when first_optional, maybe not).
        std::function<std::string(size_t, bool)> chain = [&](size_t from, bool first_optional) {
            const size_t id = optional_ids[from];
            const bool is_additional = id == kv.size();
            const std::string comma = "( \",\" space " + kv_name(id) + " )";
            std::string out = first_optional ? comma + (is_additional ? "*" : "?")
                                             : kv_name(id) + (is_additional ? " " + comma + "*" : "");
            if (from + 1 < optional_ids.size())
                out += " " + rules_.add(prefix + props[id].name + "-rest", chain(from + 1, true));
            return out;
        };
        std::string rule = "\"{\" space ";
        for (size_t i = 0; i < required_ids.size(); ++i)
            rule += (i > 0 ? " \",\" space " : "") + kv[required_ids[i]];
        if (!optional_ids.empty()) {
            rule += " (";
            if (!required_ids.empty()) rule += " \",\" space ( ";
            for (size_t i = 0; i < optional_ids.size(); ++i) rule += (i > 0 ? " | " : "") + chain(i, false);
            if (!required_ids.empty()) rule += " )";
            rule += " )?";
        }
        return rule + " space \"}\"";
    }

    // A key that is none of `names` (llama.cpp's shape: a trie of the names, each level either following
    // a name's next character or leaving it with another one).
    std::string not_strings(const std::vector<std::string> &names) {
        struct Trie {
            std::map<uint32_t, std::unique_ptr<Trie>> children;
            bool end = false;
        };
        Trie root;
        for (const std::string &n : names) {
            Trie *t = &root;
            for (uint32_t cp : decode_utf8(n)) {
                auto &child = t->children[cp];
                if (!child) child = std::make_unique<Trie>();
                t = child.get();
            }
            t->end = true;
        }
        const std::string ch = add_primitive("char", "char");
        std::string out = "[\"] ( ";
        std::function<void(const Trie &)> write = [&](const Trie &node) {
            std::string rejects;
            bool first = true;
            for (const auto &[cp, child] : node.children) {
                rejects += gbnf_class_char(cp);
                if (!first) out += " | ";
                first = false;
                out += "[" + gbnf_class_char(cp) + "]";
                if (!child->children.empty()) {
                    out += " (";
                    write(*child);
                    out += ")";
                } else if (child->end) {
                    out += " " + ch + "+";
                }
            }
            if (!node.children.empty()) out += " | [^\"" + rejects + "] " + ch + "*";
        };
        write(root);
        return out + " )" + (root.end ? "" : "?") + " [\"]";
    }

    std::string array_rule(const ordered_json &s, const ordered_json *items, const ordered_json *prefix_items,
                           const std::string &name, const std::string &rule_name, const std::string &where) {
        const std::string prefix = name.empty() ? "" : name + "-";
        const ordered_json *tuple =
            items && items->is_array()                                                    ? items
            : prefix_items && prefix_items->is_array() && (!items || items->is_boolean()) ? prefix_items
                                                                                          : nullptr;
        if (tuple) {
            const std::string key = tuple == items ? "/items/" : "/prefixItems/";
            std::string rule = "\"[\" space ";
            for (size_t i = 0; i < tuple->size(); ++i) {
                ++nesting_;  // "[" comes first
                rule +=
                    (i > 0 ? " \",\" space " : "") + visit((*tuple)[i], prefix + "tuple-" + std::to_string(i),
                                                           where + key + std::to_string(i));
                --nesting_;
            }
            return rules_.add(rule_name, rule + " space \"]\"");
        }
        const ordered_json &item = items ? *items : *prefix_items;
        const std::string key = items ? "/items" : "/prefixItems";
        if (!item.is_object() && !item.is_boolean())
            fail(where + key, key.substr(1) + " must be a schema or a list of schemas");
        uint64_t min = count(s, "minItems", where).value_or(0);
        std::optional<uint64_t> max = count(s, "maxItems", where);
        if (max && *max < min) fail(where, "minItems is above maxItems");
        if (item == false) {
            if (min > 0) fail(where, "items false allows no item, but minItems asks for some");
            return rules_.add(rule_name, "\"[\" space  space \"]\"");
        }
        ++nesting_;
        const std::string item_rule = visit(item, prefix + "item", where + key);
        --nesting_;
        try {
            return rules_.add(
                rule_name,
                "\"[\" space " + repetition(item_rule, min, max, "\",\" space", "minItems") + " space \"]\"");
        } catch (const SchemaError &e) {
            fail(where, e.what());
        }
    }

    // allOf: the properties of every member (those of an anyOf inside it optional, the others required)
    // in one object; or, when members give enums, the values they share. Members with neither are merged
    // keyword by keyword into one schema.
    std::string all_of(const ordered_json &s, const std::string &name, const std::string &rule_name,
                       const std::string &where) {
        const ordered_json &members = s.at("allOf");
        if (!members.is_array() || members.empty()) fail(where + "/allOf", "allOf must be a non-empty array");
        std::vector<Property> props;
        std::set<std::string> required, seen;
        std::vector<const ordered_json *> enums;
        std::vector<std::pair<const ordered_json *, std::string>>
            plain;  // members without properties or enum
        std::set<std::string> refs_seen;
        std::function<void(const ordered_json &, bool, const std::string &, size_t)> add =
            [&](const ordered_json &m, bool is_required, const std::string &at, size_t depth) {
                if (depth > kMaxDepth)
                    fail(at, "allOf nests more than " + std::to_string(kMaxDepth) + " levels deep");
                if (!m.is_object()) fail(at, "an allOf member must be a schema object");
                if (const ordered_json *ref = find(m, "$ref")) {
                    if (!ref->is_string()) fail(at, "$ref must be a string");
                    const std::string r = ref->get<std::string>();
                    if (!refs_seen.insert(r).second) return;  // a cycle, or a member given twice
                    add(lookup(r, at + "/$ref"), is_required, r.substr(1), depth + 1);
                    return;
                }
                bool used = false;
                if (const ordered_json *p = find(m, "properties")) {
                    if (!p->is_object()) fail(at + "/properties", "properties must be an object");
                    for (const auto &[k, v] : p->items()) {
                        if (is_required) required.insert(k);
                        if (seen.insert(k).second)
                            props.push_back({k, &v, at + "/properties/" + pointer_token(k)});
                    }
                    used = true;
                }
                if (const ordered_json *e = find(m, "enum")) {
                    if (!e->is_array() || e->empty()) fail(at + "/enum", "enum must be a non-empty array");
                    enums.push_back(e);
                    used = true;
                }
                if (const ordered_json *inner = find(m, "allOf"); inner && inner->is_array()) {
                    for (size_t i = 0; i < inner->size(); ++i)
                        add((*inner)[i], is_required, at + "/allOf/" + std::to_string(i), depth + 1);
                    used = true;
                }
                if (!used) plain.push_back({&m, at});
            };
        for (size_t i = 0; i < members.size(); ++i) {
            const std::string at = where + "/allOf/" + std::to_string(i);
            const ordered_json &m = members[i];
            if (const ordered_json *any = m.is_object() ? find(m, "anyOf") : nullptr;
                any && any->is_array()) {
                for (size_t j = 0; j < any->size(); ++j)
                    add((*any)[j], false, at + "/anyOf/" + std::to_string(j), 0);
            } else {
                add(m, true, at, 0);
            }
        }
        if (!enums.empty()) {
            ordered_json shared = ordered_json::array();
            for (const ordered_json &v : *enums[0]) {
                bool everywhere = true;
                for (size_t k = 1; k < enums.size() && everywhere; ++k)
                    everywhere = std::find(enums[k]->begin(), enums[k]->end(), v) != enums[k]->end();
                if (everywhere && std::find(shared.begin(), shared.end(), v) == shared.end())
                    shared.push_back(v);
            }
            if (shared.empty()) fail(where + "/allOf", "the enums of allOf have no value in common");
            return rules_.add(rule_name, "(" + constants(shared) + ")");
        }
        if (props.empty() && !plain.empty()) {
            ordered_json merged = s;
            merged.erase("allOf");
            for (const auto &[m, at] : plain)
                for (const auto &[k, v] : m->items()) merged[k] = v;
            return visit(merged, name, where);
        }
        return rules_.add(rule_name, object_rule(props, required, name, nullptr, where));
    }

    // The schema a local reference points to.
    const ordered_json &lookup(const std::string &ref, const std::string &where) {
        if (ref.empty() || ref[0] != '#')
            fail(where, "$ref '" + ref +
                            "' points outside the schema; only references inside it ('#/...') are supported");
        std::string fragment;  // percent-decoded
        for (size_t i = 1; i < ref.size(); ++i) {
            const auto hex = [&](char c) {
                return c >= '0' && c <= '9'   ? c - '0'
                       : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
            };
            if (ref[i] == '%' && i + 2 < ref.size() && hex(ref[i + 1]) >= 0 && hex(ref[i + 2]) >= 0) {
                fragment += static_cast<char>(hex(ref[i + 1]) * 16 + hex(ref[i + 2]));
                i += 2;
            } else {
                fragment += ref[i];
            }
        }
        if (fragment.empty()) return root_;
        if (fragment[0] != '/')
            fail(where, "$ref '" + ref + "': only JSON-pointer references ('#/...') are supported");
        const ordered_json *at = &root_;
        size_t pos = 1;
        for (;;) {
            const size_t slash = std::min(fragment.find('/', pos), fragment.size());
            std::string token;
            for (size_t i = pos; i < slash; ++i) {
                if (fragment[i] == '~' && i + 1 < slash &&
                    (fragment[i + 1] == '0' || fragment[i + 1] == '1')) {
                    token += fragment[i + 1] == '0' ? '~' : '/';
                    ++i;
                } else {
                    token += fragment[i];
                }
            }
            const ordered_json *next = nullptr;
            if (at->is_object()) {
                const auto it = at->find(token);
                next = it == at->end() ? nullptr : &*it;
            } else if (at->is_array() && !token.empty() && token.size() < 10 &&
                       token.find_first_not_of("0123456789") == std::string::npos &&
                       (token == "0" || token[0] != '0')) {
                const size_t i = std::stoul(token);
                if (i < at->size()) next = &(*at)[i];
            }
            if (!next) fail(where, "$ref '" + ref + "' points to nothing in the schema");
            at = next;
            if (slash == fragment.size()) return *at;
            pos = slash + 1;
        }
    }

    // The rule for a reference: its target's rule, made once. A reference met again while its target is
    // being written refers to the rule by name (recursion), unless nothing was read in between: that
    // would be left recursion, which no grammar can run.
    std::string resolve_ref(const std::string &ref, const std::string &where) {
        const ordered_json &target = lookup(ref, where);
        if (const auto it = done_.find(ref); it != done_.end()) return it->second;
        if (const auto it = active_.find(ref); it != active_.end()) {
            if (it->second.nesting == nesting_)
                fail(where, "$ref '" + ref +
                                "' refers back to itself before any JSON text is read (left recursion)");
            it->second.used = true;
            return it->second.name;
        }
        const std::string fragment = ref.substr(1);
        const std::string tentative = rules_.free_name("ref" + fragment);
        active_[ref] = {tentative, nesting_, false};
        const std::string got = visit(target, tentative, fragment);
        const bool used = active_[ref].used;
        active_.erase(ref);
        if (used && got != tentative) {
            // The recursion named a rule the target did not end up in: make that name lead there.
            if (rules_.has(tentative)) fail(where, "$ref '" + ref + "': no free rule name for its recursion");
            rules_.add(tentative, got);
        }
        done_[ref] = got;
        return got;
    }

    struct ActiveRef {
        std::string name;
        size_t nesting;
        bool used;
    };

    const ordered_json &root_;
    RuleSet rules_;
    size_t depth_ = 0, visits_ = 0;
    size_t nesting_ = 0;  // JSON values entered so far on the current path (object values, array items)
    std::map<std::string, ActiveRef> active_;
    std::map<std::string, std::string> done_;
};

}  // namespace

}  // namespace schema

std::string json_schema_to_gbnf(const ordered_json &schema) {
    std::string gbnf = schema::Converter(schema).run();
    // A check that the text is usable. The converter keeps repetitions within the parser's bounds and
    // refuses left recursion itself, so what can still fail here is a grammar too large to expand.
    try {
        parse_gbnf(gbnf);
    } catch (const GrammarError &e) {
        const std::string why = e.what();
        if (why.find("expand to more than") != std::string::npos)
            throw SchemaError("the grammar for this schema is too large to use (" + why + ")");
        throw std::logic_error("json_schema_to_gbnf wrote a grammar the GBNF parser refuses: " + why);
    }
    return gbnf;
}

std::string json_schema_to_gbnf(std::string_view schema_json) {
    ordered_json schema;
    try {
        schema = ordered_json::parse(schema_json.begin(), schema_json.end());
    } catch (const ordered_json::parse_error &e) {
        std::string why = e.what();
        if (const size_t end = why.find("] ");
            why.rfind("[json.exception", 0) == 0 && end != std::string::npos)
            why = why.substr(end + 2);
        throw SchemaError("the schema is not valid JSON: " + why);
    }
    return json_schema_to_gbnf(schema);
}

}  // namespace lctx::grammar
