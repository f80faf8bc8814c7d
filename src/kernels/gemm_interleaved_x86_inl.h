// Gemm over interleaved weights (interleave.h), included after dot_x86_inl.h by dot_avx2.cpp and
// dot_avx512.cpp (same rules: anonymous namespace, compiled once per ISA file). The tiles are written once
// over a vector traits class: V256 (8 lanes, groups of 8 rows) and V512 (16 lanes, groups of 16 rows).
//
// One line load holds 4 elements of each of the G rows; the 4 matching activation bytes are broadcast to
// every lane, so vpmaddubsw / vpdpbusd give each lane its own row's partial dot product. Per block and
// (group, activation) pair: integer sums, one conversion, one fma with the G rows' scales times the
// activation's scale. Each output lane adds its blocks in order, whatever the tile width, so the value does
// not depend on the batch size or the thread split; and since the integer sums are exact and the float
// steps the same, a 16-row group gives every row the value an 8-row group gives it.
#pragma once
#include <array>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/interleave.h"

namespace lctx::kernels {
namespace {

// No software prefetch in the integer single-token tiles: every block is read front to back, and the hardware
// prefetcher alone streams that faster. Prefetching 3 KiB ahead into L2 (as these tiles did) cost tinyllama
// tg at 1 thread 20-45% on an AMD EPYC at both levels (Q4_0 avx2 26 -> 34 t/s without it, avx512 28 -> 42;
// Q8_0 15 -> 21), prompts unchanged. It was there for Q6_K, whose reads alternated between two regions of a
// block; its layout now keeps them together (interleave.h). The float groups do prefetch, further ahead
// (kFloatX8PrefetchBytes).

inline int32_t load_u32(const void *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Tiles of many activations (a batched decode: one token of each of 4 to 8 sequences) are the exception: they
// compute long enough per block that the hardware prefetcher falls behind, and the weights' memory reads then
// come on top of the compute instead of beside it. They prefetch kBatchedPrefetchBytes ahead, in the first
// pass over a group only (a prompt's later passes find the group in the cache): a Q8_0 product of 32768 x
// 2048 weights by 8 activations at 1 thread took 4.4-4.8 ms without and 2.4-3.3 ms with 4 KiB (the
// single-token time alone is 1.8-2.7 ms; AMD EPYC Zen 5, avx512 level, shared machine, medians of 3).
constexpr int kBatchedPrefetchMinC = 4;
constexpr size_t kBatchedPrefetchBytes = 4096;
// The K tiles (Q4_K at most 3 activations wide) prefetch from 3 activations on, at the avx512 level only:
// Q4_K weights beyond the cache by 8 activations went from 128 to 167-172 G multiply-adds/s.
template <class V>
constexpr int k_prefetch_min_c() {
    return V::kLanes == 16 ? 3 : 99;
}
template <class Block>
inline void prefetch_lines_ahead(const Block *x) {
    const char *p = reinterpret_cast<const char *>(x) + kBatchedPrefetchBytes;
    LCTX_UNROLL
    for (size_t l = 0; l < sizeof(Block); l += 64) _mm_prefetch(p + l, _MM_HINT_T0);
}

// ---- vector traits: one lane per row of a group ----

struct V256 {
    static constexpr int kLanes = 8;
    using I = __m256i;
    using F = __m256;
    static constexpr bool kVnni = LCTX_X86_VNNI;
    static I load(const void *p) { return _mm256_loadu_si256(static_cast<const __m256i *>(p)); }
    static I zero() { return _mm256_setzero_si256(); }
    static F fzero() { return _mm256_setzero_ps(); }
    static I set1_8(char v) { return _mm256_set1_epi8(v); }
    static I set1_16(short v) { return _mm256_set1_epi16(v); }
    static I set1_32(int32_t v) { return _mm256_set1_epi32(v); }
    static I bcast_u32(const int8_t *p) { return _mm256_set1_epi32(load_u32(p)); }
    static I and_(I a, I b) { return _mm256_and_si256(a, b); }
    static I or_(I a, I b) { return _mm256_or_si256(a, b); }
    static I xor_(I a, I b) { return _mm256_xor_si256(a, b); }
    static I andor(I a, I m, I c) { return _mm256_or_si256(_mm256_and_si256(a, m), c); }  // (a & m) | c
    template <int kBits>
    static I srli16(I v) {
        return _mm256_srli_epi16(v, kBits);
    }
    template <int kBits>
    static I slli16(I v) {
        return _mm256_slli_epi16(v, kBits);
    }
    template <int kBits>
    static I slli32(I v) {
        return _mm256_slli_epi32(v, kBits);
    }
    static I add16(I a, I b) { return _mm256_add_epi16(a, b); }
    static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
    static I sub32(I a, I b) { return _mm256_sub_epi32(a, b); }
    static I mullo32(I a, I b) { return _mm256_mullo_epi32(a, b); }
    static I maddubs(I u, I s) { return _mm256_maddubs_epi16(u, s); }
    static I madd(I a, I b) { return _mm256_madd_epi16(a, b); }
    static I abs8(I v) { return _mm256_sign_epi8(v, v); }
    static I sign8(I v, I s) { return _mm256_sign_epi8(v, s); }
#if LCTX_X86_VNNI
    static I dpbusd(I acc, I u, I s) {
        return _mm256_dpbusd_epi32(acc, u, s);
    }
#endif
    static F cvt(I v) {
        return _mm256_cvtepi32_ps(v);
    }
    static F set1_ps(float v) {
        return _mm256_set1_ps(v);
    }
    static F mul(F a, F b) {
        return _mm256_mul_ps(a, b);
    }
    static F fmadd(F a, F b, F c) {
        return _mm256_fmadd_ps(a, b, c);
    }
    static F fnmadd(F a, F b, F c) {
        return _mm256_fnmadd_ps(a, b, c);
    }
    static void store(float *y, F v) {
        _mm256_storeu_ps(y, v);
    }
    // the G half scales
    static F halves(const fp16_t *d) {
        return _mm256_cvtph_ps(loadu128(d));
    }
    // G unsigned / signed bytes -> int32 lanes
    static I u8_to_32(const uint8_t *p) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
    }
    static I i8_to_32(const int8_t *p) {
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
    }
    // G unsigned bytes -> both int16 halves of each lane (vpmaddwd scales)
    static I u8_to_16x2(const uint8_t *p) {
        const __m256i pair = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1,
                                              4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
        int64_t v;
        std::memcpy(&v, p, 8);
        return _mm256_shuffle_epi8(_mm256_set1_epi64x(v), pair);
    }
    // 2 G unsigned bytes (a pair per lane) -> int16 pairs
    static I u8x2_to_16(const uint8_t *p) {
        return _mm256_cvtepu8_epi16(loadu128(p));
    }
    // lane r = (e[r], o[r]) as int16 from two runs of G signed bytes
    static I i8_pairs_to_16(const int8_t *e, const int8_t *o) {
        const __m128i ev = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(e));
        const __m128i ov = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(o));
        return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(ev, ov));
    }
};

