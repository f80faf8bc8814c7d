// K-quant reference against real files: fixtures/golden/models/llama-<TYPE>.gguf were made by llama.cpp's
// llama-quantize --pure (no importance matrix) from the same F32 original as llama-F16.gguf. So
//   * dequantizing a file tensor must give the F16 tensor up to that type's quantization error (a layout
//     mistake gives errors of the order of the values themselves), and
//   * our reference quantizer, fed the F16 values, must reproduce the file's blocks byte for byte as
//     often as the F16 rounding of its inputs allows (llama-quantize without an imatrix runs exactly the
//     reference quantizers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/quants_k.h"

namespace lctx::quants_k_gguf_test {
namespace {

constexpr int QK = 256;

struct FileType {
    const char *suffix;  // llama-<suffix>.gguf
    GgmlType type;
    size_t block_bytes;
    void (*quantize)(const float *, void *, int64_t);
    void (*dequantize)(const void *, float *, int64_t);
    float (*dot)(int64_t, const void *, const void *);
    // Bound on sqrt(sum err^2 / sum x^2) over a whole tensor, dequantized file vs F16. The synthetic
    // weights are Gaussian, so these are the random-data bounds of quants_k_test.cpp (same reasoning:
    // uniform-quantizer error step/sqrt(12) for each format's step on Gaussian groups, +~20%).
    float rms_bound;
};

const FileType kFiles[] = {
    {"Q2_K", GgmlType::Q2_K, sizeof(block_q2_K), quantize_row_q2_K_ref, dequantize_row_q2_K,
     vec_dot_q2_K_q8_K_ref, 0.36f},
    {"Q3_K", GgmlType::Q3_K, sizeof(block_q3_K), quantize_row_q3_K_ref, dequantize_row_q3_K,
     vec_dot_q3_K_q8_K_ref, 0.18f},
    {"Q4_K", GgmlType::Q4_K, sizeof(block_q4_K), quantize_row_q4_K_ref, dequantize_row_q4_K,
     vec_dot_q4_K_q8_K_ref, 0.09f},
    {"Q5_K", GgmlType::Q5_K, sizeof(block_q5_K), quantize_row_q5_K_ref, dequantize_row_q5_K,
     vec_dot_q5_K_q8_K_ref, 0.045f},
    {"Q6_K", GgmlType::Q6_K, sizeof(block_q6_K), quantize_row_q6_K_ref, dequantize_row_q6_K,
     vec_dot_q6_K_q8_K_ref, 0.022f},
    {"IQ4_XS", GgmlType::IQ4_XS, sizeof(block_iq4_xs), quantize_row_iq4_xs_ref, dequantize_row_iq4_xs,
     vec_dot_iq4_xs_q8_K_ref, 0.09f},
};

std::string model_path(const std::string &suffix) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-" + suffix + ".gguf";
}

std::vector<float> f16_tensor(const gguf::File &f, const gguf::TensorInfo &t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    const uint8_t *p = f.tensor_data(t);
    for (size_t i = 0; i < v.size(); ++i) {
        fp16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        v[i] = fp16_to_fp32(h);
    }
    return v;
}

class QuantsKFile : public ::testing::TestWithParam<FileType> {
  protected:
    void SetUp() override {
        f16_ = gguf::File::open(model_path("F16"));
        q_ = gguf::File::open(model_path(GetParam().suffix));
    }
    std::unique_ptr<gguf::File> f16_, q_;
};

TEST_P(QuantsKFile, DequantizedMatchesF16) {
    const FileType &ft = GetParam();
    int n_tensors = 0;
    for (const auto &t : q_->tensors()) {
        if (t.type != ft.type) continue;
        ++n_tensors;
        const gguf::TensorInfo *tf = f16_->find_tensor(t.name);
        ASSERT_NE(tf, nullptr) << t.name;
        ASSERT_EQ(tf->ne, t.ne) << t.name;
        ASSERT_EQ(tf->type, GgmlType::F16) << t.name;
        ASSERT_EQ(t.nbytes, static_cast<size_t>(t.n_elements() / QK) * ft.block_bytes) << t.name;
        const auto ref = f16_tensor(*f16_, *tf);
        std::vector<float> got(ref.size());
        ft.dequantize(q_->tensor_data(t), got.data(), t.n_elements());
        double se = 0, sx = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            se += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
            sx += double(ref[i]) * ref[i];
        }
        const double rel = std::sqrt(se / sx);
        EXPECT_LT(rel, ft.rms_bound) << ft.suffix << " " << t.name;
        EXPECT_GT(rel, ft.rms_bound / 5) << ft.suffix << " " << t.name << " (too good to be quantized)";
    }
    // --pure: every 2-D tensor (7 per layer x 2 layers + token_embd + output) has the file's type.
    EXPECT_EQ(n_tensors, 16) << ft.suffix;
}

