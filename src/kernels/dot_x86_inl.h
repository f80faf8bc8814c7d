// 256-bit x86 dot-product kernels and activation quantizers, shared by dot_avx2.cpp and dot_avx512.cpp.
// Each of those files includes this once, so every function here is compiled separately with that file's
// ISA flags; with AVX-512 VNNI available the int8 dots use vpdpbusd instead of vpmaddubsw + vpmaddwd.
// Everything is in an anonymous namespace, for the reason simd_x86_inl.h gives.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/simd_x86_inl.h"
#include "tensor/block_layouts.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define LCTX_X86_VNNI 1
#else
#define LCTX_X86_VNNI 0
#endif

namespace lctx::kernels {
namespace {

// ---- small helpers ----

inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

inline float hmax_ps(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Signed x times signed y, summed in groups of 4 -> 8 x i32. x may be -128 (weights); y must be in
// [-127, 127] (our activations are). |x| as unsigned and y with x's sign keep the pair sums of
// vpmaddubsw within int16 (2 * 128 * 127).
inline __m256i dot_i8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
#if LCTX_X86_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
#endif
}

// Unsigned u (<= 127) times signed y, summed in groups of 4 -> 8 x i32.
inline __m256i dot_u8s8(__m256i u, __m256i y) {
#if LCTX_X86_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
#endif
}

// Unsigned u (<= 63) times signed y, pairs summed then multiplied by the int16 scales (one per pair
// lane) and summed again -> 8 x i32. Pair sums stay within int16: 2 * 63 * 127.
inline __m256i dot_u8s8_scaled(__m256i u, __m256i y, __m256i scales16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), scales16);
}

// 16 bytes of packed nibbles -> 32 bytes: the 16 low nibbles, then the 16 high nibbles (the order of the
// legacy blocks and of each IQ4_XS sub-block).
inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i t = loadu128(qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

// 32 bits (little-endian) -> 32 bytes, 0xff where bit i is set.
inline __m256i bits_to_bytes(const uint8_t *qh) {
    uint32_t b;
    std::memcpy(&b, qh, 4);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                          2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(b)), shuf);
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));  // all bits but bit (i % 8) of byte i
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

// int16 scales of the 16-element groups g (low 128 bits) and g + 1 (high 128 bits), taken from
// `scales8x16` (8 int16 scales broadcast to both lanes): pshufb with word 2j of the low lane and word
// 2j + 1 of the high lane, where g % 8 = 2j.
inline __m256i pair_pattern(int j) {
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * j + 1))),
                            _mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * j))));
}

// The 8 int8 scales at byte 8h of `scales` as int16, in both 128-bit lanes.
inline __m256i scales_half(__m128i scales, int h) {
    return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h ? _mm_srli_si128(scales, 8) : scales));
}

// ---- legacy 32-element types ----

inline float vec_dot_q8_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q8_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int64_t nb = n / kQK8_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i p0 = dot_i8(loadu256(x[i].qs), loadu256(y[i].qs));
        const __m256i p1 = dot_i8(loadu256(x[i + 1].qs), loadu256(y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc0);
        acc1 =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), acc1);
    }
    if (i < nb) {
        const __m256i p = dot_i8(loadu256(x[i].qs), loadu256(y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc0);
    }
    return hsum_ps(_mm256_add_ps(acc0, acc1));
}

inline float vec_dot_q4_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q4_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int64_t nb = n / kQK4_0;
    const __m256i off = _mm256_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i q0 = _mm256_sub_epi8(unpack_nibbles(x[i].qs), off);
        const __m256i q1 = _mm256_sub_epi8(unpack_nibbles(x[i + 1].qs), off);
        const __m256i p0 = dot_i8(q0, loadu256(y[i].qs));
        const __m256i p1 = dot_i8(q1, loadu256(y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc0);
        acc1 =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), acc1);
    }
    if (i < nb) {
        const __m256i q = _mm256_sub_epi8(unpack_nibbles(x[i].qs), off);
        const __m256i p = dot_i8(q, loadu256(y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc0);
    }
    return hsum_ps(_mm256_add_ps(acc0, acc1));
}

// x = d * q + m: sum x*y = d*dy * sum(q*qy) + m * (dy * sum(qy)), the last factor being y.s.
inline float vec_dot_q4_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q4_1 *>(vx);
    const auto *y = static_cast<const block_q8_1 *>(vy);
    const int64_t nb = n / kQK4_1;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i p = dot_u8s8(unpack_nibbles(x[i].qs), loadu256(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc);
        summs += h2f(x[i].m) * h2f(y[i].s);
    }
    return hsum_ps(acc) + summs;
}

