// Scalar reference quantization f32 -> K-quant types, Q8_K and IQ4_XS.
//
// These follow ggml's reference (no importance matrix) quantizers step for step, including the order of
// float operations, so that quantizing the same floats gives the same bytes as llama-quantize without an
// imatrix. The algorithms (published with ggml's k-quants):
//   * Q2_K, Q4_K, Q5_K: per sub-block, an affine fit x ~ scale*q - min found by a grid search over
//     candidate inverse scales followed by a weighted least-squares refit (fit_scale_min below); the
//     sub-block scales and mins are then quantized against the super-block maxima (4 bits for Q2_K,
//     6 bits for Q4_K/Q5_K) and the quants recomputed with the quantized scales.
//   * Q3_K, Q6_K: per sub-block, a symmetric fit (fit_symmetric_q3 / fit_symmetric) whose signed scales
//     are quantized against the largest-magnitude one (6 bits for Q3_K, 8 bits for Q6_K).
//   * IQ4_XS: per 32-element sub-block a scale search over the non-linear IQ4_NL levels, then 6-bit
//     sub-block scales relative to the super-block scale.
//   * Q8_K: d = max / -127 on the largest-|x| element (sign kept), q = round(x / d), bsums per 16.
#include <cmath>
#include <cstring>

#include "tensor/quants_k.h"
#include "tensor/quants_k_internal.h"

