// Integer ranges as GBNF: JSON integers (no leading zeros) between a lower and an upper bound, either of
// which may be open, spelled digit by digit the way llama.cpp spells them, e.g. 15..300 is
// `([1] ([5-9]) | [2-9] [0-9]) | ([1-2] [0-9]{2} | [3] "00")`.
//
// A closed range is cut into runs of equal length (15..99, 100..300); each run is a common prefix, then
// the first digit that differs, split where the rest stops being free. An open upper end allows at most
// 16 digits (llama.cpp's cap); a negative bound puts its range behind "-" (as llama.cpp, "-0" is let
// through where the range reaches zero).
#include <algorithm>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/json_schema_rules.h"

namespace lctx::grammar::schema {

namespace {

// Digits an integer may have when nothing bounds its size (llama.cpp's cap).
constexpr size_t kOpenDigits = 16;

uint64_t magnitude(int64_t v) {
    return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
}

// "[0-9]" min..max times.
std::string any_digits(size_t min, size_t max) {
    std::string s = "[0-9]";
    if (min == 1 && max == 1) return s;
    s += "{" + std::to_string(min);
    if (max != min) s += "," + std::to_string(max);
    return s + "}";
}

std::string digit_class(char from, char to) {
    return from == to ? std::string{'[', from, ']'} : std::string{'[', from, '-', to, ']'};
}

bool all_of(const std::string &s, char c) {
    return std::all_of(s.begin(), s.end(), [c](char d) { return d == c; });
}

// Digit strings of a's length from a to b (a <= b; both may have leading zeros inside a number).
std::string same_length(const std::string &a, const std::string &b) {
    size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    std::string out;
    if (i > 0) out = "\"" + a.substr(0, i) + "\"";
    if (i == a.size()) return out;
    if (i > 0) out += " ";
    const size_t rest = a.size() - i - 1;  // digits after the first one that differs
    if (rest == 0) return out + digit_class(a[i], b[i]);
    const std::string a_rest = a.substr(i + 1), b_rest = b.substr(i + 1);
    const std::string zeros(rest, '0'), nines(rest, '9');
    out += "(";
    bool b_done = false;  // the last alternative already reaches b
    if (a_rest == zeros) {
        // a[i]..b[i]-1 followed by anything.
        out += digit_class(a[i], static_cast<char>(b[i] - 1)) + " " + any_digits(rest, rest);
    } else {
        out += "[" + std::string(1, a[i]) + "] (" + same_length(a_rest, nines) + ")";
        if (a[i] + 1 < b[i]) {
            out += " | ";
            b_done = b_rest == nines;
            out += digit_class(static_cast<char>(a[i] + 1), static_cast<char>(b_done ? b[i] : b[i] - 1)) +
                   " " + any_digits(rest, rest);
        }
    }
    if (!b_done) out += " | " + digit_class(b[i], b[i]) + " " + same_length(zeros, b_rest);
    return out + ")";
}

// lo..hi without sign, one run per digit count.
std::string closed(uint64_t lo, uint64_t hi) {
    std::string from = std::to_string(lo);
    const std::string to = std::to_string(hi);
    std::string out;
    for (size_t len = from.size(); len < to.size(); ++len) {
        out += same_length(from, std::string(len, '9')) + " | ";
        from = "1" + std::string(len, '0');
    }
    return out + same_length(from, to);
}

// Digit strings (leading zeros allowed) of at most `max_len` digits that are longer than t, or as long and
// not below it: what may follow a number's leading digits when they equal the lower bound's.
std::string tail_at_least(const std::string &t, size_t max_len) {
    const size_t m = t.size();  // m < max_len
    if (all_of(t, '0')) return any_digits(m, max_len);
    std::string out;
    const char c = t[0];
    if (c > '0') out += digit_class('0', static_cast<char>(c - 1)) + " " + any_digits(m, max_len - 1) + " | ";
    if (m == 1) return out + digit_class(c, '9') + " " + any_digits(0, max_len - 1);
    out += "[" + std::string(1, c) + "] (" + tail_at_least(t.substr(1), max_len - 1) + ")";
    if (c < '9')
        out += " | " + digit_class(static_cast<char>(c + 1), '9') + " " + any_digits(m - 1, max_len - 1);
    return out;
}

// Numbers >= lo without sign (no leading zeros), of at most 16 digits (more when lo itself has more).
std::string at_least(uint64_t lo) {
    const std::string s = std::to_string(lo);
    const size_t max_len = std::max(kOpenDigits, s.size() + 1);
    if (lo == 0) return "[0] | [1-9] " + any_digits(0, max_len - 1);
    const char c = s[0];
    std::string out;
    if (c > '1')
        out += digit_class('1', static_cast<char>(c - 1)) + " " + any_digits(s.size(), max_len - 1) + " | ";
    if (s.size() == 1) return out + digit_class(c, '9') + " " + any_digits(0, max_len - 1);
    out += "[" + std::string(1, c) + "] (" + tail_at_least(s.substr(1), max_len - 1) + ")";
    if (c < '9')
        out +=
            " | " + digit_class(static_cast<char>(c + 1), '9') + " " + any_digits(s.size() - 1, max_len - 1);
    return out;
}

}  // namespace

std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    if (lo && hi && *lo > *hi)
        throw SchemaError("the integer range is empty (minimum " + std::to_string(*lo) +
                          " is above maximum " + std::to_string(*hi) + ")");
    const std::string any_positive = "[1-9] " + any_digits(0, kOpenDigits - 1);
    if (lo && hi) {
        if (*hi < 0) return "\"-\" (" + closed(magnitude(*hi), magnitude(*lo)) + ")";
        if (*lo < 0) return "\"-\" (" + closed(0, magnitude(*lo)) + ") | " + closed(0, magnitude(*hi));
        return closed(magnitude(*lo), magnitude(*hi));
    }
    if (lo) {
        if (*lo < 0) return "\"-\" (" + closed(0, magnitude(*lo)) + ") | [0] | " + any_positive;
        return at_least(magnitude(*lo));
    }
    if (hi) {
        if (*hi >= 0) return "\"-\" " + any_positive + " | " + closed(0, magnitude(*hi));
        return "\"-\" (" + at_least(magnitude(*hi)) + ")";
    }
    throw SchemaError("an integer range needs a bound");
}

}  // namespace lctx::grammar::schema
