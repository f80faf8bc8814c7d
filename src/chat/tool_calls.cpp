#include "chat/tool_calls.h"

#include <algorithm>
#include <cstdint>

namespace lctx::chat {

namespace {

using std::string_view;
constexpr size_t npos = std::string::npos;

// A model's reply is not always valid UTF-8 (a byte-level vocabulary can emit any byte): text copied into
// call arguments is written with U+FFFD for the bytes that are not, never thrown on (the fuzzer's finding).
std::string json_text(const nlohmann::ordered_json &j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}
std::string code_arguments(string_view code) {
    return json_text(nlohmann::ordered_json{{"code", std::string(code)}});
}

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
size_t skip_ws(string_view s, size_t p) {
    while (p < s.size() && is_blank(s[p])) ++p;
    return p;
}
string_view trim(string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && is_blank(s[b])) ++b;
    while (e > b && is_blank(s[e - 1])) --e;
    return s.substr(b, e - b);
}
string_view rtrim(string_view s) {
    size_t e = s.size();
    while (e > 0 && is_blank(s[e - 1])) --e;
    return s.substr(0, e);
}
string_view ltrim(string_view s) {
    return s.substr(std::min(skip_ws(s, 0), s.size()));
}
bool starts_at(string_view s, size_t p, string_view m) {
    return p <= s.size() && s.substr(p).substr(0, m.size()) == m;
}
bool all_blank(string_view s) {
    return std::all_of(s.begin(), s.end(), is_blank);
}

// The length of the longest end of `s` that is the start of `marker` (and not all of it): text that may
// still become the marker.
size_t marker_tail(string_view s, string_view marker) {
    for (size_t k = std::min(s.size(), marker.size() - 1); k > 0; --k)
        if (s.substr(s.size() - k) == marker.substr(0, k)) return k;
    return 0;
}

// Partial text: what may be sent of `s` now (the end that may become one of `markers`, and trailing
// blanks, held back).
string_view held(string_view s, std::initializer_list<string_view> markers) {
    size_t k = 0;
    for (string_view m : markers) k = std::max(k, marker_tail(s, m));
    return rtrim(s.substr(0, s.size() - k));
}

// The first of `markers` in s from pos: its position (npos when none) and which.
size_t find_first(string_view s, size_t pos, std::initializer_list<string_view> markers, string_view &which) {
    size_t best = npos;
    for (string_view m : markers) {
        const size_t p = s.find(m, pos);
        if (p != npos && (best == npos || p < best)) {
            best = p;
            which = m;
        }
    }
    return best;
}

// ---- JSON scanning: how far a value goes, before knowing whether it is valid ----

enum class Scan { Complete, Incomplete, Invalid };

Scan scan_string(string_view s, size_t p, size_t &end) {
    for (size_t i = p + 1; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\\') {
            ++i;
            continue;
        }
        if (c == '"') {
            end = i + 1;
            return Scan::Complete;
        }
        if (static_cast<unsigned char>(c) < 0x20) return Scan::Invalid;
    }
    return Scan::Incomplete;
}

// A JSON value at p (no leading blanks): where it ends. Nesting is followed with a stack (no recursion);
// what is inside a complete value is checked by whoever parses it.
Scan scan_value(string_view s, size_t p, size_t &end) {
    if (p >= s.size()) return Scan::Incomplete;
    const char c0 = s[p];
    if (c0 == '"') return scan_string(s, p, end);
    if (c0 == '{' || c0 == '[') {
        std::string stack;
        for (size_t i = p; i < s.size(); ++i) {
            const char c = s[i];
            if (c == '"') {
                size_t e = 0;
                const Scan st = scan_string(s, i, e);
                if (st != Scan::Complete) return st;
                i = e - 1;
            } else if (c == '{' || c == '[') {
                stack.push_back(c == '{' ? '}' : ']');
            } else if (c == '}' || c == ']') {
                if (stack.empty() || stack.back() != c) return Scan::Invalid;
                stack.pop_back();
                if (stack.empty()) {
                    end = i + 1;
                    return Scan::Complete;
                }
            }
        }
        return Scan::Incomplete;
    }
    // A number or a literal: it ends at the first character that cannot be part of one.
    size_t i = p;
    while (i < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '+' || s[i] == '.'))
        ++i;
    if (i == p) return Scan::Invalid;
    if (i == s.size()) return Scan::Incomplete;
    end = i;
    return Scan::Complete;
}

bool parse_json(string_view text, nlohmann::ordered_json &out) {
    out = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr, false);
    return !out.is_discarded();
}

// The text of a JSON string that may be cut short: as much as is certain (an escape cut short waits).
std::string decode_partial_string(string_view s, size_t p) {
    std::string out;
    size_t i = p + 1;
    while (i < s.size() && s[i] != '"') {
        if (s[i] != '\\') {
            out += s[i++];
            continue;
        }
        size_t e = i + 2;
        if (i + 1 < s.size() && s[i + 1] == 'u') {
            e = i + 6;
            if (e + 1 < s.size() && s[e] == '\\' && s[e + 1] == 'u') e += 6;  // maybe a surrogate pair
        }
        if (e > s.size()) break;
        nlohmann::ordered_json j;
        std::string piece = "\"" + std::string(s.substr(i, e - i)) + "\"";
        if (!parse_json(piece, j)) {
            // A lone high surrogate followed by something else: decode the first escape alone.
            e = i + 6;
            piece = "\"" + std::string(s.substr(i, e - i)) + "\"";
            if (!parse_json(piece, j)) break;
        }
        out += j.get<std::string>();
        i = e;
    }
    return out;
}

