// K-quant reference (tensor/quants_k.h): dequantization of hand-built blocks (layout: which bits and
// which scale bytes feed which element), Q8_K quantization, quantize -> dequantize error bounds, and the
// reference dot products against the float dot of the dequantized rows.
#include "tensor/quants_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lctx::quants_k_test {
namespace {

constexpr int QK = 256;

template <typename Block>
std::vector<float> dequant_one(void (*fn)(const void *, float *, int64_t), const Block &b) {
    std::vector<float> y(QK);
    fn(&b, y.data(), QK);
    return y;
}

// Fills bytes with a fixed pseudo-random pattern.
void fill_bytes(uint8_t *p, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng() & 0xff);
}

// ---------------------------------------------------------------------------------------------------
// Layout: hand-built blocks. d / dmin are powers of two and the scales small integers, so every expected
// value is exact in float and EXPECT_EQ is the right comparison. Each test also spot-checks a few
// elements with numbers worked out by hand from the bytes.

// Q4_K/Q5_K 6-bit scales and mins, packed by hand into 12 bytes (see the comment in each test).
// scales = {1, 2, 3, 4, 17, 34, 51, 63}, mins = {5, 6, 7, 8, 20, 37, 54, 9}:
//   bytes 0..3 : scale j (low 6 bits) | high 2 bits of scale j+4 in bits 6-7
//   bytes 4..7 : min j (low 6 bits)   | high 2 bits of min j+4 in bits 6-7
//   bytes 8..11: low nibble of scale j+4 | low nibble of min j+4 << 4
constexpr uint8_t kScales6[8] = {1, 2, 3, 4, 17, 34, 51, 63};
constexpr uint8_t kMins6[8] = {5, 6, 7, 8, 20, 37, 54, 9};
constexpr uint8_t kPacked6[12] = {0x41, 0x82, 0xC3, 0xC4, 0x45, 0x86, 0xC7, 0x08, 0x41, 0x52, 0x63, 0x9F};

TEST(QuantsKLayout, Q4KHandBuilt) {
    block_q4_K b;
    b.d = fp32_to_fp16(1.0f);
    b.dmin = fp32_to_fp16(0.5f);
    std::memcpy(b.scales, kPacked6, 12);
    fill_bytes(b.qs, sizeof(b.qs), 41);
    b.qs[0] = 0x5A;    // element 0 = low nibble 10, element 32 = high nibble 5
    b.qs[32] = 0x3C;   // element 64 = 12 (sub-block 2), element 96 = 3 (sub-block 3)
    b.qs[127] = 0xF0;  // element 223 = 0 (sub-block 6), element 255 = 15 (sub-block 7)
    const auto y = dequant_one(dequantize_row_q4_K, b);
    // element e: 64-element chunk c = e/64 uses bytes qs[32c .. 32c+31]; low nibble for the first 32.
    for (int e = 0; e < QK; ++e) {
        const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
        const int q = (e % 64) < 32 ? (byte & 15) : (byte >> 4);
        const int sub = e / 32;
        EXPECT_EQ(y[e], 1.0f * kScales6[sub] * q - 0.5f * kMins6[sub]) << "element " << e;
    }
    EXPECT_EQ(y[0], 1 * 10 - 0.5f * 5);     // 7.5
    EXPECT_EQ(y[32], 2 * 5 - 0.5f * 6);     // 7
    EXPECT_EQ(y[64], 3 * 12 - 0.5f * 7);    // 32.5
    EXPECT_EQ(y[96], 4 * 3 - 0.5f * 8);     // 8
    EXPECT_EQ(y[223], 51 * 0 - 0.5f * 54);  // -27
    EXPECT_EQ(y[255], 63 * 15 - 0.5f * 9);  // 940.5
}

