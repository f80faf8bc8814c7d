// Scalar reference of F32/F16/BF16 and the 32-element block types: byte layout (hand-built blocks),
// the reference quantizers (exact cases and error bounds on random data), and the dot products
// (against the float dot of the dequantized rows).
#include "tensor/quants_legacy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "quant_test_util.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::quants_legacy_test {
namespace {

using test::check_round_trip;
using test::dequantize;
using test::half_err;
using test::kHalfRel;
using test::quantize;
using test::random_row;

template <typename Block>
std::vector<uint8_t> bytes_of(const std::vector<Block> &blocks) {
    std::vector<uint8_t> b(blocks.size() * sizeof(Block));
    std::memcpy(b.data(), blocks.data(), b.size());
    return b;
}

// ======================================================================= layout of hand-built blocks

TEST(LegacyLayout, StructOffsetsMatchTheFileFormat) {
    // Offsets the GGUF format fixes (a reordered field would still pass the size checks).
    EXPECT_EQ(offsetof(block_q4_1, m), 2u);
    EXPECT_EQ(offsetof(block_q4_1, qs), 4u);
    EXPECT_EQ(offsetof(block_q5_0, qh), 2u);
    EXPECT_EQ(offsetof(block_q5_0, qs), 6u);
    EXPECT_EQ(offsetof(block_q5_1, qh), 4u);
    EXPECT_EQ(offsetof(block_q5_1, qs), 8u);
    EXPECT_EQ(offsetof(block_q8_1, s), 2u);
    EXPECT_EQ(offsetof(block_q8_1, qs), 4u);
    EXPECT_EQ(offsetof(block_q2_K, qs), 16u);
    EXPECT_EQ(offsetof(block_q2_K, d), 80u);
    EXPECT_EQ(offsetof(block_q3_K, scales), 96u);
    EXPECT_EQ(offsetof(block_q3_K, d), 108u);
    EXPECT_EQ(offsetof(block_q4_K, scales), 4u);
    EXPECT_EQ(offsetof(block_q4_K, qs), 16u);
    EXPECT_EQ(offsetof(block_q5_K, qh), 16u);
    EXPECT_EQ(offsetof(block_q5_K, qs), 48u);
    EXPECT_EQ(offsetof(block_q6_K, qh), 128u);
    EXPECT_EQ(offsetof(block_q6_K, scales), 192u);
    EXPECT_EQ(offsetof(block_q6_K, d), 208u);
    EXPECT_EQ(offsetof(block_q8_K, qs), 4u);
    EXPECT_EQ(offsetof(block_q8_K, bsums), 260u);
    EXPECT_EQ(offsetof(block_iq4_xs, scales_h), 2u);
    EXPECT_EQ(offsetof(block_iq4_xs, scales_l), 4u);
    EXPECT_EQ(offsetof(block_iq4_xs, qs), 8u);
}

TEST(LegacyLayout, BlockSizesMatchTypeTable) {
    EXPECT_EQ(type_traits(GgmlType::Q4_0).type_size, sizeof(block_q4_0));
    EXPECT_EQ(type_traits(GgmlType::Q4_1).type_size, sizeof(block_q4_1));
    EXPECT_EQ(type_traits(GgmlType::Q5_0).type_size, sizeof(block_q5_0));
    EXPECT_EQ(type_traits(GgmlType::Q5_1).type_size, sizeof(block_q5_1));
    EXPECT_EQ(type_traits(GgmlType::Q8_0).type_size, sizeof(block_q8_0));
    EXPECT_EQ(type_traits(GgmlType::Q8_1).type_size, sizeof(block_q8_1));
    EXPECT_EQ(type_traits(GgmlType::IQ4_NL).type_size, sizeof(block_iq4_nl));
    EXPECT_EQ(type_traits(GgmlType::Q2_K).type_size, sizeof(block_q2_K));
    EXPECT_EQ(type_traits(GgmlType::Q3_K).type_size, sizeof(block_q3_K));
    EXPECT_EQ(type_traits(GgmlType::Q4_K).type_size, sizeof(block_q4_K));
    EXPECT_EQ(type_traits(GgmlType::Q5_K).type_size, sizeof(block_q5_K));
    EXPECT_EQ(type_traits(GgmlType::Q6_K).type_size, sizeof(block_q6_K));
    EXPECT_EQ(type_traits(GgmlType::Q8_K).type_size, sizeof(block_q8_K));
    EXPECT_EQ(type_traits(GgmlType::IQ4_XS).type_size, sizeof(block_iq4_xs));
}

// Raw bytes written by hand: d = 0.5 (0x3800 little-endian), qs[j] = j | (15 - j) << 4.
// Low nibbles are elements 0..15, high nibbles elements 16..31.
TEST(LegacyLayout, Q4_0HandBuiltBlock) {
    std::vector<uint8_t> raw = {0x00, 0x38};
    for (int j = 0; j < 16; ++j) raw.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
    ASSERT_EQ(raw.size(), 18u);
    const std::vector<float> y = dequantize(GgmlType::Q4_0, raw, 32);
    EXPECT_EQ(y[0], -4.0f);   // (0 - 8) * 0.5
    EXPECT_EQ(y[15], 3.5f);   // (15 - 8) * 0.5
    EXPECT_EQ(y[16], 3.5f);   // high nibble of byte 0 = 15
    EXPECT_EQ(y[31], -4.0f);  // high nibble of byte 15 = 0
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8)) << j;
        EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(7 - j)) << j;
    }
}

