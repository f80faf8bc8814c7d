// lctx's quantizer against llama.cpp b4748's llama-quantize (fixtures/quantize/quantized-b4748.json): for
// every file type and option recorded, on the synthetic llama (F16, rows of 256) and stories260K (F32, rows
// of 64 and 172), the same type for every tensor, the same bytes (sha256), the same file size and keys; the
// refusals refused, leaving nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "quantize/file_types.h"
#include "quantize/model_quantizer.h"
#include "sha256.h"
#include "tensor/types.h"

namespace lctx::quantize::fixture_match_test {
namespace {

namespace fs = std::filesystem;

const nlohmann::json &fixture() {
    static const nlohmann::json j = [] {
        std::ifstream in(std::string(LCTX_FIXTURES_DIR) + "/quantize/quantized-b4748.json");
        return nlohmann::json::parse(in);
    }();
    return j;
}

// A fresh directory per case, so "nothing left behind" can be checked by listing it.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string &tag) {
        path = fs::temp_directory_path() / ("lctx_quant_" + std::to_string(getpid()) + "_" + tag);
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    size_t n_entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

// What a fixture file name says: the input, the file type and the options it was quantized with.
struct Case {
    std::string key;
    std::string input;
    Options opts;
};

Case parse_case(const std::string &key) {
    Case c;
    c.key = key;
    std::string rest;
    if (key.rfind("llama-F16-", 0) == 0) {
        c.input = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf";
        rest = key.substr(10);
    } else {
        c.input = std::string(LCTX_FIXTURES_DIR) + "/golden/models/stories260K.gguf";
        rest = key.substr(std::string("stories260K-").size());
    }
    rest = rest.substr(0, rest.size() - 5);  // .gguf
    if (rest.rfind("to-", 0) == 0) {
        rest = rest.substr(3);
    } else if (rest.rfind("pure-", 0) == 0) {
        c.opts.pure = true;
        rest = rest.substr(5);
    } else if (rest.rfind("otq8-tq4-", 0) == 0) {
        c.opts.output_type = GgmlType::Q8_0;
        c.opts.token_embd_type = GgmlType::Q4_0;
        rest = rest.substr(9);
    }
    const FileType *ft = parse_file_type(rest);
    EXPECT_NE(ft, nullptr) << rest;
    c.opts.ftype = ft ? ft->id : -1;
    c.opts.n_threads = 1;
    return c;
}

std::vector<std::string> case_names() {
    std::vector<std::string> names;
    for (const auto &[k, v] : fixture().items()) names.push_back(k);
    return names;
}

class QuantizeFixture : public ::testing::TestWithParam<std::string> {};

void check_output(const nlohmann::json &want, const std::string &path) {
    std::unique_ptr<gguf::File> f = gguf::File::open(path);
    EXPECT_EQ(f->size(), want["file_bytes"].get<uint64_t>());
    EXPECT_EQ(f->get_int("general.file_type"), want["kv"]["general.file_type"].get<int64_t>());
    EXPECT_EQ(f->get_int("general.quantization_version"),
              want["kv"]["general.quantization_version"].get<int64_t>());
    const auto &tensors = want["tensors"];
    ASSERT_EQ(f->tensors().size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto &w = tensors[i];
        const gguf::TensorInfo &t = f->tensors()[i];  // same order as llama-quantize's
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, w["name"].get<std::string>());
        GgmlType type;
        ASSERT_TRUE(type_from_name(w["type"].get<std::string>().c_str(), &type)) << w["type"];
        EXPECT_STREQ(type_name(t.type), type_name(type));
        EXPECT_EQ(t.ne, w["dims"].get<std::vector<int64_t>>());
        EXPECT_EQ(t.nbytes, w["bytes"].get<size_t>());
        EXPECT_EQ(test::sha256_hex(f->tensor_data(t), t.nbytes), w["sha256"].get<std::string>());
    }
}

TEST_P(QuantizeFixture, SameTypesAndBytesAsLlamaQuantize) {
    const nlohmann::json &want = fixture()[GetParam()];
    Case c = parse_case(GetParam());
    TempDir dir(GetParam());
    const std::string out = (dir.path / "out.gguf").string();
    if (want.contains("error")) {
        EXPECT_THROW(quantize_model(c.input, out, c.opts), Error);
        EXPECT_EQ(dir.n_entries(), 0u) << "a refusal left a file behind";
        return;
    }
    const Summary s = quantize_model(c.input, out, c.opts);
    EXPECT_EQ(s.file_bytes, want["file_bytes"].get<uint64_t>());
    check_output(want, out);
    EXPECT_EQ(dir.n_entries(), 1u);  // no temporary file left
}

INSTANTIATE_TEST_SUITE_P(B4748, QuantizeFixture, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                             std::string s = i.param.substr(0, i.param.size() - 5);
                             for (char &ch : s)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return s;
                         });

// The bytes do not depend on the thread count (rows are split among threads).
TEST(QuantizeThreads, FourThreadsWriteTheSameFile) {
    Case c = parse_case("llama-F16-to-Q4_K_M.gguf");
    TempDir dir("threads");
    const std::string out = (dir.path / "out.gguf").string();
    c.opts.n_threads = 4;
    quantize_model(c.input, out, c.opts);
    check_output(fixture()["llama-F16-to-Q4_K_M.gguf"], out);
}

// The whole file, header and padding included, is llama-quantize's byte for byte.
TEST(QuantizeWholeFile, StoriesQ4KMIsByteIdentical) {
    Case c = parse_case("stories260K-to-Q4_K_M.gguf");
    TempDir dir("whole");
    const std::string out = (dir.path / "out.gguf").string();
    quantize_model(c.input, out, c.opts);
    auto read = [](const std::string &p) {
        std::ifstream in(p, std::ios::binary);
        return std::vector<char>(std::istreambuf_iterator<char>(in), {});
    };
    const std::vector<char> got = read(out);
    const std::vector<char> want =
        read(std::string(LCTX_FIXTURES_DIR) + "/quantize/stories260K-to-Q4_K_M.gguf");
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace lctx::quantize::fixture_match_test