#if defined(__AVX512F__) && defined(__AVX512BW__) && LCTX_X86_VNNI
struct V512 {
    static constexpr int kLanes = 16;
    using I = __m512i;
    using F = __m512;
    static constexpr bool kVnni = true;
    static I load(const void *p) { return _mm512_loadu_si512(p); }
    static I zero() { return _mm512_setzero_si512(); }
    static F fzero() { return _mm512_setzero_ps(); }
    static I set1_8(char v) { return _mm512_set1_epi8(v); }
    static I set1_16(short v) { return _mm512_set1_epi16(v); }
    static I set1_32(int32_t v) { return _mm512_set1_epi32(v); }
    static I bcast_u32(const int8_t *p) { return _mm512_set1_epi32(load_u32(p)); }
    static I and_(I a, I b) { return _mm512_and_si512(a, b); }
    static I or_(I a, I b) { return _mm512_or_si512(a, b); }
    static I xor_(I a, I b) { return _mm512_xor_si512(a, b); }
    static I andor(I a, I m, I c) { return _mm512_ternarylogic_epi32(a, m, c, 0xea); }  // (a & m) | c
    template <int kBits>
    static I srli16(I v) {
        return _mm512_srli_epi16(v, kBits);
    }
    template <int kBits>
    static I slli16(I v) {
        return _mm512_slli_epi16(v, kBits);
    }
    template <int kBits>
    static I slli32(I v) {
        return _mm512_slli_epi32(v, kBits);
    }
    static I add16(I a, I b) { return _mm512_add_epi16(a, b); }
    static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
    static I sub32(I a, I b) { return _mm512_sub_epi32(a, b); }
    static I mullo32(I a, I b) { return _mm512_mullo_epi32(a, b); }
    static I maddubs(I u, I s) { return _mm512_maddubs_epi16(u, s); }
    static I madd(I a, I b) { return _mm512_madd_epi16(a, b); }
    static I dpbusd(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
    static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
    static F set1_ps(float v) { return _mm512_set1_ps(v); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
    static void store(float *y, F v) { _mm512_storeu_ps(y, v); }
    static F halves(const fp16_t *d) { return _mm512_cvtph_ps(loadu256(d)); }
    static I u8_to_32(const uint8_t *p) { return _mm512_cvtepu8_epi32(loadu128(p)); }
    static I i8_to_32(const int8_t *p) { return _mm512_cvtepi8_epi32(loadu128(p)); }
    static I u8_to_16x2(const uint8_t *p) {
        // every 128-bit lane holds the 16 bytes; dword q of lane L takes byte 4 L + q twice
        const __m512i idx =
            _mm512_set_epi8(-1, 15, -1, 15, -1, 14, -1, 14, -1, 13, -1, 13, -1, 12, -1, 12, -1, 11, -1, 11,
                            -1, 10, -1, 10, -1, 9, -1, 9, -1, 8, -1, 8, -1, 7, -1, 7, -1, 6, -1, 6, -1, 5, -1,
                            5, -1, 4, -1, 4, -1, 3, -1, 3, -1, 2, -1, 2, -1, 1, -1, 1, -1, 0, -1, 0);
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(loadu128(p)), idx);
    }
    static I u8x2_to_16(const uint8_t *p) { return _mm512_cvtepu8_epi16(loadu256(p)); }
    static I i8_pairs_to_16(const int8_t *e, const int8_t *o) {
        const __m128i ev = loadu128(e), ov = loadu128(o);
        const __m256i inter = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(ev, ov)),
                                                      _mm_unpackhi_epi8(ev, ov), 1);
        return _mm512_cvtepi8_epi16(inter);
    }
};
#endif

// s16 + (lo . aq[0..4)) + (hi . aq[4..8)) in int16 lanes: the unsigned codes of one step's two nibble halves
// (4 elements of each row per 32-bit lane) against the matching activation bytes, broadcast to every lane.
template <class V>
inline typename V::I add_step_products(typename V::I s16, typename V::I lo, typename V::I hi,
                                       const int8_t *aq) {
    return V::add16(s16, V::add16(V::maddubs(lo, V::bcast_u32(aq)), V::maddubs(hi, V::bcast_u32(aq + 4))));
}

// The tiles of 2-4 activations pin each block sum after every add (keep_in_register, simd_x86_inl.h): left to
// GCC, the sums became trees over the block's products, and the AVX2 tiles stored and reloaded 16-32 of them
// per block from the stack, the float accumulators too. Pinned, GemmX8 at the avx2 level over 8 and 64
// activations ran Q4_0 and Q4_K 19-33% and Q8_0 10% faster. One activation (a decoded token) has the
// registers it needs and keeps GCC's order.
template <int C, class T>
inline void keep_sum_in_register(T &v) {
    if constexpr (C > 1) keep_in_register(v);
}

inline const block_q8_0 &act_q8_0(const uint8_t *a, size_t lda, int c, int64_t b) {
    return reinterpret_cast<const block_q8_0 *>(a + c * lda)[b];
}
inline const block_q8_K &act_q8_K(const uint8_t *a, size_t lda, int c, int64_t b) {
    return reinterpret_cast<const block_q8_K *>(a + c * lda)[b];
}

// The pieces every integer tile shares: zeroed accumulators, the per-block scaling of a 32-element-block
// type (acc += float(sum) * (d_w * d_a), with d_a the activation's half scale) and the final stores.
template <class V, int C>
inline void zero_all(typename V::F (&acc)[C]) {
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) acc[c] = V::fzero();
}
template <class V, int C>
inline void zero_all(typename V::I (&s)[C]) {
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) s[c] = V::zero();
}
template <class V, int C>
inline void scale_q8_0_block(typename V::F (&acc)[C], const typename V::I (&s32)[C], typename V::F d,
                             const uint8_t *a, size_t lda, int64_t b) {
    LCTX_UNROLL
    for (int c = 0; c < C; ++c)
        acc[c] = V::fmadd(V::cvt(s32[c]), V::mul(d, V::set1_ps(h2f(act_q8_0(a, lda, c, b).d))), acc[c]);
}
template <class V, int C>
inline void store_all(float *y, int64_t ldy, const typename V::F (&acc)[C]) {
    LCTX_UNROLL
    for (int c = 0; c < C; ++c) V::store(y + c * ldy, acc[c]);
}