TEST(LegacyLayout, Q4_1HandBuiltBlock) {
    // d = 0.25 (0x3400), m = -1 (0xbc00)
    std::vector<uint8_t> raw = {0x00, 0x34, 0x00, 0xbc};
    for (int j = 0; j < 16; ++j) raw.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
    const std::vector<float> y = dequantize(GgmlType::Q4_1, raw, 32);
    EXPECT_EQ(y[0], -1.0f);
    EXPECT_EQ(y[15], 2.75f);
    EXPECT_EQ(y[16], 2.75f);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.25f * static_cast<float>(j) - 1.0f) << j;
        EXPECT_EQ(y[j + 16], 0.25f * static_cast<float>(15 - j) - 1.0f) << j;
    }
}

// qh = bytes {0x55, 0x55, 0xaa, 0xaa}: bit i of the little-endian u32 is the 5th bit of element i,
// so elements 0, 2, ..., 14 and 17, 19, ..., 31 have it set.
bool q5_high_bit(int i) {
    const uint8_t qh[4] = {0x55, 0x55, 0xaa, 0xaa};
    return (qh[i / 8] >> (i % 8)) & 1;
}

TEST(LegacyLayout, Q5_0HandBuiltBlock) {
    std::vector<uint8_t> raw = {0x00, 0x3c, 0x55, 0x55, 0xaa, 0xaa};  // d = 1
    for (int j = 0; j < 16; ++j) raw.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
    const std::vector<float> y = dequantize(GgmlType::Q5_0, raw, 32);
    EXPECT_EQ(y[0], 0.0f);    // 0 | 16 -> 16 - 16
    EXPECT_EQ(y[1], -15.0f);  // 1 - 16
    EXPECT_EQ(y[2], 2.0f);    // 2 | 16 - 16
    EXPECT_EQ(y[16], -1.0f);  // 15 - 16
    EXPECT_EQ(y[17], 14.0f);  // 14 | 16 - 16
    EXPECT_EQ(y[31], 0.0f);   // 0 | 16 - 16
    for (int i = 0; i < 32; ++i) {
        const int low = i < 16 ? i : 31 - i;
        const int q = low | (q5_high_bit(i) ? 16 : 0);
        EXPECT_EQ(y[i], static_cast<float>(q - 16)) << i;
    }
}

TEST(LegacyLayout, Q5_1HandBuiltBlock) {
    // d = 0.5 (0x3800), m = 2 (0x4000)
    std::vector<uint8_t> raw = {0x00, 0x38, 0x00, 0x40, 0x55, 0x55, 0xaa, 0xaa};
    for (int j = 0; j < 16; ++j) raw.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
    const std::vector<float> y = dequantize(GgmlType::Q5_1, raw, 32);
    EXPECT_EQ(y[0], 10.0f);   // 16 * 0.5 + 2
    EXPECT_EQ(y[1], 2.5f);    // 1 * 0.5 + 2
    EXPECT_EQ(y[17], 17.0f);  // 30 * 0.5 + 2
    for (int i = 0; i < 32; ++i) {
        const int low = i < 16 ? i : 31 - i;
        const int q = low | (q5_high_bit(i) ? 16 : 0);
        EXPECT_EQ(y[i], 0.5f * static_cast<float>(q) + 2.0f) << i;
    }
}