inline float vec_dot_q5_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q5_0 *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int64_t nb = n / kQK5_0;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        // (q | bit << 4) - 16 as int8: a clear bit makes the byte q | 0xf0 = q - 16.
        const __m256i hi =
            _mm256_andnot_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(static_cast<char>(0xf0)));
        const __m256i q = _mm256_or_si256(unpack_nibbles(x[i].qs), hi);
        const __m256i p = dot_i8(q, loadu256(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc);
    }
    return hsum_ps(acc);
}

inline float vec_dot_q5_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q5_1 *>(vx);
    const auto *y = static_cast<const block_q8_1 *>(vy);
    const int64_t nb = n / kQK5_1;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i hi = _mm256_and_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(unpack_nibbles(x[i].qs), hi);
        const __m256i p = dot_u8s8(q, loadu256(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc);
        summs += h2f(x[i].m) * h2f(y[i].s);
    }
    return hsum_ps(acc) + summs;
}

inline __m256i iq4nl_table() {
    return _mm256_broadcastsi128_si256(loadu128(kValuesIq4nl));
}

inline float vec_dot_iq4_nl(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_iq4_nl *>(vx);
    const auto *y = static_cast<const block_q8_0 *>(vy);
    const int64_t nb = n / kQK4_NL;
    const __m256i table = iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i q = _mm256_shuffle_epi8(table, unpack_nibbles(x[i].qs));
        const __m256i p = dot_i8(q, loadu256(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), acc);
    }
    return hsum_ps(acc);
}

// ---- K super-block types (activation Q8_K) ----

// The 6-bit scales and mins of Q4_K / Q5_K -> bytes 0-7: the 8 scales, bytes 8-15: the 8 mins.
// Sub-blocks 0-3 are the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 take their low
// 4 bits from the nibbles of bytes 8-11 and their top 2 bits from the top of bytes 0-3 / 4-7. Four
// bytes at a time in 32-bit words.
inline __m128i k4_scales_mins(const uint8_t *s) {
    uint32_t u[3];
    std::memcpy(u, s, 12);
    constexpr uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t sc_lo = u[0] & m6;
    const uint32_t sc_hi = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
    const uint32_t mn_lo = u[1] & m6;
    const uint32_t mn_hi = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
    return _mm_setr_epi32(static_cast<int32_t>(sc_lo), static_cast<int32_t>(sc_hi),
                          static_cast<int32_t>(mn_lo), static_cast<int32_t>(mn_hi));
}

// min_j * (bsum_2j + bsum_2j+1) for the 8 sub-blocks of 32, as 8 x i32.
inline __m256i k4_mins_dot(__m128i scales_mins, const int16_t *bsums) {
    const __m256i mins16 =
        _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));  // m0 m0 m1 m1 ..
    return _mm256_madd_epi16(loadu256(bsums), mins16);
}

// pshufb pattern that broadcasts int16 word `w` of each 128-bit lane.
inline __m256i word_broadcast_pattern(int w) {
    return _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * w));
}

// Q4_K / Q5_K: x = d * sc_j * q - dmin * mn_j; chunk j of 32 bytes holds sub-block 2j in the low nibbles
// and 2j+1 in the high nibbles (Q5_K: the fifth bits are bits 2j / 2j+1 of qh[l]).
template <bool kFive>
inline float vec_dot_q45_K(int64_t n, const void *vx, const void *vy) {
    using Block = std::conditional_t<kFive, block_q5_K, block_q4_K>;
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m128i smn = k4_scales_mins(x[i].scales);
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smn));  // 8 x i16 per lane
        const float dy = y[i].d;
        accm = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].dmin) * dy),
                               _mm256_cvtepi32_ps(k4_mins_dot(smn, y[i].bsums)), accm);
        [[maybe_unused]] __m256i hb;
        if constexpr (kFive) hb = loadu256(x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
            const __m256i q = loadu256(x[i].qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if constexpr (kFive) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, one), 4));
                hi = _mm256_or_si256(hi,
                                     _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4));
                hb = _mm256_srli_epi16(hb, 2);
            }
            const __m256i s_lo = _mm256_shuffle_epi8(sc16, word_broadcast_pattern(2 * j));
            const __m256i s_hi = _mm256_shuffle_epi8(sc16, word_broadcast_pattern(2 * j + 1));
            sumi = _mm256_add_epi32(sumi, dot_u8s8_scaled(lo, loadu256(y[i].qs + 64 * j), s_lo));
            sumi = _mm256_add_epi32(sumi, dot_u8s8_scaled(hi, loadu256(y[i].qs + 64 * j + 32), s_hi));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * dy), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(_mm256_sub_ps(acc, accm));
}

