// Hostile model files: stories260K cut at every section boundary, hyper-parameters at the edges of their
// types, tensor shapes that claim more than the file holds. Every one is refused with lctx::Error through
// lctx::Model::load, and with a null model through llama_model_load_from_file; none may crash, read out of
// bounds or try to allocate what the file claims.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "hostile/hostile_util.h"
#include "llama.h"
#include "model/model.h"
#include "vocab/vocab.h"

namespace lctx::model_hostile_test {
namespace {

using hostile::expect_error;
using hostile::stories_with;
using hostile::TempFile;

// Bytes a metadata value takes in the file after its type tag.
size_t value_bytes(const gguf::Value &v) {
    switch (v.type) {
        case gguf::ValueType::STRING:
            return 8 + v.str.size();
        case gguf::ValueType::ARRAY: {
            size_t n = 4 + 8;
            for (size_t i = 0; i < v.array_size(); ++i) {
                const gguf::Value e = v.array_at(i);
                n += e.type == gguf::ValueType::ARRAY || e.type == gguf::ValueType::STRING
                         ? value_bytes(e)
                         : gguf::value_type_size(e.type);
            }
            return n;
        }
        default:
            return gguf::value_type_size(v.type);
    }
}

// Byte offsets where one section of the file ends and the next begins: the header, each metadata entry,
// each tensor info, the padding before the data, and the start and end of each tensor's data.
std::vector<size_t> section_boundaries(const gguf::File &f) {
    std::set<size_t> at;
    size_t pos = 4 + 4 + 8 + 8;
    at.insert(4);
    at.insert(8);
    at.insert(16);
    at.insert(pos);
    for (const gguf::KeyValue &kv : f.metadata()) {
        at.insert(pos + 8);                  // after the key length
        at.insert(pos + 8 + kv.key.size());  // after the key
        pos += 8 + kv.key.size() + 4;        // after the type tag
        at.insert(pos);
        pos += value_bytes(kv.value);
        at.insert(pos);
    }
    for (const gguf::TensorInfo &t : f.tensors()) {
        pos += 8 + t.name.size();
        at.insert(pos);
        pos += 4 + 8 * t.ne.size();  // n_dims and dimensions
        at.insert(pos);
        pos += 4 + 8;  // type and offset
        at.insert(pos);
    }
    at.insert(f.data_offset());
    for (const gguf::TensorInfo &t : f.tensors()) {
        at.insert(f.data_offset() + t.offset);
        at.insert(f.data_offset() + t.offset + t.nbytes);
    }
    return {at.begin(), at.end()};
}

TEST(HostileModel, TruncatedAtEverySectionBoundary) {
    hostile::quiet();
    const std::vector<uint8_t> full = hostile::read_all(hostile::stories_path());
    const auto f = gguf::File::from_buffer(full.data(), full.size());
    size_t data_end = 0;
    for (const gguf::TensorInfo &t : f->tensors())
        data_end = std::max(data_end, f->data_offset() + t.offset + t.nbytes);
    const std::vector<size_t> cuts = section_boundaries(*f);
    ASSERT_GT(cuts.size(), 3 * f->metadata().size());
    ASSERT_EQ(cuts.back(), data_end) << "the boundaries do not walk the file as the reader does";
    TempFile tmp("truncated.gguf");
    int tried = 0;
    for (size_t cut : cuts) {
        for (size_t len : {cut - 1, cut, cut + 1}) {
            if (len >= data_end) continue;
            const std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
            const std::string what = "cut at " + std::to_string(len) + " of " + std::to_string(full.size());
            expect_error([&] { Model::load(tmp.write(part)); }, {tmp.path()}, what);
            EXPECT_EQ(llama_model_load_from_file(tmp.path().c_str(), llama_model_default_params()), nullptr)
                << what;
            ++tried;
        }
    }
    EXPECT_GT(tried, 300);
}

// The offset in `bytes` of tensor `name`'s first dimension in its tensor info.
size_t dims_offset(const std::vector<uint8_t> &bytes, const std::string &name) {
    std::string needle(8, '\0');
    const uint64_t len = name.size();
    std::memcpy(needle.data(), &len, 8);
    needle += name;
    const auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end(),
                                [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); });
    EXPECT_NE(it, bytes.end()) << name;
    return static_cast<size_t>(it - bytes.begin()) + needle.size() + 4;
}

