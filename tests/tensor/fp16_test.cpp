// Half and bfloat16 conversions (tensor/fp16.h) against independent oracles: the compiler's _Float16
// (IEEE binary16, round to nearest even) and, where the CPU has it, the F16C instruction.
#include "tensor/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define LCTX_TEST_HAVE_X86 1
#endif

namespace lctx::fp16_test {
namespace {

bool is_half_nan(uint16_t h) {
    return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}

#ifdef LCTX_TEST_HAVE_X86
__attribute__((target("f16c"))) uint16_t f16c_to_half(float f) {
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_to_float(uint16_t h) {
    return _cvtsh_ss(h);
}
bool have_f16c() {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;  // CPUID.1:ECX.F16C
}
#else
bool have_f16c() {
    return false;
}
#endif

#if defined(__FLT16_MANT_DIG__)
// The compiler's _Float16 is the oracle (IEEE binary16, round to nearest even).
uint16_t oracle_to_half(float f) {
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}
float oracle_to_float(uint16_t b) {
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
}
bool have_oracle() { return true; }
#elif defined(LCTX_TEST_HAVE_X86)
// Compilers without _Float16 on x86 (clang 14): the F16C instruction is the oracle.
uint16_t oracle_to_half(float f) { return f16c_to_half(f); }
float oracle_to_float(uint16_t b) { return f16c_to_float(b); }
bool have_oracle() { return have_f16c(); }
#else
uint16_t oracle_to_half(float) { return 0; }
float oracle_to_float(uint16_t) { return 0.0f; }
bool have_oracle() { return false; }
#endif

// Inputs that exercise every rounding path of float -> half: each half value, the midpoint to its
// successor (a tie), one float ulp either side of the midpoint, and random floats over all exponents.
std::vector<float> half_rounding_inputs() {
    std::vector<float> v;
    for (uint32_t h = 0; h < 0x7c00; ++h) {  // all finite non-negative halves
        const float a = fp16_to_fp32(static_cast<uint16_t>(h));
        const float b = fp16_to_fp32(static_cast<uint16_t>(h + 1));  // h+1 == 0x7c00 is inf
        const float mid = std::isinf(b) ? 65520.0f : (a + b) / 2;    // exact: a and b have few bits
        for (float x : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
            v.push_back(x);
            v.push_back(-x);
        }
    }
    std::mt19937 rng(1234);
    for (int i = 0; i < 200000; ++i) {
        const uint32_t bits = rng();
        float f = fp32_from_bits(bits);
        if (!std::isnan(f)) v.push_back(f);
    }
    const float specials[] = {0.0f,
                              -0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::max(),
                              65504.0f,
                              65519.99f,
                              65520.0f,
                              5.9604645e-8f,   // 2^-24, the smallest half subnormal
                              2.9802322e-8f,   // 2^-25, half of it: a tie that rounds to 0
                              2.9802326e-8f,   // just above that tie: rounds up to 2^-24
                              6.1035156e-5f,   // 2^-14, the smallest normal half
                              6.1005353e-5f};  // largest half subnormal
    for (float f : specials) v.push_back(f);
    return v;
}

TEST(Fp16, ToFloatMatchesCompilerForAllHalves) {
    if (!have_oracle()) GTEST_SKIP() << "no _Float16 and no F16C to compare with";
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const uint16_t b = static_cast<uint16_t>(h);
        const float got = fp16_to_fp32(b);
        const float want = oracle_to_float(b);
        if (is_half_nan(b)) {
            EXPECT_TRUE(std::isnan(got)) << std::hex << h;
            // Payload and sign survive widening (the top payload bits map onto the float's).
            EXPECT_EQ(fp32_to_bits(got) >> 13 & 0x3ff, h & 0x3ffu) << std::hex << h;
            EXPECT_EQ(fp32_to_bits(got) >> 31, h >> 15) << std::hex << h;
        } else {
            ASSERT_EQ(fp32_to_bits(got), fp32_to_bits(want)) << "half 0x" << std::hex << h;
        }
    }
}

TEST(Fp16, ToFloatKnownValues) {
    EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));
    EXPECT_EQ(fp16_to_fp32(0x7c00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp16_to_fp32(0xfc00), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp32_to_bits(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
}

TEST(Fp16, FromFloatMatchesCompilerRounding) {
    if (!have_oracle()) GTEST_SKIP() << "no _Float16 and no F16C to compare with";
    size_t n = 0;
    for (float f : half_rounding_inputs()) {
        ASSERT_EQ(fp32_to_fp16(f), oracle_to_half(f))
            << "float " << f << " bits 0x" << std::hex << fp32_to_bits(f);
        ++n;
    }
    EXPECT_GT(n, 200000u);
}

TEST(Fp16, FromFloatMatchesF16C) {
    if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C";
#ifdef LCTX_TEST_HAVE_X86
    for (float f : half_rounding_inputs()) {
        ASSERT_EQ(fp32_to_fp16(f), f16c_to_half(f)) << "float " << f;
    }
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const uint16_t b = static_cast<uint16_t>(h);
        if (is_half_nan(b)) continue;
        ASSERT_EQ(fp32_to_bits(fp16_to_fp32(b)), fp32_to_bits(f16c_to_float(b))) << std::hex << h;
    }
#endif
}

TEST(Fp16, FromFloatEdgeCases) {
    // Ties round to even: 1 + 2^-11 is halfway between 1 (even mantissa) and 1 + 2^-10.
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
    // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
    // Overflow: 65504 is the largest finite half; 65520 is the tie with 2^16 and rounds to inf.
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);
    EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
    // Subnormals: 2^-24 is the smallest; 2^-25 is a tie with 0 (even) and rounds to 0;
    // 3*2^-25 is a tie between 1 and 2 units and rounds to 2 (even).
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
    EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);
    EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -26)), 0x8000);  // underflow keeps the sign
    // Largest subnormal rounding up into the smallest normal.
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
    // NaN stays NaN (any payload, either sign).
    EXPECT_TRUE(is_half_nan(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_TRUE(is_half_nan(fp32_to_fp16(-std::numeric_limits<float>::quiet_NaN())));
    EXPECT_TRUE(is_half_nan(fp32_to_fp16(fp32_from_bits(0x7f800001u))));  // signalling, tiny payload
}

TEST(Fp16, RoundTripOfEveryHalfIsExact) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const uint16_t b = static_cast<uint16_t>(h);
        if (is_half_nan(b)) continue;
        ASSERT_EQ(fp32_to_fp16(fp16_to_fp32(b)), b) << std::hex << h;
    }
}