// sum_g scale_g * bsums_g over the 16 groups of 16, as 8 x i32 partial sums.
inline __m256i scaled_bsums(__m128i scales, const int16_t *bsums) {
    return _mm256_madd_epi16(loadu256(bsums), _mm256_cvtepi8_epi16(scales));
}

// x = d * sc_g * (q - 32), q 6-bit unsigned: sum = sum_g sc_g * (q.y)_g - 32 * sum_g sc_g * bsum_g.
inline float vec_dot_q6_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q6_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m128i sc = loadu128(x[i].scales);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {  // 128-element halves
            const __m256i sch = scales_half(sc, h);
            const __m256i ql0 = loadu256(x[i].ql + 64 * h);
            const __m256i ql1 = loadu256(x[i].ql + 64 * h + 32);
            const __m256i qh = loadu256(x[i].qh + 32 * h);
            const __m256i u[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
            };
            for (int k = 0; k < 4; ++k) {
                sumi = _mm256_add_epi32(sumi, dot_u8s8_scaled(u[k], loadu256(y[i].qs + 128 * h + 32 * k),
                                                              _mm256_shuffle_epi8(sch, pair_pattern(k))));
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(scaled_bsums(sc, y[i].bsums), 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

// x = dall * (sc_g & 15) * q - dmin * (sc_g >> 4), q 2-bit.
inline float vec_dot_q2_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q2_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float summ = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const __m128i sc_all = loadu128(x[i].scales);
        const __m128i sc = _mm_and_si128(sc_all, _mm_set1_epi8(15));                     // 0..15
        const __m128i mn = _mm_and_si128(_mm_srli_epi16(sc_all, 4), _mm_set1_epi8(15));  // 0..15
        const int32_t mins = hsum_epi32(scaled_bsums(mn, y[i].bsums));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i sch = scales_half(sc, h);
            __m256i q = loadu256(x[i].qs + 32 * h);  // bits 2j..2j+1 of byte l: element 128h + 32j + l
            for (int j = 0; j < 4; ++j) {
                sumi = _mm256_add_epi32(
                    sumi, dot_u8s8_scaled(_mm256_and_si256(q, m2), loadu256(y[i].qs + 128 * h + 32 * j),
                                          _mm256_shuffle_epi8(sch, pair_pattern(j))));
                q = _mm256_srli_epi16(q, 2);
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
        summ += h2f(x[i].dmin) * y[i].d * static_cast<float>(mins);
    }
    return hsum_ps(acc) - summ;
}

// The 16 signed 6-bit scales of Q3_K (stored value - 32) as int8: low 4 bits in the nibbles of bytes
// 0-7 (groups 0-7 low, 8-15 high), high 2 bits in bytes 8-11 (bits 2*(g/4) of byte 8 + g%4).
inline __m128i q3_K_scales(const uint8_t *s) {
    uint32_t u[3];
    std::memcpy(u, s, 12);
    constexpr uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t w0 = (u[0] & m4) | ((u[2] & m2) << 4);
    const uint32_t w1 = (u[1] & m4) | (((u[2] >> 2) & m2) << 4);
    const uint32_t w2 = ((u[0] >> 4) & m4) | (((u[2] >> 4) & m2) << 4);
    const uint32_t w3 = ((u[1] >> 4) & m4) | (((u[2] >> 6) & m2) << 4);
    const __m128i v = _mm_setr_epi32(static_cast<int32_t>(w0), static_cast<int32_t>(w1),
                                     static_cast<int32_t>(w2), static_cast<int32_t>(w3));
    return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

// x = d * s_g * (q - 4 * !hbit); with u = q + 4 * hbit in 0..7: sum = sum_g s_g * (u.y)_g - 4 * sum_g s_g *
// bsum_g.
inline float vec_dot_q3_K(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_q3_K *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m128i sc = q3_K_scales(x[i].scales);
        __m256i hm = loadu256(x[i].hmask);  // bit 4h + j of byte l: element 128h + 32j + l
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i sch = scales_half(sc, h);
            __m256i q = loadu256(x[i].qs + 32 * h);
            for (int j = 0; j < 4; ++j) {
                const __m256i u =
                    _mm256_or_si256(_mm256_and_si256(q, m2), _mm256_slli_epi16(_mm256_and_si256(hm, one), 2));
                sumi = _mm256_add_epi32(sumi, dot_u8s8_scaled(u, loadu256(y[i].qs + 128 * h + 32 * j),
                                                              _mm256_shuffle_epi8(sch, pair_pattern(j))));
                q = _mm256_srli_epi16(q, 2);
                hm = _mm256_srli_epi16(hm, 1);
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(scaled_bsums(sc, y[i].bsums), 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

inline float vec_dot_iq4_xs(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const block_iq4_xs *>(vx);
    const auto *y = static_cast<const block_q8_K *>(vy);
    const int64_t nb = n / kQK_K;
    const __m256i table = iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i sumi = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const int ls =
                ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles(x[i].qs + 16 * ib));
            const __m256i yv = loadu256(y[i].qs + 32 * ib);
            const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(yv, v));
            sumi = _mm256_add_epi32(
                sumi, _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(ls - 32))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

// ---- float types ----

inline float vec_dot_f32(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const float *>(vx);
    const auto *y = static_cast<const float *>(vy);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

inline __m256 load_f16x8(const fp16_t *p) {
    return _mm256_cvtph_ps(loadu128(p));
}

inline float vec_dot_f16(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const fp16_t *>(vx);
    const auto *y = static_cast<const fp16_t *>(vy);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16x8(x + i + 8), load_f16x8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16x8(x + i + 16), load_f16x8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16x8(x + i + 24), load_f16x8(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; ++i) s += h2f(x[i]) * h2f(y[i]);
    return s;
}

inline __m256 load_bf16x8(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
}

inline float vec_dot_bf16(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const uint16_t *>(vx);
    const auto *y = static_cast<const uint16_t *>(vy);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(load_bf16x8(x + i + 8), load_bf16x8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_bf16x8(x + i + 16), load_bf16x8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_bf16x8(x + i + 24), load_bf16x8(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; ++i) s += bf2f(x[i]) * bf2f(y[i]);
    return s;
}

// ---- activation quantizers (bytes identical to the scalar reference) ----

// roundf: nearest integer, halves away from zero. v - trunc(v) is exact, so the test on it is too.
inline __m256 round_half_away(__m256 v) {
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign_mask, _mm256_sub_ps(v, t));
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign_mask));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

// 4 x 8 int32 in [-128, 127] -> 32 int8 in order.
inline __m256i pack_i32x32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// One 32-element block: d = amax / 127, q = roundf(x / d) (as x * (1 / d)). Returns the sum of q.
inline int32_t quantize_block_q8(const float *x, float *d_out, int8_t *qs) {
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[k]));
    }
    const float d = hmax_ps(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m256i q[4];
    for (int k = 0; k < 4; ++k)
        q[k] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[k], _mm256_set1_ps(id))));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(qs), pack_i32x32_to_i8(q[0], q[1], q[2], q[3]));
    *d_out = d;
    return hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