namespace lctx {

using kquant::nearest_int;
using kquant::store_block;
using kquant::super_blocks;

namespace {

// Below this, a group's largest magnitude counts as zero (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

// Affine fit of n values to x ~ scale * L - min with L in 0..nmax (ggml's make_qkx2_quants).
// Starts from the min/max grid, then tries nstep+1 inverse scales (nmax + rmin + rdelta*is) / (max - min),
// each followed by a weighted least-squares solve for (scale, min); keeps the one with the lowest
// weighted error (squared, or absolute with use_mad). The returned min is >= 0 (it is subtracted).
float fit_scale_min(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                    uint8_t *Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Symmetric fit x ~ scale * (L - nmax), L - nmax in -nmax..nmax-1, weights x^2 (ggml's make_qx_quants
// with rmse_type 1 and no importance weights): starts from scale = max/-nmax on the largest-|x| element,
// refits by least squares, then tries inverse scales -(nmax + 0.1*is)/max for is = -9..9 and keeps the
// one with the best weighted fit.
float fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        const float fl = static_cast<float>(l);
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            const float fl = static_cast<float>(l);
            sumlx += w * x[i] * fl;
            suml2 += w * fl * fl;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Symmetric 3-bit fit for Q3_K (ggml's make_q3_quants with do_rmse): start from max/-nmax, then up to 5
// passes of coordinate descent that move single quants when that improves the weighted (x^2) fit.
float fit_symmetric_q3(int n, int nmax, const float *x, int8_t *L) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        const float w = x[i] * x[i];
        const float fl = static_cast<float>(l);
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (slx > 0) {
                float sl2 = suml2 - w * li * li;
                const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    const float fl = static_cast<float>(new_l);
                    slx += w * x[i] * fl;
                    sl2 += w * fl * fl;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<int8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Packs 6-bit scale ls and min lm of sub-block j into the 12-byte Q4_K/Q5_K layout
// (inverse of kquant::unpack_scale_min_k4). bytes must start zeroed for j >= 4's OR-ed bits.
void pack_scale_min_k4(uint8_t bytes[kKScaleSize], int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        bytes[j] = ls;
        bytes[j + 4] = lm;
    } else {
        bytes[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
        bytes[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        bytes[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
}

// Shared front half of Q4_K and Q5_K: per 32-element sub-block affine fits, 6-bit scales/mins, the
// super-block d/dmin, and the final quants L (0..nmax) recomputed with the quantized scales.
template <typename Block>
void quantize_q45_K_block(const float *x, Block &y, int nmax, float rmin, int nstep, uint8_t L[kQK_K]) {
    uint8_t Laux[32];
    float weights[32];
    float mins[8];
    float scales[8];
    float max_scale = 0;  // scales and mins are >= 0 here: the min is subtracted
    float max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        scales[j] =
            fit_scale_min(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(y.scales, 0, sizeof(y.scales));
    for (int j = 0; j < 8; ++j) {
        // uint8_t conversion first, then the clamp, as ggml does (matters only for negative fits).
        uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
        uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        pack_scale_min_k4(y.scales, j, ls, lm);
    }
    y.d = fp32_to_fp16(max_scale / 63.f);
    y.dmin = fp32_to_fp16(max_min / 63.f);

    uint8_t sc[8], mn[8];
    kquant::unpack_scale_min_k4(y.scales, sc, mn);
    for (int j = 0; j < 8; ++j) {
        const float d = fp16_to_fp32(y.d) * static_cast<float>(sc[j]);
        if (d == 0.0f) continue;  // keep the fit's quants: they multiply a zero scale anyway
        const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(mn[j]);
        for (int ii = 0; ii < 32; ++ii) {
            L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
        }
    }
}

// Packs 256 2-bit values: byte 32h + l holds elements 128h + l + 32k in bits 2k..2k+1.
void pack_2bit(const uint8_t *L, uint8_t qs[kQK_K / 4]) {
    for (int j = 0; j < kQK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                                 (L[j + l + 96] << 6));
        }
    }
}

// Index of the IQ4_NL level nearest to v (ties to the upper level), by bisection over the sorted table.
int best_index_iq4nl(float v) {
    const int8_t *val = kValuesIq4nl;
    if (v <= val[0]) return 0;
    if (v >= val[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < val[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return v - static_cast<float>(val[hi - 1]) < static_cast<float>(val[hi]) - v ? hi - 1 : hi;
}

}  // namespace

void quantize_row_q8_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q8_K_ref");
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q8_K y;
        std::memset(&y, 0, sizeof(y));
        float max = 0;
        float amax = 0;
        for (int j = 0; j < kQK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax != 0.0f) {
            // -127 (not -128): the largest element maps to exactly -127, keeping every quant in -127..127.
            const float iscale = -127.f / max;
            for (int j = 0; j < kQK_K; ++j) {
                const int v = nearest_int(iscale * x[j]);
                y.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
            }
            for (int j = 0; j < kQK_K / 16; ++j) {
                int sum = 0;
                for (int ii = 0; ii < 16; ++ii) sum += y.qs[16 * j + ii];
                y.bsums[j] = static_cast<int16_t>(sum);
            }
            y.d = 1 / iscale;
        }
        store_block(dst, i, y);
    }
}

void quantize_row_q2_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q2_K_ref");
    constexpr float q4scale = 15.f;  // 4-bit sub-block scales and mins
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q2_K y;
        std::memset(&y, 0, sizeof(y));
        uint8_t L[kQK_K];
        uint8_t Laux[16];
        float weights[16];
        float mins[16];
        float scales[16];
        float max_scale = 0;
        float max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            scales[j] =
                fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
            y.d = fp32_to_fp16(max_scale / q4scale);
        } else {
            y.d = fp32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < 16; ++j) {
                y.scales[j] = static_cast<uint8_t>(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
            }
            y.dmin = fp32_to_fp16(max_min / q4scale);
        } else {
            y.dmin = fp32_to_fp16(0.f);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[j] & 0x0f);
            if (d == 0.0f) continue;
            const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(y.scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                L[16 * j + ii] =
                    static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
            }
        }
        pack_2bit(L, y.qs);
        store_block(dst, i, y);
    }
}

void quantize_row_q3_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q3_K_ref");
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q3_K y;
        std::memset(&y, 0, sizeof(y));
        int8_t L[kQK_K];
        float scales[16];
        float max_scale = 0;  // signed: the scale of largest magnitude
        float amax = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fit_symmetric_q3(16, 4, x + 16 * j, L + 16 * j);
            const float a = std::fabs(scales[j]);
            if (a > amax) {
                amax = a;
                max_scale = scales[j];
            }
        }
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; ++j) {
                // int8_t first, as ggml does; |iscale*scale| <= 32 so this never wraps.
                int l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
                l = clamp_int(l, -32, 31) + 32;
                if (j < 8) {
                    y.scales[j] = static_cast<uint8_t>(l & 0x0f);
                } else {
                    y.scales[j - 8] = static_cast<uint8_t>(y.scales[j - 8] | ((l & 0x0f) << 4));
                }
                l >>= 4;
                y.scales[j % 4 + 8] = static_cast<uint8_t>(y.scales[j % 4 + 8] | (l << (2 * (j / 4))));
            }
            y.d = fp32_to_fp16(1 / iscale);
        } else {
            y.d = fp32_to_fp16(0.f);
        }
        int sc[16];
        kquant::unpack_scales_q3_K(y.scales, sc);
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(y.d) * static_cast<float>(sc[j]);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
            }
        }
        // Third bit: element j goes to bit j / 32 of hmask[j % 32]; the rest keeps the low 2 bits.
        uint8_t L2[kQK_K];
        for (int j = 0; j < kQK_K; ++j) {
            int l = L[j];
            if (l > 3) {
                y.hmask[j % 32] = static_cast<uint8_t>(y.hmask[j % 32] | (1u << (j / 32)));
                l -= 4;
            }
            L2[j] = static_cast<uint8_t>(l);
        }
        pack_2bit(L2, y.qs);
        store_block(dst, i, y);
    }
}

void quantize_row_q4_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q4_K_ref");
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q4_K y;
        std::memset(&y, 0, sizeof(y));
        uint8_t L[kQK_K];
        quantize_q45_K_block(x, y, 15, -1.f, 20, L);
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l)
                y.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
        }
        store_block(dst, i, y);
    }
}

