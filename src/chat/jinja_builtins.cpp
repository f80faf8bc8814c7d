#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lctx::jinja {

size_t &builtin_string_limit() {
    thread_local size_t limit = 256u << 20;
    return limit;
}

std::vector<std::string> utf8_chars(const std::string &s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        size_t n = 1;
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0xF0)
            n = 4;
        else if (c >= 0xE0)
            n = 3;
        else if (c >= 0xC0)
            n = 2;
        n = std::min(n, s.size() - i);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

namespace {

[[noreturn]] void fail(const std::string &msg) {
    throw JinjaError(msg);
}

// Appends and fails once the text passes the limit.
void grow(std::string &out, const std::string &more) {
    if (out.size() + more.size() > builtin_string_limit()) fail("string too long");
    out += more;
}

// By value: `def` is often a temporary of the caller's full expression.
Value arg_or(CallArgs &a, size_t i, const char *name, const Value &def) {
    const Value *v = a.get(i, name);
    return v ? *v : def;
}

std::string need_string(const Value &v, const char *what) {
    if (!v.is_string()) fail(std::string(what) + " expects a string, got " + v.type_name());
    return v.str();
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string strip(const std::string &s, const Value &chars, bool left, bool right) {
    auto drop = [&](char c) {
        return chars.is_string() ? chars.str().find(c) != std::string::npos : is_space(c);
    };
    size_t b = 0, e = s.size();
    if (left)
        while (b < e && drop(s[b])) ++b;
    if (right)
        while (e > b && drop(s[e - 1])) --e;
    return s.substr(b, e - b);
}

std::string upper(std::string s) {
    for (char &c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}
std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
std::string capitalize(const std::string &s) {
    std::string out = lower(s);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
}
std::string title(const std::string &s) {
    std::string out = s;
    bool prev_alpha = false;
    for (char &c : out) {
        const unsigned char u = static_cast<unsigned char>(c);
        c = static_cast<char>(prev_alpha ? std::tolower(u) : std::toupper(u));
        prev_alpha = std::isalpha(u) || u >= 0x80;
    }
    return out;
}

// Jinja2's title filter: a word starts after spaces and -({[< only (Python's str.title also starts one
// after any other non-letter: "they're" -> "They'Re").
std::string title_filter(const std::string &s) {
    std::string out = s;
    bool at_start = true;
    for (char &c : out) {
        const unsigned char u = static_cast<unsigned char>(c);
        const bool sep = is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        c = static_cast<char>(at_start ? std::toupper(u) : std::tolower(u));
        at_start = sep;
    }
    return out;
}

// Python's str.islower / isupper: no character of the other case, and at least one cased character.
bool is_cased_as(const std::string &s, bool lower_case) {
    bool cased = false;
    for (unsigned char c : s) {
        if (lower_case ? std::isupper(c) : std::islower(c)) return false;
        cased = cased || std::isalpha(c);
    }
    return cased;
}

// Python's `%` formatting of one argument per conversion: %s %d %i %f %F %e %E %g %G %x %X %o %%, with
// flags, width and precision.
std::string printf_format(const std::string &fmt, CallArgs &a) {
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        size_t j = i + 1;
        while (j < fmt.size() && std::strchr("-+ #0", fmt[j])) ++j;
        while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
        if (j < fmt.size() && fmt[j] == '.') {
            ++j;
            while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
        }
        if (j >= fmt.size()) fail("format: incomplete format");
        const char conv = fmt[j];
        const std::string spec = fmt.substr(i, j - i);
        i = j;
        if (conv == '%') {
            out += '%';
            continue;
        }
        if (next >= a.pos.size()) fail("format: not enough arguments for format string");
        const Value &v = a.pos[next++];
        char buf[512];
        int n = 0;
        if (conv == 's') {  // by hand: the text may be long, and precision / width count characters
            // The digits of the width and of the precision, saturated (no more than the string limit).
            auto digits = [](const std::string &f, size_t at) {
                size_t v = 0;
                for (; at < f.size() && std::isdigit(static_cast<unsigned char>(f[at])); ++at)
                    v = std::min(v * 10 + static_cast<size_t>(f[at] - '0'), builtin_string_limit() + 1);
                return v;
            };
            size_t w = 1;
            while (w < spec.size() && std::strchr("-+ #0", spec[w])) ++w;
            const bool left = spec.find('-') < w;
            const size_t width = digits(spec, w), dot = spec.find('.');
            std::vector<std::string> chars = utf8_chars(v.to_string());
            if (dot != std::string::npos) chars.resize(std::min(chars.size(), digits(spec, dot + 1)));
            std::string text;
            for (const std::string &c : chars) grow(text, c);
            if (width > builtin_string_limit()) fail("string too long");
            const std::string pad(width > chars.size() ? width - chars.size() : 0, ' ');
            grow(out, left ? text + pad : pad + text);
            continue;
        } else if (spec.size() > 8) {  // numbers: a field of at most a few hundred characters
            fail("format: too wide a field: " + spec + conv);
        } else if (std::strchr("dixXo", conv)) {
            if (!v.is_number() && !v.is_bool()) fail(std::string("format: %") + conv + " needs a number");
            if (v.is_float() && !(std::fabs(v.as_float()) < 9.2e18)) fail("format: number out of range");
            const long long x = v.is_float() ? static_cast<long long>(v.as_float()) : v.as_int();
            n = std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), x);
        } else if (std::strchr("fFeEgG", conv)) {
            if (!v.is_number() && !v.is_bool()) fail(std::string("format: %") + conv + " needs a number");
            const double x = v.is_float() ? v.as_float() : static_cast<double>(v.as_int());
            n = std::snprintf(buf, sizeof buf, (spec + conv).c_str(), x);
        } else {
            fail(std::string("format: unsupported format character '") + conv + "'");
        }
        if (n < 0 || n >= static_cast<int>(sizeof buf))
            fail("format: bad or too wide a field: " + spec + conv);
        grow(out, std::string(buf, static_cast<size_t>(n)));
    }
    return out;
}

