// ARM64 NEON level (armv8.0 Advanced SIMD, every AArch64 core): the 8-bit dot products by widening multiplies
// (dot_arm_inl.h, the K types' in dot_kquants_arm_inl.h, the prompt tiles of the 32-element block types in
// gemm_blocks_arm_inl.h and of the K types in gemm_kquants_arm_inl.h), the float dot products in four 4-lane
// chains with their plain-row and interleaved prompt tiles (the dotprod and i8mm levels share them), and the
// Q8_0 and Q8_K activation quantizers. Compiled on ARM64 only (CMakeLists.txt: *_neon.cpp).
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "kernels/dot.h"
#include "kernels/dot_arm_inl.h"
#include "kernels/dot_kquants_arm_inl.h"
#include "kernels/gemm_blocks_arm_inl.h"
#include "kernels/gemm_kquants_arm_inl.h"
#include "kernels/interleave.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"

namespace lctx::kernels {
namespace {

// 4 f32 of a row of F32 or F16 values.
struct LoadF32 {
    using T = float;
    static float32x4_t load(const float *p) { return vld1q_f32(p); }
    static float one(const float *p) { return *p; }
};
struct LoadF16 {
    using T = uint16_t;
    static float32x4_t load(const uint16_t *p) { return arm::f16x4_to_f32(p); }
    static float one(const uint16_t *p) { return fp16_to_fp32(*p); }
};

struct LoadBF16 {
    using T = uint16_t;
    // bf16 is the high half of an f32: widened by a shift of 16
    static float32x4_t load(const uint16_t *p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
    static float one(const uint16_t *p) { return bf16_to_fp32(*p); }
};

// sum of x[i] * y[i]: 16 at a time in four chains, then 4, then one at a time; the chains added at the end.
template <class LX, class LY>
float dot_float(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const typename LX::T *>(vx);
    const auto *y = static_cast<const typename LY::T *>(vy);
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, LX::load(x + i), LY::load(y + i));
        s1 = vfmaq_f32(s1, LX::load(x + i + 4), LY::load(y + i + 4));
        s2 = vfmaq_f32(s2, LX::load(x + i + 8), LY::load(y + i + 8));
        s3 = vfmaq_f32(s3, LX::load(x + i + 12), LY::load(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, LX::load(x + i), LY::load(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; ++i) sum += LX::one(x + i) * LY::one(y + i);
    return sum;
}

// Plain float rows against up to kFloatTileActs activations at once: each output takes dot_float's steps
// (four 4-lane chains over 16 elements, then 4, the chains added, the last elements one at a time), so the
// gemm gives vec_dot's bits, with each 16 of the row loaded (F16 / BF16: converted) once for all of them.
constexpr int kFloatTileActs = 4;

template <class LX, class LY, int kActs>
void dot_float_tile(int64_t n, const typename LX::T *x, const uint8_t *ab, size_t lda, float *y,
                    int64_t ldy) {
    const typename LY::T *a[kActs];
    float32x4_t s[kActs][4];
    for (int k = 0; k < kActs; ++k) {
        a[k] = reinterpret_cast<const typename LY::T *>(ab + k * lda);
        s[k][0] = s[k][1] = s[k][2] = s[k][3] = vdupq_n_f32(0.0f);
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __builtin_prefetch(reinterpret_cast<const uint8_t *>(x + i) + arm::kPrefetchAhead);
        const float32x4_t w0 = LX::load(x + i), w1 = LX::load(x + i + 4), w2 = LX::load(x + i + 8),
                          w3 = LX::load(x + i + 12);
        for (int k = 0; k < kActs; ++k) {
            s[k][0] = vfmaq_f32(s[k][0], w0, LY::load(a[k] + i));
            s[k][1] = vfmaq_f32(s[k][1], w1, LY::load(a[k] + i + 4));
            s[k][2] = vfmaq_f32(s[k][2], w2, LY::load(a[k] + i + 8));
            s[k][3] = vfmaq_f32(s[k][3], w3, LY::load(a[k] + i + 12));
        }
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t w = LX::load(x + i);
        for (int k = 0; k < kActs; ++k) s[k][0] = vfmaq_f32(s[k][0], w, LY::load(a[k] + i));
    }
    for (int k = 0; k < kActs; ++k) {
        float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s[k][0], s[k][1]), vaddq_f32(s[k][2], s[k][3])));
        for (int64_t j = i; j < n; ++j) sum += LX::one(x + j) * LY::one(a[k] + j);
        y[k * ldy] = sum;
    }
}

template <class LX, class LY>
void gemm_float(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
                float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t r = 0; r < nr; ++r) {
        const auto *x = reinterpret_cast<const typename LX::T *>(wb + r * ldw);
        int64_t c = 0;
        for (; c + kFloatTileActs <= nc; c += kFloatTileActs)
            dot_float_tile<LX, LY, kFloatTileActs>(n, x, ab + c * lda, lda, y + c * ldy + r, ldy);
        switch (nc - c) {
            case 3:
                dot_float_tile<LX, LY, 3>(n, x, ab + c * lda, lda, y + c * ldy + r, ldy);
                break;
            case 2:
                dot_float_tile<LX, LY, 2>(n, x, ab + c * lda, lda, y + c * ldy + r, ldy);
                break;
            case 1:
                dot_float_tile<LX, LY, 1>(n, x, ab + c * lda, lda, y + c * ldy + r, ldy);
                break;
            default:
                break;
        }
    }
}

