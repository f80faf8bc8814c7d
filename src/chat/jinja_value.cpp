#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace lctx::jinja {

const Value *CallArgs::kwarg(const std::string &name) const {
    for (const auto &[k, v] : kw)
        if (k == name) return &v;
    return nullptr;
}

const Value *CallArgs::get(size_t i, const std::string &name) const {
    if (i < pos.size()) return &pos[i];
    return kwarg(name);
}

Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}
Value::Value(bool b) : kind_(Kind::Bool), b_(b) {}
Value::Value(int64_t v) : kind_(Kind::Int), i_(v) {}
Value::Value(double v) : kind_(Kind::Float), f_(v) {}
Value::Value(std::string s) : kind_(Kind::String), s_(std::move(s)) {}

Value Value::array(Array a) {
    Value v;
    v.kind_ = Kind::Array;
    v.arr_ = std::make_shared<Array>(std::move(a));
    return v;
}

Value Value::object(Object o) {
    Value v;
    v.kind_ = Kind::Object;
    v.obj_ = std::make_shared<Object>(std::move(o));
    return v;
}

Value Value::function(Function f) {
    Value v;
    v.kind_ = Kind::Function;
    v.fn_ = std::make_shared<Function>(std::move(f));
    return v;
}

const Value *Value::find(const std::string &key) const {
    if (kind_ != Kind::Object) return nullptr;
    for (const auto &[k, v] : *obj_)
        if (k == key) return &v;
    return nullptr;
}

void Value::set(const std::string &key, Value v) {
    for (auto &[k, old] : *obj_)
        if (k == key) {
            old = std::move(v);
            return;
        }
    obj_->emplace_back(key, std::move(v));
}

void Value::set_key(const Value &key, Value v) {
    if (key.is_string()) return set(key.str(), std::move(v));
    Key k(key.to_string());
    k.typed = std::make_shared<const Value>(key);
    for (auto &[old_k, old] : *obj_)
        if (old_k == k) {
            old = std::move(v);
            return;
        }
    obj_->emplace_back(std::move(k), std::move(v));
}

Value key_value(const Key &k) {
    return k.typed ? *k.typed : Value(static_cast<const std::string &>(k));
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return b_;
        case Kind::Int:
            return i_ != 0;
        case Kind::Float:
            return f_ != 0;
        case Kind::String:
            return !s_.empty();
        case Kind::Array:
            return !arr_->empty();
        case Kind::Object:
            return !obj_->empty();
        case Kind::Function:
            return true;
    }
    return false;
}

const char *Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined:
            return "undefined";
        case Kind::None:
            return "none";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::String:
            return "string";
        case Kind::Array:
            return "list";
        case Kind::Object:
            return "dict";
        case Kind::Function:
            return "function";
    }
    return "?";
}

std::string float_repr(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    // The shortest digits that read back to v, laid out as Python's repr does: positional for exponents
    // from -4 to 15 ("1e+16" but "1000000000000000.0", "0.0001" but "1e-05").
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    const std::string sci(buf, res.ptr);
    const size_t e = sci.find('e');
    std::string mant = sci.substr(0, e);
    const int exp = std::atoi(sci.c_str() + e + 1);
    std::string sign;
    if (mant[0] == '-') {
        sign = "-";
        mant.erase(0, 1);
    }
    std::string digits;
    for (char c : mant)
        if (c != '.') digits += c;
    const int nd = static_cast<int>(digits.size());
    if (exp >= -4 && exp < 16) {
        std::string out;
        if (exp < 0) {
            out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        } else if (exp >= nd - 1) {
            out = digits + std::string(static_cast<size_t>(exp - (nd - 1)), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exp + 1)) + "." +
                  digits.substr(static_cast<size_t>(exp + 1));
        }
        return sign + out;
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return sign + digits.substr(0, 1) + (nd > 1 ? "." + digits.substr(1) : "") + ebuf;
}

static std::string repr_string(const std::string &s) {
    // Python prefers single quotes and switches to double quotes when the text holds a single quote only.
    const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
    const char q = has_single && !has_double ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
        if (c == q || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else {
            out += c;
        }
    }
    return out + q;
}