inline void quantize_act_q8_0(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<block_q8_0 *>(vy);
    for (int64_t i = 0; i < n / kQK8_0; ++i) {
        float d;
        quantize_block_q8(x + i * kQK8_0, &d, y[i].qs);
        y[i].d = f2h(d);
    }
}

inline void quantize_act_q8_1(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<block_q8_1 *>(vy);
    for (int64_t i = 0; i < n / kQK8_1; ++i) {
        float d;
        const int32_t sum = quantize_block_q8(x + i * kQK8_1, &d, y[i].qs);
        y[i].d = f2h(d);
        y[i].s = f2h(static_cast<float>(sum) * d);
    }
}

// Q8_K: the element of largest magnitude (the first one on ties) maps to -127 exactly: iscale = -127 / max,
// q = min(127, nearest-even(iscale * x)), d = 1 / iscale.
inline void quantize_act_q8_K(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<block_q8_K *>(vy);
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float *xb = x + i * kQK_K;
        __m256 vmax = _mm256_setzero_ps();
        for (int k = 0; k < kQK_K; k += 8)
            vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(xb + k)));
        const float amax = hmax_ps(vmax);
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        float max = 0.0f;
        const __m256 vam = _mm256_set1_ps(amax);
        for (int k = 0; k < kQK_K; k += 8) {
            const int m = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_andnot_ps(sign_mask, _mm256_loadu_ps(xb + k)), vam, _CMP_EQ_OQ));
            if (m) {
                max = xb[k + __builtin_ctz(static_cast<unsigned>(m))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        const __m256i q127 = _mm256_set1_epi32(127);
        for (int k = 0; k < kQK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; ++j)
                q[j] = _mm256_min_epi32(
                    _mm256_cvtps_epi32(_mm256_mul_ps(vis, _mm256_loadu_ps(xb + k + 8 * j))), q127);
            const __m256i packed = pack_i32x32_to_i8(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(y[i].qs + k), packed);
            // Sums of each 16: byte pairs, then 4s, then within each 128-bit half.
            __m256i s =
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), packed), _mm256_set1_epi16(1));
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            y[i].bsums[k / 16] = static_cast<int16_t>(_mm256_cvtsi256_si32(s));
            y[i].bsums[k / 16 + 1] = static_cast<int16_t>(_mm256_extract_epi32(s, 4));
        }
        y[i].d = 1.0f / iscale;
    }
}