// Jinja2's wordcount: the runs of word characters (letters, digits, '_'; any non-ASCII byte counts as a
// letter, as \w takes Unicode letters).
int64_t word_count(const std::string &s) {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : s) {
        const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
        n += w && !in_word;
        in_word = w;
    }
    return n;
}

std::string replace(const std::string &s, const std::string &from, const std::string &to, int64_t count) {
    std::string out;
    size_t p = 0;
    int64_t n = 0;
    if (from.empty()) {
        // Python inserts `to` around every character.
        for (const std::string &ch : utf8_chars(s)) {
            if (count < 0 || n++ < count) grow(out, to);
            out += ch;
        }
        if (count < 0 || n < count) out += to;
        return out;
    }
    while (count < 0 || n < count) {
        size_t q = s.find(from, p);
        if (q == std::string::npos) break;
        out.append(s, p, q - p);
        grow(out, to);
        p = q + from.size();
        ++n;
    }
    return out + s.substr(p);
}

Value split(const std::string &s, const Value &sep, int64_t maxsplit) {
    Array out;
    if (!sep.is_string()) {
        size_t i = 0;
        while (true) {
            while (i < s.size() && is_space(s[i])) ++i;
            if (i >= s.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                out.emplace_back(s.substr(i));  // the rest as it is (Python keeps its trailing space)
                break;
            }
            size_t j = i;
            while (j < s.size() && !is_space(s[j])) ++j;
            out.emplace_back(s.substr(i, j - i));
            i = j;
        }
        return Value::array(std::move(out));
    }
    const std::string &d = sep.str();
    if (d.empty()) fail("split: empty separator");
    size_t p = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        size_t q = s.find(d, p);
        if (q == std::string::npos) break;
        out.emplace_back(s.substr(p, q - p));
        p = q + d.size();
    }
    out.emplace_back(s.substr(p));
    return Value::array(std::move(out));
}

Value rsplit(const std::string &s, const Value &sep, int64_t maxsplit) {
    if (maxsplit < 0) return split(s, sep, maxsplit);
    if (!sep.is_string()) {  // on runs of whitespace, from the right
        Array rev;
        size_t e = s.size();
        while (true) {
            while (e > 0 && is_space(s[e - 1])) --e;
            if (e == 0) break;
            if (static_cast<int64_t>(rev.size()) == maxsplit) {
                rev.emplace_back(s.substr(0, e));
                break;
            }
            size_t b = e;
            while (b > 0 && !is_space(s[b - 1])) --b;
            rev.emplace_back(s.substr(b, e - b));
            e = b;
        }
        std::reverse(rev.begin(), rev.end());
        return Value::array(std::move(rev));
    }
    const std::string &d = sep.str();
    if (d.empty()) fail("rsplit: empty separator");
    Array rev;
    size_t end = s.size();
    while (static_cast<int64_t>(rev.size()) < maxsplit) {
        if (end < d.size()) break;
        size_t q = s.rfind(d, end - d.size());
        if (q == std::string::npos) break;
        rev.emplace_back(s.substr(q + d.size(), end - q - d.size()));
        end = q;
    }
    rev.emplace_back(s.substr(0, end));
    std::reverse(rev.begin(), rev.end());
    return Value::array(std::move(rev));
}