TEST(QuantsKLayout, Q5KHandBuilt) {
    block_q5_K b;
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.25f);
    std::memcpy(b.scales, kPacked6, 12);
    fill_bytes(b.qs, sizeof(b.qs), 42);
    fill_bytes(b.qh, sizeof(b.qh), 43);
    b.qs[0] = 0x5A;
    b.qh[0] = 0x02;    // bit 1: element 32 gets +16, element 0 does not
    b.qs[100] = 0x71;  // chunk 3: element 196 = 1, element 228 = 7
    b.qh[4] = 0x40;    // bit 6: element 196 (sub-block 6) gets +16; bit 7 clear: element 228 not
    const auto y = dequant_one(dequantize_row_q5_K, b);
    // fifth bit of element e is bit (e / 32) of qh[e % 32]
    for (int e = 0; e < QK; ++e) {
        const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
        const int q = ((e % 64) < 32 ? (byte & 15) : (byte >> 4)) + 16 * ((b.qh[e % 32] >> (e / 32)) & 1);
        const int sub = e / 32;
        EXPECT_EQ(y[e], 0.5f * kScales6[sub] * q - 0.25f * kMins6[sub]) << "element " << e;
    }
    EXPECT_EQ(y[0], 0.5f * 1 * 10 - 0.25f * 5);
    EXPECT_EQ(y[32], 0.5f * 2 * (5 + 16) - 0.25f * 6);
    EXPECT_EQ(y[196], 0.5f * 51 * (1 + 16) - 0.25f * 54);
    EXPECT_EQ(y[228], 0.5f * 63 * 7 - 0.25f * 9);
}

TEST(QuantsKLayout, Q6KHandBuilt) {
    block_q6_K b;
    b.d = fp32_to_fp16(0.25f);
    const int8_t sc[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 127, -128};
    std::memcpy(b.scales, sc, 16);
    fill_bytes(b.ql, sizeof(b.ql), 44);
    fill_bytes(b.qh, sizeof(b.qh), 45);
    // Hand example, half 0, l = 3: ql[3] = 0x9A, ql[35] = 0x1F, qh[3] = 0b11'10'01'00
    b.ql[3] = 0x9A;
    b.ql[35] = 0x1F;
    b.qh[3] = 0xE4;
    // half 1, l = 31: ql[64+31] = 0x00, ql[64+63] = 0xFF, qh[32+31] = 0xFF
    b.ql[95] = 0x00;
    b.ql[127] = 0xFF;
    b.qh[63] = 0xFF;
    const auto y = dequant_one(dequantize_row_q6_K, b);
    // element e = 128h + 32r + l: low 4 bits from ql[64h + l + 32(r&1)] (low nibble for r < 2), high
    // 2 bits from bits 2r, 2r+1 of qh[32h + l]; value - 32; scale of the 16-element group e / 16.
    for (int e = 0; e < QK; ++e) {
        const int h = e / 128, r = (e % 128) / 32, l = e % 32;
        const uint8_t lb = b.ql[64 * h + l + 32 * (r & 1)];
        const int lo = r < 2 ? (lb & 15) : (lb >> 4);
        const int hi = (b.qh[32 * h + l] >> (2 * r)) & 3;
        EXPECT_EQ(y[e], 0.25f * sc[e / 16] * ((lo | (hi << 4)) - 32)) << "element " << e;
    }
    EXPECT_EQ(y[3], 0.25f * 1 * ((0xA | (0 << 4)) - 32));                // 10 - 32 = -22
    EXPECT_EQ(y[35], 0.25f * 3 * ((0xF | (1 << 4)) - 32));               // 31 - 32 = -1
    EXPECT_EQ(y[67], 0.25f * 5 * ((0x9 | (2 << 4)) - 32));               // 41 - 32 = 9
    EXPECT_EQ(y[99], 0.25f * 7 * ((0x1 | (3 << 4)) - 32));               // 49 - 32 = 17
    EXPECT_EQ(y[128 + 31], 0.25f * -10 * ((0 | (3 << 4)) - 32));         // group 9
    EXPECT_EQ(y[128 + 96 + 31], 0.25f * -128 * ((15 | (3 << 4)) - 32));  // group 15: 31 * -128 / 4
}

// Q3_K 6-bit scales stored +32: u = {0,1,15,16,31,32,33,47,48,63,5,20,40,60,10,50}, packed by hand:
//   byte j (j < 8): low nibble = u[j] & 15, high nibble = u[j+8] & 15
//   byte 8+m: bits 2k..2k+1 = u[m + 4k] >> 4 (k = 0..3)
constexpr int kQ3U[16] = {0, 1, 15, 16, 31, 32, 33, 47, 48, 63, 5, 20, 40, 60, 10, 50};
constexpr uint8_t kQ3Packed[12] = {0x00, 0xF1, 0x5F, 0x40, 0x8F, 0xC0, 0xA1, 0x2F, 0xB4, 0xF8, 0x08, 0xD9};

