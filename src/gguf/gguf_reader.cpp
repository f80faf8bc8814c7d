// GGUF reader. Layout (little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv
// key/value pairs, then n_tensors tensor infos, then padding to `general.alignment`, then the data section.
// Every count, length and offset is checked against the bytes that remain before it is used.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "gguf/gguf.h"

namespace lctx::gguf {

namespace {

// Smallest encoding of one metadata key/value: u64 key length + u32 type + a 1-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// Smallest encoding of one tensor info: u64 name length + u32 n_dims + one u64 dim + u32 type + u64 offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Most elements reserved up front from a count read from the file (the rest grow as they are read).
constexpr uint64_t kReserveCap = uint64_t{1} << 18;

// A bounds-checked read position over the file bytes. `ctx` names what is being read (a key or tensor)
// so that every error says where it happened.
class Cursor {
  public:
    Cursor(const uint8_t *data, size_t size, const std::string &origin)
        : p_(data), size_(size), origin_(origin) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    [[noreturn]] void fail_at(size_t at, const std::string &what, std::string_view ctx) const {
        std::string msg = origin_ + ": " + what + " at byte offset " + std::to_string(at);
        if (!ctx.empty()) msg += " (" + std::string(ctx) + ")";
        throw GgufError(msg);
    }

    void need(size_t n, const char *what, std::string_view ctx) const {
        if (n > remaining())
            fail_at(pos_,
                    std::string("file truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
                        std::to_string(remaining()) + " left",
                    ctx);
    }

    template <typename T>
    T read(const char *what, std::string_view ctx) {
        need(sizeof(T), what, ctx);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string_view read_string_view(const char *what, std::string_view ctx) {
        const size_t at = pos_;
        const uint64_t len = read<uint64_t>(what, ctx);
        if (len > remaining())
            fail_at(at,
                    std::string(what) + " length " + std::to_string(len) +
                        " runs past the end of the file (" + std::to_string(remaining()) + " bytes left)",
                    ctx);
        const std::string_view s(reinterpret_cast<const char *>(p_ + pos_), static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return s;
    }
    std::string read_string(const char *what, std::string_view ctx) {
        return std::string(read_string_view(what, ctx));
    }

    void read_value(ValueType type, Value &out, std::string_view ctx, int depth) {
        out.type = type;
        switch (type) {
            case ValueType::UINT8:
                out.scalar.u64 = read<uint8_t>("u8 value", ctx);
                break;
            case ValueType::INT8:
                out.scalar.i64 = read<int8_t>("i8 value", ctx);
                break;
            case ValueType::UINT16:
                out.scalar.u64 = read<uint16_t>("u16 value", ctx);
                break;
            case ValueType::INT16:
                out.scalar.i64 = read<int16_t>("i16 value", ctx);
                break;
            case ValueType::UINT32:
                out.scalar.u64 = read<uint32_t>("u32 value", ctx);
                break;
            case ValueType::INT32:
                out.scalar.i64 = read<int32_t>("i32 value", ctx);
                break;
            case ValueType::UINT64:
                out.scalar.u64 = read<uint64_t>("u64 value", ctx);
                break;
            case ValueType::INT64:
                out.scalar.i64 = read<int64_t>("i64 value", ctx);
                break;
            case ValueType::FLOAT32:
                out.scalar.f64 = read<float>("f32 value", ctx);
                break;
            case ValueType::FLOAT64:
                out.scalar.f64 = read<double>("f64 value", ctx);
                break;
            case ValueType::BOOL:
                out.scalar.b = read<uint8_t>("bool value", ctx) != 0;
                break;
            case ValueType::STRING:
                out.str = read_string("string", ctx);
                break;
            case ValueType::ARRAY:
                read_array(out, ctx, depth);
                break;
        }
    }

  private:
    void read_array(Value &out, std::string_view ctx, int depth) {
        const size_t at = pos_;
        if (depth >= kMaxArrayDepth)
            fail_at(at, "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels", ctx);
        const uint32_t elem = read<uint32_t>("array element type", ctx);
        if (!value_type_is_known(elem))
            fail_at(at, "unknown array element type " + std::to_string(elem), ctx);
        const uint64_t count = read<uint64_t>("array length", ctx);
        const ValueType et = static_cast<ValueType>(elem);
        // Each element takes at least this many bytes, so a count the file cannot hold is refused before
        // anything is allocated for it.
        size_t min_bytes = value_type_size(et);
        if (et == ValueType::STRING) min_bytes = 8;
        if (et == ValueType::ARRAY) min_bytes = 4 + 8;
        if (count > remaining() / min_bytes)
            fail_at(at,
                    "array of " + std::to_string(count) + " " + value_type_name(et) +
                        " elements does not fit in the " + std::to_string(remaining()) + " bytes left",
                    ctx);
        out.array_type = et;
        if (et == ValueType::ARRAY) {
            out.array_values.reserve(static_cast<size_t>(std::min<uint64_t>(count, kReserveCap)));
            for (uint64_t i = 0; i < count; ++i)
                read_value(et, out.array_values.emplace_back(), ctx, depth + 1);
        } else if (et == ValueType::STRING) {
            // A view of the file's strings with each one's offset (checked one by one), while the offsets fit
            // in 32 bits; past that (no real file) the strings are copied.
            const size_t start = pos_;
            out.array_offsets.reserve(
                static_cast<size_t>(count));  // count <= remaining() / 8 (checked above)
            for (uint64_t i = 0; i < count; ++i) {
                const size_t off = pos_ - start;
                read_string_view("string", ctx);
                if (off > UINT32_MAX) {
                    copy_strings(out, start, count);
                    return;
                }
                out.array_offsets.push_back(static_cast<uint32_t>(off));
            }
            out.array_view = p_ + start;
            out.array_view_count = count;
        } else {
            // A view of the elements' bytes in the file (the count fits, checked above).
            out.array_view = p_ + pos_;
            out.array_view_count = count;
            pos_ += static_cast<size_t>(count) * min_bytes;
        }
    }

    // The strings of an array from `start` (already checked once) copied into out's own storage.
    void copy_strings(Value &out, size_t start, uint64_t count) {
        out.array_offsets.clear();
        out.array_offsets.shrink_to_fit();
        pos_ = start;
        for (uint64_t i = 0; i < count; ++i) {
            const std::string_view e = read_string_view("string", "");
            out.array_bytes.insert(out.array_bytes.end(), e.begin(), e.end());
            out.array_ends.push_back(out.array_bytes.size());
        }
    }

    const uint8_t *p_;
    size_t size_;
    size_t pos_ = 0;
    const std::string &origin_;
};

// A key or tensor name for a message: hostile names may be long or binary.
std::string shown(const std::string &name) {
    std::string out;
    for (size_t i = 0; i < name.size() && i < 120; ++i) {
        const unsigned char ch = static_cast<unsigned char>(name[i]);
        out += (ch < 0x20 || ch == 0x7f) ? '?' : static_cast<char>(ch);
    }
    if (name.size() > 120) out += "...";
    return out;
}

// a * b into *out; false on overflow.
bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

}  // namespace

int64_t TensorInfo::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;  // validated not to overflow when read
    return n;
}

std::unique_ptr<File> File::open(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw GgufError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw GgufError(path + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw GgufError(path + ": not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        throw GgufError(path + ": file is empty, not a GGUF file");
    }
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file open
    if (map == MAP_FAILED) throw GgufError(path + ": cannot mmap: " + std::strerror(err));

    std::unique_ptr<File> f(new File());
    f->mapping_ = map;
    f->base_ = static_cast<const uint8_t *>(map);
    f->size_ = size;
    f->origin_ = path;
    f->parse();  // on a throw, ~File unmaps
    return f;
}

std::unique_ptr<File> File::from_buffer(const void *data, size_t size) {
    std::unique_ptr<File> f(new File());
    f->owned_.assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + size);
    f->base_ = f->owned_.data();
    f->size_ = size;
    f->origin_ = "<buffer>";
    f->parse();
    return f;
}

File::~File() {
    if (mapping_) ::munmap(mapping_, size_);
}

void File::release_pages(const uint8_t *p, size_t n) const {
    for (const std::unique_ptr<File> &part : parts_) part->release_pages(p, n);  // each ignores others' bytes
    if (!mapping_ || p < base_ || n == 0 || p + n > base_ + size_) return;
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    if (b < e) ::madvise(reinterpret_cast<void *>(b), e - b, MADV_DONTNEED);
}

void File::parse() {
    Cursor c(base_, size_, origin_);
    if (size_ < 4)
        c.fail_at(0, "file is too small to be a GGUF file (" + std::to_string(size_) + " bytes)", "");
    const uint32_t magic = c.read<uint32_t>("magic", "");
    if (magic != kGgufMagic) {
        char shown[5] = {};
        std::memcpy(shown, base_, 4);
        for (char &ch : shown)
            if (ch && (ch < 0x20 || ch > 0x7e)) ch = '?';
        c.fail_at(0, std::string("bad magic \"") + shown + "\", not a GGUF file (expected \"GGUF\")", "");
    }
    version_ = c.read<uint32_t>("version", "header");
    if (version_ == 1)
        c.fail_at(4, "GGUF version 1 (32-bit counts) is not supported; convert the file again", "");
    if (version_ != 2 && version_ != 3) {
        if (__builtin_bswap32(version_) == 2 || __builtin_bswap32(version_) == 3)
            c.fail_at(4, "big-endian GGUF files are not supported", "");
        c.fail_at(4, "unknown GGUF version " + std::to_string(version_) + " (supported: 2 and 3)", "");
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count", "header");
    const uint64_t n_kv = c.read<uint64_t>("metadata count", "header");
    if (n_kv > c.remaining() / kMinKvBytes)
        c.fail_at(16,
                  "metadata count " + std::to_string(n_kv) + " cannot fit in the " +
                      std::to_string(c.remaining()) + " bytes left",
                  "");
    if (n_tensors > c.remaining() / kMinTensorInfoBytes)
        c.fail_at(8,
                  "tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                      std::to_string(c.remaining()) + " bytes left",
                  "");

    // ---- metadata ----
    // Containers grow with what was actually read (a count is only a hint, capped), so a hostile count
    // cannot make us reserve far more memory than the file's bytes justify.
    kv_.reserve(std::min<uint64_t>(n_kv, kReserveCap));
    std::vector<size_t> kv_at;
    kv_at.reserve(kv_.capacity());
    for (uint64_t i = 0; i < n_kv; ++i) {
        kv_at.push_back(c.pos());
        KeyValue &kv = kv_.emplace_back();
        kv.key = c.read_string("key", "metadata entry " + std::to_string(i));
        const std::string ctx = "key '" + shown(kv.key) + "'";
        const size_t type_at = c.pos();
        const uint32_t type = c.read<uint32_t>("value type", ctx);
        if (!value_type_is_known(type)) c.fail_at(type_at, "unknown value type " + std::to_string(type), ctx);
        c.read_value(static_cast<ValueType>(type), kv.value, ctx, 0);
    }
    // Indexed once kv_ no longer moves, so the string_views into the keys stay valid.
    kv_index_.reserve(kv_.size());
    for (size_t i = 0; i < kv_.size(); ++i)
        if (!kv_index_.emplace(kv_[i].key, i).second)
            c.fail_at(kv_at[i], "duplicate key", "key '" + shown(kv_[i].key) + "'");

    if (const Value *a = find("general.alignment")) {
        const std::optional<int64_t> v = a->as_int();
        if (!v || a->type == ValueType::BOOL)
            fail_key("general.alignment",
                     std::string("has type ") + value_type_name(a->type) + ", expected u32");
        if (*v <= 0 || (*v & (*v - 1)) != 0)
            fail_key("general.alignment", "is " + std::to_string(*v) + ", must be a non-zero power of two");
        if (static_cast<uint64_t>(*v) > (uint64_t{1} << 30))
            fail_key("general.alignment", "is " + std::to_string(*v) + ", larger than 1 GiB");
        alignment_ = static_cast<size_t>(*v);
    }

    // ---- tensor infos ----
    tensors_.reserve(std::min<uint64_t>(n_tensors, kReserveCap));
    std::vector<size_t> info_at;
    info_at.reserve(tensors_.capacity());
    for (uint64_t i = 0; i < n_tensors; ++i) {
        info_at.push_back(c.pos());
        TensorInfo &t = tensors_.emplace_back();
        t.name = c.read_string("tensor name", "tensor info " + std::to_string(i));
        const std::string ctx = "tensor '" + shown(t.name) + "'";
        const size_t dims_at = c.pos();
        const uint32_t n_dims = c.read<uint32_t>("n_dims", ctx);
        if (n_dims == 0 || n_dims > static_cast<uint32_t>(kMaxDims))
            c.fail_at(
                dims_at,
                "n_dims " + std::to_string(n_dims) + " is out of range (1.." + std::to_string(kMaxDims) + ")",
                ctx);
        t.ne.resize(n_dims);
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const size_t ne_at = c.pos();
            const uint64_t ne = c.read<uint64_t>("dimension", ctx);
            if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                c.fail_at(ne_at,
                          "dimension " + std::to_string(d) + " is " +
                              (ne == 0 ? std::string("0") : std::to_string(static_cast<int64_t>(ne))) +
                              ", must be positive",
                          ctx);
            if (!mul_ok(n_elements, ne, &n_elements) ||
                n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                c.fail_at(ne_at, "element count overflows 64 bits", ctx);
            t.ne[d] = static_cast<int64_t>(ne);
        }
        const size_t type_at = c.pos();
        const int32_t type = c.read<int32_t>("tensor type", ctx);
        if (!type_is_known(type)) c.fail_at(type_at, "unknown tensor type " + std::to_string(type), ctx);
        t.type = static_cast<GgmlType>(type);
        const TypeTraits &tt = type_traits(t.type);
        if (t.ne[0] % tt.block_size != 0)
            c.fail_at(info_at[i],
                      "row length " + std::to_string(t.ne[0]) + " is not a multiple of the " + tt.name +
                          " block size " + std::to_string(tt.block_size),
                      ctx);
        // row_size(type, ne[0]) without its unchecked multiplication.
        uint64_t nbytes = 0;
        if (!mul_ok(static_cast<uint64_t>(t.ne[0] / tt.block_size), tt.type_size, &nbytes))
            c.fail_at(info_at[i], "byte size overflows 64 bits", ctx);
        for (uint32_t d = 1; d < n_dims; ++d)
            if (!mul_ok(nbytes, static_cast<uint64_t>(t.ne[d]), &nbytes))
                c.fail_at(info_at[i], "byte size overflows 64 bits", ctx);
        t.nbytes = static_cast<size_t>(nbytes);
        t.offset = c.read<uint64_t>("tensor data offset", ctx);
    }
    tensor_index_.reserve(tensors_.size());
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (!tensor_index_.emplace(tensors_[i].name, i).second)
            c.fail_at(info_at[i], "duplicate tensor name", "tensor '" + shown(tensors_[i].name) + "'");

    // ---- data section ----
    const size_t end_of_infos = c.pos();
    data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;  // alignment_ <= 1 GiB
    if (tensors_.empty()) return;
    if (data_offset_ > size_)
        c.fail_at(end_of_infos,
                  "data section (aligned to " + std::to_string(alignment_) + ") starts at " +
                      std::to_string(data_offset_) + ", past the end of the file (" + std::to_string(size_) +
                      " bytes)",
                  "");
    const uint64_t data_size = size_ - data_offset_;
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const TensorInfo &t = tensors_[i];
        const std::string ctx = "tensor '" + shown(t.name) + "'";
        if (t.offset % alignment_ != 0)
            c.fail_at(info_at[i],
                      "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                          std::to_string(alignment_),
                      ctx);
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            c.fail_at(info_at[i],
                      "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                          ") lies outside the data section of " + std::to_string(data_size) + " bytes",
                      ctx);
    }
    // Overlapping tensors would mean one write clobbers another; real files never do this.
    std::vector<size_t> order(tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo &prev = tensors_[order[k - 1]];
        const TensorInfo &cur = tensors_[order[k]];
        if (prev.offset + prev.nbytes > cur.offset)
            c.fail_at(info_at[order[k]], "data overlaps tensor '" + shown(prev.name) + "'",
                      "tensor '" + shown(cur.name) + "'");
    }
}

void File::fail_key(std::string_view key, const std::string &what) const {
    throw GgufError(origin_ + ": key '" + std::string(key) + "' " + what);
}

const Value *File::find(std::string_view key) const {
    for (const KeyValue &o : overrides_)
        if (o.key == key) return &o.value;
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

void File::set_overrides(std::vector<KeyValue> overrides) {
    for (const KeyValue &o : overrides)
        if (o.value.type == ValueType::ARRAY)
            throw GgufError(origin_ + ": metadata override '" + o.key + "' is an array; only scalars can be overridden");
    overrides_ = std::move(overrides);
}

const TensorInfo *File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string> File::get_string(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::STRING)
        fail_key(key, std::string("has type ") + value_type_name(v->type) + ", expected a string");
    return v->str;
}

std::optional<int64_t> File::get_int(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    const std::optional<int64_t> r = v->as_int();
    if (!r) {
        if (v->type == ValueType::UINT64)
            fail_key(key,
                     "holds " + std::to_string(v->scalar.u64) + ", too large for a signed 64-bit integer");
        fail_key(key, std::string("has type ") + value_type_name(v->type) + ", expected an integer");
    }
    return r;
}

std::optional<double> File::get_float(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    const std::optional<double> r = v->as_float();
    if (!r) fail_key(key, std::string("has type ") + value_type_name(v->type) + ", expected a number");
    return r;
}

std::optional<bool> File::get_bool(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    const std::optional<bool> r = v->as_bool();
    if (!r) fail_key(key, std::string("has type ") + value_type_name(v->type) + ", expected a bool");
    return r;
}

namespace {

bool is_integer_type(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::UINT16:
        case ValueType::INT16:
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::UINT64:
        case ValueType::INT64:
            return true;
        default:
            return false;
    }
}

}  // namespace

std::optional<std::vector<std::string>> File::get_string_array(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || v->array_type != ValueType::STRING)
        fail_key(key, std::string("has type ") + value_type_name(v->type) +
                          (v->type == ValueType::ARRAY ? std::string(" of ") + value_type_name(v->array_type)
                                                       : "") +
                          ", expected an array of strings");
    std::vector<std::string> out;
    out.reserve(v->array_size());
    for (size_t i = 0; i < v->array_size(); ++i) out.emplace_back(v->array_string(i));
    return out;
}