struct Field {
    std::string key;
    size_t vstart = 0, vend = 0;
    bool complete = false;
};
struct ObjectScan {
    Scan status = Scan::Invalid;
    size_t end = 0;
    std::vector<Field> fields;
    const Field *find(std::initializer_list<string_view> keys) const {
        for (const Field &f : fields)
            for (string_view k : keys)
                if (f.key == k) return &f;
        return nullptr;
    }
};

// A JSON object at p, field by field, as far as the text goes.
ObjectScan scan_object(string_view s, size_t p) {
    ObjectScan r;
    if (p >= s.size()) {
        r.status = Scan::Incomplete;
        return r;
    }
    if (s[p] != '{') return r;
    size_t i = p + 1;
    for (bool first = true;; first = false) {
        i = skip_ws(s, i);
        if (i >= s.size()) {
            r.status = Scan::Incomplete;
            return r;
        }
        if (s[i] == '}' && first) {
            r.status = Scan::Complete;
            r.end = i + 1;
            return r;
        }
        if (s[i] != '"') return r;
        size_t kend = 0;
        const Scan ks = scan_string(s, i, kend);
        if (ks != Scan::Complete) {
            r.status = ks;
            return r;
        }
        nlohmann::ordered_json key;
        if (!parse_json(s.substr(i, kend - i), key)) return r;
        i = skip_ws(s, kend);
        if (i >= s.size()) {
            r.status = Scan::Incomplete;
            return r;
        }
        if (s[i] != ':') return r;
        i = skip_ws(s, i + 1);
        Field f;
        f.key = key.get<std::string>();
        f.vstart = i;
        size_t vend = 0;
        const Scan vs = scan_value(s, i, vend);
        if (vs == Scan::Invalid) return r;
        if (vs == Scan::Incomplete) {
            f.vend = s.size();
            r.fields.push_back(std::move(f));
            r.status = Scan::Incomplete;
            return r;
        }
        f.vend = vend;
        f.complete = true;
        r.fields.push_back(std::move(f));
        i = skip_ws(s, vend);
        if (i >= s.size()) {
            r.status = Scan::Incomplete;
            return r;
        }
        if (s[i] == ',') {
            ++i;
            continue;
        }
        if (s[i] != '}') return r;
        r.status = Scan::Complete;
        r.end = i + 1;
        return r;
    }
}

struct CallScan {
    Scan status = Scan::Invalid;
    size_t end = 0;
    bool has_name = false;
    ToolCall call;
};

// The arguments of a call as far as they are certain: an object's text as written (partial: the part
// written so far); arguments written as a JSON string holding the object are decoded once complete.
bool arguments_of(string_view s, const Field *f, bool object_complete, std::string &out) {
    if (!f) {
        out = object_complete ? "{}" : "";
        return true;
    }
    const char c = f->vstart < s.size() ? s[f->vstart] : '\0';
    if (!f->complete) {
        out = c == '"' ? "" : std::string(s.substr(f->vstart, f->vend - f->vstart));
        return true;
    }
    const string_view raw = s.substr(f->vstart, f->vend - f->vstart);
    nlohmann::ordered_json j;
    if (!parse_json(raw, j)) return false;
    if (j.is_string()) {
        out = j.get<std::string>();
        nlohmann::ordered_json inner;
        return parse_json(out, inner) && inner.is_object();
    }
    if (!j.is_object()) return false;
    out = std::string(raw);
    return true;
}

// A call object {"<name key>": "...", "<arguments key>": {...}, ...} at p.
CallScan scan_call(string_view s, size_t p, std::initializer_list<string_view> name_keys,
                   std::initializer_list<string_view> arg_keys) {
    CallScan r;
    const ObjectScan o = scan_object(s, p);
    r.status = o.status;
    r.end = o.end;
    if (o.status == Scan::Invalid) return r;
    if (const Field *n = o.find(name_keys); n && n->complete) {
        nlohmann::ordered_json j;
        if (!parse_json(s.substr(n->vstart, n->vend - n->vstart), j) || !j.is_string() ||
            j.get<std::string>().empty()) {
            r.status = Scan::Invalid;
            return r;
        }
        r.call.name = j.get<std::string>();
        r.has_name = true;
    }
    if (!arguments_of(s, o.find(arg_keys), o.status == Scan::Complete, r.call.arguments)) {
        r.status = Scan::Invalid;
        return r;
    }
    if (o.status == Scan::Complete) {
        nlohmann::ordered_json whole;
        if (!r.has_name || !parse_json(s.substr(p, o.end - p), whole)) r.status = Scan::Invalid;
    }
    return r;
}

