// GGUF v3 writer: header, metadata in insertion order, tensor infos, then the tensor data, each tensor
// starting on a multiple of `general.alignment` (the standard layout every GGUF reader expects).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "gguf/gguf.h"
#include "gguf/gguf_header.h"
#include "util/atomic_file.h"

namespace lctx::gguf {

namespace {

class ByteSink {
  public:
    explicit ByteSink(std::vector<uint8_t> &out) : out_(out) {}

    template <typename T>
    void put(T v) {
        const size_t at = out_.size();
        out_.resize(at + sizeof(T));
        std::memcpy(out_.data() + at, &v, sizeof(T));
    }
    void put_string(const std::string &s) {
        put<uint64_t>(s.size());
        out_.insert(out_.end(), s.begin(), s.end());
    }
    void pad_to(size_t alignment) {
        while (out_.size() % alignment != 0) out_.push_back(0);
    }

    void put_value(const Value &v) {
        switch (v.type) {
            case ValueType::UINT8:
                put<uint8_t>(static_cast<uint8_t>(v.scalar.u64));
                break;
            case ValueType::INT8:
                put<int8_t>(static_cast<int8_t>(v.scalar.i64));
                break;
            case ValueType::UINT16:
                put<uint16_t>(static_cast<uint16_t>(v.scalar.u64));
                break;
            case ValueType::INT16:
                put<int16_t>(static_cast<int16_t>(v.scalar.i64));
                break;
            case ValueType::UINT32:
                put<uint32_t>(static_cast<uint32_t>(v.scalar.u64));
                break;
            case ValueType::INT32:
                put<int32_t>(static_cast<int32_t>(v.scalar.i64));
                break;
            case ValueType::UINT64:
                put<uint64_t>(v.scalar.u64);
                break;
            case ValueType::INT64:
                put<int64_t>(v.scalar.i64);
                break;
            case ValueType::FLOAT32:
                put<float>(static_cast<float>(v.scalar.f64));
                break;
            case ValueType::FLOAT64:
                put<double>(v.scalar.f64);
                break;
            case ValueType::BOOL:
                put<uint8_t>(v.scalar.b ? 1 : 0);
                break;
            case ValueType::STRING:
                put_string(v.str);
                break;
            case ValueType::ARRAY:
                put<uint32_t>(static_cast<uint32_t>(v.array_type));
                put<uint64_t>(v.array_size());
                if (v.array_type == ValueType::ARRAY) {
                    for (const Value &e : v.array_values) put_value(e);
                } else if (v.array_type == ValueType::STRING) {
                    for (size_t i = 0; i < v.array_size(); ++i) put_string(std::string(v.array_string(i)));
                } else if (v.array_view || v.array_type == ValueType::BOOL) {
                    for (size_t i = 0; i < v.array_size(); ++i) put_value(v.array_at(i));  // bools as 0 or 1
                } else {
                    out_.insert(out_.end(), v.array_bytes.begin(),
                                v.array_bytes.end());  // already file bytes
                }
                break;
        }
    }