TEST(QuantsKLayout, Q3KHandBuilt) {
    block_q3_K b;
    b.d = fp32_to_fp16(0.5f);
    std::memcpy(b.scales, kQ3Packed, 12);
    fill_bytes(b.qs, sizeof(b.qs), 46);
    fill_bytes(b.hmask, sizeof(b.hmask), 47);
    b.qs[5] = 0b11'10'01'00;   // elements 5, 37, 69, 101 have low bits 0, 1, 2, 3
    b.hmask[5] = 0b0000'0101;  // element 5 (bit 0) and 69 (bit 2) have the high bit; 37, 101 do not
    const auto y = dequant_one(dequantize_row_q3_K, b);
    // element e = 128h + 32k + l: low 2 bits = bits 2k..2k+1 of qs[32h + l]; high bit = bit e/32 of
    // hmask[l]; value = low - (high ? 0 : 4); scale of group e / 16 = u - 32.
    for (int e = 0; e < QK; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int lo = (b.qs[32 * h + l] >> (2 * k)) & 3;
        const bool hi = (b.hmask[l] >> (e / 32)) & 1;
        EXPECT_EQ(y[e], 0.5f * (kQ3U[e / 16] - 32) * (lo - (hi ? 0 : 4))) << "element " << e;
    }
    EXPECT_EQ(y[5], 0.5f * (0 - 32) * 0);           // scale group 0: -32
    EXPECT_EQ(y[37], 0.5f * (15 - 32) * (1 - 4));   // group 2
    EXPECT_EQ(y[69], 0.5f * (31 - 32) * 2);         // group 4
    EXPECT_EQ(y[101], 0.5f * (33 - 32) * (3 - 4));  // group 6
}

TEST(QuantsKLayout, Q2KHandBuilt) {
    block_q2_K b;
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.25f);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>((j ^ 5) | ((15 - j) << 4));
    fill_bytes(b.qs, sizeof(b.qs), 48);
    b.qs[40] = 0b00'01'10'11;  // half 1, l = 8: elements 136, 168, 200, 232 = 3, 2, 1, 0
    const auto y = dequant_one(dequantize_row_q2_K, b);
    for (int e = 0; e < QK; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int q = (b.qs[32 * h + l] >> (2 * k)) & 3;
        const int j = e / 16;
        EXPECT_EQ(y[e], 0.5f * (j ^ 5) * q - 0.25f * (15 - j)) << "element " << e;
    }
    EXPECT_EQ(y[136], 0.5f * (8 ^ 5) * 3 - 0.25f * 7);
    EXPECT_EQ(y[168], 0.5f * (10 ^ 5) * 2 - 0.25f * 5);
    EXPECT_EQ(y[200], 0.5f * (12 ^ 5) * 1 - 0.25f * 3);
    EXPECT_EQ(y[232], 0.5f * (14 ^ 5) * 0 - 0.25f * 1);
}

TEST(QuantsKLayout, IQ4XSHandBuilt) {
    // stored scales u = {0, 17, 32, 63, 45, 7, 50, 33}:
    //   scales_l nibbles (even sub-block low): 0x10, 0xF0, 0x7D, 0x12
    //   scales_h 2 bits per sub-block (u >> 4 = 0,1,2,3,2,0,3,2): 0xB2E4
    const int u[8] = {0, 17, 32, 63, 45, 7, 50, 33};
    block_iq4_xs b;
    b.d = fp32_to_fp16(0.5f);
    b.scales_h = 0xB2E4;
    const uint8_t sl[4] = {0x10, 0xF0, 0x7D, 0x12};
    std::memcpy(b.scales_l, sl, 4);
    fill_bytes(b.qs, sizeof(b.qs), 49);
    b.qs[16 * 3 + 2] = 0xF0;  // sub-block 3: element 98 -> level 0 (-127), element 114 -> level 15 (113)
    const auto y = dequant_one(dequantize_row_iq4_xs, b);
    const int kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int e = 0; e < QK; ++e) {
        const int ib = e / 32, j = e % 32;
        const uint8_t byte = b.qs[16 * ib + j % 16];
        const int idx = j < 16 ? (byte & 15) : (byte >> 4);
        EXPECT_EQ(y[e], 0.5f * (u[ib] - 32) * kv[idx]) << "element " << e;
    }
    EXPECT_EQ(y[98], 0.5f * 31 * -127);
    EXPECT_EQ(y[114], 0.5f * 31 * 113);
}