// A JSON array of call objects; p is just past its '['. Returns where the array ends (npos: not ended).
// Complete calls (and, partial, an unfinished one with its name) are added to `calls`; false when the
// array is not one of calls.
bool scan_call_array(string_view s, size_t p, std::initializer_list<string_view> name_keys,
                     std::initializer_list<string_view> arg_keys, bool partial, std::vector<ToolCall> &calls,
                     size_t &end) {
    end = npos;
    size_t i = skip_ws(s, p);
    if (i < s.size() && s[i] == ']') {
        end = i + 1;
        return true;
    }
    for (;;) {
        i = skip_ws(s, i);
        if (i >= s.size()) return true;
        const CallScan c = scan_call(s, i, name_keys, arg_keys);
        if (c.status == Scan::Invalid) return false;
        if (c.status == Scan::Incomplete) {
            if (partial && c.has_name) calls.push_back(c.call);
            return true;
        }
        calls.push_back(c.call);
        i = skip_ws(s, c.end);
        if (i >= s.size()) return true;
        if (s[i] == ']') {
            end = i + 1;
            return true;
        }
        if (s[i] != ',') return false;
        ++i;
    }
}

// ---- the formats ----

struct Out {
    string_view s;
    bool partial;
    ChatParsed r;
    // Content up to a marker (or the end): before a marker its trailing blanks are dropped; at the end of
    // partial text the end that may become one of `markers` waits.
    void content_before_marker(string_view text) { r.content += rtrim(text); }
    void content_at_end(string_view text, std::initializer_list<string_view> markers) {
        r.content += partial ? held(text, markers) : text;
    }
    // Text after a tool call: blanks between calls are dropped.
    void content_after_call(string_view text, std::initializer_list<string_view> markers) {
        const string_view t = partial ? held(text, markers) : text;
        if (!all_blank(t)) r.content += t;
    }
};

// A Qwen3-Coder call at p: <function=NAME><parameter=KEY>\nVALUE\n</parameter>...</function>. A value
// that reads as JSON (a number, true, an object ...) is that value, else it is text.
CallScan scan_xml_call(string_view s, size_t p) {
    static constexpr string_view kFn = "<function=", kFnEnd = "</function>",
                                 kParam = "<parameter=", kParamEnd = "</parameter>";
    CallScan r;
    r.status = Scan::Incomplete;
    const size_t gt = s.find('>', p + kFn.size());
    if (gt == npos) {
        if (s.find_first_of("<\n", p + kFn.size()) != npos) r.status = Scan::Invalid;
        return r;
    }
    const string_view name = trim(s.substr(p + kFn.size(), gt - p - kFn.size()));
    if (name.empty() || name.find_first_of("<>\n\"") != npos) {
        r.status = Scan::Invalid;
        return r;
    }
    // The name is reported with the arguments, once the call is closed: a call shown early could still turn
    // out malformed.
    r.call.name = std::string(name);
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    size_t i = gt + 1;
    for (;;) {
        i = skip_ws(s, i);
        if (i >= s.size()) return r;
        if (starts_at(s, i, kFnEnd)) {
            r.call.arguments = json_text(args);
            r.has_name = true;
            r.status = Scan::Complete;
            r.end = i + kFnEnd.size();
            return r;
        }
        if (!starts_at(s, i, kParam)) {
            const string_view rest = s.substr(i);
            if (kFnEnd.substr(0, rest.size()) != rest && kParam.substr(0, rest.size()) != rest)
                r.status = Scan::Invalid;
            return r;
        }
        const size_t kgt = s.find('>', i + kParam.size());
        if (kgt == npos) return r;
        const std::string key(trim(s.substr(i + kParam.size(), kgt - i - kParam.size())));
        size_t v = kgt + 1;
        if (v < s.size() && s[v] == '\n') ++v;
        const size_t vend = s.find(kParamEnd, v);
        if (key.empty() || vend == npos) {
            if (key.empty()) r.status = Scan::Invalid;
            return r;
        }
        string_view text = s.substr(v, vend - v);
        if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
        nlohmann::ordered_json value;
        if (!parse_json(text, value) || value.is_string()) value = std::string(text);
        args[key] = std::move(value);
        i = vend + kParamEnd.size();
    }
}

// Formats where calls follow a marker: Hermes (<tool_call>{..}</tool_call>, repeated); with `xml` the
// call inside may also be Qwen3-Coder's <function=..> form.
void parse_hermes(Out &o, bool xml) {
    static constexpr string_view kOpen = "<tool_call>", kClose = "</tool_call>";
    const string_view s = o.s;
    size_t pos = 0;
    bool after_call = false;
    for (;;) {
        const size_t k = s.find(kOpen, pos);
        if (k == npos) {
            if (after_call)
                o.content_after_call(s.substr(pos), {kOpen});
            else
                o.content_at_end(s.substr(pos), {kOpen});
            return;
        }
        const string_view before = s.substr(pos, k - pos);
        if (!after_call || !all_blank(before)) o.content_before_marker(before);
        const size_t q = skip_ws(s, k + kOpen.size());
        static constexpr string_view kFn = "<function=";
        const string_view at = s.substr(std::min(q, s.size()));
        CallScan c;
        if (xml && starts_at(s, q, kFn))
            c = scan_xml_call(s, q);
        else if (xml && o.partial && !at.empty() && kFn.substr(0, at.size()) == at)
            c.status = Scan::Incomplete;
        else
            c = scan_call(s, q, {"name"}, {"arguments", "parameters"});
        if (c.status == Scan::Invalid) {
            o.r.content += s.substr(k);
            return;
        }
        if (c.status == Scan::Incomplete) {
            if (o.partial) {
                if (c.has_name) o.r.tool_calls.push_back(c.call);
            } else {
                o.r.content += s.substr(k);
            }
            return;
        }
        o.r.tool_calls.push_back(c.call);
        const size_t r = skip_ws(s, c.end);
        if (starts_at(s, r, kClose)) {
            pos = r + kClose.size();
            after_call = true;
            continue;
        }
        // A call the model ended without its closing tag (the end of the reply, or of the text so far).
        if (r >= s.size() || (o.partial && kClose.substr(0, s.size() - r) == s.substr(r))) return;
        pos = c.end;
        after_call = true;
    }
}

