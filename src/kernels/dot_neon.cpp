// ARM64 NEON level (armv8.0 Advanced SIMD, every AArch64 core): the 8-bit dot products by widening multiplies
// (dot_arm_inl.h, the K types' in dot_kquants_arm_inl.h), the float dot products in four 4-lane chains, and
// the Q8_0 and Q8_K activation quantizers. Compiled on ARM64 only (CMakeLists.txt: *_neon.cpp).
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "kernels/dot.h"
#include "kernels/dot_arm_inl.h"
#include "kernels/dot_kquants_arm_inl.h"
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
            return &arm::gemm_by_dots<&dot_float<LoadF32, LoadF32>>;
        case GgmlType::F16:
            return &arm::gemm_by_dots<&dot_float<LoadF16, LoadF16>>;
        case GgmlType::BF16:
            return &arm::gemm_by_dots<&dot_float<LoadBF16, LoadBF16>>;
        case GgmlType::Q8_0:
            return &arm::gemm_by_dots<&arm::vec_dot_q8_0<false>>;
        case GgmlType::Q4_0:
            return &arm::gemm_by_dots<&arm::vec_dot_q4_0<false>>;
        case GgmlType::Q4_1:
            return &arm::gemm_by_dots<&arm::vec_dot_q4_1<false>>;
        case GgmlType::Q5_0:
            return &arm::gemm_by_dots<&arm::vec_dot_q5_0<false>>;
        case GgmlType::Q5_1:
            return &arm::gemm_by_dots<&arm::vec_dot_q5_1<false>>;
        case GgmlType::IQ4_NL:
            return &arm::gemm_by_dots<&arm::vec_dot_iq4_nl<false>>;
        case GgmlType::Q2_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q2_K<false>>;
        case GgmlType::Q3_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q3_K<false>>;
        case GgmlType::Q4_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q4_K<false>>;
        case GgmlType::Q5_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q5_K<false>>;
        case GgmlType::Q6_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q6_K<false>>;
        case GgmlType::IQ4_XS:
            return &arm::gemm_by_dots<&arm::vec_dot_iq4_xs<false>>;
        default:
            return nullptr;
    }
}

GemmFn gemm_interleaved_neon(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
            return &arm::gemm_interleaved_x8<false, block_q8_0xG<8>, false>;
        case GgmlType::Q4_0:
            return &arm::gemm_interleaved_x8<false, block_q4_0xG<8>, true>;
        case GgmlType::Q4_K:
            return &arm::gemm_interleaved_q4_K_x8<false>;
        case GgmlType::Q6_K:
            return &arm::gemm_interleaved_q6_K_x8<false>;
        default:
            return nullptr;
    }
}

// F16 rows against F32 activations: the F32 gemm's arithmetic (dot_float) on the rows converted as loaded.
GemmFn gemm_f16_by_f32_neon() {
    return &arm::gemm_by_dots<&dot_float<LoadF16, LoadF32>>;
}

}  // namespace detail
}  // namespace lctx::kernels