TEST(QuantsKLayout, Q8KHandBuilt) {
    block_q8_K b;
    b.d = 0.125f;
    for (int j = 0; j < QK; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
    std::memset(b.bsums, 0, sizeof(b.bsums));
    const auto y = dequant_one(dequantize_row_q8_K, b);
    for (int j = 0; j < QK; ++j) EXPECT_EQ(y[j], 0.125f * (j - 128));
}

TEST(QuantsKLayout, MultiBlockRowsUseEachBlock) {
    // Two Q4_K blocks differing only in d: the second half of the row must scale with the second d.
    block_q4_K b[2];
    for (auto &blk : b) {
        blk.dmin = fp32_to_fp16(0.0f);
        std::memcpy(blk.scales, kPacked6, 12);
        fill_bytes(blk.qs, sizeof(blk.qs), 50);
    }
    b[0].d = fp32_to_fp16(1.0f);
    b[1].d = fp32_to_fp16(2.0f);
    std::vector<float> y(2 * QK);
    dequantize_row_q4_K(b, y.data(), 2 * QK);
    for (int e = 0; e < QK; ++e) EXPECT_EQ(y[QK + e], 2.0f * y[e]);
}

TEST(QuantsKLayout, RejectsPartialSuperBlocks) {
    std::vector<uint8_t> buf(1024);
    std::vector<float> y(512);
    EXPECT_THROW(dequantize_row_q4_K(buf.data(), y.data(), 255), Error);
    EXPECT_THROW(quantize_row_q6_K_ref(y.data(), buf.data(), 100), Error);
    EXPECT_THROW(vec_dot_q5_K_q8_K_ref(300, buf.data(), buf.data()), Error);
}

// ---------------------------------------------------------------------------------------------------
// Q8_K quantization

TEST(QuantsKQ8K, HandValues) {
    std::vector<float> x(3 * QK, 0.0f);
    // block 0: the largest |x| is -254, so iscale = -127 / -254 = 0.5 and d = 2; ties round to even.
    x[0] = 5.0f;     //  2.5 ->  2
    x[1] = 7.0f;     //  3.5 ->  4
    x[2] = -5.0f;    // -2.5 -> -2
    x[3] = 1.0f;     //  0.5 ->  0
    x[4] = 3.0f;     //  1.5 ->  2
    x[5] = -254.0f;  // -127
    x[20] = 100.0f;  //  50 (group 1)
    x[255] = -3.0f;  // -1.5 -> -2 (group 15)
    // block 1: largest is +63.5 -> iscale = -2, d = -0.5 (the sign of d follows -max)
    x[QK + 7] = 63.5f;   // -127
    x[QK + 8] = -10.0f;  //  20
    // block 2 stays zero
    std::vector<block_q8_K> q(3);
    quantize_row_q8_K_ref(x.data(), q.data(), 3 * QK);

    EXPECT_EQ(q[0].d, 2.0f);
    EXPECT_EQ(q[0].qs[0], 2);
    EXPECT_EQ(q[0].qs[1], 4);
    EXPECT_EQ(q[0].qs[2], -2);
    EXPECT_EQ(q[0].qs[3], 0);
    EXPECT_EQ(q[0].qs[4], 2);
    EXPECT_EQ(q[0].qs[5], -127);
    EXPECT_EQ(q[0].qs[20], 50);
    EXPECT_EQ(q[0].qs[255], -2);
    EXPECT_EQ(q[0].bsums[0], 2 + 4 - 2 + 0 + 2 - 127);
    EXPECT_EQ(q[0].bsums[1], 50);
    EXPECT_EQ(q[0].bsums[15], -2);
    for (int j = 2; j < 15; ++j) EXPECT_EQ(q[0].bsums[j], 0);

    EXPECT_EQ(q[1].d, -0.5f);
    EXPECT_EQ(q[1].qs[7], -127);
    EXPECT_EQ(q[1].qs[8], 20);
    EXPECT_EQ(q[1].bsums[0], -107);

    EXPECT_EQ(q[2].d, 0.0f);
    for (int j = 0; j < QK; ++j) EXPECT_EQ(q[2].qs[j], 0);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q[2].bsums[j], 0);
}