TEST(LegacyLayout, Q8_0AndQ8_1HandBuiltBlocks) {
    std::vector<uint8_t> q80 = {0x00, 0xb8};              // d = -0.5
    std::vector<uint8_t> q81 = {0x00, 0xb8, 0x00, 0x7c};  // s = inf: dequantization ignores s
    for (int j = 0; j < 32; ++j) {
        const int8_t q = static_cast<int8_t>(j == 0 ? -128 : j * 4 - 1);
        q80.push_back(static_cast<uint8_t>(q));
        q81.push_back(static_cast<uint8_t>(q));
    }
    const std::vector<float> a = dequantize(GgmlType::Q8_0, q80, 32);
    const std::vector<float> b = dequantize(GgmlType::Q8_1, q81, 32);
    EXPECT_EQ(a[0], 64.0f);  // -128 * -0.5
    EXPECT_EQ(a[31], -61.5f);
    for (int j = 1; j < 32; ++j) EXPECT_EQ(a[j], -0.5f * static_cast<float>(j * 4 - 1)) << j;
    EXPECT_EQ(a, b);
}

TEST(LegacyLayout, Iq4NlHandBuiltBlock) {
    std::vector<uint8_t> raw = {0x00, 0x40};  // d = 2
    for (int j = 0; j < 16; ++j) raw.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
    const std::vector<float> y = dequantize(GgmlType::IQ4_NL, raw, 32);
    EXPECT_EQ(y[0], -254.0f);
    EXPECT_EQ(y[7], -20.0f);
    EXPECT_EQ(y[8], 2.0f);
    EXPECT_EQ(y[15], 226.0f);
    EXPECT_EQ(y[16], 226.0f);
    EXPECT_EQ(y[31], -254.0f);
    const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 2.0f * levels[j]) << j;
        EXPECT_EQ(y[j + 16], 2.0f * levels[15 - j]) << j;
    }
}

TEST(LegacyLayout, EachBlockUsesItsOwnScale) {
    // Two Q8_0 blocks, d = 1 and d = -3; the second block must not borrow the first one's scale.
    std::vector<block_q8_0> blocks(2);
    blocks[0].d = 0x3c00;
    blocks[1].d = 0xc200;
    for (int j = 0; j < 32; ++j) {
        blocks[0].qs[j] = static_cast<int8_t>(j);
        blocks[1].qs[j] = static_cast<int8_t>(-j);
    }
    const std::vector<float> y = dequantize(GgmlType::Q8_0, bytes_of(blocks), 64);
    for (int j = 0; j < 32; ++j) {
        EXPECT_EQ(y[j], static_cast<float>(j));
        EXPECT_EQ(y[32 + j], 3.0f * static_cast<float>(j));
    }
}

TEST(LegacyLayout, PlainTypes) {
    const std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00};
    EXPECT_EQ(dequantize(GgmlType::F16, f16, 4),
              (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)}));
    const std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x49, 0x40, 0x80, 0xff};
    const std::vector<float> b = dequantize(GgmlType::BF16, bf16, 3);
    EXPECT_EQ(b[0], 1.0f);
    EXPECT_EQ(b[1], 3.140625f);
    EXPECT_EQ(b[2], -std::numeric_limits<float>::infinity());
    const std::vector<float> f = {1.5f, -0.0f, 3e38f};
    std::vector<uint8_t> fb(12);
    std::memcpy(fb.data(), f.data(), 12);
    EXPECT_EQ(dequantize(GgmlType::F32, fb, 3), f);
}

// ======================================================================= quantizers: exact cases

TEST(LegacyQuantize, Q4_0ExactGridRoundTrips) {
    // Values on the grid 0.5 * [-8, 7] with -4 the largest magnitude: d = -4 / -8 = 0.5 exactly.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>((j * 7) % 16 - 8);
    x[5] = -4.0f;
    const std::vector<uint8_t> q = quantize(GgmlType::Q4_0, x);
    EXPECT_EQ(q[0], 0x00);
    EXPECT_EQ(q[1], 0x38);
    // Element j in the low nibble of byte j, element j+16 in the high nibble.
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(q[2 + j] & 0x0f, static_cast<int>(x[j] * 2 + 8)) << j;
        EXPECT_EQ(q[2 + j] >> 4, static_cast<int>(x[j + 16] * 2 + 8)) << j;
    }
    EXPECT_EQ(dequantize(GgmlType::Q4_0, q, 32), x);
}

TEST(LegacyQuantize, Q4_0PositiveExtremeAndClamp) {
    // Largest magnitude +4: d = 4 / -8 = -0.5, so +4 is level 0 and -4 would be level 16, clamped to
    // 15 (value -3.5): the opposite extreme loses up to one step.
    std::vector<float> x(32, 0.0f);
    x[0] = 4.0f;
    x[1] = -4.0f;
    x[2] = -3.5f;
    x[3] = 1.0f;
    const std::vector<uint8_t> q = quantize(GgmlType::Q4_0, x);
    EXPECT_EQ(q[0] | q[1] << 8, 0xb800);  // d = -0.5
    EXPECT_EQ(q[2] & 0x0f, 0);
    EXPECT_EQ(q[3] & 0x0f, 15);
    EXPECT_EQ(q[4] & 0x0f, 15);
    EXPECT_EQ(q[5] & 0x0f, 6);  // 1 / -0.5 + 8
    const std::vector<float> y = dequantize(GgmlType::Q4_0, q, 32);
    EXPECT_EQ(y[0], 4.0f);
    EXPECT_EQ(y[1], -3.5f);
    EXPECT_EQ(y[2], -3.5f);
    EXPECT_EQ(y[3], 1.0f);
}