inline void quantize_act_f16(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<fp16_t *>(vy);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
        // NaN: the reference writes a plain quiet NaN (sign | 0x7e00), F16C would keep payload bits.
        const int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i), h);
        if (nan) {
            for (int k = 0; k < 8; ++k)
                if ((nan >> k) & 1) y[i + k] = static_cast<fp16_t>((y[i + k] & 0x8000) | 0x7e00);
        }
    }
    for (; i < n; ++i) {
        y[i] = f2h(x[i]);
        if (x[i] != x[i]) y[i] = static_cast<fp16_t>((y[i] & 0x8000) | 0x7e00);
    }
}

// Round to nearest even on the bit pattern; NaN -> its top half with the quiet bit set.
inline void quantize_act_bf16(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<uint16_t *>(vy);
    int64_t i = 0;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i));
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(v, 16), _mm256_set1_epi32(1));
        const __m256i rounded =
            _mm256_srli_epi32(_mm256_add_epi32(v, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
        const __m256i nanv = _mm256_or_si256(_mm256_srli_epi32(v, 16), _mm256_set1_epi32(64));
        const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(v, abs_mask), inf);
        const __m256i r = _mm256_blendv_epi8(rounded, nanv, is_nan);
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; ++i) {
        uint32_t w;
        std::memcpy(&w, x + i, 4);
        y[i] = (w & 0x7fffffff) > 0x7f800000u ? static_cast<uint16_t>((w >> 16) | 64)
                                              : static_cast<uint16_t>((w + 0x7fff + ((w >> 16) & 1)) >> 16);
    }
}

inline void quantize_act_f32(const float *x, void *y, int64_t n) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

// ---- tiles: R weight rows x C activation rows at once (gemm) ----

// The tile loops must be unrolled for the accumulators to live in registers (-O2 does not by itself).
#define LCTX_UNROLL _Pragma("GCC unroll 16")
//
// Every output keeps one accumulator and adds its blocks in order, whatever tile it falls in, so a
// value does not depend on the batch size or on how rows are split between threads. Each unpacked
// weight block is reused for C activation rows and each activation block for R weight rows.

// x * y summed in groups of 4 with ax = |x| computed once per weight block (see dot_i8).
inline __m256i dot_i8_abs(__m256i ax, __m256i x, __m256i y) {
#if LCTX_X86_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, _mm256_sign_epi8(y, x));
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(y, x)), _mm256_set1_epi16(1));
#endif
}

// Weight blocks of 32 int8 values with a half scale, dotted with Q8_0 activations. Signed types give
// q; offset types (kOffset > 0) give the unsigned u = q + kOffset, whose dot is formed as u.y - kOffset.y
// in int16 pair sums (both within +-2 * 31 * 127): per 4-byte group the same integer as q.y, without
// the per-block sign work.
struct UnpackQ8_0 {
    using Block = block_q8_0;
    static constexpr int kOffset = 0;
    static __m256i q(const Block &b) { return loadu256(b.qs); }
};
struct UnpackQ4_0 {
    using Block = block_q4_0;
    static constexpr int kOffset = 8;
    static __m256i q(const Block &b) { return unpack_nibbles(b.qs); }
};
struct UnpackQ5_0 {
    using Block = block_q5_0;
    static constexpr int kOffset = 16;
    static __m256i q(const Block &b) {
        const __m256i hi = _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(unpack_nibbles(b.qs), hi);
    }
};
struct UnpackIQ4_NL {
    using Block = block_iq4_nl;
    static constexpr int kOffset = 0;
    static __m256i q(const Block &b) { return _mm256_shuffle_epi8(iq4nl_table(), unpack_nibbles(b.qs)); }
};

