// IEEE half and bfloat16 conversions (scalar; the kernels use F16C / AVX-512 BF16 where present).
#pragma once
#include <cstdint>
#include <cstring>

namespace lctx {

using fp16_t = uint16_t;
using bf16_t = uint16_t;

inline float fp32_from_bits(uint32_t w) {
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}
inline uint32_t fp32_to_bits(float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return w;
}

// Exact half -> float (handles subnormals, inf, NaN).
inline float fp16_to_fp32(fp16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        if (mant == 0) return fp32_from_bits(sign);
        // subnormal: normalise
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while ((mant & 0x400) == 0);
        mant &= 0x3ff;
        return fp32_from_bits(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | mant << 13);
    }
    if (exp == 0x1f) return fp32_from_bits(sign | 0x7f800000u | mant << 13);
    return fp32_from_bits(sign | (exp + 127 - 15) << 23 | mant << 13);
}

// float -> half, round to nearest even, overflow to inf, NaN kept NaN.
inline fp16_t fp32_to_fp16(float f) {
    const uint32_t x = fp32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t absx = x & 0x7fffffff;
    if (absx > 0x7f800000u) return static_cast<fp16_t>(sign | 0x7e00);  // NaN
    if (absx >= 0x477ff000u) return static_cast<fp16_t>(sign | 0x7c00);  // rounds to inf
    if (absx < 0x38800000u) {                                             // subnormal or zero in half
        // value = absx as float; half subnormal unit is 2^-24
        const float v = fp32_from_bits(absx) * 16777216.0f;  // scale by 2^24
        // round to nearest even integer
        uint32_t m = static_cast<uint32_t>(v);
        const float frac = v - static_cast<float>(m);
        if (frac > 0.5f || (frac == 0.5f && (m & 1))) m++;
        return static_cast<fp16_t>(sign | m);
    }
    uint32_t exp = ((absx >> 23) - 127 + 15);
    uint32_t mant = absx & 0x7fffff;
    uint32_t h = (exp << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return static_cast<fp16_t>(sign | h);
}

inline float bf16_to_fp32(bf16_t h) { return fp32_from_bits(static_cast<uint32_t>(h) << 16); }

// float -> bfloat16, round to nearest even; NaN stays a quiet NaN.
inline bf16_t fp32_to_bf16(float f) {
    uint32_t x = fp32_to_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<bf16_t>((x >> 16) | 64);
    return static_cast<bf16_t>((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

}  // namespace lctx
