// Malformed and hostile GGUF files: every one is a GgufError that names what is wrong and where, never a
// crash, an out-of-bounds read or a huge allocation. Files are built byte by byte (Raw) or written with
// the Writer and then corrupted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>

#include "gguf/gguf.h"

namespace lctx::gguf::gguf_hostile_test {
namespace {

constexpr uint64_t kU64Max = ~uint64_t{0};

// Little-endian byte builder for hand-made files.
struct Raw {
    std::vector<uint8_t> b;

    template <typename T>
    Raw &put(T v) {
        const size_t at = b.size();
        b.resize(at + sizeof(T));
        std::memcpy(b.data() + at, &v, sizeof(T));
        return *this;
    }
    Raw &u32(uint32_t v) { return put(v); }
    Raw &i32(int32_t v) { return put(v); }
    Raw &u64(uint64_t v) { return put(v); }
    Raw &bytes(const std::string &s) {
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Raw &str(const std::string &s) { return u64(s.size()).bytes(s); }
    Raw &pad(size_t align) {
        while (b.size() % align) b.push_back(0);
        return *this;
    }
    Raw &zeros(size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
    size_t size() const { return b.size(); }

    // Header of a GGUF v3 file.
    static Raw header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        Raw r;
        r.bytes("GGUF").u32(version).u64(n_tensors).u64(n_kv);
        return r;
    }
    Raw &kv_u32(const std::string &key, uint32_t v) { return str(key).u32(4).u32(v); }
    Raw &tensor(const std::string &name, std::initializer_list<uint64_t> ne, int32_t type, uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(ne.size()));
        for (uint64_t d : ne) u64(d);
        return i32(type).u64(offset);
    }
};

// Parsing `bytes` throws a GgufError whose message contains every needle.
void expect_error(const std::vector<uint8_t> &bytes, std::initializer_list<std::string> needles) {
    try {
        File::from_buffer(bytes.data(), bytes.size());
        ADD_FAILURE() << "parsed without error; expected: " << *needles.begin();
    } catch (const GgufError &e) {
        const std::string msg = e.what();
        for (const std::string &n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

// A file with one f32 tensor of 4 elements; the given infos replace that tensor when not empty.
std::vector<uint8_t> with_tensors(const std::function<void(Raw &)> &infos, uint64_t n_tensors, size_t data) {
    Raw r = Raw::header(n_tensors, 0);
    infos(r);
    r.pad(32).zeros(data);
    return r.b;
}

// ---- header ----

TEST(GgufHostile, BadMagic) {
    Raw r;
    r.bytes("GGML").u32(3).u64(0).u64(0);
    expect_error(r.b, {"bad magic", "\"GGML\"", "byte offset 0"});
    Raw bin;
    bin.u32(0x00ff0102).u32(3).u64(0).u64(0);
    expect_error(bin.b, {"bad magic"});
}

TEST(GgufHostile, TooSmall) {
    expect_error({}, {"too small", "0 bytes"});
    expect_error({'G', 'G', 'U'}, {"too small"});
    expect_error({'G', 'G', 'U', 'F'}, {"file truncated", "version"});
    expect_error({'G', 'G', 'U', 'F', 3, 0, 0, 0, 0}, {"file truncated", "tensor count"});
}

TEST(GgufHostile, Versions) {
    expect_error(Raw::header(0, 0, 1).b, {"version 1", "not supported"});
    expect_error(Raw::header(0, 0, 0).b, {"unknown GGUF version 0"});
    expect_error(Raw::header(0, 0, 4).b, {"unknown GGUF version 4", "byte offset 4"});
    expect_error(Raw::header(0, 0, 0x03000000).b, {"big-endian"});
    // v2 has the same layout as v3.
    Raw v2 = Raw::header(0, 1, 2);
    v2.kv_u32("a", 1);
    auto f = File::from_buffer(v2.b.data(), v2.size());
    EXPECT_EQ(f->version(), 2u);
    EXPECT_EQ(f->get_int("a"), 1);
}

TEST(GgufHostile, HugeCounts) {
    expect_error(Raw::header(0, kU64Max).b, {"metadata count 18446744073709551615"});
    expect_error(Raw::header(0, uint64_t{1} << 32).b, {"metadata count 4294967296"});
    expect_error(Raw::header(0, (uint64_t{1} << 32) - 1).b, {"metadata count"});
    expect_error(Raw::header(kU64Max, 0).b, {"tensor count 18446744073709551615"});
    expect_error(Raw::header(uint64_t{1} << 63, 0).b, {"tensor count"});
    // A count the file could hold in principle, but the entries are missing.
    Raw r = Raw::header(0, 2);
    r.kv_u32("a", 1).u64(5).bytes("ab");
    expect_error(r.b, {"key length 5 runs past the end", "metadata entry 1", "byte offset 41"});
}

// ---- metadata ----

TEST(GgufHostile, KeyLength) {
    for (uint64_t len : {kU64Max, uint64_t{1} << 32, (uint64_t{1} << 32) - 1, uint64_t{100}}) {
        Raw r = Raw::header(0, 1);
        r.u64(len).bytes("abcd").u32(4).u32(1);
        expect_error(r.b, {"key length " + std::to_string(len), "metadata entry 0", "byte offset 24"});
    }
}

TEST(GgufHostile, UnknownValueType) {
    for (uint32_t t : {13u, 100u, 0xffffffffu}) {
        Raw r = Raw::header(0, 2);
        r.kv_u32("ok", 1).str("general.bad").u32(t).u64(0);
        // header 24 + first kv (8 + 2 + 4 + 4 = 18) + second key (8 + 11)
        expect_error(r.b, {"unknown value type " + std::to_string(t), "key 'general.bad'", "byte offset 61"});
    }
}

TEST(GgufHostile, StringValue) {
    for (uint64_t len : {kU64Max, uint64_t{1} << 32, uint64_t{1} << 63, uint64_t{11}}) {
        Raw r = Raw::header(0, 1);
        r.str("general.name").u32(8).u64(len).bytes("0123456789");
        expect_error(r.b,
                     {"string length " + std::to_string(len), "runs past the end", "key 'general.name'"});
    }
    Raw r = Raw::header(0, 1);
    r.str("general.name").u32(8).u32(0);  // length cut short
    expect_error(r.b, {"file truncated", "key 'general.name'"});
}

TEST(GgufHostile, ScalarValueTruncated) {
    Raw r = Raw::header(0, 1);
    r.str("x").u32(12).u32(0);  // f64 with 4 bytes
    expect_error(r.b, {"file truncated", "f64 value", "key 'x'", "byte offset 37"});
}

TEST(GgufHostile, ArrayElementType) {
    Raw r = Raw::header(0, 1);
    r.str("tokenizer.ggml.scores").u32(9).u32(13).u64(0);
    expect_error(r.b, {"unknown array element type 13", "key 'tokenizer.ggml.scores'"});
}

TEST(GgufHostile, ArrayLengths) {
    // (element type, count): counts the file cannot hold, including ones whose byte size overflows.
    const std::pair<uint32_t, uint64_t> cases[] = {
        {0, kU64Max},      {0, uint64_t{1} << 32}, {4, (uint64_t{1} << 62) + 1},
        {10, kU64Max / 4}, {8, kU64Max},           {8, uint64_t{1} << 61},
        {9, kU64Max},      {9, uint64_t{1} << 40}, {12, uint64_t{1} << 32},
        {7, 1000}};
    for (const auto &[type, count] : cases) {
        Raw r = Raw::header(0, 1);
        r.str("tokenizer.ggml.tokens").u32(9).u32(type).u64(count).zeros(64);
        expect_error(r.b,
                     {"array of " + std::to_string(count), "does not fit", "key 'tokenizer.ggml.tokens'"});
    }
    // Fits by the minimum element size but the strings inside run out.
    Raw r = Raw::header(0, 1);
    r.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(4).str("a").str("b").u64(1000).zeros(16);
    expect_error(r.b, {"string length 1000", "key 'tokenizer.ggml.tokens'"});
}

Raw nested_arrays(int levels) {
    Raw r = Raw::header(0, 1);
    r.str("deep").u32(9);
    for (int i = 0; i < levels - 1; ++i) r.u32(9).u64(1);  // an array holding one array
    r.u32(0).u64(1).put<uint8_t>(42);                      // innermost: one u8
    return r;
}

TEST(GgufHostile, NestingDepth) {
    Raw ok = nested_arrays(kMaxArrayDepth);
    auto f = File::from_buffer(ok.b.data(), ok.size());
    Value v = *f->find("deep");
    for (int i = 0; i < kMaxArrayDepth; ++i) {
        ASSERT_EQ(v.type, ValueType::ARRAY);
        ASSERT_EQ(v.array_size(), 1u);
        v = v.array_at(0);
    }
    EXPECT_EQ(v.as_int(), 42);
    expect_error(nested_arrays(kMaxArrayDepth + 1).b, {"nested deeper than 8", "key 'deep'"});
    // Depth is what stops a deep file, long before the stack could overflow.
    expect_error(nested_arrays(100000).b, {"nested deeper", "key 'deep'"});
}

TEST(GgufHostile, DuplicateKey) {
    Raw r = Raw::header(0, 3);
    r.kv_u32("a", 1).kv_u32("b", 2).kv_u32("a", 3);
    expect_error(r.b, {"duplicate key", "key 'a'", "byte offset 58"});  // 24 + 2 * 17
}

TEST(GgufHostile, Alignment) {
    const std::pair<uint32_t, const char *> bad[] = {
        {0, "is 0"}, {3, "is 3"}, {48, "is 48"}, {1u << 31, "1 GiB"}};
    for (const auto &[a, needle] : bad) {
        Raw r = Raw::header(0, 1);
        r.kv_u32("general.alignment", a);
        expect_error(r.b, {"general.alignment", needle});
    }
    Raw f32 = Raw::header(0, 1);
    f32.str("general.alignment").u32(6).put<float>(32.0f);
    expect_error(f32.b, {"general.alignment", "f32"});
    Raw str = Raw::header(0, 1);
    str.str("general.alignment").u32(8).str("32");
    expect_error(str.b, {"general.alignment", "str"});
    // 1 is a power of two: tensors may sit at any offset.
    Raw one = Raw::header(1, 1);
    one.kv_u32("general.alignment", 1).tensor("w", {1}, 0, 0).zeros(4);
    auto f = File::from_buffer(one.b.data(), one.size());
    EXPECT_EQ(f->alignment(), 1u);
    EXPECT_EQ(f->data_offset() + 4, f->size());
}

// ---- tensor infos ----

TEST(GgufHostile, TensorNameLength) {
    Raw r = Raw::header(1, 0);
    r.u64(uint64_t{1} << 32).bytes("w").zeros(40);
    expect_error(r.b, {"tensor name length 4294967296", "tensor info 0", "byte offset 24"});
}

TEST(GgufHostile, DuplicateTensorName) {
    auto b = with_tensors([](Raw &r) { r.tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32); }, 2, 64);
    expect_error(b, {"duplicate tensor name", "tensor 'w'", "byte offset 57"});  // 24 + (8+1+4+8+4+8)
}

TEST(GgufHostile, Dims) {
    auto nd0 = with_tensors([](Raw &r) { r.str("w").u32(0).i32(0).u64(0); }, 1, 32);
    expect_error(nd0, {"n_dims 0", "tensor 'w'", "byte offset 33"});
    auto nd5 = with_tensors([](Raw &r) { r.tensor("w", {1, 1, 1, 1, 1}, 0, 0); }, 1, 32);
    expect_error(nd5, {"n_dims 5", "tensor 'w'"});
    auto nd_huge = with_tensors([](Raw &r) { r.str("w").u32(0xffffffffu); }, 1, 32);
    expect_error(nd_huge, {"n_dims 4294967295", "tensor 'w'"});
    auto zero = with_tensors([](Raw &r) { r.tensor("w", {4, 0}, 0, 0); }, 1, 32);
    expect_error(zero, {"dimension 1 is 0", "tensor 'w'"});
    auto neg = with_tensors([](Raw &r) { r.tensor("w", {kU64Max}, 0, 0); }, 1, 32);
    expect_error(neg, {"dimension 0 is -1", "tensor 'w'"});
    auto neg2 = with_tensors([](Raw &r) { r.tensor("w", {4, uint64_t{1} << 63}, 0, 0); }, 1, 32);
    expect_error(neg2, {"dimension 1", "tensor 'w'"});
    Raw truncated = Raw::header(1, 0);
    truncated.str("w").u32(4).u64(4).u64(4).u32(0);  // the third of four dimensions is cut short
    expect_error(truncated.b, {"file truncated", "dimension", "tensor 'w'"});
}

TEST(GgufHostile, ElementAndByteOverflow) {
    const uint64_t big = uint64_t{1} << 32;
    auto elems = with_tensors([&](Raw &r) { r.tensor("w", {big, big}, 0, 0); }, 1, 32);
    expect_error(elems, {"element count overflows", "tensor 'w'"});
    auto elems4 = with_tensors(
        [&](Raw &r) {
            r.tensor("w", {1 << 16, 1 << 16, 1 << 16, 1 << 16}, 0, 0);
        },
        1, 32);
    expect_error(elems4, {"element count overflows", "tensor 'w'"});
    // 2^62 f64 elements fit in int64, their 2^65 bytes do not fit in 64 bits.
    auto bytes1 = with_tensors([](Raw &r) { r.tensor("w", {uint64_t{1} << 62}, 28, 0); }, 1, 32);
    expect_error(bytes1, {"byte size overflows", "tensor 'w'"});
    auto bytes2 = with_tensors(
        [](Raw &r) {
            r.tensor("w", {uint64_t{1} << 31, uint64_t{1} << 31}, 0, 0);
        },
        1, 32);
    expect_error(bytes2, {"byte size overflows", "tensor 'w'"});
    // Large but representable: refused because it is not in the file.
    auto outside = with_tensors([](Raw &r) { r.tensor("w", {uint64_t{1} << 40}, 0, 0); }, 1, 32);
    expect_error(outside, {"outside the data section", "tensor 'w'"});
}

TEST(GgufHostile, TensorType) {
    for (int32_t t : {4, 5, 31, 36, 1000, -1}) {
        auto b = with_tensors([&](Raw &r) { r.tensor("blk.0.w", {32}, t, 0); }, 1, 128);
        expect_error(b, {"unknown tensor type " + std::to_string(t), "tensor 'blk.0.w'", "byte offset 51"});
    }
}

TEST(GgufHostile, RowNotWholeBlocks) {
    auto q4 = with_tensors([](Raw &r) { r.tensor("w", {33, 2}, 2, 0); }, 1, 256);
    expect_error(q4, {"row length 33", "q4_0 block size 32", "tensor 'w'"});
    auto qk = with_tensors([](Raw &r) { r.tensor("w", {128}, 12, 0); }, 1, 256);
    expect_error(qk, {"row length 128", "block size 256", "tensor 'w'"});
}

TEST(GgufHostile, TensorOffsets) {
    auto unaligned = with_tensors([](Raw &r) { r.tensor("w", {4}, 0, 4); }, 1, 64);
    expect_error(unaligned, {"data offset 4", "alignment 32", "tensor 'w'"});
    auto past = with_tensors([](Raw &r) { r.tensor("w", {4}, 0, 64); }, 1, 64);
    expect_error(past, {"outside the data section of 64 bytes", "tensor 'w'"});
    auto wrap = with_tensors([](Raw &r) { r.tensor("w", {64}, 0, kU64Max - 31); }, 1, 64);
    expect_error(wrap, {"outside the data section", "tensor 'w'"});
    auto one_short = with_tensors([](Raw &r) { r.tensor("a", {4}, 0, 0).tensor("w", {9}, 0, 32); }, 2, 67);
    expect_error(one_short, {"outside the data section", "tensor 'w'"});
    auto overlap = with_tensors([](Raw &r) { r.tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32); }, 2, 96);
    expect_error(overlap, {"overlaps tensor 'a'", "tensor 'b'"});
    // Same bytes but no overlap: both fit.
    auto fine = with_tensors([](Raw &r) { r.tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 32); }, 2, 64);
    EXPECT_NO_THROW(File::from_buffer(fine.data(), fine.size()));
}

TEST(GgufHostile, DataSectionPastEnd) {
    Raw r = Raw::header(1, 0);
    r.tensor("w", {1}, 0, 0);  // ends at byte 61; the data section would start at 64
    expect_error(r.b, {"data section", "past the end of the file"});
}

// ---- files on disk ----

TEST(GgufHostile, OpenErrorsNameThePath) {
    try {
        File::open("/nonexistent/dir/model.gguf");
        ADD_FAILURE();
    } catch (const GgufError &e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.gguf"), std::string::npos) << e.what();
    }
    EXPECT_THROW(File::open("/tmp"), GgufError);
    std::string tmpl = (std::filesystem::temp_directory_path() / "lctx_gguf_bad_XXXXXX").string();
    char *path = tmpl.data();
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    try {
        File::open(path);  // empty
        ADD_FAILURE();
    } catch (const GgufError &e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    Raw bad = Raw::header(0, 1);
    bad.str("k").u32(77);
    std::FILE *f = std::fopen(path, "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bad.b.data(), 1, bad.size(), f);
    std::fclose(f);
    try {
        File::open(path);
        ADD_FAILURE();
    } catch (const GgufError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        EXPECT_NE(msg.find("unknown value type 77"), std::string::npos) << msg;
    }
    std::remove(path);
}

// ---- every truncation, random corruption ----

std::vector<uint8_t> small_valid_file(size_t *data_end) {
    Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.0f, -3.5f});
    w.set("nested",
          Value::from_array(ValueType::ARRAY,
                            {Value::from_array(ValueType::INT16, {Value::from_int(ValueType::INT16, -2)})}));
    std::vector<uint8_t> data(2 * 18 * 2);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
    w.add_tensor("token_embd.weight", GgmlType::Q4_0, {64, 2}, data.data(), 72);
    w.add_tensor("output_norm.weight", GgmlType::F32, {3}, data.data(), 12);
    std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    const TensorInfo &last = f->tensors().back();
    *data_end = f->data_offset() + last.offset + last.nbytes;
    return bytes;
}

TEST(GgufHostile, TruncatedAtEveryLength) {
    size_t data_end = 0;
    const std::vector<uint8_t> full = small_valid_file(&data_end);
    ASSERT_LT(data_end, full.size());  // the last tensor is padded, so some truncations stay valid
    for (size_t len = 0; len <= full.size(); ++len) {
        // A copy of exactly `len` bytes, so ASan sees any read past it.
        std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
        try {
            auto f = File::from_buffer(cut.data(), cut.size());
            EXPECT_GE(len, data_end) << "parsed a file cut to " << len << " bytes";
        } catch (const GgufError &e) {
            EXPECT_LT(len, data_end) << e.what();
        } catch (...) {
            ADD_FAILURE() << "non-GgufError exception at length " << len;
        }
    }
}

TEST(GgufHostile, RandomCorruption) {
    size_t data_end = 0;
    const std::vector<uint8_t> full = small_valid_file(&data_end);
    std::mt19937 rng(1234);
    int errors = 0, parsed = 0;
    for (int iter = 0; iter < 20000; ++iter) {
        std::vector<uint8_t> b = full;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            const size_t at = rng() % data_end;
            switch (rng() % 3) {
                case 0:
                    b[at] = static_cast<uint8_t>(rng());
                    break;
                case 1:
                    b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
                    break;
                default:
                    b[at] = (rng() & 1) ? 0xff : 0x00;
                    break;
            }
        }
        if (rng() % 4 == 0) b.resize(rng() % b.size());
        try {
            auto f = File::from_buffer(b.data(), b.size());
            ++parsed;
            for (const TensorInfo &t : f->tensors()) {
                ASSERT_LE(f->data_offset() + t.offset + t.nbytes, f->size());
                ASSERT_EQ(t.offset % f->alignment(), 0u);
            }
            for (const KeyValue &kv : f->metadata()) (void)kv.value.to_display_string();
        } catch (const GgufError &) {
            ++errors;
        } catch (const std::exception &e) {
            ADD_FAILURE() << "iteration " << iter << ": unexpected exception " << e.what();
        }
    }
    // Both outcomes must occur, or the corruption is not reaching the parser.
    EXPECT_GT(errors, 1000);
    EXPECT_GT(parsed, 1000);
}

}  // namespace
}  // namespace lctx::gguf::gguf_hostile_test