// The unsigned codes of the 32-element types with a 4-bit core, step g (of 4) as its two halves lo, hi (4
// elements of each row per 32-bit lane): Q4_0's nibbles (q + 8, 0..15) and Q5_0's nibbles with their fifth
// bits (q + 16, 0..31; the fifth bits of step g at bits 2g and 2g + 1 of qh, moved to bit 4). Without VNNI
// the int16 products are widened every kStepsPerWidening steps: 8 products of at most 15 x 127 per step and
// lane, so 4 steps for Q4_0 (30480), 2 for Q5_0 (31 x 127 x 8 x 2 = 62992 would not fit in 4).
template <class V>
struct Q4_0Codes {
    using I = typename V::I;
    using Block = block_q4_0xG<V::kLanes>;
    static constexpr int kStepsPerWidening = 4;
    struct Bits {
        explicit Bits(const Block &) {}
    };
    static void step(const Block &x, const Bits &, int g, I &lo, I &hi) {
        const I m4 = V::set1_8(0x0f);
        const I v = V::load(x.qs + 4 * V::kLanes * g);
        lo = V::and_(v, m4);
        hi = V::and_(V::template srli16<4>(v), m4);
    }
};
template <class V>
struct Q5_0Codes {
    using I = typename V::I;
    using Block = block_q5_0xG<V::kLanes>;
    static constexpr int kStepsPerWidening = 2;
    // the fifth bits of each element half, at bit 4: h[2g] for step g's low nibbles, h[2g + 1] its high ones
    struct Bits {
        I h[8];
        explicit Bits(const Block &x) {
            const I m10 = V::set1_8(0x10);
            const I qh = V::load(x.qh);
            h[0] = V::and_(V::template slli16<4>(qh), m10);
            h[1] = V::and_(V::template slli16<3>(qh), m10);
            h[2] = V::and_(V::template slli16<2>(qh), m10);
            h[3] = V::and_(V::template slli16<1>(qh), m10);
            h[4] = V::and_(qh, m10);
            h[5] = V::and_(V::template srli16<1>(qh), m10);
            h[6] = V::and_(V::template srli16<2>(qh), m10);
            h[7] = V::and_(V::template srli16<3>(qh), m10);
        }
    };
    static void step(const Block &x, const Bits &bits, int g, I &lo, I &hi) {
        const I m4 = V::set1_8(0x0f);
        const I v = V::load(x.qs + 4 * V::kLanes * g);
        lo = V::or_(V::and_(v, m4), bits.h[2 * g]);
        hi = V::or_(V::and_(V::template srli16<4>(v), m4), bits.h[2 * g + 1]);
    }
};

// G rows of a 4-bit-core type (Codes above) x C activations. The codes are unsigned (q + offset), so
// sum (q + offset) a - offset sum a = sum q a, with asum[c * nb + b] = offset * (sum of activation c's codes
// in block b).
template <class V, int C, template <class> class Codes>
struct NibbleTile {
    using I = typename V::I;
    using F = typename V::F;
    using K = Codes<V>;
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *asum, float *y,
                    int64_t ldy, bool first_pass) {
        const I ones = V::set1_16(1);
        F acc[C];
        zero_all<V, C>(acc);
        const auto *xb = reinterpret_cast<const typename K::Block *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const auto &x = xb[b];
            if constexpr (C >= kBatchedPrefetchMinC)
                if (first_pass) prefetch_lines_ahead(&x);
            const typename K::Bits bits(x);
            I s32[C];
            zero_all<V, C>(s32);
            LCTX_UNROLL
            for (int g0 = 0; g0 < 4; g0 += K::kStepsPerWidening) {
                I s16[C];
                zero_all<V, C>(s16);
                LCTX_UNROLL
                for (int g = g0; g < g0 + K::kStepsPerWidening; ++g) {
                    I lo, hi;
                    K::step(x, bits, g, lo, hi);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const int8_t *aq = act_q8_0(a, lda, c, b).qs + 8 * g;
                        if constexpr (V::kVnni) {
                            s32[c] = V::dpbusd(s32[c], lo, V::bcast_u32(aq));
                            s32[c] = V::dpbusd(s32[c], hi, V::bcast_u32(aq + 4));
                        } else {
                            s16[c] = add_step_products<V>(s16[c], lo, hi, aq);
                            keep_sum_in_register<C>(s16[c]);
                        }
                    }
                }
                if constexpr (!V::kVnni) {
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) s32[c] = V::add32(s32[c], V::madd(s16[c], ones));
                }
            }
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) s32[c] = V::sub32(s32[c], V::set1_32(asum[c * nb + b]));
            scale_q8_0_block<V, C>(acc, s32, V::halves(x.d), a, lda, b);
        }
        store_all<V, C>(y, ldy, acc);
    }
};
template <class V, int C>
using Q4_0Tile = NibbleTile<V, C, Q4_0Codes>;
template <class V, int C>
using Q5_0Tile = NibbleTile<V, C, Q5_0Codes>;

// G x Q8_0 rows x C activations, signed x signed. Without VNNI: |w| times the activation with w's sign
// (vpmaddubsw pair sums within int16); with VNNI: w + 128 (unsigned) times the activation, then
// asum128[c * nb + b] = 128 * (sum of activation c's codes in block b) taken off.
template <class V, int C>
struct Q8_0Tile {
    using I = typename V::I;
    using F = typename V::F;
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *asum128,
                    float *y, int64_t ldy, bool first_pass) {
        F acc[C];
        zero_all<V, C>(acc);
        const auto *xb = reinterpret_cast<const block_q8_0xG<V::kLanes> *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const auto &x = xb[b];
            if constexpr (C >= kBatchedPrefetchMinC)
                if (first_pass) prefetch_lines_ahead(&x);
            I s[C];
            zero_all<V, C>(s);
            LCTX_UNROLL
            for (int g = 0; g < 8; ++g) {
                const I v = V::load(x.qs + 4 * V::kLanes * g);
                if constexpr (V::kVnni) {
                    const I u = V::xor_(v, V::set1_8(static_cast<char>(0x80)));
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c)
                        s[c] = V::dpbusd(s[c], u, V::bcast_u32(act_q8_0(a, lda, c, b).qs + 4 * g));
                } else {
                    const I av = V::abs8(v);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const I ys = V::sign8(V::bcast_u32(act_q8_0(a, lda, c, b).qs + 4 * g), v);
                        s[c] = V::add32(s[c], V::madd(V::maddubs(av, ys), V::set1_16(1)));
                        keep_sum_in_register<C>(s[c]);
                    }
                }
            }
            if constexpr (V::kVnni) {
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) s[c] = V::sub32(s[c], V::set1_32(asum128[c * nb + b]));
            }
            scale_q8_0_block<V, C>(acc, s, V::halves(x.d), a, lda, b);
        }
        store_all<V, C>(y, ldy, acc);
    }
};

// kOffset * sum of the codes of each Q8_0 block of nc activation rows -> out[c * nb + b] (kOffset <= 128:
// the pair sums of vpmaddubsw stay within int16).
template <int kOffset>
void q8_0_block_sums(const uint8_t *act, size_t lda, int64_t nc, int64_t nb, int32_t *out) {
    for (int64_t c = 0; c < nc; ++c) {
        const auto *a = reinterpret_cast<const block_q8_0 *>(act + c * lda);
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i s16 =
                _mm256_maddubs_epi16(_mm256_set1_epi8(static_cast<char>(kOffset)), loadu256(a[b].qs));
            out[c * nb + b] = hsum_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
        }
    }
}