bool affix_match(const std::string &s, const Value &affix, bool prefix) {
    auto one = [&](const std::string &a) {
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.is_array()) {
        for (const Value &a : affix.arr())
            if (one(need_string(a, prefix ? "startswith" : "endswith"))) return true;
        return false;
    }
    return one(need_string(affix, prefix ? "startswith" : "endswith"));
}

// The items a filter iterates: list elements, dict keys, string characters.
Array iterate(const Value &v, const char *what) {
    if (v.is_array()) return v.arr();
    if (v.is_object()) {
        Array keys;
        for (const auto &kv : v.obj()) keys.push_back(key_value(kv.first));
        return keys;
    }
    if (v.is_string()) {
        Array chars;
        for (std::string &c : utf8_chars(v.str())) chars.emplace_back(std::move(c));
        return chars;
    }
    if (v.is_undefined() || v.is_none()) return {};  // llama.cpp lets `none | selectattr(...)` through
    fail(std::string(what) + ": cannot iterate over " + v.type_name());
}

// Attribute lookup for filters: "a.b" walks nested dicts; "0" indexes lists.
Value get_attr(const Value &v, const std::string &path) {
    Value cur = v;
    size_t p = 0;
    while (p <= path.size()) {
        size_t q = path.find('.', p);
        if (q == std::string::npos) q = path.size();
        const std::string part = path.substr(p, q - p);
        if (cur.is_object()) {
            const Value *f = cur.find(part);
            cur = f ? *f : Value();
        } else if (cur.is_array() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
            const size_t i = std::stoul(part);
            cur = i < cur.arr().size() ? cur.arr()[i] : Value();
        } else {
            return Value();
        }
        p = q + 1;
    }
    return cur;
}

Value items_of(const Value &v) {
    if (v.is_undefined() || v.is_none()) return Value::array();
    if (!v.is_object()) fail(std::string("items: expected a dict, got ") + v.type_name());
    Array out;
    for (const auto &[k, e] : v.obj()) out.push_back(Value::array({key_value(k), e}));
    return Value::array(std::move(out));
}

int64_t length_of(const Value &v) {
    if (v.is_string()) return static_cast<int64_t>(utf8_chars(v.str()).size());
    if (v.is_array()) return static_cast<int64_t>(v.arr().size());
    if (v.is_object()) return static_cast<int64_t>(v.obj().size());
    if (v.is_undefined()) return 0;
    fail(std::string("length: ") + v.type_name() + " has no length");
}

// Python's str.format with positional {} / {0} fields (what templates use).
std::string format(const std::string &fmt, CallArgs &a) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        const char c = fmt[i];
        if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
        } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
            out += '}';
            ++i;
        } else if (c == '{') {
            const size_t e = fmt.find('}', i);
            if (e == std::string::npos) fail("format: unmatched '{'");
            const std::string field = fmt.substr(i + 1, e - i - 1);
            const Value *v = nullptr;
            if (field.empty()) {
                v = a.get(auto_index++, "");
            } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
                v = a.get(std::stoul(field), "");
            } else {
                v = a.kwarg(field);
            }
            if (!v) fail("format: no argument for {" + field + "}");
            out += v->to_string();
            i = e;
        } else {
            out += c;
        }
    }
    return out;
}