template <class U, int R, int C>
void tile_q8(int64_t nb, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda, float *y, int64_t ldy) {
    using Block = typename U::Block;
    constexpr bool kUnsigned = U::kOffset > 0;
    __m256 acc[R][C];
    LCTX_UNROLL
    for (int r = 0; r < R; ++r) LCTX_UNROLL
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m256i q[R], aq[R];
        __m256 dx[R];
        LCTX_UNROLL
        for (int r = 0; r < R; ++r) {
            const Block *xb = reinterpret_cast<const Block *>(w + r * ldw) + b;
            // Rows are short streams (a few cache lines each) that the hardware prefetcher catches late:
            // fetch the same block of the next tile's rows (a prefetch past the end does not fault).
            _mm_prefetch(reinterpret_cast<const char *>(xb) + R * ldw, _MM_HINT_T0);
            q[r] = U::q(*xb);
            if constexpr (!kUnsigned) aq[r] = _mm256_sign_epi8(q[r], q[r]);
            dx[r] = _mm256_set1_ps(h2f(xb->d));
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            const block_q8_0 *yb = reinterpret_cast<const block_q8_0 *>(a + c * lda) + b;
            const __m256i yv = loadu256(yb->qs);
            const __m256 dy = _mm256_set1_ps(h2f(yb->d));
            [[maybe_unused]] __m256i off;
            if constexpr (kUnsigned) {
#if LCTX_X86_VNNI
                off = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(U::kOffset), yv);
#else
                off = _mm256_maddubs_epi16(_mm256_set1_epi8(U::kOffset), yv);
#endif
            }
            LCTX_UNROLL
            for (int r = 0; r < R; ++r) {
                __m256i p;
                if constexpr (kUnsigned) {
#if LCTX_X86_VNNI
                    p = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), q[r], yv), off);
#else
                    p = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(q[r], yv), off),
                                          _mm256_set1_epi16(1));
#endif
                } else {
                    p = dot_i8_abs(aq[r], q[r], yv);
                }
                acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx[r], dy), acc[r][c]);
            }
        }
    }
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) LCTX_UNROLL
    for (int r = 0; r < R; ++r) y[c * ldy + r] = hsum_ps(acc[r][c]);
}

// Float weights (F32 / F16 / BF16) and activations: 8 elements per step, the tail (n % 8) added after the
// vector sum. An element type's loads: 8 as f32 (v) and one (s).
struct F32Elems {
    using T = float;
    static __m256 v(const T *p) { return _mm256_loadu_ps(p); }
    static float s(T x) { return x; }
};
struct F16Elems {
    using T = fp16_t;
    static __m256 v(const T *p) { return load_f16x8(p); }
    static float s(T x) { return h2f(x); }
};
struct BF16Elems {
    using T = uint16_t;
    static __m256 v(const T *p) { return load_bf16x8(p); }
    static float s(T x) { return bf2f(x); }
};
// The float kernels' loads: weights of element type W (T, v, s), activations of Act (A, va, sa).
template <class W, class Act = W>
struct FloatLoad {
    using T = typename W::T;
    using A = typename Act::T;
    static __m256 v(const T *p) { return W::v(p); }
    static float s(T x) { return W::s(x); }
    static __m256 va(const A *p) { return Act::v(p); }
    static float sa(A x) { return Act::s(x); }
};
using LoadF32 = FloatLoad<F32Elems>;
using LoadF16 = FloatLoad<F16Elems>;
using LoadBF16 = FloatLoad<BF16Elems>;
// F16 weights against F32 activations: the F32 kernels' arithmetic on the weights as f32 (the conversion is
// exact), so the bits of LoadF32 at half the weight bytes.
using LoadF16xF32 = FloatLoad<F16Elems, F32Elems>;