// Calls in a JSON array after a marker: mistral-nemo ([TOOL_CALLS][..]), firefunction v2 ( functools[..]).
void parse_marker_array(Out &o, string_view marker, std::initializer_list<string_view> name_keys,
                        std::initializer_list<string_view> arg_keys) {
    const string_view s = o.s;
    const size_t k = s.find(marker);
    if (k == npos) {
        o.content_at_end(s, {marker});
        return;
    }
    size_t q = skip_ws(s, k + marker.size());
    const string_view before = s.substr(0, k);
    if (q >= s.size()) {
        o.content_before_marker(before);
        if (!o.partial) o.r.content += s.substr(k);
        return;
    }
    if (s[q] != '[') {
        o.r.content += s;
        return;
    }
    std::vector<ToolCall> calls;
    size_t end = npos;
    if (!scan_call_array(s, q + 1, name_keys, arg_keys, o.partial, calls, end) ||
        (!o.partial && end == npos)) {
        o.r.content += s;
        return;
    }
    o.content_before_marker(before);
    for (ToolCall &c : calls) o.r.tool_calls.push_back(std::move(c));
    if (end != npos) o.content_after_call(s.substr(end), {});
}

// name.call(k="v", n=1): a Llama 3.1 builtin tool call; the arguments as a JSON object.
bool parse_builtin_call(string_view body, ToolCall &call) {
    const size_t dot = body.find(".call(");
    if (dot == npos || dot == 0 || body.back() != ')') return false;
    const string_view name = body.substr(0, dot);
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    string_view args = body.substr(dot + 6, body.size() - dot - 7);
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    size_t i = 0;
    while ((i = skip_ws(args, i)) < args.size()) {
        const size_t eq = args.find('=', i);
        if (eq == npos) return false;
        const std::string key(trim(args.substr(i, eq - i)));
        size_t v = skip_ws(args, eq + 1), vend = 0;
        if (key.empty() || v >= args.size()) return false;
        nlohmann::ordered_json val;
        if (args[v] == '"' || args[v] == '\'') {
            const char q = args[v];
            const size_t close = args.find(q, v + 1);
            if (close == npos) return false;
            val = std::string(args.substr(v + 1, close - v - 1));
            vend = close + 1;
        } else {
            vend = args.find(',', v);
            if (vend == npos) vend = args.size();
            std::string lit(trim(args.substr(v, vend - v)));
            if (lit == "True") lit = "true";
            if (lit == "False") lit = "false";
            if (lit == "None") lit = "null";
            if (!parse_json(lit, val)) return false;
        }
        obj[key] = val;
        i = skip_ws(args, vend);
        if (i < args.size()) {
            if (args[i] != ',') return false;
            ++i;
        }
    }
    call.name = std::string(name);
    call.arguments = json_text(obj);
    return true;
}

// <|python_tag|> and what follows (whole text only): a call object, a builtin call, or python code.
void python_tag_call(string_view body, ToolCall &call) {
    const string_view b = trim(body);
    if (!b.empty() && b[0] == '{') {
        const CallScan c = scan_call(b, 0, {"name"}, {"parameters", "arguments"});
        if (c.status == Scan::Complete && all_blank(b.substr(c.end))) {
            call = c.call;
            return;
        }
    }
    if (parse_builtin_call(b, call)) return;
    call.name = "python";
    call.arguments = code_arguments(b);
}

// Llama 3.x: the whole reply is a call object (several, separated by ';' or blanks), or <|python_tag|>.
void parse_llama3(Out &o) {
    static constexpr string_view kTag = "<|python_tag|>";
    const string_view s = o.s;
    const size_t tag = s.find(kTag);
    const size_t t = skip_ws(s, 0);
    if (t < s.size() && s[t] == '{' && (tag == npos || tag > t)) {
        std::vector<ToolCall> calls;
        size_t i = t;
        for (;;) {
            const CallScan c = scan_call(s, i, {"name"}, {"parameters", "arguments"});
            if (c.status == Scan::Invalid) break;
            if (c.status == Scan::Incomplete) {
                if (!o.partial) break;
                if (c.has_name) calls.push_back(c.call);
                o.r.tool_calls = std::move(calls);
                return;
            }
            calls.push_back(c.call);
            i = skip_ws(s, c.end);
            while (i < s.size() && s[i] == ';') i = skip_ws(s, i + 1);
            if (i >= s.size()) {
                o.r.tool_calls = std::move(calls);
                return;
            }
            if (s[i] != '{') {
                o.r.tool_calls = std::move(calls);
                o.content_after_call(s.substr(i), {});
                return;
            }
        }
        o.content_at_end(s, {});
        if (o.partial) o.r.content.clear();  // a reply that starts with '{' waits until it is known
        return;
    }
    if (tag == npos) {
        if (o.partial && t >= s.size()) return;
        o.content_at_end(s, {kTag});
        return;
    }
    o.content_before_marker(s.substr(0, tag));
    if (o.partial) return;
    ToolCall call;
    python_tag_call(s.substr(tag + kTag.size()), call);
    o.r.tool_calls.push_back(std::move(call));
}