Value string_method(const Value &self, const std::string &name) {
    const std::string s = self.str();
    auto make = [](auto f) { return Value::function(f); };
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return make([s, name](CallArgs &a) {
            return Value(strip(s, arg_or(a, 0, "chars", Value()), name != "rstrip", name != "lstrip"));
        });
    if (name == "split" || name == "rsplit")
        return make([s, name](CallArgs &a) {
            const Value &sep = arg_or(a, 0, "sep", Value());
            const int64_t maxsplit = arg_or(a, 1, "maxsplit", Value(-1)).as_int();
            return name == "split" ? split(s, sep, maxsplit) : rsplit(s, sep, maxsplit);
        });
    if (name == "startswith" || name == "endswith")
        return make([s, name](CallArgs &a) {
            const Value *x = a.get(0, "prefix");
            if (!x) fail(name + "() needs an argument");
            return Value(affix_match(s, *x, name == "startswith"));
        });
    if (name == "upper") return make([s](CallArgs &) { return Value(upper(s)); });
    if (name == "lower") return make([s](CallArgs &) { return Value(lower(s)); });
    if (name == "title") return make([s](CallArgs &) { return Value(title(s)); });
    if (name == "capitalize") return make([s](CallArgs &) { return Value(capitalize(s)); });
    if (name == "replace")
        return make([s](CallArgs &a) {
            if (a.pos.size() < 2) fail("replace() needs two arguments");
            return Value(replace(s, need_string(a.pos[0], "replace"), need_string(a.pos[1], "replace"),
                                 arg_or(a, 2, "count", Value(-1)).as_int()));
        });
    if (name == "find" || name == "rfind" || name == "count" || name == "index")
        return make([s, name](CallArgs &a) {
            const Value *x = a.get(0, "sub");
            if (!x) fail(name + "() needs an argument");
            const std::string sub = need_string(*x, name.c_str());
            if (name == "count") {
                if (sub.empty()) return Value(static_cast<int64_t>(utf8_chars(s).size() + 1));
                int64_t n = 0;
                for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
                return Value(n);
            }
            const size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
            if (p == std::string::npos) {
                if (name == "index") fail("substring not found");
                return Value(static_cast<int64_t>(-1));
            }
            return Value(static_cast<int64_t>(utf8_chars(s.substr(0, p)).size()));
        });
    if (name == "join")
        return make([s](CallArgs &a) {
            if (a.pos.empty()) fail("join() needs an argument");
            std::string out;
            bool first = true;
            for (const Value &v : iterate(a.pos[0], "join")) {
                if (!first) grow(out, s);
                first = false;
                grow(out, v.to_string());
            }
            return Value(out);
        });
    if (name == "format") return make([s](CallArgs &a) { return Value(format(s, a)); });
    if (name == "removeprefix" || name == "removesuffix")
        return make([s, name](CallArgs &a) {
            if (a.pos.empty()) fail(name + "() needs an argument");
            const std::string x = need_string(a.pos[0], name.c_str());
            if (name == "removeprefix") return Value(s.rfind(x, 0) == 0 ? s.substr(x.size()) : s);
            const bool ends = x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
            return Value(ends ? s.substr(0, s.size() - x.size()) : s);
        });
    if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum" ||
        name == "isupper" || name == "islower")
        return make([s, name](CallArgs &) {
            if (s.empty()) return Value(false);
            bool cased = false;
            for (unsigned char c : s) {
                if (name == "isdigit" && !std::isdigit(c)) return Value(false);
                if (name == "isalpha" && !std::isalpha(c)) return Value(false);
                if (name == "isalnum" && !std::isalnum(c)) return Value(false);
                if (name == "isspace" && !is_space(static_cast<char>(c))) return Value(false);
                cased = cased || std::isalpha(c);
            }
            if (name == "isupper" || name == "islower") return Value(is_cased_as(s, name == "islower"));
            return Value(true);
        });
    return Value();
}

Value dict_method(const Value &self, const std::string &name) {
    auto make = [](auto f) { return Value::function(f); };
    if (name == "items") return make([self](CallArgs &) { return items_of(self); });
    if (name == "keys" || name == "values")
        return make([self, name](CallArgs &) {
            Array out;
            for (const auto &[k, v] : self.obj()) out.push_back(name == "keys" ? key_value(k) : v);
            return Value::array(std::move(out));
        });
    if (name == "get")
        return make([self](CallArgs &a) {
            if (a.pos.empty()) fail("get() needs a key");
            const Value *v = self.find(a.pos[0].to_string());
            return v ? *v : arg_or(a, 1, "default", Value::none());
        });
    if (name == "pop")
        return make([self](CallArgs &a) {
            if (a.pos.empty()) fail("pop() needs a key");
            const std::string k = a.pos[0].to_string();
            Object &o = self.obj();
            for (auto it = o.begin(); it != o.end(); ++it)
                if (it->first == k) {
                    Value v = it->second;
                    o.erase(it);
                    return v;
                }
            if (a.pos.size() > 1) return a.pos[1];
            fail("pop(): key '" + k + "' not found");
        });
    if (name == "update")
        return make([self](CallArgs &a) {
            Value s = self;
            for (const Value &o : a.pos)
                if (o.is_object())
                    for (const auto &[k, v] : o.obj()) s.set(k, v);
            for (const auto &[k, v] : a.kw) s.set(k, v);
            return Value::none();
        });
    if (name == "copy") return make([self](CallArgs &) { return Value::object(self.obj()); });
    return Value();
}