// ---- bfloat16: the top 16 bits of a float, rounded to nearest even ----

// Oracle: round to nearest even on the full 32-bit pattern, in 64-bit integer arithmetic.
uint16_t oracle_to_bf16(float f) {
    const uint32_t x = fp32_to_bits(f);
    const uint32_t hi = x >> 16, lo = x & 0xffff;
    uint64_t r = hi;
    if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) ++r;
    return static_cast<uint16_t>(r);
}

TEST(Bf16, ToFloatIsTheTopHalf) {
    for (uint32_t h = 0; h <= 0xffff; ++h)
        ASSERT_EQ(fp32_to_bits(bf16_to_fp32(static_cast<uint16_t>(h))), h << 16);
}

TEST(Bf16, FromFloatRoundsToNearestEven) {
    std::mt19937 rng(99);
    for (int i = 0; i < 1000000; ++i) {
        const float f = fp32_from_bits(rng());
        if (std::isnan(f)) continue;
        ASSERT_EQ(fp32_to_bf16(f), oracle_to_bf16(f)) << std::hex << fp32_to_bits(f);
    }
    // Every bf16 value, the ties after it and the floats beside the ties.
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const uint32_t base = h << 16;
        if (std::isnan(fp32_from_bits(base))) continue;
        for (uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
            const float f = fp32_from_bits(base | lo);
            if (std::isnan(f)) continue;
            ASSERT_EQ(fp32_to_bf16(f), oracle_to_bf16(f)) << std::hex << (base | lo);
        }
    }
}

TEST(Bf16, EdgeCases) {
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f808000u)), 0x3f80);  // tie, even stays
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f808001u)), 0x3f81);  // above the tie
    // The largest float rounds up to infinity; infinities stay.
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
    // Subnormals are rounded like any other value, not flushed.
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00010000u)), 0x0001);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00018000u)), 0x0002);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x80008001u)), 0x8001);
    EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
    // NaN stays a (quiet) NaN even when its payload lies only in the low bits that are dropped.
    for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7fffffffu}) {
        const uint16_t b = fp32_to_bf16(fp32_from_bits(nan));
        EXPECT_EQ(b & 0x7f80, 0x7f80) << std::hex << nan;
        EXPECT_NE(b & 0x007f, 0) << std::hex << nan;
        EXPECT_EQ(b >> 15, nan >> 31) << std::hex << nan;
    }
}

}  // namespace
}  // namespace lctx::fp16_test

#undef LCTX_TEST_HAVE_X86  // a unity batch goes on after this file