TEST(QuantsKQ8K, RandomRowsInvariants) {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int nb = 16;
    std::vector<float> x(nb * QK);
    for (int i = 0; i < nb * QK; ++i) x[i] = nd(rng) * std::pow(10.0f, static_cast<float>(i / QK % 5) - 2);
    std::vector<block_q8_K> q(nb);
    quantize_row_q8_K_ref(x.data(), q.data(), nb * QK);
    std::vector<float> y(nb * QK);
    dequantize_row_q8_K(q.data(), y.data(), nb * QK);
    for (int b = 0; b < nb; ++b) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK; ++j) {
            if (std::fabs(x[b * QK + j]) > amax) {
                amax = std::fabs(x[b * QK + j]);
                max = x[b * QK + j];
            }
        }
        // d = max / -127 computed as 1 / (-127 / max), as ggml does.
        EXPECT_EQ(q[b].d, 1.0f / (-127.0f / max));
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += q[b].qs[16 * g + l];
            EXPECT_EQ(q[b].bsums[g], s) << "block " << b << " group " << g;
        }
        for (int j = 0; j < QK; ++j) {
            EXPECT_GE(q[b].qs[j], -127);
            // Rounding to nearest: error at most half a step (plus float rounding of x * iscale).
            EXPECT_LE(std::fabs(x[b * QK + j] - y[b * QK + j]), std::fabs(q[b].d) * (0.5f + 1e-5f))
                << "block " << b << " element " << j;
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// quantize -> dequantize on random data

struct KType {
    const char *name;
    size_t block_bytes;
    void (*quantize)(const float *, void *, int64_t);
    void (*dequantize)(const void *, float *, int64_t);
    float (*dot)(int64_t, const void *, const void *);
    // Bound on the mean over super-blocks of the normalised RMS error sqrt(sum err^2 / sum x^2), for
    // N(0,1) data. Each is the RMS error of a uniform quantizer, step / sqrt(12), with the step these
    // formats get on Gaussian groups (expected max / range of n normal samples), plus ~20% margin for
    // the quantized scales:
    //   Q8_K : step = max|x| / 127, E max of 256 |N| ~ 2.9    -> 0.0066 -> bound 0.008
    //   Q6_K : 16-value groups, step = max|x| / 32, E max ~ 2.0 -> 0.018  -> 0.022
    //   Q5_K : 32-value groups, affine, E range ~ 4.1, 31 steps -> 0.038  -> 0.045
    //   Q4_K : as Q5_K with 15 steps                            -> 0.079  -> 0.09
    //   IQ4_XS: 16 non-linear levels on 32-value groups, ~ Q4_K  ->          0.09
    //   Q3_K : 16-value groups, symmetric -4..3, step = max / 4 -> 0.144  -> 0.18
    //   Q2_K : 16-value groups, affine, E range ~ 3.5, 3 steps  -> 0.337  -> 0.36 (the fit beats the
    //          plain min/max grid; measured ~0.30)
    // The worst single super-block may be up to 1.5x the bound (few samples, heavy tails).
    float rms_bound;
};

const KType kTypes[] = {
    {"q2_K", sizeof(block_q2_K), quantize_row_q2_K_ref, dequantize_row_q2_K, vec_dot_q2_K_q8_K_ref, 0.36f},
    {"q3_K", sizeof(block_q3_K), quantize_row_q3_K_ref, dequantize_row_q3_K, vec_dot_q3_K_q8_K_ref, 0.18f},
    {"q4_K", sizeof(block_q4_K), quantize_row_q4_K_ref, dequantize_row_q4_K, vec_dot_q4_K_q8_K_ref, 0.09f},
    {"q5_K", sizeof(block_q5_K), quantize_row_q5_K_ref, dequantize_row_q5_K, vec_dot_q5_K_q8_K_ref, 0.045f},
    {"q6_K", sizeof(block_q6_K), quantize_row_q6_K_ref, dequantize_row_q6_K, vec_dot_q6_K_q8_K_ref, 0.022f},
    {"iq4_xs", sizeof(block_iq4_xs), quantize_row_iq4_xs_ref, dequantize_row_iq4_xs, vec_dot_iq4_xs_q8_K_ref,
     0.09f},
    {"q8_K", sizeof(block_q8_K), quantize_row_q8_K_ref, dequantize_row_q8_K, nullptr, 0.008f},
};

// n values of N(0,1), each super-block scaled by its own 10^U(-2, 2) so that the per-block scales
// (and their fp16 storage) are exercised over a wide range.
std::vector<float> gaussian_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ud(-2.0f, 2.0f);
    std::vector<float> v(n);
    float s = 1.0f;
    for (int64_t i = 0; i < n; ++i) {
        if (i % QK == 0) s = std::pow(10.0f, ud(rng));
        v[i] = nd(rng) * s;
    }
    return v;
}

