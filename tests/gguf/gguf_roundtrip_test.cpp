// Writer -> reader round trips, value conversions and the typed getters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include "gguf/gguf.h"

namespace lctx::gguf::gguf_roundtrip_test {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    for (uint8_t &b : v) b = static_cast<uint8_t>(rng());
    return v;
}

// Deep equality of two values, including the exact scalar type and bit pattern.
void expect_same(const Value &a, const Value &b, const std::string &where) {
    ASSERT_EQ(a.type, b.type) << where;
    switch (a.type) {
        case ValueType::STRING:
            EXPECT_EQ(a.str, b.str) << where;
            break;
        case ValueType::BOOL:
            EXPECT_EQ(a.scalar.b, b.scalar.b) << where;
            break;
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            EXPECT_EQ(std::memcmp(&a.scalar.f64, &b.scalar.f64, 8), 0) << where;
            break;
        case ValueType::ARRAY:
            ASSERT_EQ(a.array_type, b.array_type) << where;
            ASSERT_EQ(a.array_size(), b.array_size()) << where;
            for (size_t i = 0; i < a.array_size(); ++i)
                expect_same(a.array_at(i), b.array_at(i), where + "[" + std::to_string(i) + "]");
            break;
        default:
            EXPECT_EQ(a.scalar.u64, b.scalar.u64) << where;
            break;
    }
}

struct Sample {
    Writer w;
    std::vector<KeyValue> expect_kv;
    struct T {
        std::string name;
        GgmlType type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    std::vector<T> expect_t;

