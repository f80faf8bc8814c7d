// The reader on real GGUF files: the shipped model, the golden models and the vocabulary files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "gguf/gguf.h"

namespace lctx::gguf::gguf_real_files_test {
namespace {

namespace fs = std::filesystem;

TEST(GgufRealFiles, Stories260K) {
    auto f = File::open(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_int("llama.block_count"), 5);
    EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
    EXPECT_EQ(f->get_int("llama.attention.head_count"), 8);
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
    EXPECT_EQ(f->get_int("llama.feed_forward_length"), 172);
    EXPECT_EQ(f->get_int("llama.context_length"), 2048);
    EXPECT_EQ(f->get_int("tokenizer.ggml.padding_token_id"), 4294967295);  // u32, fits in int64
    EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
    EXPECT_FALSE(f->get_int("no.such.key").has_value());

    const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    EXPECT_EQ(tokens->size(), 512u);
    const auto scores = f->get_float_array("tokenizer.ggml.scores");
    ASSERT_TRUE(scores.has_value());
    EXPECT_EQ(scores->size(), 512u);
    const auto types = f->get_int_array("tokenizer.ggml.token_type");
    ASSERT_TRUE(types.has_value());
    EXPECT_EQ(types->size(), 512u);
    EXPECT_EQ((*tokens)[0], "<unk>");
    EXPECT_EQ((*tokens)[2], "</s>");
    EXPECT_EQ((*types)[0], 2);  // unknown
    EXPECT_EQ((*types)[1], 3);  // control

    const TensorInfo *emb = f->find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    ASSERT_EQ(emb->ne.size(), 2u);
    EXPECT_EQ(emb->ne[0], 64);
    EXPECT_EQ(emb->ne[1], 512);
    EXPECT_EQ(emb->type, GgmlType::F32);
    EXPECT_EQ(emb->nbytes, 64u * 512u * 4u);
    EXPECT_EQ(emb->n_elements(), 64 * 512);
    EXPECT_EQ(f->find_tensor("no.such.tensor"), nullptr);
    // 5 layers x 9 tensors + token_embd + output_norm + output.
    EXPECT_EQ(f->tensors().size(), 48u);
    EXPECT_EQ(f->metadata().size(), 19u);
    EXPECT_EQ(f->metadata()[0].key, "tokenizer.ggml.tokens");  // file order is kept
    const TensorInfo *k0 = f->find_tensor("blk.0.attn_k.weight");
    ASSERT_NE(k0, nullptr);
    EXPECT_EQ(k0->ne, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(k0->offset, 278784u);
    EXPECT_EQ(f->data_offset(), 14176u);  // 14152 bytes of header, padded to 32
    for (const TensorInfo &t : f->tensors()) {
        EXPECT_EQ((f->data_offset() + t.offset) % f->alignment(), 0u) << t.name;
        EXPECT_LE(f->data_offset() + t.offset + t.nbytes, f->size()) << t.name;
        EXPECT_EQ(f->tensor_data(t), f->bytes() + f->data_offset() + t.offset);
    }
}

// Every GGUF under a folder opens, and every tensor's bytes lie inside the file.
void open_all_in(const std::string &dir, size_t min_files) {
    size_t n = 0;
    for (const auto &entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".gguf") continue;
        SCOPED_TRACE(entry.path().string());
        std::unique_ptr<File> f;
        ASSERT_NO_THROW(f = File::open(entry.path().string()));
        EXPECT_TRUE(f->get_string("general.architecture").has_value());
        for (const KeyValue &kv : f->metadata()) EXPECT_EQ(f->find(kv.key), &kv.value);
        for (const TensorInfo &t : f->tensors()) {
            EXPECT_EQ(f->find_tensor(t.name), &t);
            EXPECT_LE(f->data_offset() + t.offset + t.nbytes, f->size());
        }
        ++n;
    }
    EXPECT_GE(n, min_files);
}

TEST(GgufRealFiles, GoldenModels) {
    open_all_in(std::string(LCTX_FIXTURES_DIR) + "/golden/models", 20);
}

TEST(GgufRealFiles, VocabFiles) {
    open_all_in(std::string(LCTX_FIXTURES_DIR) + "/vocab", 10);
    auto f = File::open(std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-llama-spm.gguf");
    const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    EXPECT_EQ(tokens->size(), 32000u);
    EXPECT_EQ((*tokens)[1], "<s>");
}

}  // namespace
}  // namespace lctx::gguf::gguf_real_files_test

namespace lctx::gguf::gguf_real_files_test {
namespace {

// Re-writing a file made by llama.cpp's converter reproduces it byte for byte: our writer lays files out
// the standard way (and our reader lost nothing).
std::vector<uint8_t> rewrite(const File &f) {
    Writer w;
    for (const KeyValue &kv : f.metadata()) w.set(kv.key, kv.value);
    for (const TensorInfo &t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, f.tensor_data(t), t.nbytes);
    return w.to_bytes();
}

TEST(GgufRealFiles, RewriteIsByteIdentical) {
    size_t n = 0;
    for (const char *dir : {"/golden/models", "/vocab"}) {
        for (const auto &entry : fs::directory_iterator(std::string(LCTX_FIXTURES_DIR) + dir)) {
            if (entry.path().extension() != ".gguf") continue;
            SCOPED_TRACE(entry.path().string());
            auto f = File::open(entry.path().string());
            const std::vector<uint8_t> again = rewrite(*f);
            ASSERT_EQ(again.size(), f->size());
            EXPECT_EQ(std::memcmp(again.data(), f->bytes(), again.size()), 0);
            ++n;
        }
    }
    EXPECT_GE(n, 30u);
}

}  // namespace
}  // namespace lctx::gguf::gguf_real_files_test