Value list_method(const Value &self, const std::string &name) {
    auto make = [](auto f) { return Value::function(f); };
    if (name == "append")
        return make([self](CallArgs &a) {
            if (a.pos.size() != 1) fail("append() takes one argument");
            self.arr().push_back(a.pos[0]);
            return Value::none();
        });
    if (name == "extend")
        return make([self](CallArgs &a) {
            if (a.pos.size() != 1) fail("extend() takes one argument");
            for (const Value &v : iterate(a.pos[0], "extend")) self.arr().push_back(v);
            return Value::none();
        });
    if (name == "insert")
        return make([self](CallArgs &a) {
            if (a.pos.size() != 2) fail("insert() takes two arguments");
            Array &arr = self.arr();
            int64_t i = a.pos[0].as_int(), n = static_cast<int64_t>(arr.size());
            if (i < 0) i = std::max<int64_t>(0, i + n);
            i = std::min(i, n);
            arr.insert(arr.begin() + i, a.pos[1]);
            return Value::none();
        });
    if (name == "pop")
        return make([self](CallArgs &a) {
            Array &arr = self.arr();
            if (arr.empty()) fail("pop from empty list");
            int64_t i = a.pos.empty() ? -1 : a.pos[0].as_int(), n = static_cast<int64_t>(arr.size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) fail("pop index out of range");
            Value v = arr[static_cast<size_t>(i)];
            arr.erase(arr.begin() + i);
            return v;
        });
    if (name == "index" || name == "count")
        return make([self, name](CallArgs &a) {
            if (a.pos.size() != 1) fail(name + "() takes one argument");
            int64_t n = 0;
            for (size_t i = 0; i < self.arr().size(); ++i)
                if (values_equal(self.arr()[i], a.pos[0])) {
                    if (name == "index") return Value(static_cast<int64_t>(i));
                    ++n;
                }
            if (name == "index") fail("index(): value not in list");
            return Value(n);
        });
    return Value();
}

Value to_int(const Value &v, const Value &def, int64_t base) {
    if (v.is_int()) return v;
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    if (v.is_float()) return Value(static_cast<int64_t>(v.as_float()));
    if (v.is_string()) {
        if (base < 2 || base > 36) base = 10;
        const std::string t = strip(v.str(), Value(), true, true);
        char *end = nullptr;
        const long long i = std::strtoll(t.c_str(), &end, static_cast<int>(base));
        if (!t.empty() && end && *end == 0) return Value(static_cast<int64_t>(i));
        if (base != 10) return def;
        const double d = std::strtod(t.c_str(), &end);
        if (!t.empty() && end && *end == 0) return Value(static_cast<int64_t>(d));
    }
    return def;
}

std::string indent(const std::string &s, const std::string &pad, bool first, bool blank) {
    std::string out;
    size_t p = 0;
    bool is_first = true;
    while (p <= s.size()) {
        size_t q = s.find('\n', p);
        const bool last = q == std::string::npos;
        const std::string line = s.substr(p, last ? std::string::npos : q - p);
        if ((is_first ? first : true) && (blank || !line.empty()) && !(last && line.empty() && !is_first))
            grow(out, pad);
        out += line;
        if (last) break;
        out += '\n';
        p = q + 1;
        is_first = false;
    }
    return out;
}

// select / reject / selectattr / rejectattr share this: keep items whose test (or truthiness) == keep.
Value filter_items(const Value &v, CallArgs &a, bool by_attr, bool keep, const char *name) {
    size_t i = 0;
    std::string attr;
    if (by_attr) {
        if (a.pos.empty()) fail(std::string(name) + " needs an attribute name");
        attr = need_string(a.pos[i++], name);
    }
    std::string test;
    if (i < a.pos.size()) test = need_string(a.pos[i++], name);
    CallArgs rest;
    rest.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(i, a.pos.size())), a.pos.end());
    Array out;
    for (const Value &item : iterate(v, name)) {
        const Value x = by_attr ? get_attr(item, attr) : item;
        const bool ok = test.empty() ? x.truthy() : apply_test(test, x, rest);
        if (ok == keep) out.push_back(item);
    }
    return Value::array(std::move(out));
}

// What sort, unique, min and max compare: the item or its attribute, lowercased unless case_sensitive.
Value sort_key(const Value &x, const std::string &attr, bool case_sensitive) {
    Value k = attr.empty() ? x : get_attr(x, attr);
    if (!case_sensitive && k.is_string()) k = Value(lower(k.str()));
    return k;
}