// Interleaved F32 / F16 / BF16 (block_x8: 8 elements of each of 8 rows a block) against activations of the
// same type. Rows 0-3 and then 4-7 of a group, each against up to kFloatTileActs activations: one 4-lane
// chain per output over the blocks (row r's elements 8b .. 8b + 3, then 8b + 4 .. 8b + 7, against the
// activation's), its lanes added pairwise at the end (vpaddq: (l0 + l1) + (l2 + l3)), so an output's value
// does not depend on the tile. Each row's 8 elements are loaded (F16 / BF16: widened to f32, as the plain
// kernels do) once for all the tile's activations.
template <class L, int kActs>
void float_x8_tile(int64_t nb, const block_x8<typename L::T> *wg, const uint8_t *ab, size_t lda, float *y,
                   int64_t ldy) {
    const typename L::T *a[kActs];
    for (int k = 0; k < kActs; ++k) a[k] = reinterpret_cast<const typename L::T *>(ab + k * lda);
    for (int half = 0; half < 2; ++half) {
        float32x4_t acc[kActs][4];
        for (int k = 0; k < kActs; ++k) acc[k][0] = acc[k][1] = acc[k][2] = acc[k][3] = vdupq_n_f32(0.0f);
        for (int64_t b = 0; b < nb; ++b) {
            __builtin_prefetch(reinterpret_cast<const uint8_t *>(wg + b) + arm::kPrefetchAhead);
            float32x4_t al[kActs], ah[kActs];
            for (int k = 0; k < kActs; ++k) {
                al[k] = L::load(a[k] + 8 * b);
                ah[k] = L::load(a[k] + 8 * b + 4);
            }
            for (int r = 0; r < 4; ++r) {
                const typename L::T *p = wg[b].v[4 * half + r];
                const float32x4_t wl = L::load(p), wh = L::load(p + 4);
                for (int k = 0; k < kActs; ++k) {
                    acc[k][r] = vfmaq_f32(acc[k][r], wl, al[k]);
                    acc[k][r] = vfmaq_f32(acc[k][r], wh, ah[k]);
                }
            }
        }
        for (int k = 0; k < kActs; ++k)
            vst1q_f32(y + k * ldy + 4 * half,
                      vpaddq_f32(vpaddq_f32(acc[k][0], acc[k][1]), vpaddq_f32(acc[k][2], acc[k][3])));
    }
}

template <class L>
void gemm_interleaved_float_x8(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                               size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    using Block = block_x8<typename L::T>;
    const int64_t nb = n / 8;
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t g = 0; g < n_rows / 8; ++g) {
        const auto *wg = reinterpret_cast<const Block *>(static_cast<const uint8_t *>(w) + g * 8 * w_stride);
        float *yg = y + 8 * g;
        int64_t c = 0;
        for (; c + kFloatTileActs <= n_act; c += kFloatTileActs)
            float_x8_tile<L, kFloatTileActs>(nb, wg, ab + c * act_stride, act_stride, yg + c * ldy, ldy);
        switch (n_act - c) {
            case 3:
                float_x8_tile<L, 3>(nb, wg, ab + c * act_stride, act_stride, yg + c * ldy, ldy);
                break;
            case 2:
                float_x8_tile<L, 2>(nb, wg, ab + c * act_stride, act_stride, yg + c * ldy, ldy);
                break;
            case 1:
                float_x8_tile<L, 1>(nb, wg, ab + c * act_stride, act_stride, yg + c * ldy, ldy);
                break;
            default:
                break;
        }
    }
}