// functionary v3.1: <function=NAME>{..}</function>, and <|python_tag|>code.
void parse_functionary31(Out &o) {
    static constexpr string_view kOpen = "<function=", kClose = "</function>", kTag = "<|python_tag|>";
    const string_view s = o.s;
    size_t pos = 0;
    bool after_call = false;
    for (;;) {
        string_view which;
        const size_t k = find_first(s, pos, {kOpen, kTag}, which);
        if (k == npos) {
            if (after_call)
                o.content_after_call(s.substr(pos), {kOpen, kTag});
            else
                o.content_at_end(s.substr(pos), {kOpen, kTag});
            return;
        }
        const string_view before = s.substr(pos, k - pos);
        if (!after_call || !all_blank(before)) o.content_before_marker(before);
        if (which == kTag) {
            if (o.partial) return;
            ToolCall call;
            python_tag_call(s.substr(k + kTag.size()), call);
            o.r.tool_calls.push_back(std::move(call));
            return;
        }
        const size_t gt = s.find('>', k + kOpen.size());
        if (gt == npos) {
            if (!o.partial) o.r.content += s.substr(k);
            return;
        }
        ToolCall call;
        call.name = std::string(trim(s.substr(k + kOpen.size(), gt - k - kOpen.size())));
        const size_t a = skip_ws(s, gt + 1);
        size_t end = 0;
        const Scan st = call.name.empty() ? Scan::Invalid : scan_value(s, a, end);
        nlohmann::ordered_json args;
        if (st == Scan::Invalid ||
            (st == Scan::Complete && (!parse_json(s.substr(a, end - a), args) || !args.is_object()))) {
            o.r.content += s.substr(k);
            return;
        }
        if (st == Scan::Incomplete) {
            if (o.partial) {
                call.arguments = std::string(s.substr(a));
                o.r.tool_calls.push_back(std::move(call));
            } else {
                o.r.content += s.substr(k);
            }
            return;
        }
        call.arguments = std::string(s.substr(a, end - a));
        o.r.tool_calls.push_back(std::move(call));
        const size_t r = skip_ws(s, end);
        if (starts_at(s, r, kClose)) {
            pos = r + kClose.size();
        } else {
            if (r >= s.size() || (o.partial && kClose.substr(0, s.size() - r) == s.substr(r))) return;
            pos = end;
        }
        after_call = true;
    }
}

bool is_identifier(string_view n) {
    if (n.empty()) return false;
    for (char c : n)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
    return true;
}

// functionary v3.2: NAME\nBODY segments joined by ">>>" (the prompt wrote the first ">>>").
void parse_functionary32(Out &o) {
    static constexpr string_view kSep = ">>>";
    const string_view s = o.s;
    size_t pos = starts_at(s, 0, kSep) ? kSep.size() : 0;
    bool after_call = false;
    while (pos < s.size()) {
        const size_t nl = s.find('\n', pos);
        if (nl == npos) {
            if (!o.partial) o.r.content += s.substr(pos);
            return;
        }
        const string_view name = trim(s.substr(pos, nl - pos));
        if (name == "all") {
            const size_t next = s.find(kSep, nl + 1);
            const string_view text = s.substr(nl + 1, next == npos ? npos : next - nl - 1);
            if (next == npos) {
                if (after_call)
                    o.content_after_call(text, {kSep});
                else
                    o.content_at_end(text, {kSep});
                return;
            }
            o.content_before_marker(text);
            pos = next + kSep.size();
            continue;
        }
        if (!is_identifier(name)) {
            if (!o.partial || s.find(kSep, pos) != npos) o.r.content += s.substr(pos);
            return;
        }
        ToolCall call;
        call.name = std::string(name);
        const size_t a = skip_ws(s, nl + 1);
        size_t end = 0;
        const Scan st = a < s.size() && s[a] == '{' ? scan_value(s, a, end) : Scan::Invalid;
        if (st == Scan::Invalid) {
            // python: code up to the next ">>>" (whole text only).
            const size_t next = s.find(kSep, nl + 1);
            if (o.partial && next == npos) return;
            const string_view code = trim(s.substr(nl + 1, next == npos ? npos : next - nl - 1));
            nlohmann::ordered_json args;
            if (name == "python" || name == "ipython") {
                call.arguments = code_arguments(code);
            } else if (parse_json(code, args) && args.is_object()) {
                call.arguments = std::string(code);
            } else {
                o.r.content += s.substr(pos);
                return;
            }
            o.r.tool_calls.push_back(std::move(call));
            if (next == npos) return;
            pos = next + kSep.size();
            after_call = true;
            continue;
        }
        if (st == Scan::Incomplete) {
            if (o.partial) {
                call.arguments = std::string(s.substr(a));
                o.r.tool_calls.push_back(std::move(call));
            } else {
                o.r.content += s.substr(pos);
            }
            return;
        }
        nlohmann::ordered_json args;
        if (!parse_json(s.substr(a, end - a), args) || !args.is_object()) {
            o.r.content += s.substr(pos);
            return;
        }
        call.arguments = std::string(s.substr(a, end - a));
        o.r.tool_calls.push_back(std::move(call));
        after_call = true;
        const size_t r = skip_ws(s, end);
        if (starts_at(s, r, kSep)) {
            pos = r + kSep.size();
            continue;
        }
        if (r < s.size() && !(o.partial && kSep.substr(0, s.size() - r) == s.substr(r)))
            o.content_after_call(s.substr(r), {kSep});
        return;
    }
}