TEST(LegacyQuantize, Q4_0RoundsHalfUpInLevelSpace) {
    // d = 1 (x[0] = -8); x = 0.5 sits between levels 8 and 9 and rounds up (+8.5 then truncation);
    // x = -0.5 is exactly level 7.5 and also rounds up, to 8 (value 0).
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f;
    x[1] = 0.5f;
    x[2] = -0.5f;
    x[3] = 2.49f;
    const std::vector<float> y = dequantize(GgmlType::Q4_0, quantize(GgmlType::Q4_0, x), 32);
    EXPECT_EQ(y[1], 1.0f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], 2.0f);
}

TEST(LegacyQuantize, Q4_1And5_1MapMinAndMaxToTheEnds) {
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = -1.0f + 0.25f * static_cast<float>(j % 16);  // [-1, 2.75]
    const std::vector<uint8_t> q41 = quantize(GgmlType::Q4_1, x);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q41[0] | q41[1] << 8)), 0.25f);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q41[2] | q41[3] << 8)), -1.0f);
    EXPECT_EQ(dequantize(GgmlType::Q4_1, q41, 32), x);  // on the grid: exact

    std::vector<float> z(32);
    for (int j = 0; j < 32; ++j) z[j] = 3.0f + 0.5f * static_cast<float>(31 - j);  // [3, 18.5], step 0.5
    const std::vector<uint8_t> q51 = quantize(GgmlType::Q5_1, z);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q51[0] | q51[1] << 8)), 0.5f);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q51[2] | q51[3] << 8)), 3.0f);
    EXPECT_EQ(dequantize(GgmlType::Q5_1, q51, 32), z);
    // Element 0 is level 31: all five bits set, the 5th in bit 0 of qh.
    EXPECT_EQ(q51[8] & 0x0f, 15);
    EXPECT_EQ(q51[4] & 1, 1);
    // Element 31 is level 0.
    EXPECT_EQ(q51[8 + 15] >> 4, 0);
    EXPECT_EQ(q51[7] >> 7, 0);
}

TEST(LegacyQuantize, Q5_0ExactGridRoundTrips) {
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = 0.25f * static_cast<float>((j * 11) % 32 - 16);
    x[9] = -4.0f;  // largest magnitude, d = 0.25
    const std::vector<uint8_t> q = quantize(GgmlType::Q5_0, x);
    EXPECT_EQ(q[0] | q[1] << 8, 0x3400);
    EXPECT_EQ(dequantize(GgmlType::Q5_0, q, 32), x);
    // Bit i of qh is bit 4 of element i's level.
    uint32_t qh = 0;
    for (int i = 0; i < 32; ++i)
        if (static_cast<int>(x[i] * 4 + 16) & 16) qh |= 1u << i;
    EXPECT_EQ(static_cast<uint32_t>(q[2] | q[3] << 8 | q[4] << 16 | static_cast<uint32_t>(q[5]) << 24), qh);
}

TEST(LegacyQuantize, Q8_0RoundsHalfAwayFromZero) {
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f;  // d = 1
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.49f;
    x[4] = -127.0f;
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_0, x);
    EXPECT_EQ(q[0] | q[1] << 8, 0x3c00);
    EXPECT_EQ(static_cast<int8_t>(q[2]), 127);
    EXPECT_EQ(static_cast<int8_t>(q[3]), 3);
    EXPECT_EQ(static_cast<int8_t>(q[4]), -3);
    EXPECT_EQ(static_cast<int8_t>(q[5]), 0);
    EXPECT_EQ(static_cast<int8_t>(q[6]), -127);
}

