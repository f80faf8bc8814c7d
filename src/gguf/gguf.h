// GGUF files: a validating reader over a read-only mmap (or a memory buffer) and a writer.
// The reader never reads outside the mapped bytes: every count, length, dimension and offset is checked
// before use, and a malformed file is a lctx::Error (GgufError) that names what is wrong and where.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/types.h"
#include "util/error.h"

namespace lctx::gguf {

class GgufError : public Error {
  public:
    using Error::Error;
};

enum class ValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};
const char *value_type_name(ValueType t);

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kGgufVersion = 3;         // what the writer produces
constexpr size_t kDefaultAlignment = 32;
constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are refused
constexpr int kMaxDims = 4;
// True for ids 0..12.
bool value_type_is_known(uint32_t id);
// Bytes of one scalar of this type in the file; 0 for STRING and ARRAY.
size_t value_type_size(ValueType t);

// One metadata value. Scalars live in the fields below; strings in `str`; arrays in `array`
// (element type `array_type`; nested arrays are arrays of Value).
struct Value {
    ValueType type = ValueType::UINT8;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        bool b;
    } scalar{};
    std::string str;
    // Arrays keep their elements compactly (a 50,000-token vocabulary in a few hundred KiB, not one Value per
    // token): scalars packed in array_bytes, value_type_size(array_type) bytes each, little-endian (a bool as
    // 0 or 1); strings concatenated in array_bytes, element i ending at array_ends[i]; arrays in
    // array_values.
    ValueType array_type = ValueType::UINT8;
    std::vector<uint8_t> array_bytes;
    std::vector<uint64_t> array_ends;
    std::vector<Value> array_values;
    // Or, for a scalar or string array the reader parsed, a view of the file's own bytes (the file keeps
    // them): array_view_count elements at array_view, packed scalars or length-prefixed strings (element i's
    // 8-byte length at array_view + array_offsets[i]). A copy of such a value owns its elements.
    const uint8_t *array_view = nullptr;
    uint64_t array_view_count = 0;
    std::vector<uint32_t> array_offsets;

    Value() = default;
    Value(const Value &o);
    Value &operator=(const Value &o);
    Value(Value &&) noexcept = default;
    Value &operator=(Value &&) noexcept = default;

    size_t array_size() const;
    Value array_at(size_t i) const;                 // element i as a Value (i < array_size())
    std::string_view array_string(size_t i) const;  // element i of an array of strings
    // Appends e (of type array_type) to this array.
    void array_push(const Value &e);

    // Conversions that succeed only when the value holds something representable:
    std::optional<int64_t> as_int() const;   // any integer type (u64 above INT64_MAX fails), bool
    std::optional<double> as_float() const;  // float32/float64 and integers
    std::optional<std::string> as_string() const;
    std::optional<bool> as_bool() const;    // bool, or an integer holding 0 or 1
    std::string to_display_string() const;  // for `llama_model_meta_val_str` and diagnostics

    // Constructors for the writer and tests. from_uint/from_int/from_float take the exact scalar type
    // (from_float(FLOAT32, x) rounds x to float).
    static Value from_uint(ValueType t, uint64_t v);
    static Value from_int(ValueType t, int64_t v);
    static Value from_float(ValueType t, double v);
    static Value from_bool(bool v);
    static Value from_string(std::string v);
    static Value from_array(ValueType elem, std::vector<Value> elems);
};

struct KeyValue {
    std::string key;
    Value value;
};

struct TensorInfo {
    std::string name;
    std::vector<int64_t> ne;  // dimensions, innermost first (ne[0] is the row length)
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;  // relative to the start of the data section
    size_t nbytes = 0;    // checked: fits in the file
    uint32_t part = 0;    // the split file holding the data (0: the first; see File::join)
    int64_t n_elements() const;
};