// command-r7b: thinking, action and response blocks.
void parse_command_r7b(Out &o, bool reasoning) {
    static constexpr string_view kThink = "<|START_THINKING|>", kThinkEnd = "<|END_THINKING|>",
                                 kAction = "<|START_ACTION|>", kActionEnd = "<|END_ACTION|>",
                                 kResp = "<|START_RESPONSE|>", kRespEnd = "<|END_RESPONSE|>";
    const string_view s = o.s;
    size_t pos = 0;
    for (;;) {
        string_view which;
        const size_t k = find_first(s, pos, {kThink, kAction, kResp}, which);
        if (k == npos) {
            o.content_at_end(s.substr(pos), {kThink, kAction, kResp});
            return;
        }
        o.content_before_marker(s.substr(pos, k - pos));
        const size_t b = k + which.size();
        if (which == kThink) {
            const size_t e = s.find(kThinkEnd, b);
            const string_view body = s.substr(b, e == npos ? npos : e - b);
            if (!reasoning) {
                if (e == npos) {
                    o.content_at_end(s.substr(k), {kThinkEnd});
                    return;
                }
                o.r.content += s.substr(k, e + kThinkEnd.size() - k);
            } else if (e == npos) {
                o.r.reasoning += o.partial ? held(ltrim(body), {kThinkEnd}) : trim(body);
                return;
            } else {
                o.r.reasoning += trim(body);
            }
            pos = e + kThinkEnd.size();
        } else if (which == kResp) {
            const size_t e = s.find(kRespEnd, b);
            if (e == npos) {
                o.content_at_end(s.substr(b), {kRespEnd});
                return;
            }
            o.r.content += s.substr(b, e - b);
            pos = e + kRespEnd.size();
        } else {
            const size_t q = skip_ws(s, b);
            if (q >= s.size()) {
                if (!o.partial) o.r.content += s.substr(k);
                return;
            }
            if (s[q] != '[') {
                o.r.content += s.substr(k);
                return;
            }
            std::vector<ToolCall> calls;
            size_t end = npos;
            if (!scan_call_array(s, q + 1, {"tool_name"}, {"parameters"}, o.partial, calls, end) ||
                (!o.partial && end == npos)) {
                o.r.content += s.substr(k);
                return;
            }
            for (ToolCall &c : calls) o.r.tool_calls.push_back(std::move(c));
            if (end == npos) return;
            const size_t r = skip_ws(s, end);
            if (starts_at(s, r, kActionEnd)) {
                pos = r + kActionEnd.size();
            } else {
                if (o.partial && kActionEnd.substr(0, s.size() - r) == s.substr(r)) return;
                pos = end;
            }
        }
    }
}

// gpt-oss: messages <|channel|>NAME[ to=functions.F]<|message|>BODY<|end|>|<|call|>|<|return|>.
void parse_gpt_oss(Out &o, bool reasoning) {
    static constexpr string_view kMsg = "<|message|>", kChannel = "<|channel|>", kStart = "<|start|>";
    const std::initializer_list<string_view> kEnds = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
    const string_view s = o.s;
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t t = skip_ws(s, pos);
        if (t >= s.size()) return;
        const string_view rest = s.substr(t);
        const bool header = starts_at(s, t, kChannel) || starts_at(s, t, kStart);
        if (!header) {
            if (o.partial &&
                (kChannel.substr(0, rest.size()) == rest || kStart.substr(0, rest.size()) == rest))
                return;
            o.content_at_end(s.substr(pos), {kChannel, kStart});
            return;
        }
        const size_t m = s.find(kMsg, t);
        if (m == npos) return;  // a header still being written (or never finished)
        const string_view head = s.substr(t, m - t);
        std::string channel, recipient;
        if (size_t c = head.find(kChannel); c != npos) {
            size_t e = c + kChannel.size();
            while (e < head.size() && !is_blank(head[e]) && head[e] != '<') ++e;
            channel = std::string(head.substr(c + kChannel.size(), e - c - kChannel.size()));
        }
        if (size_t r = head.find("to="); r != npos) {
            size_t e = r + 3;
            while (e < head.size() && !is_blank(head[e]) && head[e] != '<') ++e;
            recipient = std::string(head.substr(r + 3, e - r - 3));
            if (recipient.rfind("functions.", 0) == 0) recipient = recipient.substr(10);
        }
        const size_t b = m + kMsg.size();
        string_view which;
        const size_t e = find_first(s, b, kEnds, which);
        const string_view body = s.substr(b, e == npos ? npos : e - b);
        const bool ended = e != npos || !o.partial;
        if (!recipient.empty()) {
            ToolCall call;
            call.name = recipient;
            const string_view args = trim(body);
            nlohmann::ordered_json j;
            if (ended) {
                if (!parse_json(args, j) || !j.is_object()) {
                    o.r.content += body;
                } else {
                    call.arguments = std::string(args);
                    o.r.tool_calls.push_back(std::move(call));
                }
            } else {
                call.arguments = std::string(ltrim(body));
                o.r.tool_calls.push_back(std::move(call));
                return;
            }
        } else if (channel == "analysis" && reasoning) {
            if (!ended) {
                o.r.reasoning += held(body, kEnds);
                return;
            }
            o.r.reasoning += body;
        } else {
            if (!ended) {
                o.r.content += held(body, kEnds);
                return;
            }
            o.r.content += body;
        }
        if (e == npos) return;
        pos = which == kStart ? e : e + which.size();
    }
}