TEST(LegacyQuantize, Q8_1StoresScaledSumOfQuants) {
    const std::vector<float> x = random_row(32 * 8, 7);
    const std::vector<uint8_t> q1 = quantize(GgmlType::Q8_1, x);
    const std::vector<uint8_t> q0 = quantize(GgmlType::Q8_0, x);
    for (int b = 0; b < 8; ++b) {
        block_q8_1 blk;
        std::memcpy(&blk, q1.data() + b * sizeof(block_q8_1), sizeof blk);
        // Same d and quants as Q8_0.
        EXPECT_EQ(0, std::memcmp(&blk.d, q0.data() + b * 34, 2));
        EXPECT_EQ(0, std::memcmp(blk.qs, q0.data() + b * 34 + 2, 32));
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += blk.qs[j];
        // s is the float d (amax / 127) times the sum, rounded to half once.
        EXPECT_EQ(blk.s, fp32_to_fp16(static_cast<float>(sum) * (amax / 127.0f))) << b;
        EXPECT_NE(sum, 0);
    }
}

TEST(LegacyQuantize, ZeroBlocksStayZero) {
    const std::vector<float> x(64, 0.0f);
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                       GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::IQ4_NL}) {
        const std::vector<float> y = dequantize(t, quantize(t, x), 64);
        for (float v : y) ASSERT_EQ(v, 0.0f) << type_name(t);
    }
    // IQ4_NL's zero block: d = 0 and every index is the level nearest 0 (index 8, value 1).
    const std::vector<uint8_t> q = quantize(GgmlType::IQ4_NL, x);
    EXPECT_EQ(q[0] | q[1] << 8, 0);
    for (int j = 2; j < 18; ++j) EXPECT_EQ(q[j], 0x88);
}

TEST(LegacyQuantize, PlainTypesRoundToNearest) {
    const std::vector<float> x = {1.0f, 1.0f + std::ldexp(1.0f, -11), 65520.0f, -1e-8f, 3.14159265f};
    const std::vector<uint8_t> h = quantize(GgmlType::F16, x);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(h[2 * i] | h[2 * i + 1] << 8, fp32_to_fp16(x[i])) << i;
    const std::vector<uint8_t> b = quantize(GgmlType::BF16, x);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(b[2 * i] | b[2 * i + 1] << 8, fp32_to_bf16(x[i])) << i;
    const std::vector<uint8_t> f = quantize(GgmlType::F32, x);
    EXPECT_EQ(0, std::memcmp(f.data(), x.data(), f.size()));
}

// ======================================================================= IQ4_NL specifics

TEST(Iq4Nl, NearestIndex) {
    for (int i = 0; i < 16; ++i) EXPECT_EQ(iq4nl_nearest_index(kValuesIq4nl[i]), i);
    EXPECT_EQ(iq4nl_nearest_index(-1000.0f), 0);
    EXPECT_EQ(iq4nl_nearest_index(1000.0f), 15);
    EXPECT_EQ(iq4nl_nearest_index(0.0f), 8);   // |0 - 1| < |0 + 10|
    EXPECT_EQ(iq4nl_nearest_index(-4.5f), 8);  // midpoint of -10 and 1: tie goes up
    EXPECT_EQ(iq4nl_nearest_index(-4.51f), 7);
    EXPECT_EQ(iq4nl_nearest_index(101.0f), 15);  // midpoint of 89 and 113
    EXPECT_EQ(iq4nl_nearest_index(100.99f), 14);
    // Brute force over a fine grid: the chosen level is never farther than another.
    for (float x = -140.0f; x <= 130.0f; x += 0.037f) {
        const int k = iq4nl_nearest_index(x);
        for (int i = 0; i < 16; ++i)
            ASSERT_LE(std::fabs(x - kValuesIq4nl[k]), std::fabs(x - kValuesIq4nl[i])) << x;
    }
}

TEST(Iq4Nl, RepresentableBlockIsExact) {
    // x = c * level with the -127 level present: the candidate scale for itry = 0 is exactly c.
    const float c = std::ldexp(1.0f, -7);
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = c * kValuesIq4nl[(j * 5 + 3) % 16];
    x[4] = -127.0f * c;
    const std::vector<uint8_t> q = quantize(GgmlType::IQ4_NL, x);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q[0] | q[1] << 8)), c);
    EXPECT_EQ(dequantize(GgmlType::IQ4_NL, q, 32), x);
}