// Q8_0 activations: the reference's bytes (quantize_row_q8_0_ref): d = max |x| / 127, q = round(x / d) with
// ties away from zero (FCVTAS rounds as std::round does), x * (1 / d) as the reference computes it.
void quantize_q8_0(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<block_q8_0 *>(vy);
    for (int64_t i = 0; i < n / kQK8_0; ++i, x += kQK8_0) {
        float32x4_t v[8];
        float32x4_t amax = vdupq_n_f32(0.0f);
        for (int k = 0; k < 8; ++k) {
            v[k] = vld1q_f32(x + 4 * k);
            amax = vmaxq_f32(amax, vabsq_f32(v[k]));
        }
        const float d = vmaxvq_f32(amax) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int16x8_t h[4];
        for (int k = 0; k < 4; ++k) {
            const int32x4_t q0 = vcvtaq_s32_f32(vmulq_n_f32(v[2 * k], id));
            const int32x4_t q1 = vcvtaq_s32_f32(vmulq_n_f32(v[2 * k + 1], id));
            h[k] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
        }
        vst1q_s8(y[i].qs, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
        vst1q_s8(y[i].qs + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
        y[i].d = fp32_to_fp16(d);
    }
}

// Q8_K activations: the reference's bytes (quantize_row_q8_K_ref). The element of largest magnitude (the
// first of equals, with its sign) gives iscale = -127 / max; q = min(nearest_int(iscale * x), 127); d =
// 1 / iscale; bsums the sums of each 16 q. MAXNM skips NaNs as the reference's comparison does. nearest_int
// adds 1.5 * 2^23 and keeps the low mantissa bits; on ARM64 the compiler fuses the reference's product and
// that addition into one FMA (-ffp-contract=fast), rounding the exact product, so the same FMA here: a
// product rounded first (FMUL, FCVTNS) differs where it rounds onto a tie (about one row of 256 in 1000).
inline int32x4_t q8_K_codes(const float *x, float iscale) {
    const float32x4_t biased = vfmaq_n_f32(vdupq_n_f32(12582912.0f), vld1q_f32(x), iscale);
    const int32x4_t bits = vandq_s32(vreinterpretq_s32_f32(biased), vdupq_n_s32(0x007fffff));
    return vminq_s32(vsubq_s32(bits, vdupq_n_s32(0x00400000)), vdupq_n_s32(127));
}

void quantize_q8_K(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<block_q8_K *>(vy);
    for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
        float32x4_t m = vdupq_n_f32(0.0f);
        for (int k = 0; k < kQK_K; k += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + k)));
        const float amax = vmaxnmvq_f32(m);
        block_q8_K b;
        std::memset(&b, 0, sizeof(b));
        if (amax != 0.0f) {
            int j = 0;
            while (std::fabs(x[j]) != amax) ++j;
            const float iscale = -127.0f / x[j];
            for (int k = 0; k < kQK_K; k += 16) {
                int16x8_t h[2];
                for (int u = 0; u < 2; ++u)
                    h[u] = vcombine_s16(vmovn_s32(q8_K_codes(x + k + 8 * u, iscale)),
                                        vmovn_s32(q8_K_codes(x + k + 8 * u + 4, iscale)));
                vst1q_s8(b.qs + k, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
                b.bsums[k / 16] =
                    static_cast<int16_t>(vaddvq_s32(vaddq_s32(vpaddlq_s16(h[0]), vpaddlq_s16(h[1]))));
            }
            b.d = 1.0f / iscale;
        }
        std::memcpy(y + i, &b, sizeof(b));
    }
}

}  // namespace