// generic: {"tool_call": {..}}, {"tool_calls": [..]} or {"response": ".."}.
void parse_generic(Out &o) {
    const string_view s = o.s;
    const size_t t = skip_ws(s, 0);
    if (t >= s.size()) {
        if (!o.partial) o.r.content += s;
        return;
    }
    if (s[t] != '{') {
        o.content_at_end(s, {});
        return;
    }
    const ObjectScan root = scan_object(s, t);
    nlohmann::ordered_json whole;
    if (root.status == Scan::Invalid ||
        (root.status == Scan::Complete && !parse_json(s.substr(t, root.end - t), whole))) {
        o.r.content += s;
        return;
    }
    if (root.status == Scan::Incomplete && !o.partial) {
        o.r.content += s;
        return;
    }
    if (const Field *f = root.find({"tool_call"})) {
        const CallScan c = scan_call(s, f->vstart, {"name"}, {"arguments", "parameters"});
        if (c.status == Scan::Complete || (o.partial && c.status == Scan::Incomplete && c.has_name))
            o.r.tool_calls.push_back(c.call);
        else if (!o.partial || c.status == Scan::Invalid)
            o.r.content = std::string(s);
        return;
    }
    if (const Field *f = root.find({"tool_calls"})) {
        std::vector<ToolCall> calls;
        size_t end = npos;
        if (f->vstart < s.size() && s[f->vstart] == '[' &&
            scan_call_array(s, f->vstart + 1, {"name"}, {"arguments", "parameters"}, o.partial, calls, end) &&
            (o.partial || end != npos))
            o.r.tool_calls = std::move(calls);
        else if (!o.partial || (f->complete))
            o.r.content = std::string(s);
        return;
    }
    if (const Field *f = root.find({"response"})) {
        if (f->vstart < s.size() && s[f->vstart] == '"') {
            o.r.content += decode_partial_string(s, f->vstart);
            return;
        }
        if (f->complete) o.r.content += s.substr(f->vstart, f->vend - f->vstart);
        return;
    }
    if (!o.partial) o.r.content += s;
}

void parse_format(Out &o, ToolFormat f, bool reasoning) {
    switch (f) {
        case ToolFormat::ContentOnly:
            o.r.content += o.s;
            return;
        case ToolFormat::Generic:
            parse_generic(o);
            return;
        case ToolFormat::Hermes:
            parse_hermes(o, false);
            return;
        case ToolFormat::Qwen3Coder:
            parse_hermes(o, true);
            return;
        case ToolFormat::Llama3:
            parse_llama3(o);
            return;
        case ToolFormat::MistralNemo:
            parse_marker_array(o, "[TOOL_CALLS]", {"name"}, {"arguments", "parameters"});
            return;
        case ToolFormat::FunctionaryV31:
            parse_functionary31(o);
            return;
        case ToolFormat::FunctionaryV32:
            parse_functionary32(o);
            return;
        case ToolFormat::CommandR7B:
            parse_command_r7b(o, reasoning);
            return;
        case ToolFormat::FireFunctionV2:
            parse_marker_array(o, " functools", {"name"}, {"arguments", "parameters"});
            return;
        case ToolFormat::GptOss:
            parse_gpt_oss(o, reasoning);
            return;
    }
}

}  // namespace

const char *tool_format_name(ToolFormat f) {
    switch (f) {
        case ToolFormat::ContentOnly:
            return "content-only";
        case ToolFormat::Generic:
            return "generic";
        case ToolFormat::Hermes:
            return "hermes";
        case ToolFormat::Qwen3Coder:
            return "qwen3-coder";
        case ToolFormat::Llama3:
            return "llama3";
        case ToolFormat::MistralNemo:
            return "mistral-nemo";
        case ToolFormat::FunctionaryV31:
            return "functionary-3.1";
        case ToolFormat::FunctionaryV32:
            return "functionary-3.2";
        case ToolFormat::CommandR7B:
            return "command-r7b";
        case ToolFormat::FireFunctionV2:
            return "firefunction-2";
        case ToolFormat::GptOss:
            return "gpt-oss";
    }
    return "?";
}

ToolFormat tool_format_detect(string_view src) {
    auto has = [&](string_view m) { return src.find(m) != npos; };
    if (has("<|channel|>")) return ToolFormat::GptOss;
    if (has("<|START_ACTION|>")) return ToolFormat::CommandR7B;
    if (has(">>>all")) return ToolFormat::FunctionaryV32;
    if (has(" functools[")) return ToolFormat::FireFunctionV2;
    if (has("<function=") && has("<|start_header_id|>")) return ToolFormat::FunctionaryV31;
    if (has("<tool_call>") && has("<function=") && has("<parameter=")) return ToolFormat::Qwen3Coder;
    if (has("<tool_call>")) return ToolFormat::Hermes;
    if (has("ipython") && has("<|start_header_id|>")) return ToolFormat::Llama3;
    if (has("[TOOL_CALLS]")) return ToolFormat::MistralNemo;
    return ToolFormat::Generic;
}