// G x Q4_K rows x C activations. Per sub-block j: int16 sums of the nibble products (16 products of at most
// 15 x 127 per lane), widened by vpmaddwd with the rows' scales (each row's scale in both int16 halves of
// its lane); the mins meet the activation's sub-block sums, passed in bs4[(c * nb + b) * 4 + jp] as the
// int16 pair (sum of sub-block 2 jp, sum of 2 jp + 1).
template <class V, int C>
struct Q4_KTile {
    using I = typename V::I;
    using F = typename V::F;
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *bs4, float *y,
                    int64_t ldy, bool first_pass) {
        const I m4 = V::set1_8(0x0f);
        F acc[C];
        zero_all<V, C>(acc);
        const auto *xb = reinterpret_cast<const block_q4_KxG<V::kLanes> *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const auto &x = xb[b];
            if constexpr (C >= k_prefetch_min_c<V>())
                if (first_pass) prefetch_lines_ahead(&x);
            I isum[C];
            zero_all<V, C>(isum);
            for (int j = 0; j < 8; ++j) {
                const I sc = V::u8_to_16x2(x.scales[j]);
                I s16[C];
                zero_all<V, C>(s16);
                LCTX_UNROLL
                for (int g = 0; g < 4; ++g) {
                    const I v = V::load(x.qs[j][g]);
                    const I lo = V::and_(v, m4);
                    const I hi = V::and_(V::template srli16<4>(v), m4);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        s16[c] =
                            add_step_products<V>(s16[c], lo, hi, act_q8_K(a, lda, c, b).qs + 32 * j + 8 * g);
                        // (at 16 lanes GCC keeps these sums in registers itself, and pinning them cost 2%)
                        if constexpr (V::kLanes == 8) keep_sum_in_register<C>(s16[c]);
                    }
                }
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) isum[c] = V::add32(isum[c], V::madd(s16[c], sc));
            }
            I msum[C];
            zero_all<V, C>(msum);
            LCTX_UNROLL
            for (int jp = 0; jp < 4; ++jp) {
                const I m16 = V::u8x2_to_16(&x.mins[jp][0][0]);
                LCTX_UNROLL
                for (int c = 0; c < C; ++c)
                    msum[c] = V::add32(msum[c], V::madd(m16, V::set1_32(bs4[(c * nb + b) * 4 + jp])));
            }
            const F d = V::halves(x.d);
            const F m = V::halves(x.dmin);
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const F dy = V::set1_ps(act_q8_K(a, lda, c, b).d);
                acc[c] = V::fmadd(V::cvt(isum[c]), V::mul(d, dy), acc[c]);
                acc[c] = V::fnmadd(V::cvt(msum[c]), V::mul(m, dy), acc[c]);
            }
        }
        store_all<V, C>(y, ldy, acc);
    }
};

// The int16 pairs of Q8_K sub-block sums that Q4_KTile takes, for nc activation rows.
inline void q8_K_subblock_pairs(const uint8_t *act, size_t lda, int64_t nc, int64_t nb, int32_t *out) {
    for (int64_t c = 0; c < nc; ++c) {
        const auto *a = reinterpret_cast<const block_q8_K *>(act + c * lda);
        for (int64_t b = 0; b < nb; ++b) {
            for (int jp = 0; jp < 4; ++jp) {
                const int16_t *s = a[b].bsums + 4 * jp;
                const auto lo = static_cast<uint16_t>(s[0] + s[1]), hi = static_cast<uint16_t>(s[2] + s[3]);
                out[(c * nb + b) * 4 + jp] =
                    static_cast<int32_t>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
            }
        }
    }
}

// G x Q6_K rows x C activations: codes 0..63 (low nibble | top bits << 4), value d * sc_k * (code - 32). Two
// vpmaddubsw (2 x 2 x 63 x 127 per int16 lane) per widening; a group's 16-element sum is multiplied by its
// scale in int32 (one sign extension of the G rows' scales instead of pairing them per int16 lane); the -32
// meets the activation's 16-element sums once per block.
template <class V, int C>
struct Q6_KTile {
    using I = typename V::I;
    using F = typename V::F;
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                    int64_t ldy, [[maybe_unused]] bool first_pass) {
        const I m4 = V::set1_8(0x0f);
        const I m30 = V::set1_8(0x30);
        const I ones = V::set1_16(1);
        F acc[C];
        zero_all<V, C>(acc);
        const auto *xb = reinterpret_cast<const block_q6_KxG<V::kLanes> *>(w);
        for (int64_t b = 0; b < nb; ++b) {
            const auto &x = xb[b];
            if constexpr (C >= k_prefetch_min_c<V>())
                if (first_pass) prefetch_lines_ahead(&x);
            I isum[C];
            zero_all<V, C>(isum);
            for (int j = 0; j < 8; ++j) {
                LCTX_UNROLL
                for (int h = 0; h < 2; ++h) {
                    const auto &half = x.half[j][h];
                    const I qh = V::load(half.qh);
                    const I v0 = V::load(half.ql[0]), v1 = V::load(half.ql[1]);
                    const I lo0 = V::andor(v0, m4, V::and_(V::template slli16<4>(qh), m30));
                    const I hi0 =
                        V::andor(V::template srli16<4>(v0), m4, V::and_(V::template slli16<2>(qh), m30));
                    const I lo1 = V::andor(v1, m4, V::and_(qh, m30));
                    const I hi1 =
                        V::andor(V::template srli16<4>(v1), m4, V::and_(V::template srli16<2>(qh), m30));
                    // the G rows' scales of group 2j + h as int32 lanes
                    const I sc = V::i8_to_32(x.scales[2 * j + h]);
                    LCTX_UNROLL
                    for (int c = 0; c < C; ++c) {
                        const int8_t *aq = act_q8_K(a, lda, c, b).qs + 32 * j + 16 * h;
                        I d16;
                        if constexpr (V::kVnni) {
                            d16 = V::dpbusd(V::dpbusd(V::zero(), lo0, V::bcast_u32(aq)), hi0,
                                            V::bcast_u32(aq + 4));
                            d16 = V::dpbusd(V::dpbusd(d16, lo1, V::bcast_u32(aq + 8)), hi1,
                                            V::bcast_u32(aq + 12));
                        } else {
                            const I t0 = V::add16(V::maddubs(lo0, V::bcast_u32(aq)),
                                                  V::maddubs(hi0, V::bcast_u32(aq + 4)));
                            const I t1 = V::add16(V::maddubs(lo1, V::bcast_u32(aq + 8)),
                                                  V::maddubs(hi1, V::bcast_u32(aq + 12)));
                            d16 = V::add32(V::madd(t0, ones), V::madd(t1, ones));
                        }
                        isum[c] = V::add32(isum[c], V::mullo32(d16, sc));
                        keep_sum_in_register<C>(isum[c]);
                    }
                }
            }
            I osum[C];
            zero_all<V, C>(osum);
            LCTX_UNROLL
            for (int kp = 0; kp < 8; ++kp) {
                const I p16 = V::i8_pairs_to_16(x.scales[2 * kp], x.scales[2 * kp + 1]);
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const int16_t *bs = act_q8_K(a, lda, c, b).bsums + 2 * kp;
                    osum[c] = V::add32(osum[c], V::madd(p16, V::set1_32(load_u32(bs))));
                }
            }
            const F d = V::halves(x.d);
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const I s = V::sub32(isum[c], V::template slli32<5>(osum[c]));
                acc[c] = V::fmadd(V::cvt(s), V::mul(d, V::set1_ps(act_q8_K(a, lda, c, b).d)), acc[c]);
            }
        }
        store_all<V, C>(y, ldy, acc);
    }
};