// Fraction of blocks for which our quantizer, fed the F16 values, writes exactly the file's bytes.
// The file was quantized from the F32 original, which differs from the F16 values by up to half an
// F16 ulp; that alone changes some blocks (a rounding decision or a scale search flips). We measure
// how often by quantizing the F16 values and an F32 perturbation of them within the same half ulp: the
// file must agree with us at least as often as our own quantizer agrees with itself under that
// perturbation, less 3 points. (Measured on these files: Q2_K 57/58%, Q3_K 72/73%, Q4_K 63/64%,
// Q5_K 45/45%, Q6_K 42/43%, IQ4_XS 80/80%; changing one search constant of a quantizer, e.g. Q4_K's
// rmin -1 -> -0.9 or Q6_K's scale grid -9..9 -> -8..8, drops the first number by 20 points or more.)
TEST_P(QuantsKFile, RequantizingF16ReproducesFileBlocks) {
    const FileType &ft = GetParam();
    std::mt19937 rng(20250101);
    std::uniform_real_distribution<float> half_ulp(-0.49f, 0.49f);
    int64_t blocks = 0, same_as_file = 0, same_as_self = 0;
    for (const auto &t : q_->tensors()) {
        if (t.type != ft.type) continue;
        const gguf::TensorInfo *tf = f16_->find_tensor(t.name);
        ASSERT_NE(tf, nullptr) << t.name;
        const auto x = f16_tensor(*f16_, *tf);
        std::vector<float> xp(x.size());
        const uint8_t *h = f16_->tensor_data(*tf);
        for (size_t i = 0; i < x.size(); ++i) {
            fp16_t bits;
            std::memcpy(&bits, h + 2 * i, 2);
            // distance to the next half away from zero: one ulp of this half (finite weights only)
            const float ulp = std::fabs(fp16_to_fp32(static_cast<fp16_t>(bits + 1)) - x[i]);
            xp[i] = x[i] + half_ulp(rng) * ulp;
        }
        const int64_t n = t.n_elements();
        std::vector<uint8_t> mine(static_cast<size_t>(n / QK) * ft.block_bytes), mine_p(mine.size());
        ft.quantize(x.data(), mine.data(), n);
        ft.quantize(xp.data(), mine_p.data(), n);
        const uint8_t *theirs = q_->tensor_data(t);
        for (int64_t b = 0; b < n / QK; ++b) {
            const size_t off = static_cast<size_t>(b) * ft.block_bytes;
            ++blocks;
            same_as_file += std::memcmp(mine.data() + off, theirs + off, ft.block_bytes) == 0;
            same_as_self += std::memcmp(mine.data() + off, mine_p.data() + off, ft.block_bytes) == 0;
        }
    }
    ASSERT_GT(blocks, 0);
    const double file_rate = double(same_as_file) / blocks;
    const double self_rate = double(same_as_self) / blocks;
    EXPECT_GE(file_rate, self_rate - 0.03) << ft.suffix << ": file " << file_rate << " self " << self_rate;
    EXPECT_GT(file_rate, 0.35) << ft.suffix;
}

// The dot product on real weight rows: vec_dot_ref(file row, Q8_K activation) against the double dot
// of the dequantized rows (bound reasoning as in quants_k_test.cpp: only float roundings differ).
TEST_P(QuantsKFile, DotOnFileRows) {
    const FileType &ft = GetParam();
    const gguf::TensorInfo *t = q_->find_tensor("blk.0.ffn_down.weight");  // rows of 512: 2 super-blocks
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, ft.type);
    const int64_t n = t->ne[0];
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> act(static_cast<size_t>(n));
    for (auto &v : act) v = nd(rng);
    std::vector<block_q8_K> aq(static_cast<size_t>(n / QK));
    quantize_row_q8_K_ref(act.data(), aq.data(), n);
    std::vector<float> ad(act.size());
    dequantize_row_q8_K(aq.data(), ad.data(), n);
    const size_t row_bytes = static_cast<size_t>(n / QK) * ft.block_bytes;
    for (int64_t r = 0; r < t->ne[1]; r += 37) {
        const uint8_t *row = q_->tensor_data(*t) + static_cast<size_t>(r) * row_bytes;
        std::vector<float> wd(act.size());
        ft.dequantize(row, wd.data(), n);
        double ref = 0, mag = 0, wmax = 0;
        for (float w : wd) wmax = std::max(wmax, std::fabs(double(w)));
        for (size_t i = 0; i < wd.size(); ++i) {
            ref += double(wd[i]) * ad[i];
            mag += (std::fabs(double(wd[i])) + wmax) * std::fabs(double(ad[i]));
        }
        EXPECT_NEAR(ft.dot(n, row, aq.data()), ref, 1e-6 * mag) << ft.suffix << " row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(LlamaFixtures, QuantsKFile, ::testing::ValuesIn(kFiles),
                         [](const ::testing::TestParamInfo<FileType> &info) {
                             return std::string(info.param.suffix);
                         });

}  // namespace
}  // namespace lctx::quants_k_gguf_test