template <class L, int R, int C>
void tile_float(int64_t n, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda, float *y,
                int64_t ldy) {
    using T = typename L::T;
    using A = typename L::A;
    __m256 acc[R][C];
    LCTX_UNROLL
    for (int r = 0; r < R; ++r) LCTX_UNROLL
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x[R];
        LCTX_UNROLL
        for (int r = 0; r < R; ++r) {
            const T *xr = reinterpret_cast<const T *>(w + r * ldw) + i;
            // as in tile_q8 (a single row, read alone, streams better without it)
            if constexpr (R > 1) _mm_prefetch(reinterpret_cast<const char *>(xr) + R * ldw, _MM_HINT_T0);
            x[r] = L::v(xr);
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            const __m256 yv = L::va(reinterpret_cast<const A *>(a + c * lda) + i);
            LCTX_UNROLL
            for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(x[r], yv, acc[r][c]);
        }
    }
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) {
        const A *yc = reinterpret_cast<const A *>(a + c * lda);
        LCTX_UNROLL
        for (int r = 0; r < R; ++r) {
            const T *xr = reinterpret_cast<const T *>(w + r * ldw);
            float s = hsum_ps(acc[r][c]);
            for (int64_t k = i; k < n; ++k) s += L::s(xr[k]) * L::sa(yc[k]);
            y[c * ldy + r] = s;
        }
    }
}

using TileFn = void (*)(int64_t, const uint8_t *, size_t, const uint8_t *, size_t, float *, int64_t);

// Rows of at least this many bytes stream best one at a time when a single activation meets them (both
// levels' float gemms).
constexpr int64_t kLongRowBytes = 1024;

// Tiles of up to kTileR x kTileC; the edges use the smaller instantiations.
constexpr int kTileR = 4, kTileC = 3;

template <template <class, int, int> class Tile, class U>
struct TileTable {
    TileFn fn[kTileR][kTileC];
};

template <class U, int R, int C>
struct Q8Tile {
    static constexpr TileFn fn = &tile_q8<U, R, C>;
};
template <class L, int R, int C>
struct FloatTile {
    static constexpr TileFn fn = &tile_float<L, R, C>;
};

template <template <class, int, int> class Tile, class U, int... Is>
constexpr TileTable<Tile, U> make_tile_table(std::integer_sequence<int, Is...>) {
    TileTable<Tile, U> t{};
    ((t.fn[Is / kTileC][Is % kTileC] = Tile<U, Is / kTileC + 1, Is % kTileC + 1>::fn), ...);
    return t;
}

// `k` = elements per call unit: blocks for the quantized tiles, elements for the float tiles.
template <template <class, int, int> class Tile, class U, bool kBlocks>
void gemm_tiled(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                float *y, int64_t ldy) {
    static constexpr TileTable<Tile, U> table =
        make_tile_table<Tile, U>(std::make_integer_sequence<int, kTileR * kTileC>{});
    const int64_t k = kBlocks ? n / 32 : n;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    int64_t r0 = 0;
    if constexpr (!kBlocks) {
        // One activation against long plain float rows (a decoded token's matrix kept plain, LCTX_REPACK=0;
        // model weights take the 8-row groups, interleave.h): two rows at a
        // time, each the next pair's lines prefetched, so that the weights stream from memory in two
        // sequences (8 rows side by side are 8 streams, about 20% slower from DRAM; one row alone is one
        // chain of dependent FMAs, 32 bytes per FMA latency: TinyLlama F32 tg at 1 thread 5.8 t/s, 7.1-7.6 in
        // pairs, 6.9 in fours). The value is the one every tile position gives.
        if (nc == 1 && n * static_cast<int64_t>(sizeof(typename U::T)) >= kLongRowBytes) {
            for (; r0 + 2 <= nr; r0 += 2) Tile<U, 2, 1>::fn(k, wb + r0 * ldw, ldw, ab, lda, y + r0, ldy);
            for (; r0 < nr; ++r0) Tile<U, 1, 1>::fn(k, wb + r0 * ldw, ldw, ab, lda, y + r0, ldy);
            return;
        }
    }
    if (nc == 1) {  // one activation: 8 rows at a time (enough independent accumulators)
        for (; r0 + 8 <= nr; r0 += 8) Tile<U, 8, 1>::fn(k, wb + r0 * ldw, ldw, ab, lda, y + r0, ldy);
    }
    for (; r0 < nr; r0 += kTileR) {
        const int rr = static_cast<int>(nr - r0 < kTileR ? nr - r0 : kTileR);
        for (int64_t c0 = 0; c0 < nc; c0 += kTileC) {
            const int cc = static_cast<int>(nc - c0 < kTileC ? nc - c0 : kTileC);
            table.fn[rr - 1][cc - 1](k, wb + r0 * ldw, ldw, ab + c0 * lda, lda, y + c0 * ldy + r0, ldy);
        }
    }
}