// "A model larger than memory": tensor dimensions claiming far more than the file holds, or nonsense
// (negative as int64, zero). The reader refuses them from the tensor info alone.
TEST(HostileModel, TensorSizesBeyondTheFileAreRefusedBeforeAnyAllocation) {
    hostile::quiet();
    const std::vector<uint8_t> full = hostile::read_all(hostile::stories_path());
    const size_t ne1 = dims_offset(full, "token_embd.weight") + 8;
    TempFile tmp("huge-tensor.gguf");
    const std::pair<uint64_t, const char *> cases[] = {
        {uint64_t{1} << 32, "outside the data section"},  // 64 x 2^32 f32: 1 TiB
        {uint64_t{1} << 40, "outside the data section"},
        {uint64_t{1} << 58, "overflows"},    // element count x 4 bytes past 2^64
        {uint64_t{1} << 63, "dimension 1"},  // negative as int64
        {~uint64_t{0}, "dimension 1 is -1"},
        {0, "dimension 1 is 0"}};
    for (const auto &[value, needle] : cases) {
        std::vector<uint8_t> b = full;
        std::memcpy(b.data() + ne1, &value, 8);
        const std::string what = "ne[1] = " + std::to_string(value);
        expect_error([&] { Model::load(tmp.write(b)); }, {"token_embd.weight", needle}, what);
        EXPECT_EQ(llama_model_load_from_file(tmp.path().c_str(), llama_model_default_params()), nullptr)
            << what;
    }
}

TEST(HostileModel, ThreeDimensionalMatrixIsRefused) {
    hostile::quiet();
    std::vector<uint8_t> full = hostile::read_all(hostile::stories_path());
    // token_embd [64, 512] -> n_dims 3 would shift the file; instead turn ffn_norm.weight [64] of block 0
    // into a 2-D [32, 2] vector with the same bytes: a vector must have exactly n_embd elements.
    const auto f = gguf::File::from_buffer(full.data(), full.size());
    const gguf::TensorInfo *t = f->find_tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->ne.size(), 2u);
    const int64_t n_embd = t->ne[0];
    const size_t ne0 = dims_offset(full, "token_embd.weight");
    const uint64_t half = static_cast<uint64_t>(n_embd / 2), twice = static_cast<uint64_t>(t->ne[1] * 2);
    std::memcpy(full.data() + ne0, &half, 8);
    std::memcpy(full.data() + ne0 + 8, &twice, 8);
    TempFile tmp("reshaped.gguf");
    expect_error([&] { Model::load(tmp.write(full)); }, {"token_embd.weight", "shape"});
}

struct KvCase {
    const char *name;
    std::function<void(gguf::Writer &)> edit;
    std::vector<std::string> needles;  // all must be in the message
};

TEST(HostileModel, HyperParametersAtTheEdgesOfTheirTypes) {
    hostile::quiet();
    using gguf::Value;
    using gguf::ValueType;
    const std::vector<KvCase> cases = {
        {"block_count 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.block_count", 0xffffffffu); },
         {"block"}},
        {"block_count 2^20",
         [](gguf::Writer &w) { w.set_u32("llama.block_count", 1u << 20); },
         {"block_count", "tensors"}},
        {"block_count 0", [](gguf::Writer &w) { w.set_u32("llama.block_count", 0); }, {"zero size"}},
        {"embedding_length 2^32 (u64)",
         [](gguf::Writer &w) { w.set_u64("llama.embedding_length", uint64_t{1} << 32); },
         {"llama.embedding_length", "out of range"}},
        {"embedding_length 2^64-1 (u64)",
         [](gguf::Writer &w) { w.set_u64("llama.embedding_length", ~uint64_t{0}); },
         {"llama.embedding_length"}},
        {"embedding_length -64 (i32)",
         [](gguf::Writer &w) { w.set_i32("llama.embedding_length", -64); },
         {"llama.embedding_length", "out of range"}},
        {"embedding_length as a string",
         [](gguf::Writer &w) { w.set_string("llama.embedding_length", "64"); },
         {"llama.embedding_length"}},
        {"feed_forward_length 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.feed_forward_length", 0xffffffffu); },
         {"ffn_gate", "shape"}},
        {"head_count 0", [](gguf::Writer &w) { w.set_u32("llama.attention.head_count", 0); }, {"zero size"}},
        {"head_count_kv above head_count",
         [](gguf::Writer &w) { w.set_u32("llama.attention.head_count_kv", 16); },
         {"head_count_kv"}},
        {"head_count 2^31",
         [](gguf::Writer &w) { w.set_u32("llama.attention.head_count", 1u << 31); },
         {"head_count"}},
        {"key_length 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.attention.key_length", 0xffffffffu); },
         {"rope"}},
        {"key_length 2^20",  // the file's rope.dimension_count (8) no longer rotates a llama head whole
         [](gguf::Writer &w) { w.set_u32("llama.attention.key_length", 1u << 20); },
         {"rope.dimension_count 8", "head size 1048576"}},
        {"value_length 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.attention.value_length", 0xffffffffu); },
         {"shape"}},
        {"rope.dimension_count 0",
         [](gguf::Writer &w) { w.set_u32("llama.rope.dimension_count", 0); },
         {"rope.dimension_count"}},
        {"rope.dimension_count odd",
         [](gguf::Writer &w) { w.set_u32("llama.rope.dimension_count", 3); },
         {"rope.dimension_count"}},
        {"rope.dimension_count 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.rope.dimension_count", 0xffffffffu); },
         {"rope.dimension_count"}},
        {"vocab_size 2^32-1",
         [](gguf::Writer &w) { w.set_u32("llama.vocab_size", 0xffffffffu); },
         {"token_embd.weight", "shape"}},
        {"architecture as an integer",
         [](gguf::Writer &w) { w.set_u32("general.architecture", 7); },
         {"general.architecture"}},
        {"unknown architecture",
         [](gguf::Writer &w) { w.set_string("general.architecture", "llama\xff"); },
         {"architecture"}},
        {"token list empty",
         [](gguf::Writer &w) { w.set_string_array("tokenizer.ggml.tokens", {}); },
         {"tokenizer"}},
        {"token list of integers",
         [](gguf::Writer &w) {
             w.set_i32_array("tokenizer.ggml.tokens", {1, 2, 3});
         },
         {"tokenizer.ggml.tokens"}},
        {"unknown tokenizer model",
         [](gguf::Writer &w) { w.set_string("tokenizer.ggml.model", "nonsense"); },
         {"nonsense"}},
    };
    for (const KvCase &c : cases) {
        TempFile tmp("hparams.gguf");
        const std::string &path = tmp.write(stories_with(c.edit));
        try {
            Model::load(path);
            ADD_FAILURE() << c.name << ": loaded";
        } catch (const Error &e) {
            for (const std::string &n : c.needles)
                EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << c.name << ": " << e.what();
        } catch (const std::exception &e) {
            ADD_FAILURE() << c.name << ": threw " << typeid(e).name() << " (" << e.what()
                          << "), not lctx::Error";
        }
        EXPECT_EQ(llama_model_load_from_file(path.c_str(), llama_model_default_params()), nullptr) << c.name;
    }
}

