// GGUF metadata values: type names, conversions and display text.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "gguf/gguf.h"

namespace lctx::gguf {

const char *value_type_name(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
            return "u8";
        case ValueType::INT8:
            return "i8";
        case ValueType::UINT16:
            return "u16";
        case ValueType::INT16:
            return "i16";
        case ValueType::UINT32:
            return "u32";
        case ValueType::INT32:
            return "i32";
        case ValueType::FLOAT32:
            return "f32";
        case ValueType::BOOL:
            return "bool";
        case ValueType::STRING:
            return "str";
        case ValueType::ARRAY:
            return "arr";
        case ValueType::UINT64:
            return "u64";
        case ValueType::INT64:
            return "i64";
        case ValueType::FLOAT64:
            return "f64";
    }
    return "unknown";
}

bool value_type_is_known(uint32_t id) {
    return id <= static_cast<uint32_t>(ValueType::FLOAT64);
}

size_t value_type_size(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::BOOL:
            return 1;
        case ValueType::UINT16:
        case ValueType::INT16:
            return 2;
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::FLOAT32:
            return 4;
        case ValueType::UINT64:
        case ValueType::INT64:
        case ValueType::FLOAT64:
            return 8;
        case ValueType::STRING:
        case ValueType::ARRAY:
            return 0;
    }
    return 0;
}

