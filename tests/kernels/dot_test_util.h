// Helpers for the dot-product kernel tests: the ISA paths this machine can run, and an independent
// double-precision evaluation of each type's block-integer dot formula (decoded element by element
// from the block layouts, not shared with the reference or the kernels).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dot.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/types.h"

namespace lctx::test {

// Every weight type with kernels.
constexpr GgmlType kWeightTypes[] = {
    GgmlType::Q8_0, GgmlType::Q4_0,   GgmlType::F16,  GgmlType::BF16, GgmlType::F32,
    GgmlType::Q4_K, GgmlType::Q6_K,   GgmlType::Q5_K, GgmlType::Q4_1, GgmlType::Q5_0,
    GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS,
};

inline bool is_float_type(GgmlType t) {
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}

inline std::vector<kernels::Isa> available_isas() {
    std::vector<kernels::Isa> v = {kernels::Isa::Scalar};
    for (kernels::Isa isa :
         {kernels::Isa::Avx2, kernels::Isa::Avx512, kernels::Isa::Neon, kernels::Isa::Dotprod})
        if (kernels::isa_at_least(kernels::isa_detected(), isa)) v.push_back(isa);
    return v;
}

// The levels whose interleaved gemm differs: the AMX level differs from AVX-512 only there.
inline std::vector<kernels::Isa> available_interleaved_isas() {
    std::vector<kernels::Isa> v = available_isas();
    if (kernels::isa_detected() == kernels::Isa::Amx) v.push_back(kernels::Isa::Amx);
    if (kernels::isa_detected() == kernels::Isa::I8mm) v.push_back(kernels::Isa::I8mm);
    return v;
}

// Byte offsets of the half-precision scale fields of a weight block: d, and m / dmin (or -1).
inline void scale_offsets(GgmlType t, ptrdiff_t *d, ptrdiff_t *m) {
    *m = -1;
    switch (t) {
        case GgmlType::Q4_0:
            *d = offsetof(block_q4_0, d);
            break;
        case GgmlType::Q4_1:
            *d = offsetof(block_q4_1, d), *m = offsetof(block_q4_1, m);
            break;
        case GgmlType::Q5_0:
            *d = offsetof(block_q5_0, d);
            break;
        case GgmlType::Q5_1:
            *d = offsetof(block_q5_1, d), *m = offsetof(block_q5_1, m);
            break;
        case GgmlType::Q8_0:
            *d = offsetof(block_q8_0, d);
            break;
        case GgmlType::IQ4_NL:
            *d = offsetof(block_iq4_nl, d);
            break;
        case GgmlType::Q2_K:
            *d = offsetof(block_q2_K, d), *m = offsetof(block_q2_K, dmin);
            break;
        case GgmlType::Q3_K:
            *d = offsetof(block_q3_K, d);
            break;
        case GgmlType::Q4_K:
            *d = offsetof(block_q4_K, d), *m = offsetof(block_q4_K, dmin);
            break;
        case GgmlType::Q5_K:
            *d = offsetof(block_q5_K, d), *m = offsetof(block_q5_K, dmin);
            break;
        case GgmlType::Q6_K:
            *d = offsetof(block_q6_K, d);
            break;
        case GgmlType::IQ4_XS:
            *d = offsetof(block_iq4_xs, d);
            break;
        default:
            FAIL() << "no scale fields for " << type_name(t);
    }
}

// Sum of terms in double, with the sum of their magnitudes (for the rounding bound).
struct TermSum {
    double sum = 0.0;
    double abs = 0.0;
    void add(double t) {
        sum += t;
        abs += std::fabs(t);
    }
};

template <typename Block>
inline Block block_at(const uint8_t *row, int64_t i) {
    Block b;
    std::memcpy(&b, row + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    return b;
}

inline int nibble32(const uint8_t *qs, int e) {
    return e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
}

inline int bit_of(const uint8_t *bytes, int i) {
    return (bytes[i / 8] >> (i % 8)) & 1;
}

// Q4_K / Q5_K 6-bit scale and min of sub-block j.
inline void k4_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Every elementwise product (and offset term) of one weight row with one activation row, in double.
// x: n elements of `type`; y: the matching activation row.
inline TermSum exact_dot(GgmlType type, int64_t n, const uint8_t *x, const uint8_t *y) {
    TermSum s;
    auto h = [](fp16_t v) { return static_cast<double>(fp16_to_fp32(v)); };
    switch (type) {
        case GgmlType::F32: {
            for (int64_t i = 0; i < n; ++i) {
                float a, b;
                std::memcpy(&a, x + 4 * i, 4);
                std::memcpy(&b, y + 4 * i, 4);
                s.add(static_cast<double>(a) * b);
            }
            return s;
        }
        case GgmlType::F16:
        case GgmlType::BF16: {
            for (int64_t i = 0; i < n; ++i) {
                uint16_t a, b;
                std::memcpy(&a, x + 2 * i, 2);
                std::memcpy(&b, y + 2 * i, 2);
                if (type == GgmlType::F16)
                    s.add(h(a) * h(b));
                else
                    s.add(static_cast<double>(bf16_to_fp32(a)) * bf16_to_fp32(b));
            }
            return s;
        }
        default:
            break;
    }
    const int64_t bs = type_traits(type).block_size;
    for (int64_t ib = 0; ib < n / bs; ++ib) {
        if (bs == 32) {
            const bool q81 = type_traits(type).vec_dot_type == GgmlType::Q8_1;
            const int8_t *a;
            double dy, sy = 0.0;
            block_q8_0 y0;
            block_q8_1 y1;
            if (q81) {
                y1 = block_at<block_q8_1>(y, ib);
                a = y1.qs;
                dy = h(y1.d);
                sy = h(y1.s);
            } else {
                y0 = block_at<block_q8_0>(y, ib);
                a = y0.qs;
                dy = h(y0.d);
            }
            double dx = 0.0, m = 0.0;
            int w[32];
            switch (type) {
                case GgmlType::Q4_0: {
                    const auto b = block_at<block_q4_0>(x, ib);
                    dx = h(b.d);
                    for (int e = 0; e < 32; ++e) w[e] = nibble32(b.qs, e) - 8;
                    break;
                }
                case GgmlType::Q4_1: {
                    const auto b = block_at<block_q4_1>(x, ib);
                    dx = h(b.d);
                    m = h(b.m);
                    for (int e = 0; e < 32; ++e) w[e] = nibble32(b.qs, e);
                    break;
                }
                case GgmlType::Q5_0: {
                    const auto b = block_at<block_q5_0>(x, ib);
                    dx = h(b.d);
                    for (int e = 0; e < 32; ++e) w[e] = (nibble32(b.qs, e) | (bit_of(b.qh, e) << 4)) - 16;
                    break;
                }
                case GgmlType::Q5_1: {
                    const auto b = block_at<block_q5_1>(x, ib);
                    dx = h(b.d);
                    m = h(b.m);
                    for (int e = 0; e < 32; ++e) w[e] = nibble32(b.qs, e) | (bit_of(b.qh, e) << 4);
                    break;
                }
                case GgmlType::Q8_0: {
                    const auto b = block_at<block_q8_0>(x, ib);
                    dx = h(b.d);
                    for (int e = 0; e < 32; ++e) w[e] = b.qs[e];
                    break;
                }
                case GgmlType::IQ4_NL: {
                    const auto b = block_at<block_iq4_nl>(x, ib);
                    dx = h(b.d);
                    for (int e = 0; e < 32; ++e) w[e] = kValuesIq4nl[nibble32(b.qs, e)];
                    break;
                }
                default:
                    return s;
            }
            for (int e = 0; e < 32; ++e) s.add(dx * dy * w[e] * a[e]);
            if (q81) s.add(m * sy);
            continue;
        }
        // 256-element super-blocks against Q8_K: element e has weight scale sc[e] * w[e] and offset
        // -mn[e] (in units of the block's d and dmin).
        const auto yb = block_at<block_q8_K>(y, ib);
        const double dy = yb.d;
        double d = 0.0, dmin = 0.0;
        int w[256], sc[256], mn[256] = {};
        switch (type) {
            case GgmlType::Q2_K: {
                const auto b = block_at<block_q2_K>(x, ib);
                d = h(b.d);
                dmin = h(b.dmin);
                for (int e = 0; e < 256; ++e) {
                    const int half = e / 128, j = (e % 128) / 32, l = e % 32;
                    w[e] = (b.qs[32 * half + l] >> (2 * j)) & 3;
                    sc[e] = b.scales[e / 16] & 15;
                    mn[e] = b.scales[e / 16] >> 4;
                }
                break;
            }
            case GgmlType::Q3_K: {
                const auto b = block_at<block_q3_K>(x, ib);
                d = h(b.d);
                for (int e = 0; e < 256; ++e) {
                    const int half = e / 128, j = (e % 128) / 32, l = e % 32;
                    const int hbit = (b.hmask[l] >> (4 * half + j)) & 1;
                    w[e] = ((b.qs[32 * half + l] >> (2 * j)) & 3) - (hbit ? 0 : 4);
                    const int g = e / 16;
                    const int lo = g < 8 ? (b.scales[g] & 15) : (b.scales[g - 8] >> 4);
                    const int hi = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
                    sc[e] = (lo | (hi << 4)) - 32;
                }
                break;
            }
            case GgmlType::Q4_K:
            case GgmlType::Q5_K: {
                // Q5_K is Q4_K plus qh; read only the bytes of the actual block.
                const bool five = type == GgmlType::Q5_K;
                block_q5_K b5{};
                if (five) {
                    b5 = block_at<block_q5_K>(x, ib);
                } else {
                    const auto b4 = block_at<block_q4_K>(x, ib);
                    b5.d = b4.d;
                    b5.dmin = b4.dmin;
                    std::memcpy(b5.scales, b4.scales, sizeof(b5.scales));
                    std::memcpy(b5.qs, b4.qs, sizeof(b5.qs));
                }
                d = h(b5.d);
                dmin = h(b5.dmin);
                for (int e = 0; e < 256; ++e) {
                    const uint8_t q = b5.qs[32 * (e / 64) + e % 32];
                    w[e] = (e % 64) < 32 ? (q & 15) : (q >> 4);
                    if (five) w[e] |= ((b5.qh[e % 32] >> (e / 32)) & 1) << 4;
                    k4_scale_min(b5.scales, e / 32, &sc[e], &mn[e]);
                }
                break;
            }
            case GgmlType::Q6_K: {
                const auto b = block_at<block_q6_K>(x, ib);
                d = h(b.d);
                for (int e = 0; e < 256; ++e) {
                    const int half = e / 128, r = (e % 128) / 32, l = e % 32;
                    const uint8_t lq = b.ql[64 * half + l + 32 * (r & 1)];
                    const int lo = r < 2 ? (lq & 15) : (lq >> 4);
                    const int hi = (b.qh[32 * half + l] >> (2 * r)) & 3;
                    w[e] = (lo | (hi << 4)) - 32;
                    sc[e] = b.scales[e / 16];
                }
                break;
            }
            case GgmlType::IQ4_XS: {
                const auto b = block_at<block_iq4_xs>(x, ib);
                d = h(b.d);
                for (int e = 0; e < 256; ++e) {
                    const int sub = e / 32;
                    w[e] = kValuesIq4nl[nibble32(b.qs + 16 * sub, e % 32)];
                    const int lo = (b.scales_l[sub / 2] >> (4 * (sub % 2))) & 15;
                    const int hi = (b.scales_h >> (2 * sub)) & 3;
                    sc[e] = (lo | (hi << 4)) - 32;
                }
                break;
            }
            default:
                return s;
        }
        for (int e = 0; e < 256; ++e) {
            s.add(d * dy * sc[e] * w[e] * yb.qs[e]);
            if (mn[e]) s.add(-dmin * dy * mn[e] * yb.qs[e]);
        }
    }
    return s;
}

}  // namespace lctx::test