bool reasoning_format_from_name(string_view name, ReasoningFormat &out) {
    if (name == "none") {
        out = ReasoningFormat::None;
        return true;
    }
    if (name == "deepseek" || name == "auto") {
        out = ReasoningFormat::DeepSeek;
        return true;
    }
    return false;
}

bool prompt_opens_thinking(string_view prompt) {
    const string_view p = rtrim(prompt);
    static constexpr string_view kOpen = "<think>";
    return p.size() >= kOpen.size() && p.substr(p.size() - kOpen.size()) == kOpen;
}

ChatParsed chat_parse(string_view text, const ChatParseOptions &opts, bool partial) {
    Out o{text, partial, {}};
    const bool reasoning = opts.reasoning != ReasoningFormat::None;
    if (opts.format == ToolFormat::CommandR7B || opts.format == ToolFormat::GptOss || !reasoning) {
        parse_format(o, opts.format, reasoning);
        return std::move(o.r);
    }
    static constexpr string_view kOpen = "<think>", kClose = "</think>";
    const size_t t = skip_ws(text, 0);
    size_t start = npos;
    if (starts_at(text, t, kOpen))
        start = t + kOpen.size();
    else if (opts.thinking_forced_open)
        start = 0;
    else if (partial && kOpen.substr(0, text.size() - t) == text.substr(t))
        return {};  // may still become <think>
    if (start != npos) {
        const size_t e = text.find(kClose, start);
        const string_view body = text.substr(start, e == npos ? npos : e - start);
        if (e == npos) {
            o.r.reasoning = partial ? std::string(held(ltrim(body), {kClose})) : std::string(trim(body));
            return std::move(o.r);
        }
        o.r.reasoning = std::string(trim(body));
        const string_view rest = text.substr(e + kClose.size());
        o.s = rest.substr(std::min(skip_ws(rest, 0), rest.size()));
    }
    parse_format(o, opts.format, reasoning);
    return std::move(o.r);
}

// ---- streaming ----

ChatStreamParser::ChatStreamParser(ChatParseOptions opts, std::function<std::string()> make_id)
    : opts_(opts), make_id_(std::move(make_id)) {}

ChatDelta ChatStreamParser::push(string_view piece) {
    text_ += piece;
    return advance(chat_parse(text_, opts_, true));
}

ChatDelta ChatStreamParser::finish() {
    return advance(chat_parse(text_, opts_, false));
}

ChatDelta ChatStreamParser::advance(const ChatParsed &now) {
    ChatDelta d;
    auto grow = [](std::string &sent, const std::string &now_text, std::string &delta) {
        if (now_text.size() > sent.size() && now_text.compare(0, sent.size(), sent) == 0) {
            delta = now_text.substr(sent.size());
            sent = now_text;
        }
    };
    grow(sent_.reasoning, now.reasoning, d.reasoning);
    grow(sent_.content, now.content, d.content);
    for (size_t i = 0; i < now.tool_calls.size(); ++i) {
        const ToolCall &c = now.tool_calls[i];
        if (i >= sent_.tool_calls.size()) {
            ToolCall added = c;
            added.id = make_id_ ? make_id_() : "";
            ToolCallDelta td;
            td.index = static_cast<int>(i);
            td.id = added.id;
            td.name = added.name;
            td.arguments = added.arguments;
            sent_.tool_calls.push_back(std::move(added));
            d.tool_calls.push_back(std::move(td));
            continue;
        }
        ToolCall &sent = sent_.tool_calls[i];
        if (sent.name != c.name) continue;
        ToolCallDelta td;
        td.index = static_cast<int>(i);
        grow(sent.arguments, c.arguments, td.arguments);
        if (!td.arguments.empty()) d.tool_calls.push_back(std::move(td));
    }
    return d;
}

bool template_wants_string_arguments(
    const std::function<std::string(const nlohmann::ordered_json &messages)> &render) {
    const std::string args = R"({"arg1": "some_value"})";
    auto conversation = [&](const nlohmann::ordered_json &arguments) {
        nlohmann::ordered_json call = {{"id", "call00001"},
                                       {"type", "function"},
                                       {"function", {{"name", "tool_name"}, {"arguments", arguments}}}};
        return nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Hey"}},
                                              {{"role", "assistant"},
                                               {"content", ""},
                                               {"tool_calls", nlohmann::ordered_json::array({call})}}});
    };
    try {
        const std::string out = render(conversation(args));
        return out.find(R"("arg1": "some_value")") != npos;
    } catch (const std::exception &) {
        return false;
    }
}

std::string tool_call_id(ToolFormat f, uint64_t random) {
    static const char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const int n = f == ToolFormat::MistralNemo ? 9 : 24;
    std::string id = f == ToolFormat::MistralNemo ? "" : "call_";
    uint64_t x = random;
    for (int i = 0; i < n; ++i) {
        // splitmix64 steps: each character from fresh bits.
        x += 0x9E3779B97F4A7C15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        id += kAlnum[z % 62];
    }
    return id;
}

}  // namespace lctx::chat