std::optional<std::vector<float>> File::get_float_array(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    const bool ok = v->type == ValueType::ARRAY &&
                    (v->array_type == ValueType::FLOAT32 || v->array_type == ValueType::FLOAT64 ||
                     is_integer_type(v->array_type));
    if (!ok)
        fail_key(key, std::string("has type ") + value_type_name(v->type) +
                          (v->type == ValueType::ARRAY ? std::string(" of ") + value_type_name(v->array_type)
                                                       : "") +
                          ", expected an array of numbers");
    std::vector<float> out(v->array_size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(*v->array_at(i).as_float());
    return out;
}

std::optional<std::vector<int64_t>> File::get_int_array(std::string_view key) const {
    const Value *v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || !is_integer_type(v->array_type))
        fail_key(key, std::string("has type ") + value_type_name(v->type) +
                          (v->type == ValueType::ARRAY ? std::string(" of ") + value_type_name(v->array_type)
                                                       : "") +
                          ", expected an array of integers");
    std::vector<int64_t> out(v->array_size());
    for (size_t i = 0; i < out.size(); ++i) {
        const std::optional<int64_t> e = v->array_at(i).as_int();
        if (!e) fail_key(key, "element " + std::to_string(i) + " is too large for a signed 64-bit integer");
        out[i] = *e;
    }
    return out;
}

}  // namespace lctx::gguf