namespace detail {

VecDotFn vec_dot_neon(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &dot_float<LoadF32, LoadF32>;
        case GgmlType::F16:
            return &dot_float<LoadF16, LoadF16>;
        case GgmlType::BF16:
            return &dot_float<LoadBF16, LoadBF16>;
        case GgmlType::Q8_0:
            return &arm::vec_dot_q8_0<false>;
        case GgmlType::Q4_0:
            return &arm::vec_dot_q4_0<false>;
        case GgmlType::Q4_1:
            return &arm::vec_dot_q4_1<false>;
        case GgmlType::Q5_0:
            return &arm::vec_dot_q5_0<false>;
        case GgmlType::Q5_1:
            return &arm::vec_dot_q5_1<false>;
        case GgmlType::IQ4_NL:
            return &arm::vec_dot_iq4_nl<false>;
        case GgmlType::Q2_K:
            return &arm::vec_dot_q2_K<false>;
        case GgmlType::Q3_K:
            return &arm::vec_dot_q3_K<false>;
        case GgmlType::Q4_K:
            return &arm::vec_dot_q4_K<false>;
        case GgmlType::Q5_K:
            return &arm::vec_dot_q5_K<false>;
        case GgmlType::Q6_K:
            return &arm::vec_dot_q6_K<false>;
        case GgmlType::IQ4_XS:
            return &arm::vec_dot_iq4_xs<false>;
        default:
            return nullptr;
    }
}

QuantizeActFn quantize_act_neon(GgmlType act_type) {
    switch (act_type) {
        case GgmlType::Q8_0:
            return &quantize_q8_0;
        case GgmlType::Q8_K:
            return &quantize_q8_K;
        default:
            return nullptr;
    }
}

GemmFn gemm_neon(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &gemm_float<LoadF32, LoadF32>;
        case GgmlType::F16:
            return &gemm_float<LoadF16, LoadF16>;
        case GgmlType::BF16:
            return &gemm_float<LoadBF16, LoadBF16>;
        case GgmlType::Q8_0:
            return &arm::gemm_block_tiles<false, arm::Q8_0Tile>;
        case GgmlType::Q4_0:
            return &arm::gemm_block_tiles<false, arm::Q4_0Tile>;
        case GgmlType::Q4_1:
            return &arm::gemm_block_tiles<false, arm::Q4_1Tile>;
        case GgmlType::Q5_0:
            return &arm::gemm_block_tiles<false, arm::Q5_0Tile>;
        case GgmlType::Q5_1:
            return &arm::gemm_block_tiles<false, arm::Q5_1Tile>;
        case GgmlType::IQ4_NL:
            return &arm::gemm_block_tiles<false, arm::IQ4NLTile>;
        case GgmlType::Q2_K:
            return &arm::gemm_k_tiles<false, arm::Q2KTile>;
        case GgmlType::Q3_K:
            return &arm::gemm_k_tiles<false, arm::Q3KTile>;
        case GgmlType::Q4_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q4_K<false>>;
        case GgmlType::Q5_K:
            return &arm::gemm_k_tiles<false, arm::Q5KTile>;
        case GgmlType::Q6_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q6_K<false>>;
        case GgmlType::IQ4_XS:
            return &arm::gemm_k_tiles<false, arm::IQ4XSTile>;
        default:
            return nullptr;
    }
}

GemmFn gemm_interleaved_neon(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return &gemm_interleaved_float_x8<LoadF32>;
        case GgmlType::F16:
            return &gemm_interleaved_float_x8<LoadF16>;
        case GgmlType::BF16:
            return &gemm_interleaved_float_x8<LoadBF16>;
        case GgmlType::Q8_0:
            return &arm::gemm_interleaved_x8<false, block_q8_0xG<8>, false>;
        case GgmlType::Q4_0:
            return &arm::gemm_interleaved_x8<false, block_q4_0xG<8>, true>;
        case GgmlType::Q5_0:
            return &arm::gemm_interleaved_x8<false, block_q5_0xG<8>, true>;
        case GgmlType::Q4_K:
            return &arm::gemm_interleaved_q4_K_x8<false>;
        case GgmlType::Q6_K:
            return &arm::gemm_interleaved_q6_K_x8<false>;
        default:
            return nullptr;
    }
}

// F16 rows against F32 activations: the F32 gemm's arithmetic (dot_float's steps) on the rows converted as
// loaded, each 16 converted once for a tile's activations.
GemmFn gemm_f16_by_f32_neon() {
    return &gemm_float<LoadF16, LoadF32>;
}

}  // namespace detail
}  // namespace lctx::kernels