void quantize_row_q5_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q5_K_ref");
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q5_K y;
        std::memset(&y, 0, sizeof(y));
        uint8_t L[kQK_K];
        quantize_q45_K_block(x, y, 31, -0.5f, 15, L);
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                int l1 = L[64 * c + l];
                int l2 = L[64 * c + 32 + l];
                if (l1 > 15) {
                    l1 -= 16;
                    y.qh[l] = static_cast<uint8_t>(y.qh[l] | (1u << (2 * c)));
                }
                if (l2 > 15) {
                    l2 -= 16;
                    y.qh[l] = static_cast<uint8_t>(y.qh[l] | (1u << (2 * c + 1)));
                }
                y.qs[32 * c + l] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
        }
        store_block(dst, i, y);
    }
}

void quantize_row_q6_K_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_q6_K_ref");
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_q6_K y;
        std::memset(&y, 0, sizeof(y));
        int8_t L[kQK_K];
        float scales[16];
        float max_scale = 0;  // signed: the scale of largest magnitude
        float max_abs_scale = 0;
        for (int ib = 0; ib < 16; ++ib) {
            scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
            const float a = std::fabs(scales[ib]);
            if (a > max_abs_scale) {
                max_abs_scale = a;
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {  // all (near) zero: an all-zero block
            store_block(dst, i, y);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y.d = fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < 16; ++ib) {
            const int v = nearest_int(iscale * scales[ib]);
            y.scales[ib] = static_cast<int8_t>(v < 127 ? v : 127);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[j]);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                L[16 * j + ii] =
                    static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
            }
        }
        // See dequantize_row_q6_K for the bit placement.
        for (int half = 0; half < 2; ++half) {
            const int8_t *Lh = L + 128 * half;
            uint8_t *ql = y.ql + 64 * half;
            uint8_t *qh = y.qh + 32 * half;
            for (int l = 0; l < 32; ++l) {
                const int v0 = Lh[l], v1 = Lh[l + 32], v2 = Lh[l + 64], v3 = Lh[l + 96];
                ql[l] = static_cast<uint8_t>((v0 & 0x0f) | ((v2 & 0x0f) << 4));
                ql[l + 32] = static_cast<uint8_t>((v1 & 0x0f) | ((v3 & 0x0f) << 4));
                qh[l] =
                    static_cast<uint8_t>((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) | ((v3 >> 4) << 6));
            }
        }
        store_block(dst, i, y);
    }
}

void quantize_row_iq4_xs_ref(const float *src, void *dst, int64_t n) {
    const int64_t nb = super_blocks(n, "quantize_row_iq4_xs_ref");
    constexpr int ntry = 7;  // inverse scales tried around the first guess: (itry + levels[0]) / max
    const float level0 = static_cast<float>(kValuesIq4nl[0]);
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + i * kQK_K;  // [256]
        block_iq4_xs y;
        std::memset(&y, 0, sizeof(y));
        uint8_t L[kQK_K] = {};
        float scales[8];
        float weight[32];
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const float *xb = x + 32 * ib;
            uint8_t *Lb = L + 32 * ib;
            for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
            float amax = 0, max = 0;
            for (int j = 0; j < 32; ++j) {
                const float ax = std::fabs(xb[j]);
                if (ax > amax) {
                    amax = ax;
                    max = xb[j];
                }
            }
            if (amax < kGroupMaxEps) {
                scales[ib] = 0;
                continue;
            }
            float d = -max / level0;
            float id = 1 / d;
            float sumqx = 0, sumq2 = 0;
            for (int j = 0; j < 32; ++j) {
                const int l = best_index_iq4nl(id * xb[j]);
                Lb[j] = static_cast<uint8_t>(l);
                const float q = kValuesIq4nl[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
            float best = d * sumqx;
            for (int itry = -ntry; itry <= ntry; ++itry) {
                id = static_cast<float>(itry + kValuesIq4nl[0]) / max;
                sumqx = sumq2 = 0;
                for (int j = 0; j < 32; ++j) {
                    const float q = kValuesIq4nl[best_index_iq4nl(id * xb[j])];
                    const float w = weight[j];
                    sumqx += w * q * xb[j];
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
            scales[ib] = d;
            const float abs_d = std::fabs(d);
            if (abs_d > amax_scale) {
                amax_scale = abs_d;
                max_scale = d;
            }
        }
        // Super-block scale: the largest sub-block scale maps to -32 (6-bit signed range -32..31).
        const float d = -max_scale / 32;
        y.d = fp32_to_fp16(d);
        const float id = d != 0.0f ? 1 / d : 0.f;
        for (int ib = 0; ib < 8; ++ib) {
            int l = clamp_int(nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * static_cast<float>(l);
            const float idl = dl != 0.0f ? 1 / dl : 0.f;
            const float *xb = x + 32 * ib;
            for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(best_index_iq4nl(idl * xb[j]));
            l += 32;
            y.scales_l[ib / 2] = static_cast<uint8_t>(y.scales_l[ib / 2] | ((l & 0x0f) << (4 * (ib % 2))));
            y.scales_h = static_cast<uint16_t>(y.scales_h | ((l >> 4) << (2 * ib)));
        }
        for (int ib = 0; ib < 8; ++ib) {
            for (int j = 0; j < 16; ++j) {
                y.qs[16 * ib + j] = static_cast<uint8_t>(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
            }
        }
        store_block(dst, i, y);
    }
}

}  // namespace lctx