    void set(const std::string &k, Value v) {
        w.set(k, v);
        expect_kv.push_back({k, v});
    }
    void tensor(const std::string &name, GgmlType type, std::vector<int64_t> ne, uint32_t seed) {
        size_t n = row_size(type, ne[0]);
        for (size_t d = 1; d < ne.size(); ++d) n *= static_cast<size_t>(ne[d]);
        std::vector<uint8_t> data = random_bytes(n, seed);
        w.add_tensor(name, type, ne, data.data(), data.size());
        expect_t.push_back({name, type, ne, data});
    }
};

Sample make_sample() {
    Sample s;
    s.set("general.architecture", Value::from_string("llama"));
    s.set("u8", Value::from_uint(ValueType::UINT8, 250));
    s.set("i8", Value::from_int(ValueType::INT8, -120));
    s.set("u16", Value::from_uint(ValueType::UINT16, 65000));
    s.set("i16", Value::from_int(ValueType::INT16, -32000));
    s.set("u32", Value::from_uint(ValueType::UINT32, 4000000000u));
    s.set("i32", Value::from_int(ValueType::INT32, -2000000000));
    s.set("u64", Value::from_uint(ValueType::UINT64, std::numeric_limits<uint64_t>::max()));
    s.set("i64", Value::from_int(ValueType::INT64, std::numeric_limits<int64_t>::min()));
    s.set("f32", Value::from_float(ValueType::FLOAT32, 10000.5));
    s.set("f64", Value::from_float(ValueType::FLOAT64, 3.141592653589793));
    s.set("bool.t", Value::from_bool(true));
    s.set("bool.f", Value::from_bool(false));
    s.set("str.empty", Value::from_string(""));
    s.set("str.utf8", Value::from_string("h\xc3\xa9llo \xe2\x96\x81world\n\"q\""));
    s.set("str.nul", Value::from_string(std::string("a\0b", 3)));
    s.set("arr.empty", Value::from_array(ValueType::INT32, {}));
    s.set("arr.str", Value::from_array(ValueType::STRING, {Value::from_string("a"), Value::from_string(""),
                                                           Value::from_string("<s>")}));
    s.set("arr.f32", Value::from_array(ValueType::FLOAT32, {Value::from_float(ValueType::FLOAT32, -1.25),
                                                            Value::from_float(ValueType::FLOAT32, 0.0)}));
    s.set("arr.u8", Value::from_array(ValueType::UINT8, {Value::from_uint(ValueType::UINT8, 0),
                                                         Value::from_uint(ValueType::UINT8, 255)}));
    s.set("arr.i64", Value::from_array(ValueType::INT64, {Value::from_int(ValueType::INT64, -5)}));
    s.set("arr.bool", Value::from_array(ValueType::BOOL, {Value::from_bool(true), Value::from_bool(false)}));
    s.set("arr.f64", Value::from_array(ValueType::FLOAT64, {Value::from_float(ValueType::FLOAT64, 1e300)}));
    s.set("arr.nested",
          Value::from_array(ValueType::ARRAY,
                            {Value::from_array(ValueType::UINT16, {Value::from_uint(ValueType::UINT16, 7)}),
                             Value::from_array(ValueType::STRING, {Value::from_string("x")}),
                             Value::from_array(ValueType::ARRAY, {})}));
    s.tensor("f32.1d", GgmlType::F32, {5}, 1);
    s.tensor("f16.2d", GgmlType::F16, {3, 7}, 2);
    s.tensor("q4_0.3d", GgmlType::Q4_0, {64, 3, 2}, 3);
    s.tensor("q8_0.4d", GgmlType::Q8_0, {32, 1, 2, 3}, 4);
    s.tensor("q4_k", GgmlType::Q4_K, {256, 2}, 5);
    s.tensor("i8", GgmlType::I8, {1}, 6);
    return s;
}

void check_sample(const Sample &s, const File &f, size_t alignment) {
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.metadata().size(), s.expect_kv.size());
    for (size_t i = 0; i < s.expect_kv.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].key, s.expect_kv[i].key);  // insertion order
        expect_same(f.metadata()[i].value, s.expect_kv[i].value, s.expect_kv[i].key);
    }
    ASSERT_EQ(f.tensors().size(), s.expect_t.size());
    for (size_t i = 0; i < s.expect_t.size(); ++i) {
        const TensorInfo &t = f.tensors()[i];
        const auto &e = s.expect_t[i];
        EXPECT_EQ(t.name, e.name);
        EXPECT_EQ(f.find_tensor(e.name), &t);
        EXPECT_EQ(t.type, e.type);
        EXPECT_EQ(t.ne, e.ne);
        EXPECT_EQ(t.nbytes, e.data.size());
        EXPECT_EQ(t.offset % alignment, 0u) << e.name;
        ASSERT_LE(f.data_offset() + t.offset + t.nbytes, f.size());
        EXPECT_EQ(std::memcmp(f.tensor_data(t), e.data.data(), e.data.size()), 0) << e.name;
    }
}

TEST(GgufRoundTrip, AllValueTypesAndTensors) {
    Sample s = make_sample();
    const std::vector<uint8_t> bytes = s.w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    check_sample(s, *f, 32);
    // Standard layout: data section starts right after the infos, padded; tensors packed in order.
    uint64_t expect_off = 0;
    for (const TensorInfo &t : f->tensors()) {
        EXPECT_EQ(t.offset, expect_off) << t.name;
        expect_off += (t.nbytes + 31) / 32 * 32;
    }
    EXPECT_EQ(f->data_offset() + expect_off, f->size());
}

TEST(GgufRoundTrip, CustomAlignment) {
    Sample s = make_sample();
    s.set("general.alignment", Value::from_uint(ValueType::UINT32, 256));
    const std::vector<uint8_t> bytes = s.w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    check_sample(s, *f, 256);
}

TEST(GgufRoundTrip, ThroughAFile) {
    Sample s = make_sample();
    std::string tmpl = (std::filesystem::temp_directory_path() / "lctx_gguf_rt_XXXXXX").string();
    char *path = tmpl.data();
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    s.w.write_file(path);
    auto f = File::open(path);
    check_sample(s, *f, 32);
    std::remove(path);
}