class QuantsKRoundTrip : public ::testing::TestWithParam<KType> {};

TEST_P(QuantsKRoundTrip, ErrorWithinBound) {
    const KType &t = GetParam();
    const int nb = 64;
    const auto x = gaussian_row(nb * QK, 1234);
    std::vector<uint8_t> q(nb * t.block_bytes);
    t.quantize(x.data(), q.data(), nb * QK);
    std::vector<float> y(nb * QK);
    t.dequantize(q.data(), y.data(), nb * QK);
    // Per super-block (they have very different scales): the mean and the worst.
    double worst = 0, mean = 0;
    for (int b = 0; b < nb; ++b) {
        double se = 0, sx = 0;
        for (int j = b * QK; j < (b + 1) * QK; ++j) {
            se += (double(x[j]) - y[j]) * (double(x[j]) - y[j]);
            sx += double(x[j]) * x[j];
        }
        worst = std::max(worst, std::sqrt(se / sx));
        mean += std::sqrt(se / sx) / nb;
    }
    EXPECT_LT(mean, t.rms_bound) << t.name;
    EXPECT_LT(worst, 1.5 * t.rms_bound) << t.name;
    // And not suspiciously good: a quantizer that leaves the floats alone (or a test that compares x
    // with itself) would pass the bounds above; 2 to 8 bits always lose more than a fifth of them.
    EXPECT_GT(mean, t.rms_bound / 5) << t.name;
}

TEST_P(QuantsKRoundTrip, ZeroRowGivesZeros) {
    const KType &t = GetParam();
    std::vector<float> x(2 * QK, 0.0f);
    std::vector<uint8_t> q(2 * t.block_bytes, 0xAB);
    t.quantize(x.data(), q.data(), 2 * QK);
    std::vector<float> y(2 * QK, 1.0f);
    t.dequantize(q.data(), y.data(), 2 * QK);
    for (float v : y) EXPECT_EQ(v, 0.0f) << t.name;
}

TEST_P(QuantsKRoundTrip, Deterministic) {
    const KType &t = GetParam();
    const auto x = gaussian_row(4 * QK, 99);
    std::vector<uint8_t> q1(4 * t.block_bytes, 0x00), q2(4 * t.block_bytes, 0xFF);
    t.quantize(x.data(), q1.data(), 4 * QK);
    t.quantize(x.data(), q2.data(), 4 * QK);  // every byte written, whatever was there before
    EXPECT_EQ(q1, q2) << t.name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantsKRoundTrip, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<KType> &info) {
                             return std::string(info.param.name);
                         });

// Rounding to the nearest grid point: for Q6_K every element that is not clamped at the ends of the
// -32..31 range lies within half a step d * scale of its dequantized value.
TEST(QuantsKRounding, Q6KNearestLevel) {
    const int nb = 32;
    const auto x = gaussian_row(nb * QK, 555);
    std::vector<block_q6_K> q(nb);
    quantize_row_q6_K_ref(x.data(), q.data(), nb * QK);
    std::vector<float> y(nb * QK);
    dequantize_row_q6_K(q.data(), y.data(), nb * QK);
    int checked = 0;
    for (int b = 0; b < nb; ++b) {
        for (int j = 0; j < QK; ++j) {
            const float step = std::fabs(fp16_to_fp32(q[b].d) * q[b].scales[j / 16]);
            if (step == 0) continue;
            const float v = x[b * QK + j] / (fp16_to_fp32(q[b].d) * q[b].scales[j / 16]);
            if (v < -32.5f || v > 31.5f) continue;  // clamped
            EXPECT_LE(std::fabs(x[b * QK + j] - y[b * QK + j]), step * (0.5f + 1e-4f));
            ++checked;
        }
    }
    EXPECT_GT(checked, nb * QK * 9 / 10);
}