// Bytes ahead of a decoded token's read that the 8-row float tiles prefetch (4 lines per F32 block, 2 per
// F16 / BF16 one, into L1). A group is one stream per thread, which the hardware prefetcher alone ran no
// faster than two plain F32 rows side by side; 8 KiB ahead made a 1 GiB F32 product 14% faster at 2 threads
// and 16% at 1 (avx2 code), and tinyllama tg 5-18% faster in F16 and BF16 at both levels, smollm-135m F16 at
// 1 thread 34% (AMD EPYC, paired runs).
constexpr int64_t kFloatX8PrefetchBytes = 8192;
// The lines of the block kFloatX8PrefetchBytes past x: within the group or the next one's (a prefetch past
// the matrix does not fault).
template <class Block>
inline void prefetch_block_ahead(const Block *x) {
    const char *ahead = reinterpret_cast<const char *>(x) + kFloatX8PrefetchBytes;
    LCTX_UNROLL
    for (size_t l = 0; l < sizeof(Block); l += 64) _mm_prefetch(ahead + l, _MM_HINT_T0);
}

// A decoded token's 8-row groups two at a time, so that two weight streams are read at once: each group of
// the first half of [0, ng) beside one of the second half, an odd group out (the first half's last) alone.
// pair(g0, g1) and single(g) take group indices.
template <class Pair, class Single>
inline void for_group_pairs(int64_t ng, Pair pair, Single single) {
    const int64_t second = (ng + 1) / 2;
    for (int64_t g = 0; g + second < ng; ++g) pair(g, g + second);
    if (ng % 2) single(second - 1);
}

// One activation (a decoded token) against G 8-row groups at once: each row's 8 partial sums take the
// FMAs in block order, then hsum_ps, as FloatX8Tile's wider tiles do: the same bits. y[g]: group g's 8
// outputs. Each group prefetched kFloatX8PrefetchBytes ahead.
template <class L, int G>
inline void float_x8_groups(int64_t nb, const uint8_t *const *w, const uint8_t *a, float *const *y) {
    using Block = block_x8<typename L::T>;
    const Block *xb[G];
    __m256 acc[G][8];
    LCTX_UNROLL
    for (int g = 0; g < G; ++g) {
        xb[g] = reinterpret_cast<const Block *>(w[g]);
        LCTX_UNROLL
        for (int r = 0; r < 8; ++r) acc[g][r] = _mm256_setzero_ps();
    }
    const auto *av = reinterpret_cast<const typename L::A *>(a);
    for (int64_t b = 0; b < nb; ++b) {
        const __m256 yv = L::va(av + 8 * b);
        LCTX_UNROLL
        for (int g = 0; g < G; ++g) {
            prefetch_block_ahead(&xb[g][b]);
            LCTX_UNROLL
            for (int r = 0; r < 8; ++r) acc[g][r] = _mm256_fmadd_ps(L::v(xb[g][b].v[r]), yv, acc[g][r]);
        }
    }
    LCTX_UNROLL
    for (int g = 0; g < G; ++g) {
        LCTX_UNROLL
        for (int r = 0; r < 8; ++r) y[g][r] = hsum_ps(acc[g][r]);
    }
}

// 8 rows of F32 / F16 / BF16 weights x C activations of the same type (block_x8: 8 elements of each row per
// block). Each (row, activation) keeps 8 f32 partial sums reduced once at the end, as the plain float tile
// does, so the values are the plain kernel's. One activation: all 8 rows at once (float_x8_groups; a decoded
// token's call takes float_x8_one, two groups at once); more: 4 rows at a time (4 x 3 accumulators fill the
// 16 registers), the second half of the group then read from L1.
template <class L, int C>
struct FloatX8Tile {
    static void run(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, const int32_t *, float *y,
                    int64_t ldy, [[maybe_unused]] bool first_pass) {
        if constexpr (C == 1) {
            float *ys[1] = {y};
            float_x8_groups<L, 1>(nb, &w, a, ys);
        } else {
            run_halves(nb, w, a, lda, y, ldy);
        }
    }

  private:
    static void run_halves(int64_t nb, const uint8_t *w, const uint8_t *a, size_t lda, float *y,
                           int64_t ldy) {
        using T = typename L::T;
        using Block = block_x8<T>;
        constexpr int R = 4;
        const auto *xb = reinterpret_cast<const Block *>(w);
        for (int h = 0; h < 8; h += R) {
            __m256 acc[R][C];
            LCTX_UNROLL
            for (int r = 0; r < R; ++r) {
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
            }
            for (int64_t b = 0; b < nb; ++b) {
                const Block &x = xb[b];
                __m256 xv[R];
                LCTX_UNROLL
                for (int r = 0; r < R; ++r) xv[r] = L::v(x.v[h + r]);
                LCTX_UNROLL
                for (int c = 0; c < C; ++c) {
                    const __m256 yv = L::va(reinterpret_cast<const typename L::A *>(a + c * lda) + 8 * b);
                    LCTX_UNROLL
                    for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], yv, acc[r][c]);
                }
            }
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                LCTX_UNROLL
                for (int r = 0; r < R; ++r) y[c * ldy + h + r] = hsum_ps(acc[r][c]);
            }
        }
    }
};
template <class V, int C>
using F16x8Tile = FloatX8Tile<LoadF16, C>;
template <class V, int C>
using BF16x8Tile = FloatX8Tile<LoadBF16, C>;
template <class V, int C>
using F32x8Tile = FloatX8Tile<LoadF32, C>;

// The float prompt kernels (gemm_float_x8_staged here, FloatX8Driver512 at avx512) walk 8-row groups a block
// of groups at a time, chunk by chunk over k, and prefetch the next chunk's weights while one computes.

// Chunks of at most max_blocks, evenly sized (576 columns: 2 x 36 blocks, not 64 + 8).
inline int64_t even_chunk(int64_t nb, int64_t max_blocks) {
    const int64_t n_chunks = (nb + max_blocks - 1) / max_blocks;
    return n_chunks ? (nb + n_chunks - 1) / n_chunks : 1;
}

// The chunk walked after the one of the group at r0 and blocks from b0, in a block of groups [rb, block_end):
// the block's next group, else its first group's next chunk, else the next block's first (r0 = block_end,
// which is nr after the last block).
struct ChunkPos {
    int64_t r0, b0;
};
inline ChunkPos next_chunk(int64_t rb, int64_t block_end, int64_t r0, int64_t b0, int64_t chunk, int64_t nb) {
    if (r0 + 8 < block_end) return {r0 + 8, b0};
    if (b0 + chunk < nb) return {rb, b0 + chunk};
    return {block_end, 0};
}

// n_lines prefetches spread over n_tiles calls of step() (a chunk read once is too brief a burst for the
// hardware prefetcher to hide the memory latency).
struct SpreadPrefetch {
    int64_t n_lines, per_step, next = 0;
    SpreadPrefetch(int64_t lines, int64_t n_tiles)
        : n_lines(lines), per_step((lines + n_tiles - 1) / n_tiles) {}
    // line(i): the address of the chunk's line i.
    template <class LineFn>
    void step(LineFn line) {
        for (const int64_t e = next + per_step < n_lines ? next + per_step : n_lines; next < e; ++next)
            _mm_prefetch(line(next), _MM_HINT_T0);
    }
};