  private:
    std::vector<uint8_t> &out_;
};

// Checks a value the writer is given; the reader would refuse what this refuses.
void check_value(const std::string &key, const Value &v, int depth) {
    if (!value_type_is_known(static_cast<uint32_t>(v.type)))
        throw Error("gguf writer: key '" + key + "' has an unknown value type");
    if (v.type != ValueType::ARRAY) return;
    if (depth >= kMaxArrayDepth) throw Error("gguf writer: key '" + key + "' nests arrays too deeply");
    if (!value_type_is_known(static_cast<uint32_t>(v.array_type)))
        throw Error("gguf writer: key '" + key + "' has an unknown array element type");
    for (const Value &e : v.array_values) {
        if (e.type != v.array_type)
            throw Error("gguf writer: key '" + key + "' mixes " + value_type_name(e.type) +
                        " into an array of " + value_type_name(v.array_type));
        check_value(key, e, depth + 1);
    }
    if (v.array_type != ValueType::ARRAY && !v.array_values.empty())
        throw Error("gguf writer: key '" + key + "' mixes arrays into an array of " +
                    value_type_name(v.array_type));
}

}  // namespace

void Writer::set(const std::string &key, Value v) {
    check_value(key, v, 0);
    for (KeyValue &kv : kv_)
        if (kv.key == key) {
            kv.value = std::move(v);  // replacing keeps the original position
            return;
        }
    kv_.push_back(KeyValue{key, std::move(v)});
}

void Writer::set_u32(const std::string &key, uint32_t v) {
    set(key, Value::from_uint(ValueType::UINT32, v));
}
void Writer::set_i32(const std::string &key, int32_t v) {
    set(key, Value::from_int(ValueType::INT32, v));
}
void Writer::set_u64(const std::string &key, uint64_t v) {
    set(key, Value::from_uint(ValueType::UINT64, v));
}
void Writer::set_f32(const std::string &key, float v) {
    set(key, Value::from_float(ValueType::FLOAT32, v));
}
void Writer::set_bool(const std::string &key, bool v) {
    set(key, Value::from_bool(v));
}
void Writer::set_string(const std::string &key, const std::string &v) {
    set(key, Value::from_string(v));
}

void Writer::set_string_array(const std::string &key, const std::vector<std::string> &v) {
    std::vector<Value> elems;
    elems.reserve(v.size());
    for (const std::string &s : v) elems.push_back(Value::from_string(s));
    set(key, Value::from_array(ValueType::STRING, std::move(elems)));
}

void Writer::set_f32_array(const std::string &key, const std::vector<float> &v) {
    std::vector<Value> elems;
    elems.reserve(v.size());
    for (float f : v) elems.push_back(Value::from_float(ValueType::FLOAT32, f));
    set(key, Value::from_array(ValueType::FLOAT32, std::move(elems)));
}

void Writer::set_i32_array(const std::string &key, const std::vector<int32_t> &v) {
    std::vector<Value> elems;
    elems.reserve(v.size());
    for (int32_t i : v) elems.push_back(Value::from_int(ValueType::INT32, i));
    set(key, Value::from_array(ValueType::INT32, std::move(elems)));
}

void Writer::add_tensor(const std::string &name, GgmlType type, const std::vector<int64_t> &ne,
                        const void *data, size_t nbytes) {
    const std::string where = "gguf writer: tensor '" + name + "': ";
    if (!type_is_known(static_cast<int32_t>(type))) throw Error(where + "unknown tensor type");
    if (ne.empty() || ne.size() > static_cast<size_t>(kMaxDims))
        throw Error(where + std::to_string(ne.size()) + " dimensions (1.." + std::to_string(kMaxDims) + ")");
    for (int64_t d : ne)
        if (d <= 0) throw Error(where + "dimension " + std::to_string(d) + " must be positive");
    for (const PendingTensor &t : tensors_)
        if (t.name == name) throw Error(where + "added twice");
    uint64_t expect = row_size(type, ne[0]);  // throws when ne[0] is not a whole number of blocks
    for (size_t d = 1; d < ne.size(); ++d)
        if (__builtin_mul_overflow(expect, static_cast<uint64_t>(ne[d]), &expect))
            throw Error(where + "byte size overflows");
    if (expect != nbytes)
        throw Error(where + std::to_string(nbytes) + " bytes given, " + std::to_string(expect) + " expected");
    const uint8_t *p = static_cast<const uint8_t *>(data);
    tensors_.push_back(PendingTensor{name, type, ne, std::vector<uint8_t>(p, p + nbytes)});
}

std::vector<uint8_t> header_bytes(const std::vector<KeyValue> &kv, const std::vector<TensorEntry> &tensors,
                                  size_t alignment) {
    std::vector<uint8_t> out;
    ByteSink w(out);
    w.put<uint32_t>(kGgufMagic);
    w.put<uint32_t>(kGgufVersion);
    w.put<uint64_t>(tensors.size());
    w.put<uint64_t>(kv.size());
    for (const KeyValue &e : kv) {
        w.put_string(e.key);
        w.put<uint32_t>(static_cast<uint32_t>(e.value.type));
        w.put_value(e.value);
    }
    uint64_t offset = 0;  // relative to the data section
    for (const TensorEntry &t : tensors) {
        w.put_string(t.name);
        w.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne) w.put<uint64_t>(static_cast<uint64_t>(d));
        w.put<int32_t>(static_cast<int32_t>(t.type));
        w.put<uint64_t>(offset);
        offset += (t.nbytes + alignment - 1) / alignment * alignment;
    }
    // No data section without tensors: vocab-only files end right after the metadata.
    if (!tensors.empty()) w.pad_to(alignment);
    return out;
}

std::vector<uint8_t> Writer::to_bytes() const {
    size_t alignment = kDefaultAlignment;
    for (const KeyValue &kv : kv_)
        if (kv.key == "general.alignment") {
            const std::optional<int64_t> a = kv.value.as_int();
            if (!a || *a <= 0 || (*a & (*a - 1)) != 0)
                throw Error("gguf writer: general.alignment must be a non-zero power of two");
            alignment = static_cast<size_t>(*a);
        }
    std::vector<TensorEntry> dir;
    for (const PendingTensor &t : tensors_) dir.push_back(TensorEntry{t.name, t.type, t.ne, t.data.size()});
    std::vector<uint8_t> out = header_bytes(kv_, dir, alignment);
    ByteSink w(out);
    for (const PendingTensor &t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        w.pad_to(alignment);
    }
    return out;
}

void Writer::write_file(const std::string &path) const {
    const std::vector<uint8_t> bytes = to_bytes();
    AtomicFile f(path);  // whole or not at all; never over a device or FIFO
    f.write(bytes.data(), bytes.size());
    f.commit();
}

}  // namespace lctx::gguf