// The chosen scale is a weighted least-squares optimum (weights x^2) over candidates that include
// the plain max/127 scale, so its weighted error can only beat that baseline; the half rounding of d
// adds at most |d - d_h| * sqrt(sum w q^2) to the root error.
TEST(Iq4Nl, WeightedErrorBeatsAbsmaxBaseline) {
    const int64_t n = 32 * 256;
    const std::vector<float> x = random_row(n, 21, 32, 1.5f);
    const std::vector<uint8_t> q = quantize(GgmlType::IQ4_NL, x);
    const std::vector<float> y = dequantize(GgmlType::IQ4_NL, q, n);
    int strictly_better = 0;
    for (int64_t b = 0; b < n / 32; ++b) {
        const float *xb = x.data() + b * 32;
        const float *yb = y.data() + b * 32;
        float max = 0, amax = 0;
        for (int j = 0; j < 32; ++j)
            if (std::fabs(xb[j]) > amax) {
                amax = std::fabs(xb[j]);
                max = xb[j];
            }
        const float d0 = max / 127.0f;
        double e_base = 0, e_got = 0, sumw = 0;
        for (int j = 0; j < 32; ++j) {
            const double w = static_cast<double>(xb[j]) * xb[j];
            const double base = d0 * kValuesIq4nl[iq4nl_nearest_index(xb[j] / d0)];
            e_base += w * (xb[j] - base) * (xb[j] - base);
            e_got += w * (xb[j] - yb[j]) * (xb[j] - yb[j]);
            sumw += w;
        }
        const float dh = fp16_to_fp32(static_cast<uint16_t>(q[b * 18] | q[b * 18 + 1] << 8));
        const double slack = half_err(dh) * 1.001 * 127.0 * std::sqrt(sumw);
        // + float slack: the candidates are compared through float sums (relative ~1e-6 of sum w x^2).
        double sig = 0;
        for (int j = 0; j < 32; ++j) sig += static_cast<double>(xb[j]) * xb[j] * xb[j] * xb[j];
        ASSERT_LE(std::sqrt(e_got), std::sqrt(e_base) + slack + 1e-5 * std::sqrt(sig)) << "block " << b;
        if (e_got < 0.9 * e_base) ++strictly_better;
    }
    // The search is not idle: on Gaussian data it improves on the baseline in most blocks.
    EXPECT_GT(strictly_better, n / 32 / 2);
}

TEST(Iq4Nl, ElementErrorWithinHalfTheLargestGap) {
    // Inside the level range [-127 |d|, 113 |d|] (either orientation) an element is at most half the
    // widest gap between neighbouring levels (113 - 89 = 24) from a level: 12 |d|, plus half rounding.
    const int64_t n = 32 * 128;
    const std::vector<float> x = random_row(n, 5, 32, 2.0f);
    const std::vector<uint8_t> q = quantize(GgmlType::IQ4_NL, x);
    const std::vector<float> y = dequantize(GgmlType::IQ4_NL, q, n);
    for (int64_t b = 0; b < n / 32; ++b) {
        const float dh = fp16_to_fp32(static_cast<uint16_t>(q[b * 18] | q[b * 18 + 1] << 8));
        ASSERT_NE(dh, 0.0f);
        for (int j = 0; j < 32; ++j) {
            const float t = x[b * 32 + j] / dh;
            if (t < -126.0f || t > 112.0f) continue;  // beyond the end levels: clamped, not bounded here
            ASSERT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), std::fabs(dh) * 12.01f + 127 * half_err(dh))
                << b << " " << j;
        }
    }
}

// ======================================================================= round-trip error bounds

struct RoundTripCase {
    GgmlType type;
    float spread;  // per-block scale spread (decades)
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ErrorWithinBound) {
    const GgmlType type = GetParam().type;
    const int64_t n = 32 * 300;
    const std::vector<float> x = random_row(n, 1000 + static_cast<uint32_t>(type), 32, GetParam().spread);
    const std::vector<float> y = dequantize(type, quantize(type, x), n);
    check_round_trip(type, x, y);
}

INSTANTIATE_TEST_SUITE_P(Legacy, RoundTrip,
                         ::testing::Values(RoundTripCase{GgmlType::F32, 2}, RoundTripCase{GgmlType::F16, 0},
                                           RoundTripCase{GgmlType::F16, 3}, RoundTripCase{GgmlType::BF16, 3},
                                           RoundTripCase{GgmlType::Q4_0, 0}, RoundTripCase{GgmlType::Q4_0, 2},
                                           RoundTripCase{GgmlType::Q4_1, 0}, RoundTripCase{GgmlType::Q4_1, 2},
                                           RoundTripCase{GgmlType::Q5_0, 0}, RoundTripCase{GgmlType::Q5_0, 2},
                                           RoundTripCase{GgmlType::Q5_1, 0}, RoundTripCase{GgmlType::Q5_1, 2},
                                           RoundTripCase{GgmlType::Q8_0, 0}, RoundTripCase{GgmlType::Q8_0, 2},
                                           RoundTripCase{GgmlType::Q8_1, 0},
                                           RoundTripCase{GgmlType::Q8_1, 2}),
                         [](const ::testing::TestParamInfo<RoundTripCase> &info) {
                             return std::string(type_name(info.param.type)) + "_spread" +
                                    std::to_string(static_cast<int>(info.param.spread));
                         });