Value sorted(Array items, bool reverse, const std::string &attr, bool case_sensitive) {
    auto key = [&](const Value &x) { return sort_key(x, attr, case_sensitive); };
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value &x, const Value &y) { return values_compare(key(x), key(y)) < 0; });
    if (reverse) std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
}

}  // namespace

Value bound_method(const Value &v, const std::string &name) {
    if (v.is_string()) return string_method(v, name);
    if (v.is_object()) return dict_method(v, name);
    if (v.is_array()) return list_method(v, name);
    return Value();
}

Value apply_filter(const std::string &name, const Value &v, CallArgs &a) {
    if (name == "trim" || name == "strip") {
        return Value(strip(v.to_string(), arg_or(a, 0, "chars", Value()), true, true));
    }
    if (name == "length" || name == "count") return Value(length_of(v));
    if (name == "tojson") {
        const Value &ind = arg_or(a, 0, "indent", Value());
        return Value(to_json(v, ind.is_int() ? static_cast<int>(ind.as_int()) : -1));
    }
    if (name == "upper") return Value(upper(v.to_string()));
    if (name == "lower") return Value(lower(v.to_string()));
    if (name == "capitalize") return Value(capitalize(v.to_string()));
    if (name == "title") return Value(title_filter(v.to_string()));
    if (name == "string") return v.is_string() ? v : Value(v.to_string());
    if (name == "safe" || name == "e" || name == "escape" || name == "forceescape") {
        if (name == "safe") return v.is_string() ? v : Value(v.to_string());
        std::string out;
        for (char c : v.to_string()) {
            switch (c) {
                case '&':
                    out += "&amp;";
                    break;
                case '<':
                    out += "&lt;";
                    break;
                case '>':
                    out += "&gt;";
                    break;
                case '"':
                    out += "&#34;";
                    break;
                case '\'':
                    out += "&#39;";
                    break;
                default:
                    out += c;
            }
        }
        return Value(out);
    }
    if (name == "replace") {
        if (a.pos.size() < 2) fail("replace needs two arguments");
        return Value(replace(v.to_string(), a.pos[0].to_string(), a.pos[1].to_string(),
                             arg_or(a, 2, "count", Value(-1)).as_int()));
    }
    if (name == "join") {
        const std::string sep = arg_or(a, 0, "d", Value("")).to_string();
        const Value *attr = a.get(1, "attribute");
        std::string out;
        bool first = true;
        for (const Value &x : iterate(v, "join")) {
            if (!first) grow(out, sep);
            first = false;
            grow(out, (attr ? get_attr(x, attr->to_string()) : x).to_string());
        }
        return Value(out);
    }
    if (name == "default" || name == "d") {
        const Value &def = arg_or(a, 0, "default_value", Value(""));
        const bool boolean = arg_or(a, 1, "boolean", Value(false)).truthy();
        if (v.is_undefined() || (boolean && !v.truthy())) return def;
        return v;
    }
    if (name == "items") return items_of(v);
    if (name == "dictsort") {
        if (!v.is_object()) fail(std::string("dictsort: expected a dict, got ") + v.type_name());
        const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
        const bool by_value = arg_or(a, 1, "by", Value("key")).to_string() == "value";
        const bool reverse = arg_or(a, 2, "reverse", Value(false)).truthy();
        return sorted(items_of(v).arr(), reverse, by_value ? "1" : "0", cs);
    }
    if (name == "selectattr" || name == "rejectattr")
        return filter_items(v, a, true, name == "selectattr", name.c_str());
    if (name == "select" || name == "reject")
        return filter_items(v, a, false, name == "select", name.c_str());
    if (name == "map") {
        Array out;
        if (const Value *attr = a.kwarg("attribute")) {
            const Value &def = arg_or(a, 99, "default", Value());
            for (const Value &x : iterate(v, "map")) {
                Value r = get_attr(x, attr->to_string());
                out.push_back(r.is_undefined() ? def : r);
            }
            return Value::array(std::move(out));
        }
        if (a.pos.empty()) fail("map needs a filter name or attribute=");
        const std::string f = need_string(a.pos[0], "map");
        CallArgs rest;
        rest.pos.assign(a.pos.begin() + 1, a.pos.end());
        rest.kw = a.kw;
        for (const Value &x : iterate(v, "map")) out.push_back(apply_filter(f, x, rest));
        return Value::array(std::move(out));
    }
    if (name == "first" || name == "last") {
        Array items = iterate(v, name.c_str());
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::array(iterate(v, "list"));
    if (name == "unique") {  // unique(case_sensitive=false, attribute=none)
        const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
        const Value attr = arg_or(a, 1, "attribute", Value());
        Array out, keys;
        for (const Value &x : iterate(v, "unique")) {
            const Value k = sort_key(x, attr.is_undefined() ? "" : attr.to_string(), cs);
            bool seen = false;
            for (const Value &y : keys) seen = seen || values_equal(k, y);
            if (!seen) {
                out.push_back(x);
                keys.push_back(k);
            }
        }
        return Value::array(std::move(out));
    }
    if (name == "sort") {
        const bool reverse = arg_or(a, 0, "reverse", Value(false)).truthy();
        const bool cs = arg_or(a, 1, "case_sensitive", Value(false)).truthy();
        const Value &attr = arg_or(a, 2, "attribute", Value());
        return sorted(iterate(v, "sort"), reverse, attr.is_undefined() ? "" : attr.to_string(), cs);
    }
    if (name == "reverse") {
        if (v.is_string()) {
            std::vector<std::string> chars = utf8_chars(v.str());
            std::string out;
            for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
            return Value(out);
        }
        Array items = iterate(v, "reverse");
        std::reverse(items.begin(), items.end());
        return Value::array(std::move(items));
    }
    if (name == "min" || name == "max") {  // min(case_sensitive=false, attribute=none): the first extreme
        const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
        const Value attr = arg_or(a, 1, "attribute", Value());
        const std::string path = attr.is_undefined() ? "" : attr.to_string();
        Array items = iterate(v, name.c_str());
        if (items.empty()) return Value();
        size_t best = 0;
        Value best_key = sort_key(items[0], path, cs);
        for (size_t i = 1; i < items.size(); ++i) {
            const Value k = sort_key(items[i], path, cs);
            const int c = values_compare(k, best_key);
            if (name == "min" ? c < 0 : c > 0) {
                best = i;
                best_key = k;
            }
        }
        return items[best];
    }
    if (name == "sum") {
        const Value *attr = a.get(0, "attribute");
        Value total = arg_or(a, 1, "start", Value(static_cast<int64_t>(0)));
        for (const Value &x0 : iterate(v, "sum")) {
            const Value x = attr ? get_attr(x0, attr->to_string()) : x0;
            if (!x.is_number()) fail("sum: not a number");
            total = total.is_int() && x.is_int() ? Value(total.as_int() + x.as_int())
                                                 : Value(total.as_float() + x.as_float());
        }
        return total;
    }
    if (name == "int")  // int(default=0, base=10)
        return to_int(v, arg_or(a, 0, "default", Value(static_cast<int64_t>(0))),
                      arg_or(a, 1, "base", Value(static_cast<int64_t>(10))).as_int());
    if (name == "float") {
        if (v.is_number()) return Value(v.as_float());
        if (v.is_string()) {
            char *end = nullptr;
            const double d = std::strtod(v.str().c_str(), &end);
            if (end && *end == 0 && !v.str().empty()) return Value(d);
        }
        return arg_or(a, 0, "default", Value(0.0));
    }
    if (name == "abs") {
        if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
        if (v.is_float()) return Value(std::fabs(v.as_float()));
        fail(std::string("abs: expected a number, got ") + v.type_name());
    }
    if (name == "round") {
        const int64_t prec = arg_or(a, 0, "precision", Value(static_cast<int64_t>(0))).as_int();
        const std::string method = arg_or(a, 1, "method", Value("common")).to_string();
        const double m = std::pow(10.0, static_cast<double>(prec)), x = v.as_float() * m;
        const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
        return Value(r / m);
    }
    if (name == "indent") {
        const Value &w = arg_or(a, 0, "width", Value(static_cast<int64_t>(4)));
        const std::string pad =
            w.is_string() ? w.str() : std::string(static_cast<size_t>(std::max<int64_t>(0, w.as_int())), ' ');
        return Value(indent(v.to_string(), pad, arg_or(a, 1, "first", Value(false)).truthy(),
                            arg_or(a, 2, "blank", Value(false)).truthy()));
    }
    if (name == "wordcount") return Value(word_count(v.to_string()));
    if (name == "attr") {
        if (a.pos.empty()) fail("attr needs a name");
        const Value *f = v.find(a.pos[0].to_string());
        return f ? *f : Value();
    }
    if (name == "batch") {
        const int64_t n = arg_or(a, 0, "linecount", Value(static_cast<int64_t>(1))).as_int();
        if (n <= 0) fail("batch: size must be positive");
        Array out, cur;
        for (const Value &x : iterate(v, "batch")) {
            cur.push_back(x);
            if (static_cast<int64_t>(cur.size()) == n) {
                out.push_back(Value::array(std::move(cur)));
                cur.clear();
            }
        }
        if (!cur.empty()) {  // batch(linecount, fill_with=none): the last batch padded when asked
            if (const Value *fill = a.get(1, "fill_with"))
                while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
            out.push_back(Value::array(std::move(cur)));
        }
        return Value::array(std::move(out));
    }
    if (name == "format") return Value(printf_format(v.to_string(), a));  // Jinja2: printf style
    fail("unknown filter '" + name + "'");
}

bool apply_test(const std::string &name, const Value &v, CallArgs &a) {
    auto arg = [&]() -> const Value & {
        if (a.pos.empty()) fail("test '" + name + "' needs an argument");
        return a.pos[0];
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number() || v.is_bool();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_object();
    if (name == "iterable") return v.is_array() || v.is_object() || v.is_string();
    if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
    if (name == "callable") return v.is_function();
    if (name == "odd" || name == "even") {
        if (!v.is_int()) fail("test '" + name + "' needs an integer");
        return (v.as_int() % 2 != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
        const int64_t d = arg().as_int();
        if (d == 0) fail("divisibleby 0");
        return v.as_int() % d == 0;
    }
    if (name == "lower") return is_cased_as(v.to_string(), true);
    if (name == "upper") return is_cased_as(v.to_string(), false);
    if (name == "in") {
        const Value &c = arg();
        if (c.is_string()) return v.is_string() && c.str().find(v.str()) != std::string::npos;
        if (c.is_object()) return c.find(v.to_string()) != nullptr;
        for (const Value &x : iterate(c, "in"))
            if (values_equal(x, v)) return true;
        return false;
    }
    if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, arg());
    if (name == "ne" || name == "!=") return !values_equal(v, arg());
    if (name == "sameas") {
        const Value &o = arg();
        return v.kind() == o.kind() && values_equal(v, o);
    }
    if (name == "lt" || name == "lessthan" || name == "<") return values_compare(v, arg()) < 0;
    if (name == "le" || name == "<=") return values_compare(v, arg()) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return values_compare(v, arg()) > 0;
    if (name == "ge" || name == ">=") return values_compare(v, arg()) >= 0;
    fail("unknown test '" + name + "'");
}

Object builtin_globals(std::function<std::tm()> now) {
    Object g;
    g.emplace_back("range", Value::function([](CallArgs &a) {
                       int64_t start = 0, stop = 0, step = 1;
                       if (a.pos.size() == 1) {
                           stop = a.pos[0].as_int();
                       } else if (a.pos.size() >= 2) {
                           start = a.pos[0].as_int();
                           stop = a.pos[1].as_int();
                           if (a.pos.size() > 2) step = a.pos[2].as_int();
                       } else {
                           fail("range() needs an argument");
                       }
                       if (step == 0) fail("range() step must not be zero");
                       Array out;
                       for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                           if (out.size() >= 1000000) fail("range() too long");
                           out.emplace_back(i);
                       }
                       return Value::array(std::move(out));
                   }));
    auto make_dict = [](CallArgs &a) {
        Value d = Value::object();
        for (const Value &p : a.pos)
            if (p.is_object())
                for (const auto &[k, v] : p.obj()) d.set(k, v);
        for (const auto &[k, v] : a.kw) d.set(k, v);
        return d;
    };
    g.emplace_back("namespace", Value::function(make_dict));
    g.emplace_back("dict", Value::function(make_dict));
    g.emplace_back("raise_exception", Value::function([](CallArgs &a) -> Value {
                       fail(a.pos.empty() ? std::string("raise_exception called") : a.pos[0].to_string());
                   }));
    g.emplace_back("strftime_now", Value::function([now](CallArgs &a) {
                       if (a.pos.empty() || !a.pos[0].is_string()) fail("strftime_now needs a format string");
                       const std::tm tm = now();
                       char buf[256];
                       const size_t n = std::strftime(buf, sizeof buf, a.pos[0].str().c_str(), &tm);
                       return Value(std::string(buf, n));
                   }));
    return g;
}

}  // namespace lctx::jinja