TEST(GgufRoundTrip, NoTensorsNoKeys) {
    Writer w;
    const std::vector<uint8_t> bytes = w.to_bytes();
    EXPECT_EQ(bytes.size(), 24u);  // just the header: no padding without a data section
    auto f = File::from_buffer(bytes.data(), bytes.size());
    EXPECT_TRUE(f->metadata().empty());
    EXPECT_TRUE(f->tensors().empty());
    // Padded to the alignment is valid too.
    std::vector<uint8_t> padded = bytes;
    padded.resize(32, 0);
    auto g = File::from_buffer(padded.data(), padded.size());
    EXPECT_TRUE(g->tensors().empty());
    EXPECT_EQ(g->data_offset(), 32u);
}

TEST(GgufRoundTrip, LargeVocabArrays) {
    const size_t n = 150000;
    std::vector<std::string> tokens(n);
    std::vector<float> scores(n);
    std::vector<int32_t> types(n);
    for (size_t i = 0; i < n; ++i) {
        tokens[i] = "tok" + std::to_string(i);
        scores[i] = -static_cast<float>(i) * 0.5f;
        types[i] = static_cast<int32_t>(i % 6);
    }
    Writer w;
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens"), tokens);
    EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores"), scores);
    const auto t = f->get_int_array("tokenizer.ggml.token_type");
    ASSERT_TRUE(t.has_value());
    ASSERT_EQ(t->size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ((*t)[i], types[i]);
}

TEST(GgufWriter, SetReplacesInPlace) {
    Writer w;
    w.set_u32("a", 1);
    w.set_string("b", "x");
    w.set_f32("a", 2.5f);
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    ASSERT_EQ(f->metadata().size(), 2u);
    EXPECT_EQ(f->metadata()[0].key, "a");
    EXPECT_EQ(f->metadata()[0].value.type, ValueType::FLOAT32);
    EXPECT_EQ(f->get_float("a"), 2.5);
}

TEST(GgufWriter, RefusesBadTensors) {
    Writer w;
    std::vector<uint8_t> buf(1024);
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {4}, buf.data(), 15), Error);    // wrong size
    EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_0, {33}, buf.data(), 18), Error);  // not whole blocks
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {}, buf.data(), 0), Error);      // no dims
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {1, 1, 1, 1, 1}, buf.data(), 4), Error);  // 5 dims
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {0}, buf.data(), 0), Error);
    EXPECT_THROW(w.add_tensor("t", static_cast<GgmlType>(4), {1}, buf.data(), 4), Error);
    w.add_tensor("t", GgmlType::F32, {4}, buf.data(), 16);
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {4}, buf.data(), 16), Error);  // duplicate
    w.set_u32("general.alignment", 48);
    EXPECT_THROW(w.to_bytes(), Error);
    EXPECT_THROW(w.set("mixed", Value::from_array(ValueType::INT32, {Value::from_string("x")})), Error);
    // What the writer refused left no trace.
    w.set_u32("general.alignment", 64);
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());
    EXPECT_EQ(f->tensors().size(), 1u);
    EXPECT_EQ(f->find("mixed"), nullptr);
}

// ---- conversions and typed getters ----

TEST(GgufValue, Conversions) {
    EXPECT_EQ(Value::from_uint(ValueType::UINT64, std::numeric_limits<uint64_t>::max()).as_int(),
              std::nullopt);
    EXPECT_EQ(Value::from_uint(ValueType::UINT64, 1ull << 62).as_int(), int64_t{1} << 62);
    EXPECT_EQ(Value::from_int(ValueType::INT8, -3).as_int(), -3);
    EXPECT_EQ(Value::from_bool(true).as_int(), 1);
    EXPECT_EQ(Value::from_float(ValueType::FLOAT32, 1.0).as_int(), std::nullopt);
    EXPECT_EQ(Value::from_string("1").as_int(), std::nullopt);
    EXPECT_EQ(Value::from_float(ValueType::FLOAT32, 0.1).as_float(), static_cast<double>(0.1f));
    EXPECT_EQ(Value::from_int(ValueType::INT32, -7).as_float(), -7.0);
    EXPECT_EQ(Value::from_string("x").as_float(), std::nullopt);
    EXPECT_EQ(Value::from_string("x").as_string(), "x");
    EXPECT_EQ(Value::from_uint(ValueType::UINT32, 1).as_string(), std::nullopt);
    EXPECT_EQ(Value::from_bool(false).as_bool(), false);
    EXPECT_EQ(Value::from_uint(ValueType::UINT8, 1).as_bool(), true);
    EXPECT_EQ(Value::from_uint(ValueType::UINT8, 2).as_bool(), std::nullopt);
    EXPECT_EQ(Value::from_string("true").as_bool(), std::nullopt);
    EXPECT_THROW(Value::from_uint(ValueType::INT32, 1), Error);
}