TEST(RoundTripShifted, OneSidedBlocksUseTheMin) {
    // All-positive data far from zero: the *_1 types keep full resolution (offset m), the *_0 types
    // spend half their levels on the unused sign; both stay within their bounds.
    std::vector<float> x = random_row(32 * 64, 77);
    for (float &v : x) v = 10.0f + 0.1f * v;
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0}) {
        const std::vector<float> y = dequantize(t, quantize(t, x), static_cast<int64_t>(x.size()));
        check_round_trip(t, x, y);
    }
}

// ======================================================================= dot products

class VecDot : public ::testing::TestWithParam<GgmlType> {};

// vec_dot_ref(x, y) must equal the double dot of the dequantized rows up to the float rounding of
// its own arithmetic:
//  F32: each product rounded once (2^-24 relative), summed in double, result rounded to float.
//  F16/BF16: products of halves/bf16 are exact in float; only the double sum and the final rounding.
//  block types: the integer sum times the two scales is each block's exact contribution (dequantized
//      values q*d are exact in float), rounded twice; then nb float additions:
//      |err| <= (nb + 2) 2^-24 sum_b |contribution_b|.
//  Q4_1/Q5_1 (y in Q8_1): the dequantized x = q d + m is rounded once, and the m term uses y's
//      s = half(d_y_float * sum q_y) instead of d_y_half * sum q_y: two half roundings per block.
TEST_P(VecDot, MatchesDotOfDequantizedRows) {
    const GgmlType type = GetParam();
    const GgmlType vdt = type_traits(type).vec_dot_type;
    const int64_t n = 32 * 128;
    const int64_t nb = n / 32;
    for (float spread : {0.0f, 1.5f}) {
        const std::vector<float> xf = random_row(n, 300 + static_cast<uint32_t>(type), 32, spread);
        std::vector<float> yf = random_row(n, 400 + static_cast<uint32_t>(type), 32, spread);
        const std::vector<uint8_t> xq = quantize(type, xf);
        const std::vector<uint8_t> yq = quantize(vdt, yf);
        const std::vector<float> xd = dequantize(type, xq, n);
        const std::vector<float> yd = dequantize(vdt, yq, n);
        const double ref = test::dot_double(xd, yd);
        const float got = vec_dot_ref(type, n, xq.data(), yq.data());

        const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
        double sum_abs_products = 0, sum_abs_terms = 0, m_term = 0;
        for (int64_t b = 0; b < nb; ++b) {
            // Per block: the scaled integer sum (term1) and, for Q4_1/Q5_1, the m * s term.
            float m = 0;
            if (has_min) {
                const size_t off = static_cast<size_t>(b) * type_traits(type).type_size;
                m = fp16_to_fp32(static_cast<uint16_t>(xq[off + 2] | xq[off + 3] << 8));
            }
            double term1 = 0;
            for (int j = 0; j < 32; ++j) {
                const double p = static_cast<double>(xd[b * 32 + j]) * yd[b * 32 + j];
                term1 += static_cast<double>(xd[b * 32 + j] - m) * yd[b * 32 + j];
                sum_abs_products += std::fabs(p);
            }
            sum_abs_terms += std::fabs(term1);
            if (has_min) {
                block_q8_1 yb;
                std::memcpy(&yb, yq.data() + b * sizeof(block_q8_1), sizeof yb);
                int sq = 0;
                for (int j = 0; j < 32; ++j) sq += yb.qs[j];
                const float dy = fp16_to_fp32(yb.d);
                sum_abs_terms += std::fabs(m * fp16_to_fp32(yb.s));
                // s = half(d_float * sq) vs d_half * sq: the half rounding of s and of d.
                m_term += std::fabs(m) * (std::fabs(dy * sq) * 1.01 * kHalfRel + std::ldexp(1.0, -25) +
                                          std::abs(sq) * half_err(dy) * 1.01);
            }
        }
        const double eps = std::ldexp(1.0, -24);
        double tol = 0;
        switch (type) {
            case GgmlType::F32:
                tol = eps * (sum_abs_products + std::fabs(ref)) * 1.01;
                break;
            case GgmlType::F16:
            case GgmlType::BF16:
                tol = eps * std::fabs(ref) + n * std::ldexp(1.0, -52) * sum_abs_products;
                break;
            case GgmlType::Q4_1:
            case GgmlType::Q5_1:
                // + the rounding of the dequantized q d + m that the reference dot sees
                tol = (nb + 3) * eps * sum_abs_terms * 1.01 + m_term + 2 * eps * sum_abs_products;
                break;
            default:
                tol = (nb + 2) * eps * sum_abs_terms * 1.01;
                break;
        }
        EXPECT_NEAR(got, ref, tol) << type_name(type) << " spread " << spread;
        // The tolerance is small against the dot itself (the test would notice a wrong term).
        EXPECT_LT(tol, 2e-3 * sum_abs_products) << type_name(type);
    }
}