// Types without tiles: one vec_dot per output (the same value in any tile position).
template <VecDotFn kDot>
void gemm_by_dot(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                 float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        const int64_t r1 = r0 + 4 < nr ? r0 + 4 : nr;
        for (int64_t c = 0; c < nc; ++c)
            for (int64_t r = r0; r < r1; ++r) y[c * ldy + r] = kDot(n, wb + r * ldw, ab + c * lda);
    }
}

}  // namespace
}  // namespace lctx::kernels
#include "kernels/gemm_kquants_x86_inl.h"  // K-type tiles (needs the helpers above)
namespace lctx::kernels {
namespace {

inline GemmFn shared_gemm(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &gemm_tiled<FloatTile, LoadF32, false>;
        case GgmlType::F16:
            return &gemm_tiled<FloatTile, LoadF16, false>;
        case GgmlType::BF16:
            return &gemm_tiled<FloatTile, LoadBF16, false>;
        case GgmlType::Q8_0:
            return &gemm_tiled<Q8Tile, UnpackQ8_0, true>;
        case GgmlType::Q4_0:
            return &gemm_tiled<Q8Tile, UnpackQ4_0, true>;
        case GgmlType::Q5_0:
            return &gemm_tiled<Q8Tile, UnpackQ5_0, true>;
        case GgmlType::IQ4_NL:
            return &gemm_tiled<Q8Tile, UnpackIQ4_NL, true>;
        case GgmlType::Q4_1:
            return &gemm_by_dot<&vec_dot_q4_1>;
        case GgmlType::Q5_1:
            return &gemm_by_dot<&vec_dot_q5_1>;
        case GgmlType::Q2_K:
            return &gemm_kq<KqQ2>;
        case GgmlType::Q3_K:
            return &gemm_kq<KqQ3>;
        case GgmlType::Q4_K:
            return &gemm_kq<KqQ45<false>>;
        case GgmlType::Q5_K:
            return &gemm_kq<KqQ45<true>>;
        case GgmlType::Q6_K:
            return &gemm_kq<KqQ6>;
        case GgmlType::IQ4_XS:
            return &gemm_kq<KqIQ4XS>;
        default:
            return nullptr;
    }
}

// Kernels of the shared 256-bit set by weight type / activation type.
inline VecDotFn shared_vec_dot(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &vec_dot_f32;
        case GgmlType::F16:
            return &vec_dot_f16;
        case GgmlType::BF16:
            return &vec_dot_bf16;
        case GgmlType::Q8_0:
            return &vec_dot_q8_0;
        case GgmlType::Q4_0:
            return &vec_dot_q4_0;
        case GgmlType::Q4_1:
            return &vec_dot_q4_1;
        case GgmlType::Q5_0:
            return &vec_dot_q5_0;
        case GgmlType::Q5_1:
            return &vec_dot_q5_1;
        case GgmlType::IQ4_NL:
            return &vec_dot_iq4_nl;
        case GgmlType::Q2_K:
            return &vec_dot_q2_K;
        case GgmlType::Q3_K:
            return &vec_dot_q3_K;
        case GgmlType::Q4_K:
            return &vec_dot_q45_K<false>;
        case GgmlType::Q5_K:
            return &vec_dot_q45_K<true>;
        case GgmlType::Q6_K:
            return &vec_dot_q6_K;
        case GgmlType::IQ4_XS:
            return &vec_dot_iq4_xs;
        default:
            return nullptr;
    }
}

inline QuantizeActFn shared_quantize_act(GgmlType act) {
    switch (act) {
        case GgmlType::F32:
            return &quantize_act_f32;
        case GgmlType::F16:
            return &quantize_act_f16;
        case GgmlType::BF16:
            return &quantize_act_bf16;
        case GgmlType::Q8_0:
            return &quantize_act_q8_0;
        case GgmlType::Q8_1:
            return &quantize_act_q8_1;
        case GgmlType::Q8_K:
            return &quantize_act_q8_K;
        default:
            return nullptr;
    }
}

}  // namespace
}  // namespace lctx::kernels