// Same for Q4_K (affine grid d*sc*q - dmin*m, q in 0..15), with the 6-bit scales decoded here from
// the hand-derived packing.
TEST(QuantsKRounding, Q4KNearestLevel) {
    const int nb = 32;
    const auto x = gaussian_row(nb * QK, 556);
    std::vector<block_q4_K> q(nb);
    quantize_row_q4_K_ref(x.data(), q.data(), nb * QK);
    std::vector<float> y(nb * QK);
    dequantize_row_q4_K(q.data(), y.data(), nb * QK);
    int checked = 0;
    for (int b = 0; b < nb; ++b) {
        const uint8_t *s = q[b].scales;
        for (int j = 0; j < QK; ++j) {
            const int sub = j / 32;
            const int sc = sub < 4 ? (s[sub] & 63) : ((s[sub + 4] & 15) | ((s[sub - 4] >> 6) << 4));
            const int mn = sub < 4 ? (s[sub + 4] & 63) : ((s[sub + 4] >> 4) | ((s[sub] >> 6) << 4));
            const float d = fp16_to_fp32(q[b].d) * sc;
            const float m = fp16_to_fp32(q[b].dmin) * mn;
            if (d == 0) continue;
            const float v = (x[b * QK + j] + m) / d;
            if (v < -0.5f || v > 15.5f) continue;  // clamped
            EXPECT_LE(std::fabs(x[b * QK + j] - y[b * QK + j]), d * (0.5f + 1e-4f)) << b << " " << j;
            ++checked;
        }
    }
    EXPECT_GT(checked, nb * QK * 9 / 10);
}

// ---------------------------------------------------------------------------------------------------
// Dot products

class QuantsKDot : public ::testing::TestWithParam<KType> {};

// The reference dot equals the float dot of the dequantized rows. The integer sums are exact, so the
// only differences are float roundings: of each dequantized element (relative 2^-24 of |d*sc*q| and of
// |dmin*m|), of the per-block scale products, and of the float accumulation over at most a few dozen
// terms. All are bounded by a few 2^-24 ~ 6e-8 relative to sum |x_i y_i| (for the types with mins, to
// the sum of |y_i| times the two terms |d*sc*q| + |dmin*m|, which is at most 2 * max|x| per element);
// 1e-6 of sum(|x_i| + max|x|) |y_i| leaves room for ~16 such roundings and is still ~5 orders of
// magnitude below what a swapped nibble or a wrong scale does.
TEST_P(QuantsKDot, MatchesDequantizedFloatDot) {
    const KType &t = GetParam();
    for (int nb : {1, 3, 16}) {
        const auto xf = gaussian_row(nb * QK, 2000 + nb);
        const auto yf = gaussian_row(nb * QK, 3000 + nb);
        std::vector<uint8_t> xq(nb * t.block_bytes);
        std::vector<block_q8_K> yq(nb);
        t.quantize(xf.data(), xq.data(), nb * QK);
        quantize_row_q8_K_ref(yf.data(), yq.data(), nb * QK);
        std::vector<float> xd(nb * QK), yd(nb * QK);
        t.dequantize(xq.data(), xd.data(), nb * QK);
        dequantize_row_q8_K(yq.data(), yd.data(), nb * QK);
        double ref = 0, mag = 0;
        for (int b = 0; b < nb; ++b) {
            double xmax = 0;
            for (int j = b * QK; j < (b + 1) * QK; ++j) xmax = std::max(xmax, std::fabs(double(xd[j])));
            for (int j = b * QK; j < (b + 1) * QK; ++j) {
                ref += double(xd[j]) * yd[j];
                mag += (std::fabs(double(xd[j])) + xmax) * std::fabs(double(yd[j]));
            }
        }
        const float got = t.dot(nb * QK, xq.data(), yq.data());
        EXPECT_NEAR(got, ref, 1e-6 * mag) << t.name << " nb=" << nb;
    }
}