TEST(GgufValue, DisplayString) {
    EXPECT_EQ(Value::from_uint(ValueType::UINT32, 4096).to_display_string(), "4096");
    EXPECT_EQ(Value::from_int(ValueType::INT32, -1).to_display_string(), "-1");
    EXPECT_EQ(Value::from_float(ValueType::FLOAT32, 10000.0).to_display_string(), "10000.000000");
    EXPECT_EQ(Value::from_bool(true).to_display_string(), "true");
    EXPECT_EQ(Value::from_string("llama").to_display_string(), "llama");
    EXPECT_EQ(Value::from_array(ValueType::INT32,
                                {Value::from_int(ValueType::INT32, 1), Value::from_int(ValueType::INT32, 2)})
                  .to_display_string(),
              "[1, 2]");
    EXPECT_EQ(Value::from_array(ValueType::STRING, {Value::from_string("a\"b"), Value::from_string("c")})
                  .to_display_string(),
              "[\"a\\\"b\", \"c\"]");
    EXPECT_EQ(Value::from_array(ValueType::UINT8, {}).to_display_string(), "[]");
}

TEST(GgufGetters, TypeMismatchesThrowAndNameTheKey) {
    Writer w;
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_u32("llama.block_count", 5);
    w.set_u64("big", std::numeric_limits<uint64_t>::max());
    w.set_string("general.architecture", "llama");
    w.set_bool("flag", true);
    w.set_f32_array("floats", {1.5f});
    w.set_i32_array("ints", {3, -4});
    w.set_string_array("strs", {"a"});
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = File::from_buffer(bytes.data(), bytes.size());

    EXPECT_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
    EXPECT_EQ(f->get_float("llama.block_count"), 5.0);  // integers are accepted as floats
    EXPECT_EQ(f->get_int("llama.block_count"), 5);
    EXPECT_EQ(f->get_bool("flag"), true);
    EXPECT_EQ(f->get_float_array("ints"), (std::vector<float>{3.0f, -4.0f}));
    EXPECT_EQ(f->get_int_array("ints"), (std::vector<int64_t>{3, -4}));

    auto expect_error = [&](auto fn, const char *needle) {
        try {
            fn();
            ADD_FAILURE() << "no error for " << needle;
        } catch (const GgufError &e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error([&] { f->get_int("llama.rope.freq_base"); }, "llama.rope.freq_base");
    expect_error([&] { f->get_int("big"); }, "big");
    expect_error([&] { f->get_string("llama.block_count"); }, "llama.block_count");
    expect_error([&] { f->get_float("general.architecture"); }, "general.architecture");
    expect_error([&] { f->get_bool("general.architecture"); }, "general.architecture");
    expect_error([&] { f->get_int_array("floats"); }, "floats");
    expect_error([&] { f->get_string_array("ints"); }, "ints");
    expect_error([&] { f->get_float_array("strs"); }, "strs");
    expect_error([&] { f->get_string_array("general.architecture"); }, "general.architecture");
    expect_error([&] { f->get_int_array("llama.block_count"); }, "llama.block_count");
    EXPECT_EQ(f->get_string_array("missing"), std::nullopt);
    EXPECT_EQ(f->get_bool("missing"), std::nullopt);
}

}  // namespace
}  // namespace lctx::gguf::gguf_roundtrip_test