// F16 / BF16 weights with many activations, converted once instead of once per (row, activation) pair:
// the call's activations go to f32 first, then each group's weights a chunk of kStageBlocks blocks at a
// time (16 KiB of f32, in L1), and a 4-row x 3-activation tile of f32 FMAs runs over every activation of
// the call. The tile's 12 accumulators live in a buffer between chunks (acc: [nc][8 rows][8 lanes]), so
// each (row, activation) sees the same FMAs in the same order as FloatX8Tile: the same bits. In the inner
// loop 7 loads feed 12 FMAs and nothing converts (the old tile converted 7 operands per 12 FMAs, and the
// AVX2 machines convert at one per cycle while they run two FMAs).
// The groups go kStageGroups at a time, chunk by chunk: the activations' slice of one chunk (128 activations
// x 2 KiB) is read from L2 by every group of the block, where group by group over all chunks the call's
// whole activations (1 MiB and more) came from L3 for every 8 rows (TinyLlama's prompt matrices ran at 75-83%
// of the FMA peak at the avx2 level that way, 93% with activations that fit L2).
constexpr int64_t kStageBlocks = 64;
constexpr int64_t kStageGroups = 4;

// Four rows' 8 lane sums each, added as hsum_ps adds them (l_i + l_i+4, then those at distance 2, then 1),
// the rows side by side: the same bits, [row 0, 1, 2, 3] in one register, for a quarter of the instructions
// (one row at a time, the last loop of gemm_float_x8_staged took 8% of a bge-small pass's F16 products).
inline __m128 reduce_4_rows(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    // t_r = lanes 0-3 + lanes 4-7 of row r, rows 0 | 2 and 1 | 3 in the two halves
    const __m256 t02 =
        _mm256_add_ps(_mm256_permute2f128_ps(a0, a2, 0x20), _mm256_permute2f128_ps(a0, a2, 0x31));
    const __m256 t13 =
        _mm256_add_ps(_mm256_permute2f128_ps(a1, a3, 0x20), _mm256_permute2f128_ps(a1, a3, 0x31));
    // [t0_0 + t0_2, t0_1 + t0_3, t1_0 + t1_2, t1_1 + t1_3 | the same of rows 2 and 3]
    const __m256 w = _mm256_add_ps(_mm256_shuffle_ps(t02, t13, 0x44), _mm256_shuffle_ps(t02, t13, 0xee));
    const __m256 s = _mm256_hadd_ps(w, w);  // rows 0, 1 in lanes 0, 1; rows 2, 3 in lanes 4, 5
    return _mm_castpd_ps(_mm_unpacklo_pd(_mm_castps_pd(_mm256_castps256_ps128(s)),
                                         _mm_castps_pd(_mm256_extractf128_ps(s, 1))));
}

// C activations against a chunk of staged weights; the lane sums go through acc between chunks and, after the
// last one (y non-null: the first activation's output at the group's first row, activations ldy apart), are
// reduced from the registers straight into y.
// The weights: staged (wf: [nb][8 rows][8]) or, kRows, 8 plain f32 rows from wf, ldwf floats apart.
template <int C, bool kRows = false>
inline void float_x8_chunk(const float *wf, int64_t ldwf, const float *af, int64_t lda, int64_t nb,
                           float *acc, bool first, float *y, int64_t ldy) {
    LCTX_UNROLL
    for (int h = 0; h < 8; h += 4) {
        __m256 s[4][C];
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            LCTX_UNROLL
            for (int r = 0; r < 4; ++r)
                s[r][c] = first ? _mm256_setzero_ps() : _mm256_load_ps(acc + (c * 8 + h + r) * 8);
        }
        for (int64_t b = 0; b < nb; ++b) {
            __m256 xv[4];
            LCTX_UNROLL
            for (int r = 0; r < 4; ++r)
                xv[r] = kRows ? _mm256_loadu_ps(wf + (h + r) * ldwf + 8 * b)
                              : _mm256_load_ps(wf + (b * 8 + h + r) * 8);
            LCTX_UNROLL
            for (int c = 0; c < C; ++c) {
                const __m256 yv = _mm256_loadu_ps(af + c * lda + 8 * b);
                LCTX_UNROLL
                for (int r = 0; r < 4; ++r) s[r][c] = _mm256_fmadd_ps(xv[r], yv, s[r][c]);
            }
        }
        if (y) {
            LCTX_UNROLL
            for (int c = 0; c < C; ++c)
                _mm_storeu_ps(y + c * ldy + h, reduce_4_rows(s[0][c], s[1][c], s[2][c], s[3][c]));
            continue;
        }
        LCTX_UNROLL
        for (int c = 0; c < C; ++c) {
            LCTX_UNROLL
            for (int r = 0; r < 4; ++r) _mm256_store_ps(acc + (c * 8 + h + r) * 8, s[r][c]);
        }
    }
}