// Random block bytes (every bit pattern of the quants, high-bit masks and packed scales, not just what
// the quantizer produces), with d fields set to small powers of two so that nothing overflows float
// precision: the dot must still match the dequantized float dot.
TEST_P(QuantsKDot, RandomBlockBytes) {
    const KType &t = GetParam();
    const int nb = 4;
    std::vector<uint8_t> xq(nb * t.block_bytes);
    fill_bytes(xq.data(), xq.size(), 77);
    // Overwrite the fp16 d (and dmin) fields with 2^-6 and 2^-7.
    for (int b = 0; b < nb; ++b) {
        uint8_t *blk = xq.data() + b * t.block_bytes;
        const fp16_t d = fp32_to_fp16(1.0f / 64), dmin = fp32_to_fp16(1.0f / 128);
        const std::string name = t.name;
        size_t d_off = 0, dmin_off = SIZE_MAX;
        if (name == "q2_K") d_off = offsetof(block_q2_K, d), dmin_off = offsetof(block_q2_K, dmin);
        if (name == "q3_K") d_off = offsetof(block_q3_K, d);
        if (name == "q4_K") d_off = offsetof(block_q4_K, d), dmin_off = offsetof(block_q4_K, dmin);
        if (name == "q5_K") d_off = offsetof(block_q5_K, d), dmin_off = offsetof(block_q5_K, dmin);
        if (name == "q6_K") d_off = offsetof(block_q6_K, d);
        if (name == "iq4_xs") d_off = offsetof(block_iq4_xs, d);
        std::memcpy(blk + d_off, &d, 2);
        if (dmin_off != SIZE_MAX) std::memcpy(blk + dmin_off, &dmin, 2);
    }
    std::vector<block_q8_K> yq(nb);
    std::mt19937 rng(78);
    for (auto &y : yq) {
        y.d = 1.0f / 32;
        for (auto &v : y.qs) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += y.qs[16 * g + l];
            y.bsums[g] = static_cast<int16_t>(s);
        }
    }
    std::vector<float> xd(nb * QK), yd(nb * QK);
    t.dequantize(xq.data(), xd.data(), nb * QK);
    dequantize_row_q8_K(yq.data(), yd.data(), nb * QK);
    double ref = 0, mag = 0;
    for (int j = 0; j < nb * QK; ++j) {
        ref += double(xd[j]) * yd[j];
        mag += std::fabs(double(xd[j]) * yd[j]);
    }
    const float got = t.dot(nb * QK, xq.data(), yq.data());
    // Here every product is a small integer times a power of two; only the float sums round.
    EXPECT_NEAR(got, ref, 1e-6 * mag) << t.name;
    EXPECT_GT(mag, 0.0) << t.name;
}

// Q8_K (the last entry) is the activation type: no dot of its own.
INSTANTIATE_TEST_SUITE_P(WeightTypes, QuantsKDot, ::testing::ValuesIn(kTypes, kTypes + 6),
                         [](const ::testing::TestParamInfo<KType> &info) {
                             return std::string(info.param.name);
                         });

// Q4_K's dot takes the min correction from the activation's bsums: a block whose quants are all zero
// dots to exactly -dmin * d_y * sum_j min_j * (bsum_2j + bsum_2j+1).
TEST(QuantsKDotExact, Q4KMinCorrectionUsesBsums) {
    block_q4_K x;
    x.d = fp32_to_fp16(1.0f);
    x.dmin = fp32_to_fp16(0.5f);
    std::memcpy(x.scales, kPacked6, 12);
    std::memset(x.qs, 0, sizeof(x.qs));
    block_q8_K y;
    y.d = 0.25f;
    for (int j = 0; j < QK; ++j) y.qs[j] = static_cast<int8_t>((j * 7) % 11 - 5);
    int expect = 0;
    for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += y.qs[16 * g + l];
        y.bsums[g] = static_cast<int16_t>(s);
        expect += s * kMins6[g / 2];
    }
    EXPECT_EQ(vec_dot_q4_K_q8_K_ref(QK, &x, &y), -0.5f * 0.25f * static_cast<float>(expect));
    // The dot trusts bsums (as ggml does): changing them changes the result.
    y.bsums[0] = static_cast<int16_t>(y.bsums[0] + 1);
    EXPECT_EQ(vec_dot_q4_K_q8_K_ref(QK, &x, &y), -0.5f * 0.25f * static_cast<float>(expect + kMins6[0]));
}

}  // namespace
}  // namespace lctx::quants_k_test