namespace {

bool is_unsigned(ValueType t) {
    return t == ValueType::UINT8 || t == ValueType::UINT16 || t == ValueType::UINT32 ||
           t == ValueType::UINT64;
}
bool is_signed(ValueType t) {
    return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}
bool is_float(ValueType t) {
    return t == ValueType::FLOAT32 || t == ValueType::FLOAT64;
}

// Mirrors how the format's reference tool prints an array element: strings quoted (inner quotes escaped).
std::string quote(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

}  // namespace

std::optional<int64_t> Value::as_int() const {
    if (is_unsigned(type)) {
        if (scalar.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(scalar.u64);
    }
    if (is_signed(type)) return scalar.i64;
    if (type == ValueType::BOOL) return scalar.b ? 1 : 0;
    return std::nullopt;
}

std::optional<double> Value::as_float() const {
    if (is_float(type)) return scalar.f64;
    if (is_unsigned(type)) return static_cast<double>(scalar.u64);
    if (is_signed(type)) return static_cast<double>(scalar.i64);
    return std::nullopt;
}

std::optional<std::string> Value::as_string() const {
    if (type == ValueType::STRING) return str;
    return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
    if (type == ValueType::BOOL) return scalar.b;
    // Some converters store flags as 0/1 integers.
    if (is_unsigned(type) && scalar.u64 <= 1) return scalar.u64 == 1;
    if (is_signed(type) && (scalar.i64 == 0 || scalar.i64 == 1)) return scalar.i64 == 1;
    return std::nullopt;
}

std::string Value::to_display_string() const {
    if (is_unsigned(type)) return std::to_string(scalar.u64);
    if (is_signed(type)) return std::to_string(scalar.i64);
    if (is_float(type)) return std::to_string(scalar.f64);
    switch (type) {
        case ValueType::BOOL:
            return scalar.b ? "true" : "false";
        case ValueType::STRING:
            return str;
        case ValueType::ARRAY: {
            std::string out = "[";
            for (size_t i = 0; i < array_size(); ++i) {
                if (i) out += ", ";
                if (array_type == ValueType::STRING)
                    out += quote(std::string(array_string(i)));
                else
                    out += array_at(i).to_display_string();
            }
            out += "]";
            return out;
        }
        default:
            return "unknown";
    }
}

Value Value::from_uint(ValueType t, uint64_t v) {
    if (!is_unsigned(t)) throw Error(std::string("from_uint: ") + value_type_name(t) + " is not unsigned");
    Value out;
    out.type = t;
    out.scalar.u64 = v;
    return out;
}

Value Value::from_int(ValueType t, int64_t v) {
    if (!is_signed(t)) throw Error(std::string("from_int: ") + value_type_name(t) + " is not signed");
    Value out;
    out.type = t;
    out.scalar.i64 = v;
    return out;
}

Value Value::from_float(ValueType t, double v) {
    if (!is_float(t)) throw Error(std::string("from_float: ") + value_type_name(t) + " is not a float type");
    Value out;
    out.type = t;
    out.scalar.f64 = t == ValueType::FLOAT32 ? static_cast<double>(static_cast<float>(v)) : v;
    return out;
}

Value Value::from_bool(bool v) {
    Value out;
    out.type = ValueType::BOOL;
    out.scalar.b = v;
    return out;
}

Value Value::from_string(std::string v) {
    Value out;
    out.type = ValueType::STRING;
    out.str = std::move(v);
    return out;
}

Value Value::from_array(ValueType elem, std::vector<Value> elems) {
    for (const Value &e : elems)
        if (e.type != elem)
            throw Error(std::string("from_array: element of type ") + value_type_name(e.type) +
                        " in an array of " + value_type_name(elem));
    Value out;
    out.type = ValueType::ARRAY;
    out.array_type = elem;
    for (const Value &e : elems) out.array_push(e);
    return out;
}

Value::Value(const Value &o)
    : type(o.type),
      scalar(o.scalar),
      str(o.str),
      array_type(o.array_type),
      array_bytes(o.array_bytes),
      array_ends(o.array_ends),
      array_values(o.array_values) {
    if (!o.array_view) return;
    // own the viewed elements
    if (array_type == ValueType::STRING) {
        for (size_t i = 0; i < o.array_size(); ++i) {
            const std::string_view e = o.array_string(i);
            array_bytes.insert(array_bytes.end(), e.begin(), e.end());
            array_ends.push_back(array_bytes.size());
        }
    } else {
        array_bytes.assign(o.array_view, o.array_view + o.array_view_count * value_type_size(array_type));
        if (array_type == ValueType::BOOL)
            for (uint8_t &b : array_bytes) b = b != 0 ? 1 : 0;
    }
}

Value &Value::operator=(const Value &o) {
    if (this != &o) *this = Value(o);
    return *this;
}

size_t Value::array_size() const {
    if (array_view) return static_cast<size_t>(array_view_count);
    if (array_type == ValueType::STRING) return array_ends.size();
    if (array_type == ValueType::ARRAY) return array_values.size();
    return array_bytes.size() / value_type_size(array_type);
}

std::string_view Value::array_string(size_t i) const {
    if (array_view) {
        const uint8_t *p = array_view + array_offsets[i];
        uint64_t len;
        std::memcpy(&len, p, 8);
        return {reinterpret_cast<const char *>(p + 8), static_cast<size_t>(len)};
    }
    const uint64_t b = i == 0 ? 0 : array_ends[i - 1];
    return {reinterpret_cast<const char *>(array_bytes.data()) + b, static_cast<size_t>(array_ends[i] - b)};
}

// Scalars are little-endian in the file, as on the hosts lctx runs on: an element's bytes are the low bytes
// of its 64-bit value.
Value Value::array_at(size_t i) const {
    if (array_type == ValueType::ARRAY) return array_values[i];
    if (array_type == ValueType::STRING) return from_string(std::string(array_string(i)));
    const size_t n = value_type_size(array_type);
    const uint8_t *p = (array_view ? array_view : array_bytes.data()) + i * n;
    Value out;
    out.type = array_type;
    if (array_type == ValueType::BOOL) {
        out.scalar.b = p[0] != 0;
    } else if (array_type == ValueType::FLOAT32) {
        float v;
        std::memcpy(&v, p, 4);
        out.scalar.f64 = v;
    } else if (array_type == ValueType::FLOAT64) {
        std::memcpy(&out.scalar.f64, p, 8);
    } else {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        if (is_signed(array_type) && n < 8) {  // sign-extend
            const unsigned shift = static_cast<unsigned>(64 - 8 * n);
            out.scalar.i64 = static_cast<int64_t>(v << shift) >> shift;
        } else {
            out.scalar.u64 = v;
        }
    }
    return out;
}

void Value::array_push(const Value &e) {
    if (array_view) *this = Value(*this);  // own the viewed elements first
    if (e.type != array_type)
        throw Error(std::string("array_push: element of type ") + value_type_name(e.type) +
                    " in an array of " + value_type_name(array_type));
    auto put = [&](const void *v, size_t n) {
        const auto *b = static_cast<const uint8_t *>(v);
        array_bytes.insert(array_bytes.end(), b, b + n);
    };
    if (e.type == ValueType::ARRAY) {
        array_values.push_back(e);
    } else if (e.type == ValueType::STRING) {
        put(e.str.data(), e.str.size());
        array_ends.push_back(array_bytes.size());
    } else if (e.type == ValueType::BOOL) {
        const uint8_t v = e.scalar.b ? 1 : 0;
        put(&v, 1);
    } else if (e.type == ValueType::FLOAT32) {
        const auto v = static_cast<float>(e.scalar.f64);
        put(&v, 4);
    } else {
        put(&e.scalar, value_type_size(e.type));  // the low bytes of the 64-bit value (or the double)
    }
}

}  // namespace lctx::gguf