// kPlain: the weights are plain rows ldw bytes apart (F32 rows that could not be interleaved, F16 values
// turned by attention), read in groups of 8 rows as well; nr must then be a multiple of 8.
template <class L, bool kPlain = false>
void gemm_float_x8_staged(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                          int64_t nc, float *y, int64_t ldy) {
    using T = typename L::T;
    using A = typename L::A;
    using Block = block_x8<T>;
    const int64_t nb = n / 8;
    // Scratch (64-byte aligned): the activations as f32 [nc][n], one chunk of a group's weights
    // [kStageBlocks][8 rows][8], the accumulators of a block of groups [kStageGroups][nc][8][8].
    // F32 activations are read where they are (lda a whole number of floats), the others converted first.
    constexpr bool kF32Act = std::is_same_v<A, float>;
    const size_t a_bytes = kF32Act ? 0 : static_cast<size_t>(nc * n) * 4, w_bytes = kStageBlocks * 64 * 4;
    const size_t acc_group = static_cast<size_t>(nc) * 64;  // floats
    float *scratch =
        reinterpret_cast<float *>(kernel_tile_scratch(a_bytes + w_bytes + kStageGroups * acc_group * 4));
    float *wf = scratch + a_bytes / 4;
    float *acc = wf + kStageBlocks * 64;
    const auto *ab = static_cast<const uint8_t *>(act);
    const float *af = kF32Act ? reinterpret_cast<const float *>(act) : scratch;
    const int64_t ldf = kF32Act ? static_cast<int64_t>(lda / 4) : n;
    if constexpr (!kF32Act) {
        for (int64_t c = 0; c < nc; ++c) {
            const A *a = reinterpret_cast<const A *>(ab + c * lda);
            for (int64_t b = 0; b < nb; ++b) _mm256_store_ps(scratch + c * n + 8 * b, L::va(a + 8 * b));
        }
    }
    const int64_t chunk = even_chunk(nb, kStageBlocks);
    // Plain f32 rows whose 8-row group lies within 64 KiB (short rows: an encoder's turned V, 512 cells
    // apart) are read where they are: they stay in L1 from the first tile on, and copying each group took 12%
    // of bge-small's attention. Longer rows (a KV cache's V at depth, often a multiple of 4 KiB apart: the
    // same cache sets) are staged.
    constexpr bool kF32Rows = kPlain && std::is_same_v<T, float>;
    const bool direct = kF32Rows && ldw % sizeof(float) == 0 && 8 * ldw <= 64 * 1024;
    const int64_t ldwf = static_cast<int64_t>(ldw / sizeof(float));
    // The cache lines of a chunk of kb blocks (chunk_lines), and line i of the chunk at (r0, b0):
    // interleaved, one stretch of kb blocks of 8 rows x 8 elements; plain, 8 stretches (one a row) of kb x 8
    // elements.
    const auto row_lines = [](int64_t kb) { return (kb * 8 * static_cast<int64_t>(sizeof(T)) + 63) / 64; };
    const auto chunk_lines = [&](int64_t kb) {
        return kPlain ? 8 * row_lines(kb) : (kb * static_cast<int64_t>(sizeof(Block)) + 63) / 64;
    };
    const auto chunk_line = [&](int64_t r0, int64_t b0, int64_t i) -> const char * {
        const char *base = static_cast<const char *>(w) + r0 * ldw;
        if constexpr (kPlain) {
            // the rows in turn, line by line (a shift and a mask: a division per line by the lines of a row
            // took a fifth of a turned V's product at the avx2 level)
            return base + (i & 7) * ldw + b0 * sizeof(T) * 8 + (i >> 3) * 64;
        } else {
            return base + b0 * sizeof(Block) + i * 64;
        }
    };
    const int64_t n_tiles = (nc + 2) / 3;  // of up to 3 activations
    for (int64_t rb = 0; rb < nr; rb += 8 * kStageGroups) {
        const int64_t n_groups = (nr - rb) / 8 < kStageGroups ? (nr - rb) / 8 : kStageGroups;
        const int64_t block_end = rb + 8 * n_groups;
        for (int64_t b0 = 0; b0 < nb; b0 += chunk) {
            const int64_t kb = nb - b0 < chunk ? nb - b0 : chunk;
            const bool first = b0 == 0;
            for (int64_t g = 0; g < n_groups; ++g) {
                const int64_t r0 = rb + 8 * g;
                // The next chunk's weights come from memory while this one computes, a few lines per tile:
                // staging reads them once, too briefly for the hardware prefetcher to hide the latency (large
                // matrices ran at 85% of the speed of ones that fit the cache).
                const ChunkPos p = next_chunk(rb, block_end, r0, b0, chunk, nb);
                const int64_t pkb = nb - p.b0 < chunk ? nb - p.b0 : chunk;
                SpreadPrefetch pf(p.r0 < nr ? chunk_lines(pkb) : 0, n_tiles);
                const auto prefetch_some = [&] {
                    pf.step([&](int64_t i) { return chunk_line(p.r0, p.b0, i); });
                };
                const float *wg = wf;  // the group's chunk as the tiles read it
                if (direct) {
                    wg = reinterpret_cast<const float *>(static_cast<const uint8_t *>(w) + r0 * ldw) + 8 * b0;
                } else if constexpr (kPlain) {
                    // Row by row: each row's chunk is one contiguous stretch of memory.
                    for (int r = 0; r < 8; ++r) {
                        const T *row =
                            reinterpret_cast<const T *>(static_cast<const uint8_t *>(w) + (r0 + r) * ldw);
                        for (int64_t b = 0; b < kb; ++b)
                            _mm256_store_ps(wf + (b * 8 + r) * 8, L::v(row + 8 * (b0 + b)));
                    }
                } else {
                    const auto *xb =
                        reinterpret_cast<const Block *>(static_cast<const uint8_t *>(w) + r0 * ldw);
                    for (int64_t b = 0; b < kb; ++b) {
                        LCTX_UNROLL
                        for (int r = 0; r < 8; ++r)
                            _mm256_store_ps(wf + (b * 8 + r) * 8, L::v(xb[b0 + b].v[r]));
                    }
                }
                float *ga = acc + g * acc_group;
                float *yg = b0 + kb == nb ? y + r0 : nullptr;  // the last chunk reduces into y
                const auto tile = [&](auto cc, int64_t c0) {
                    prefetch_some();
                    constexpr int kC = decltype(cc)::value;
                    float *yc = yg ? yg + c0 * ldy : nullptr;
                    if (direct)
                        float_x8_chunk<kC, true>(wg, ldwf, af + c0 * ldf + 8 * b0, ldf, kb, ga + c0 * 64,
                                                 first, yc, ldy);
                    else
                        float_x8_chunk<kC>(wg, 0, af + c0 * ldf + 8 * b0, ldf, kb, ga + c0 * 64, first, yc,
                                           ldy);
                };
                // Tiles of 3 activations or of even sizes below (16 as 4 x 3 + 2 x 2: a last 1-activation
                // tile's 4 chains would leave the FMA ports half idle, as in a 16-row attention item's
                // product with V).
                for (int64_t t = 0, c0 = 0; t < n_tiles; ++t) {
                    const int cc = even_part(nc, n_tiles, t);
                    if (cc == 3) tile(std::integral_constant<int, 3>{}, c0);
                    if (cc == 2) tile(std::integral_constant<int, 2>{}, c0);
                    if (cc == 1) tile(std::integral_constant<int, 1>{}, c0);
                    c0 += cc;
                }
            }
        }
    }
}

// (the last argument: whether this is the first pass over the group, the one that reads it from memory)
using InterleavedTileFn = void (*)(int64_t, const uint8_t *, const uint8_t *, size_t, const int32_t *,
                                   float *, int64_t, bool);
constexpr int kTileMaxC = 8;

// The tiles of 1 .. kMaxC activations: fn[c - 1] takes c.
template <template <class, int> class Tile, class V, int kMaxC>
struct TileTableC {
    template <size_t... I>
    static constexpr std::array<InterleavedTileFn, kMaxC> make(std::index_sequence<I...>) {
        return {&Tile<V, static_cast<int>(I) + 1>::run...};
    }
    static constexpr std::array<InterleavedTileFn, kMaxC> fn = make(std::make_index_sequence<kMaxC>{});
};

enum class ActSums { None, Q8_0Blocks8, Q8_0Blocks16, Q8_0Blocks128, Q8_KPairs };