class File {
  public:
    // Maps and validates a file; throws GgufError with the path and the failing field.
    static std::unique_ptr<File> open(const std::string &path);
    // Parses a copy of the given bytes (tests, fuzzing).
    static std::unique_ptr<File> from_buffer(const void *data, size_t size);
    ~File();
    File(const File &) = delete;
    File &operator=(const File &) = delete;

    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }
    size_t data_offset() const { return data_offset_; }  // byte offset of the data section
    size_t size() const { return size_; }                // bytes of the whole file
    const uint8_t *bytes() const { return base_; }

    // The file's own keys, as stored (overrides below do not show here, as b4748's metadata queries).
    const std::vector<KeyValue> &metadata() const { return kv_; }
    // A key's value: an override when one was set for it, else the file's.
    const Value *find(std::string_view key) const;
    // Values that replace (or add) scalar keys for every later lookup through find() and the typed getters
    // (llama_model_params.kv_overrides); metadata() keeps the file's own. Throws GgufError for an array value.
    void set_overrides(std::vector<KeyValue> overrides);
    // Typed getters: nullopt when missing; throw GgufError when present with an incompatible type.
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    // Array getters (nullopt when missing; GgufError when not an array of a compatible element type).
    std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
    std::optional<std::vector<float>> get_float_array(std::string_view key) const;
    std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

    const std::vector<TensorInfo> &tensors() const { return tensors_; }
    const TensorInfo *find_tensor(std::string_view name) const;
    const uint8_t *tensor_data(const TensorInfo &t) const {
        const File &f = t.part == 0 ? *this : *parts_[t.part - 1];
        return f.base_ + f.data_offset_ + t.offset;
    }

    // A model split over several files (gguf_split.h) as one tensor directory: `first`'s metadata, and the
    // tensors of `first` then of each of `rest` in order, each read from its own file's mapping (nothing is
    // copied). Throws GgufError naming both files when a tensor name appears twice; the split.* keys are
    // the caller's to check.
    static std::unique_ptr<File> join(std::unique_ptr<File> first, std::vector<std::unique_ptr<File>> rest);
    // The files a joined File reads from: 1 + rest.size() (1 for a plain file); part(0) is this file (whose
    // tensors() are every part's: TensorInfo::part tells where each one lies).
    size_t n_parts() const { return 1 + parts_.size(); }
    const File &part(size_t i) const { return i == 0 ? *this : *parts_[i - 1]; }
    const std::string &origin() const { return origin_; }  // path, or "<buffer>"
    // Tells the OS that the mapped pages inside [p, p + n) will not be read again (a tensor copied into
    // another layout): they leave this process's resident memory and stay in the page cache. The bytes
    // stay readable (a later read faults them back in). No effect on a buffer-backed file.
    void release_pages(const uint8_t *p, size_t n) const;

  private:
    File() = default;
    void parse();
    [[noreturn]] void fail_key(std::string_view key, const std::string &what) const;

    uint32_t version_ = 0;
    size_t alignment_ = 32;
    size_t data_offset_ = 0;
    size_t size_ = 0;
    const uint8_t *base_ = nullptr;
    void *mapping_ = nullptr;  // mmap'ed region (or null when owned_ holds the bytes)
    std::vector<uint8_t> owned_;
    std::vector<KeyValue> kv_;
    std::vector<TensorInfo> tensors_;
    std::string origin_;                                     // path or "<buffer>", for messages
    std::unordered_map<std::string_view, size_t> kv_index_;  // key -> index in kv_
    std::vector<KeyValue> overrides_;                          // set_overrides; few, searched in order
    std::unordered_map<std::string_view, size_t> tensor_index_;
    std::vector<std::unique_ptr<File>> parts_;  // the other files of a split model (join)
};

// Writes GGUF v3 files. Keys keep insertion order; tensors are laid out in insertion order, each
// aligned to `general.alignment` (32 unless set).
class Writer {
  public:
    void set(const std::string &key, Value v);
    void set_u32(const std::string &key, uint32_t v);
    void set_i32(const std::string &key, int32_t v);
    void set_u64(const std::string &key, uint64_t v);
    void set_f32(const std::string &key, float v);
    void set_bool(const std::string &key, bool v);
    void set_string(const std::string &key, const std::string &v);
    void set_string_array(const std::string &key, const std::vector<std::string> &v);
    void set_f32_array(const std::string &key, const std::vector<float> &v);
    void set_i32_array(const std::string &key, const std::vector<int32_t> &v);
    // Copies the bytes (must equal row_size(type, ne[0]) * the other dims).
    void add_tensor(const std::string &name, GgmlType type, const std::vector<int64_t> &ne, const void *data,
                    size_t nbytes);
    std::vector<uint8_t> to_bytes() const;
    void write_file(const std::string &path) const;  // throws Error on I/O failure

  private:
    struct PendingTensor {
        std::string name;
        GgmlType type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    std::vector<KeyValue> kv_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace lctx::gguf