INSTANTIATE_TEST_SUITE_P(Legacy, VecDot,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0,
                                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                           GgmlType::IQ4_NL),
                         [](const ::testing::TestParamInfo<GgmlType> &info) {
                             return std::string(type_name(info.param));
                         });

TEST(VecDotExact, SmallIntegerBlocksGiveExactDots) {
    // Hand-built Q4_0 x Q8_0 with d = 1 on both sides: the dot is an exact small integer.
    block_q4_0 x{};
    block_q8_0 y{};
    x.d = 0x3c00;
    y.d = 0x3c00;
    long want = 0;
    for (int j = 0; j < 16; ++j) {
        x.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
        y.qs[j] = static_cast<int8_t>(j - 5);
        y.qs[j + 16] = static_cast<int8_t>(2 * j);
        want += (j - 8) * (j - 5) + (7 - j) * (2 * j);
    }
    EXPECT_EQ(vec_dot_ref(GgmlType::Q4_0, 32, &x, &y), static_cast<float>(want));

    // Q4_1 with m: the dot is d_x d_y sum(q qy) + m s.
    block_q4_1 x1{};
    block_q8_1 y1{};
    x1.d = 0x3c00;                   // 1
    x1.m = 0x4000;                   // 2
    y1.d = 0x3800;                   // 0.5
    y1.s = fp32_to_fp16(0.5f * 16);  // sum of y quants = 16
    long sumi = 0;
    for (int j = 0; j < 16; ++j) {
        x1.qs[j] = static_cast<uint8_t>(j | 3 << 4);
        y1.qs[j] = static_cast<int8_t>(j % 2 ? 1 : -1);  // sums to 0 over the low half
        y1.qs[j + 16] = 1;                               // sums to 16
        sumi += j * y1.qs[j] + 3 * 1;
    }
    EXPECT_EQ(vec_dot_ref(GgmlType::Q4_1, 32, &x1, &y1), 0.5f * static_cast<float>(sumi) + 2.0f * 8.0f);
}

// ======================================================================= dispatcher

TEST(Dispatch, UnsupportedTypesThrow) {
    std::vector<float> f(256, 0.0f);
    std::vector<uint8_t> buf(4096);
    for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ1_S, GgmlType::I32, GgmlType::TQ1_0}) {
        EXPECT_FALSE(can_quantize(t)) << type_name(t);
        EXPECT_THROW(quantize_row(t, f.data(), buf.data(), 256), Error) << type_name(t);
        EXPECT_THROW(dequantize_row(t, buf.data(), f.data(), 256), Error) << type_name(t);
        EXPECT_THROW(vec_dot_ref(t, 256, buf.data(), buf.data()), Error) << type_name(t);
    }
    // Activation-only types have no dot as weights.
    EXPECT_THROW(vec_dot_ref(GgmlType::Q8_1, 32, buf.data(), buf.data()), Error);
    EXPECT_THROW(vec_dot_ref(GgmlType::Q8_K, 256, buf.data(), buf.data()), Error);
    EXPECT_THROW(dequantize_row(static_cast<GgmlType>(4), buf.data(), f.data(), 32), Error);
}

TEST(Dispatch, PartialBlocksThrow) {
    std::vector<float> f(64, 1.0f);
    std::vector<uint8_t> buf(256);
    EXPECT_THROW(quantize_row(GgmlType::Q4_0, f.data(), buf.data(), 33), Error);
    EXPECT_THROW(dequantize_row(GgmlType::Q8_0, buf.data(), f.data(), 16), Error);
    EXPECT_THROW(vec_dot_ref(GgmlType::IQ4_NL, 48, buf.data(), buf.data()), Error);
    EXPECT_NO_THROW(quantize_row(GgmlType::F16, f.data(), buf.data(), 33));
}

TEST(Dispatch, EveryComputeTypeCanBeQuantizedAndDequantized) {
    for (int32_t id = 0; id < kGgmlTypeCount; ++id) {
        if (!type_is_known(id)) continue;
        const GgmlType t = static_cast<GgmlType>(id);
        const TypeTraits &tr = type_traits(t);
        EXPECT_EQ(can_quantize(t), tr.has_compute) << tr.name;
        if (tr.has_compute) {
            EXPECT_TRUE(can_quantize(tr.vec_dot_type)) << tr.name;
        }
    }
}

}  // namespace
}  // namespace lctx::quants_legacy_test