// Groups of G rows x up to kMaxC activations; the activations of a call (at most one token chunk) stay in
// L2 while each group's blocks are reused from L1.
template <template <class, int> class Tile, class V, ActSums kSums, int kBlock, int kMaxC>
void gemm_interleaved_tiled(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                            int64_t nc, float *y, int64_t ldy) {
    static_assert(kMaxC >= 1 && kMaxC <= kTileMaxC);
    constexpr int G = V::kLanes;
    const int64_t nb = n / kBlock;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    // The buffer comes from a baseline translation unit: no std::vector code may be instantiated here (an
    // inline library function compiled with this file's ISA flags could be the copy the linker keeps).
    const int64_t per_act = kSums == ActSums::None ? 0 : kSums == ActSums::Q8_KPairs ? nb * 4 : nb;
    int32_t *sums = per_act ? kernel_sums_scratch(static_cast<size_t>(nc * per_act)) : nullptr;
    if constexpr (kSums == ActSums::Q8_0Blocks8) q8_0_block_sums<8>(ab, lda, nc, nb, sums);
    if constexpr (kSums == ActSums::Q8_0Blocks16) q8_0_block_sums<16>(ab, lda, nc, nb, sums);
    if constexpr (kSums == ActSums::Q8_0Blocks128) q8_0_block_sums<128>(ab, lda, nc, nb, sums);
    if constexpr (kSums == ActSums::Q8_KPairs) q8_K_subblock_pairs(ab, lda, nc, nb, sums);
    for (int64_t r0 = 0; r0 < nr; r0 += G) {
        for (int64_t c0 = 0; c0 < nc; c0 += kMaxC) {
            const int cc = static_cast<int>(nc - c0 < kMaxC ? nc - c0 : kMaxC);
            TileTableC<Tile, V, kMaxC>::fn[cc - 1](nb, wb + r0 * ldw, ab + c0 * lda, lda,
                                                   sums ? sums + c0 * per_act : nullptr, y + c0 * ldy + r0,
                                                   ldy, c0 == 0);
        }
    }
}

// Single-token work and few-activation tails keep the converting tile; from kStageMinAct activations on the
// staged one wins. LCTX_F16_GEMM=tile forces the old tile everywhere (for A/B measurements).
constexpr int64_t kStageMinAct = 4;
inline bool float_stage_off() {
    static const bool off = [] {
        const char *e = std::getenv("LCTX_F16_GEMM");
        return e && std::strcmp(e, "tile") == 0;
    }();
    return off;
}

// A decoded token: each group of the first half of the rows beside one of the second half, so that two
// streams are read at once (an odd group out alone), as FloatX8Driver512::run_one does at the avx512 level.
// Group by group (FloatX8Tile<L, 1>), one stream, a 128 MiB F16 matrix read at 20-26 GB/s on one core of an
// AMD EPYC (Zen 5), two streams at 31-33; BF16 and F32 gained as much (`matmul_bench
// --benchmark_filter='GemmX8/(f16|bf16|f32)/32768/2048/1$'` at LCTX_ISA=avx2); four streams gained nothing
// more. Two groups' 16 accumulators take all 16 ymm registers, so a few go through L1 between blocks: the
// loop waits on memory, not on those loads and stores.
template <class L>
void float_x8_one(int64_t nb, const uint8_t *w, size_t ldw, int64_t nr, const uint8_t *a, float *y) {
    for_group_pairs(
        nr / 8,
        [&](int64_t g0, int64_t g1) {
            const uint8_t *ws[2] = {w + 8 * g0 * ldw, w + 8 * g1 * ldw};
            float *ys[2] = {y + 8 * g0, y + 8 * g1};
            float_x8_groups<L, 2>(nb, ws, a, ys);
        },
        [&](int64_t g) {
            const uint8_t *ws[1] = {w + 8 * g * ldw};
            float *ys[1] = {y + 8 * g};
            float_x8_groups<L, 1>(nb, ws, a, ys);
        });
}

template <class L, template <class, int> class Tile>
void gemm_float_x8(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                   float *y, int64_t ldy) {
    if (nc == 1)
        return float_x8_one<L>(n / 8, static_cast<const uint8_t *>(w), ldw, nr,
                               static_cast<const uint8_t *>(act), y);
    if (nc >= kStageMinAct && !float_stage_off())
        gemm_float_x8_staged<L>(n, w, ldw, nr, act, lda, nc, y, ldy);
    else
        gemm_interleaved_tiled<Tile, V256, ActSums::None, 8, 3>(n, w, ldw, nr, act, lda, nc, y, ldy);
}

// Activations per tile of the 32-element integer types (Q4_0, Q5_0, Q8_0): 4 in the 16 ymm registers; 8 in
// the 32 zmm ones, so that a batched decode of 8 sequences (one token each) reads each weight block once,
// into 8 independent accumulator chains (the 4-wide tile read each group twice, and its 4 chains of
// vpdpbusd did not fill the pipes: 207 -> 245 G multiply-adds/s on cache-resident Q8_0 weights by 8
// activations, AMD EPYC Zen 5, one thread).
template <class V>
constexpr int tile_acts_32() {
    return V::kLanes == 16 ? 8 : 4;
}
// The same for the K types, whose tiles keep more registers per activation: 3; Q6_K 4 in zmm (a batched
// decode's 8 activations in two passes instead of three: 135 -> 163 G multiply-adds/s cache-resident, the
// same AMD EPYC). Q4_K stays at 3 (its 4-wide tile ran 9% slower per multiply-add on cache-resident weights).
template <class V>
constexpr int tile_acts_q6_k() {
    return V::kLanes == 16 ? 4 : 3;
}

// The integer types over groups of V::kLanes rows (the float types have their own 8-row kernels).
template <class V>
inline GemmFn shared_gemm_interleaved_int(GgmlType t) {
    constexpr ActSums kQ8Sums = V::kVnni ? ActSums::Q8_0Blocks128 : ActSums::None;
    constexpr int kC32 = tile_acts_32<V>();
    switch (t) {
        case GgmlType::Q4_0:
            return &gemm_interleaved_tiled<Q4_0Tile, V, ActSums::Q8_0Blocks8, 32, kC32>;
        case GgmlType::Q8_0:
            return &gemm_interleaved_tiled<Q8_0Tile, V, kQ8Sums, 32, kC32>;
        case GgmlType::Q5_0:
            return &gemm_interleaved_tiled<Q5_0Tile, V, ActSums::Q8_0Blocks16, 32, kC32>;
        case GgmlType::Q4_K:
            return &gemm_interleaved_tiled<Q4_KTile, V, ActSums::Q8_KPairs, 256, 3>;
        case GgmlType::Q6_K:
            return &gemm_interleaved_tiled<Q6_KTile, V, ActSums::None, 256, tile_acts_q6_k<V>()>;
        default:
            return nullptr;
    }
}

// The activations one pass over a weight group serves (the widest tile) of each integer type; 0 for others.
template <class V>
inline int shared_interleaved_tile_acts(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
            return tile_acts_32<V>();
        case GgmlType::Q4_K:
            return 3;
        case GgmlType::Q6_K:
            return tile_acts_q6_k<V>();
        default:
            return 0;
    }
}

// Every type with a layout over 8-row groups and 256-bit registers.
inline GemmFn shared_gemm_interleaved_256(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &gemm_float_x8<LoadF32, F32x8Tile>;
        case GgmlType::F16:
            return &gemm_float_x8<LoadF16, F16x8Tile>;
        case GgmlType::BF16:
            return &gemm_float_x8<LoadBF16, BF16x8Tile>;
        default:
            return shared_gemm_interleaved_int<V256>(t);
    }
}

}  // namespace
}  // namespace lctx::kernels