// Special-token ids and per-token arrays that disagree with the token list: refused, or read so that
// every id the vocabulary reports is a real token.
TEST(HostileModel, TokenizerArraysAndIdsOutOfRange) {
    hostile::quiet();
    const std::vector<std::pair<const char *, std::function<void(gguf::Writer &)>>> cases = {
        {"bos 512", [](gguf::Writer &w) { w.set_u32("tokenizer.ggml.bos_token_id", 512); }},
        {"eos 2^32-1", [](gguf::Writer &w) { w.set_u32("tokenizer.ggml.eos_token_id", 0xffffffffu); }},
        {"unk -5", [](gguf::Writer &w) { w.set_i32("tokenizer.ggml.unknown_token_id", -5); }},
        {"eot 1e9", [](gguf::Writer &w) { w.set_u32("tokenizer.ggml.eot_token_id", 1000000000u); }},
        {"scores short",
         [](gguf::Writer &w) {
             w.set_f32_array("tokenizer.ggml.scores", {0.0f, 1.0f});
         }},
        {"token_type short",
         [](gguf::Writer &w) {
             w.set_i32_array("tokenizer.ggml.token_type", {1, 3});
         }},
        {"token_type out of range",
         [](gguf::Writer &w) {
             w.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(512, 99));
         }},
        {"scores as strings",
         [](gguf::Writer &w) {
             w.set_string_array("tokenizer.ggml.scores", std::vector<std::string>(512, "x"));
         }},
    };
    for (const auto &[name, edit] : cases) {
        TempFile tmp("tokenizer.gguf");
        const std::string &path = tmp.write(stories_with(edit));
        std::unique_ptr<Model> m;
        try {
            m = Model::load(path);
        } catch (const Error &) {
            continue;  // refused: fine
        } catch (const std::exception &e) {
            ADD_FAILURE() << name << ": threw " << e.what() << ", not lctx::Error";
            continue;
        }
        const Vocab &v = m->vocab();
        for (int32_t id : {v.bos(), v.eos(), v.eot(), v.unk(), v.sep(), v.pad(), v.nl()})
            EXPECT_TRUE(id == -1 || (id >= 0 && id < v.n_tokens())) << name << ": special id " << id;
        for (int32_t id : v.eog_tokens()) EXPECT_TRUE(id >= 0 && id < v.n_tokens()) << name << ": eog " << id;
        const std::vector<int32_t> ids = v.tokenize("Once upon a time", true, true);
        for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < v.n_tokens()) << name << ": token " << id;
        EXPECT_NO_THROW((void)v.detokenize(ids, true, true)) << name;
    }
}

}  // namespace
}  // namespace lctx::model_hostile_test
