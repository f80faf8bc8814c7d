// Files that the fixtures do not cover: the input's alignment is kept, 3-D expert tensors are quantized
// expert by expert (each with its own slice of the importance matrix).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "gguf/gguf.h"
#include "quantize/file_types.h"
#include "quantize/model_quantizer.h"
#include "quantize/row_quantizer.h"
#include "quantize/tensor_type_rules.h"
#include "util/error.h"

namespace lctx::quantize::layout_test {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string &name) {
    return (fs::temp_directory_path() / ("lctx_qlayout_" + std::to_string(getpid()) + "_" + name)).string();
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float &x : v) x = nd(rng);
    return v;
}

// A small llama-like file: one layer with an expert tensor [256, 8, 2] and a plain matrix, F32.
std::string write_input(uint32_t alignment) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.expert_count", 2);
    w.set_u32("llama.attention.head_count", 4);
    if (alignment) w.set_u32("general.alignment", alignment);
    const std::vector<float> exps = random_floats(256 * 8 * 2, 1), q = random_floats(256 * 3, 2);
    w.add_tensor("blk.0.ffn_up_exps.weight", GgmlType::F32, {256, 8, 2}, exps.data(), exps.size() * 4);
    w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {256, 3}, q.data(), q.size() * 4);
    const std::string p = temp_file("in" + std::to_string(alignment) + ".gguf");
    w.write_file(p);
    return p;
}

TEST(QuantizeLayout, KeepsTheInputsAlignment) {
    const std::string in = write_input(64), out = temp_file("a64.gguf");
    Options o;
    o.ftype = kFtypeQ8_0;
    quantize_model(in, out, o);
    std::unique_ptr<gguf::File> f = gguf::File::open(out);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->data_offset() % 64, 0u);
    for (const gguf::TensorInfo &t : f->tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_EQ(f->get_int("general.alignment"), 64);
    fs::remove(in);
    fs::remove(out);
}

TEST(QuantizeLayout, ExpertsAreQuantizedEachWithItsImportance) {
    const std::string in = write_input(0), out = temp_file("exps.gguf");
    std::unordered_map<std::string, std::vector<float>> im;
    std::vector<float> imp(256 * 2);
    for (size_t j = 0; j < imp.size(); ++j)
        imp[j] = j < 256 ? 1.0f + static_cast<float>(j % 7) : 0.01f + static_cast<float>(j % 3);
    im["blk.0.ffn_up_exps.weight"] = imp;
    Options o;
    o.ftype = kFtypeQ4_0;
    o.pure = true;
    o.imatrix = &im;
    quantize_model(in, out, o);
    std::unique_ptr<gguf::File> src = gguf::File::open(in), f = gguf::File::open(out);
    const gguf::TensorInfo *t = f->find_tensor("blk.0.ffn_up_exps.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, GgmlType::Q4_0);
    EXPECT_EQ(t->ne, (std::vector<int64_t>{256, 8, 2}));
    // Expert e is the rows e*8 .. e*8+7, quantized with importance values e*256 .. e*256+255.
    const gguf::TensorInfo *ts = src->find_tensor("blk.0.ffn_up_exps.weight");
    std::vector<float> x(256 * 16);
    std::memcpy(x.data(), src->tensor_data(*ts), x.size() * 4);
    const size_t mat = row_size(GgmlType::Q4_0, 256) * 8;
    for (int e = 0; e < 2; ++e) {
        std::vector<uint8_t> want(mat);
        quantize_rows(GgmlType::Q4_0, x.data() + e * 8 * 256, want.data(), 8, 256, imp.data() + e * 256, 1);
        EXPECT_EQ(std::memcmp(f->tensor_data(*t) + e * mat, want.data(), mat), 0) << "expert " << e;
    }
    // An importance entry of the wrong size is refused.
    im["blk.0.ffn_up_exps.weight"].resize(256);
    EXPECT_THROW(quantize_model(in, out, o), Error);
    fs::remove(in);
    fs::remove(out);
}

// Which tensors b4748's llama-quantize quantizes at all (llama_model_quantize_impl): weights of two or more
// dimensions, except norms (any name with "_norm.weight", whatever its shape) and, with
// quantize_output_tensor off (--leave-output-tensor), output.weight. What it leaves keeps its type and bytes.
TEST(QuantizeLayout, NormsAndALeftOutputKeepTheirTypeAndBytes) {
    EXPECT_TRUE(is_quantizable("blk.0.attn_q.weight", 2, true));
    EXPECT_FALSE(is_quantizable("blk.0.attn_q.weight", 1, true));
    EXPECT_FALSE(is_quantizable("blk.0.attn_norm.weight", 2, true));
    EXPECT_FALSE(is_quantizable("blk.0.ffn_norm.weight", 3, true));
    EXPECT_TRUE(is_quantizable("output.weight", 2, true));
    EXPECT_FALSE(is_quantizable("output.weight", 2, false));
    EXPECT_TRUE(is_quantizable("blk.0.output.weight", 2, false));  // only the model's output matrix

    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.attention.head_count", 4);
    const std::vector<float> q = random_floats(256 * 3, 3), norm2 = random_floats(256 * 2, 4),
                             norm1 = random_floats(256, 5), out_w = random_floats(256 * 4, 6);
    w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {256, 3}, q.data(), q.size() * 4);
    w.add_tensor("blk.0.attn_q_norm.weight", GgmlType::F32, {256, 2}, norm2.data(), norm2.size() * 4);
    w.add_tensor("blk.0.attn_norm.weight", GgmlType::F32, {256}, norm1.data(), norm1.size() * 4);
    w.add_tensor("output.weight", GgmlType::F32, {256, 4}, out_w.data(), out_w.size() * 4);
    const std::string in = temp_file("norms.gguf"), out = temp_file("norms_q.gguf");
    w.write_file(in);
    std::unique_ptr<gguf::File> src = gguf::File::open(in);
    auto same_as_input = [&](const gguf::File &f, const std::string &name) {
        const gguf::TensorInfo *a = src->find_tensor(name), *b = f.find_tensor(name);
        return a && b && b->type == a->type && b->nbytes == a->nbytes &&
               std::memcmp(f.tensor_data(*b), src->tensor_data(*a), a->nbytes) == 0;
    };
    for (bool quantize_output : {true, false}) {
        Options o;
        o.ftype = kFtypeQ8_0;
        o.quantize_output_tensor = quantize_output;
        quantize_model(in, out, o);
        std::unique_ptr<gguf::File> f = gguf::File::open(out);
        ASSERT_NE(f->find_tensor("blk.0.attn_q.weight"), nullptr);
        EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
        EXPECT_TRUE(same_as_input(*f, "blk.0.attn_q_norm.weight")) << "a 2-D norm is not quantized";
        EXPECT_TRUE(same_as_input(*f, "blk.0.attn_norm.weight"));
        ASSERT_NE(f->find_tensor("output.weight"), nullptr);
        if (quantize_output)
            EXPECT_EQ(f->find_tensor("output.weight")->type, GgmlType::Q8_0);
        else
            EXPECT_TRUE(same_as_input(*f, "output.weight")) << "quantize_output_tensor off";
    }
    fs::remove(in);
    fs::remove(out);
}

}  // namespace
}  // namespace lctx::quantize::layout_test