std::string Value::repr() const {
    switch (kind_) {
        case Kind::String:
            return repr_string(s_);
        case Kind::Array: {
            std::string out = "[";
            for (size_t i = 0; i < arr_->size(); ++i) out += (i ? ", " : "") + (*arr_)[i].repr();
            return out + "]";
        }
        case Kind::Object: {
            std::string out = "{";
            bool first = true;
            for (const auto &[k, v] : *obj_) {
                out += (first ? "" : ", ") + key_value(k).repr() + ": " + v.repr();
                first = false;
            }
            return out + "}";
        }
        default:
            return to_string();
    }
}

std::string Value::to_string() const {
    switch (kind_) {
        case Kind::Undefined:
            return "";
        case Kind::None:
            return "None";
        case Kind::Bool:
            return b_ ? "True" : "False";
        case Kind::Int:
            return std::to_string(i_);
        case Kind::Float:
            return float_repr(f_);
        case Kind::String:
            return s_;
        case Kind::Array:
        case Kind::Object:
            return repr();
        case Kind::Function:
            return "<function>";
    }
    return "";
}

bool values_equal(const Value &a, const Value &b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
        return a.as_float() == b.as_float();
    }
    // Python: True == 1.
    if (a.is_bool() && b.is_number()) return (a.as_bool() ? 1.0 : 0.0) == b.as_float();
    if (b.is_bool() && a.is_number()) return (b.as_bool() ? 1.0 : 0.0) == a.as_float();
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::Bool:
            return a.as_bool() == b.as_bool();
        case Value::Kind::String:
            return a.str() == b.str();
        case Value::Kind::Array: {
            if (a.arr().size() != b.arr().size()) return false;
            for (size_t i = 0; i < a.arr().size(); ++i)
                if (!values_equal(a.arr()[i], b.arr()[i])) return false;
            return true;
        }
        case Value::Kind::Object: {
            if (a.obj().size() != b.obj().size()) return false;
            for (const auto &[k, v] : a.obj()) {
                const Value *o = b.find(k);
                if (!o || !values_equal(v, *o)) return false;
            }
            return true;
        }
        default:
            return &a.fn() == &b.fn();
    }
}

int values_compare(const Value &a, const Value &b) {
    if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
        const double x = a.is_bool() ? a.as_bool() : a.as_float(),
                     y = b.is_bool() ? b.as_bool() : b.as_float();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.str().compare(b.str()) < 0 ? -1 : a.str() == b.str() ? 0 : 1;
    if (a.is_array() && b.is_array()) {
        for (size_t i = 0; i < a.arr().size() && i < b.arr().size(); ++i)
            if (int c = values_compare(a.arr()[i], b.arr()[i])) return c;
        return a.arr().size() < b.arr().size() ? -1 : a.arr().size() > b.arr().size() ? 1 : 0;
    }
    throw JinjaError(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
}

static void json_string(std::string &out, const std::string &s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

static void json_write(std::string &out, const Value &v, int indent, int depth) {
    auto newline = [&](int d) {
        out += '\n';
        out.append(static_cast<size_t>(indent * d), ' ');
    };
    switch (v.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            out += "null";
            return;
        case Value::Kind::Bool:
            out += v.as_bool() ? "true" : "false";
            return;
        case Value::Kind::Int:
            out += std::to_string(v.as_int());
            return;
        case Value::Kind::Float:
            out += float_repr(v.as_float());
            return;
        case Value::Kind::String:
            json_string(out, v.str());
            return;
        case Value::Kind::Function:
            out += "null";
            return;
        case Value::Kind::Array: {
            if (v.arr().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < v.arr().size(); ++i) {
                if (i) out += indent >= 0 ? "," : ", ";
                if (indent >= 0) newline(depth + 1);
                json_write(out, v.arr()[i], indent, depth + 1);
            }
            if (indent >= 0) newline(depth);
            out += ']';
            return;
        }
        case Value::Kind::Object: {
            if (v.obj().empty()) {
                out += "{}";
                return;
            }
            out += '{';
            bool first = true;
            for (const auto &[k, e] : v.obj()) {
                if (!first) out += indent >= 0 ? "," : ", ";
                first = false;
                if (indent >= 0) newline(depth + 1);
                json_string(out, k);
                out += ": ";
                json_write(out, e, indent, depth + 1);
            }
            if (indent >= 0) newline(depth);
            out += '}';
            return;
        }
    }
}

std::string to_json(const Value &v, int indent) {
    std::string out;
    json_write(out, v, indent, 0);
    return out;
}

}  // namespace lctx::jinja
