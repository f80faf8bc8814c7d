// GGUF metadata values: type names, conversions and display text.
#include <cstdint>
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
            for (size_t i = 0; i < array.size(); ++i) {
                if (i) out += ", ";
                const Value &e = array[i];
                out += e.type == ValueType::STRING ? quote(e.str) : e.to_display_string();
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
    out.array = std::move(elems);
    return out;
}

}  // namespace lctx::gguf
