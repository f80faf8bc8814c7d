// Importance-weighted quantizers (see weighted_quants.h): Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and the K-quants
// Q2_K..Q6_K, IQ4_XS.
// Each block (or sub-block) tries a set of scales (and minimums), refits them by weighted least squares for
// the levels they choose, and the K-quants then quantize the sub-block scales against the super-block's. The
// block kept is the candidate with the smallest weighted error of the values as they will be read back
// (scales rounded to fp16 and 6 or 8 bits); the unweighted reference block is always a candidate, so no block
// is worse on the weighted error than without importance weights.
#include "quantize/weighted_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/quants_legacy.h"

namespace lctx::quantize {

namespace {

constexpr int kBlock = 32;

// w_j = importance_j * sqrt(sigma^2 + x_j^2): the importance of the column, times a term that grows with
// the value's own size (large values matter more to the product), sigma^2 the row's mean square.
void element_weights(const float *x, int64_t n, const float *importance, std::vector<float> &w) {
    double sum2 = 0;
    for (int64_t j = 0; j < n; ++j) sum2 += static_cast<double>(x[j]) * x[j];
    const float sigma2 = static_cast<float>(sum2 / static_cast<double>(n));
    w.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
        w[static_cast<size_t>(j)] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

float weighted_error(GgmlType type, const void *block, const float *x, const float *w) {
    float y[kBlock];
    dequantize_row(type, block, y, kBlock);
    float e = 0;
    for (int j = 0; j < kBlock; ++j) e += w[j] * (x[j] - y[j]) * (x[j] - y[j]);
    return e;
}

// ---- symmetric types: x ~ d * level[q] ----

struct LevelSet {
    GgmlType type;
    int n;                // levels
    const float *levels;  // ascending
};

int nearest_level(const LevelSet &ls, float v) {
    if (ls.type == GgmlType::IQ4_NL) return iq4nl_nearest_index(v);
    const int lo = static_cast<int>(ls.levels[0]);
    const int q = static_cast<int>(std::lround(v)) - lo;
    return std::clamp(q, 0, ls.n - 1);
}

void pack_symmetric(GgmlType type, float d, const int q[kBlock], void *dst) {
    uint8_t qs[kBlock / 2];
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
    if (type == GgmlType::Q5_0) {
        block_q5_0 b{};
        b.d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < kBlock; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        std::memcpy(b.qh, &qh, sizeof qh);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
    } else {  // Q4_0 and IQ4_NL share the layout
        block_q4_0 b{};
        b.d = fp32_to_fp16(d);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
    }
}

void symmetric_block(const LevelSet &ls, const float *x, const float *w, void *dst, size_t bsize) {
    float amax = 0, xmax = 0;
    for (int j = 0; j < kBlock; ++j)
        if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), xmax = x[j];
    alignas(16) uint8_t best[64], cand[64];  // aligned: the dequantizers read block structs in place
    quantize_row(ls.type, x, best, kBlock);  // the reference block
    float best_err = weighted_error(ls.type, best, x, w);
    if (amax == 0) {
        std::memcpy(dst, best, bsize);
        return;
    }
    int q[kBlock];
    for (const float edge : {ls.levels[0], ls.levels[ls.n - 1]}) {
        for (int is = -12; is <= 12; ++is) {
            const float d0 = xmax / (edge * (1.0f + 0.02f * static_cast<float>(is)));
            if (!(d0 != 0) || !std::isfinite(d0)) continue;
            // Levels for this scale, then the weighted least-squares scale for those levels.
            double sxl = 0, sll = 0;
            for (int j = 0; j < kBlock; ++j) {
                q[j] = nearest_level(ls, x[j] / d0);
                const float l = ls.levels[q[j]];
                sxl += static_cast<double>(w[j]) * x[j] * l;
                sll += static_cast<double>(w[j]) * l * l;
            }
            if (sll <= 0) continue;
            const float d = static_cast<float>(sxl / sll);
            for (int j = 0; j < kBlock; ++j) q[j] = nearest_level(ls, d != 0 ? x[j] / d : 0.0f);
            pack_symmetric(ls.type, d, q, cand);
            const float e = weighted_error(ls.type, cand, x, w);
            if (e < best_err) best_err = e, std::memcpy(best, cand, bsize);
        }
    }
    std::memcpy(dst, best, bsize);
}

template <GgmlType kType>
void symmetric_row(const float *x, void *dst, int64_t n, const float *importance) {
    static const float kQ4[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
    static const float kQ5[32] = {-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1,
                                  0,   1,   2,   3,   4,   5,   6,   7,  8,  9,  10, 11, 12, 13, 14, 15};
    static const float kNl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const LevelSet ls = kType == GgmlType::Q4_0   ? LevelSet{kType, 16, kQ4}
                        : kType == GgmlType::Q5_0 ? LevelSet{kType, 32, kQ5}
                                                  : LevelSet{kType, 16, kNl};
    std::vector<float> w;
    element_weights(x, n, importance, w);
    const size_t bsize = type_traits(kType).type_size;
    for (int64_t b = 0; b < n / kBlock; ++b)
        symmetric_block(ls, x + b * kBlock, w.data() + b * kBlock, static_cast<uint8_t *>(dst) + b * bsize,
                        bsize);
}

// ---- affine types: x ~ d * q + m, q in 0..nmax ----

void pack_affine(GgmlType type, float d, float m, const int q[kBlock], void *dst) {
    uint8_t qs[kBlock / 2];
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
    if (type == GgmlType::Q5_1) {
        block_q5_1 b{};
        b.d = fp32_to_fp16(d);
        b.m = fp32_to_fp16(m);
        uint32_t qh = 0;
        for (int j = 0; j < kBlock; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        std::memcpy(b.qh, &qh, sizeof qh);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
    } else {
        block_q4_1 b{};
        b.d = fp32_to_fp16(d);
        b.m = fp32_to_fp16(m);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
    }
}

template <GgmlType kType>
void affine_row(const float *xr, void *dst, int64_t n, const float *importance) {
    constexpr int nmax = kType == GgmlType::Q4_1 ? 15 : 31;
    const size_t bsize = type_traits(kType).type_size;
    std::vector<float> wr;
    element_weights(xr, n, importance, wr);
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float *x = xr + b * kBlock;
        const float *w = wr.data() + b * kBlock;
        uint8_t *out = static_cast<uint8_t *>(dst) + b * bsize;
        alignas(16) uint8_t best[64], cand[64];  // aligned: the dequantizers read block structs in place
        quantize_row(kType, x, best, kBlock);
        float best_err = weighted_error(kType, best, x, w);
        const float mn = *std::min_element(x, x + kBlock), mx = *std::max_element(x, x + kBlock);
        int q[kBlock];
        for (int is = -10; is <= 10 && mx > mn; ++is) {
            const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / (mx - mn);
            double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
            for (int j = 0; j < kBlock; ++j) {
                q[j] = std::clamp(static_cast<int>(std::lround(iscale * (x[j] - mn))), 0, nmax);
                const double wj = w[j], l = q[j];
                sw += wj, sl += wj * l, sll += wj * l * l, sx += wj * x[j], slx += wj * l * x[j];
            }
            const double det = sw * sll - sl * sl;
            if (det <= 0) continue;
            const float d = static_cast<float>((sw * slx - sx * sl) / det);
            const float m = static_cast<float>((sll * sx - sl * slx) / det);
            if (!(d > 0) || !std::isfinite(m)) continue;
            for (int j = 0; j < kBlock; ++j)
                q[j] = std::clamp(static_cast<int>(std::lround((x[j] - m) / d)), 0, nmax);
            pack_affine(kType, d, m, q, cand);
            const float e = weighted_error(kType, cand, x, w);
            if (e < best_err) best_err = e, std::memcpy(best, cand, bsize);
        }
        std::memcpy(out, best, bsize);
    }
}

// ---- K-quants: 256-element super-blocks of sub-blocks with quantized scales ----

float weighted_error_n(GgmlType type, const void *block, const float *x, const float *w, int n) {
    float y[kQK_K];
    dequantize_row(type, block, y, n);
    float e = 0;
    for (int j = 0; j < n; ++j) e += w[j] * (x[j] - y[j]) * (x[j] - y[j]);
    return e;
}

// Weighted affine fit of one sub-block, x ~ scale * q - min with q in 0..nmax, scale >= 0, min >= 0 (the
// K-quants subtract the min). Tries inverse scales around nmax / (max - min) and refits each by least
// squares.
void fit_affine(const float *x, const float *w, int n, int nmax, float *scale, float *min) {
    float mn = std::min(0.0f, *std::min_element(x, x + n));
    const float mx = *std::max_element(x, x + n);
    *scale = 0, *min = -mn;
    if (mx <= mn) return;
    float best = -1;
    for (int is = -10; is <= 10; ++is) {
        const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / (mx - mn);
        double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
        int q[kBlock];
        for (int j = 0; j < n; ++j) {
            q[j] = std::clamp(static_cast<int>(std::lround(iscale * (x[j] - mn))), 0, nmax);
            const double wj = w[j], l = q[j];
            sw += wj, sl += wj * l, sll += wj * l * l, sx += wj * x[j], slx += wj * l * x[j];
        }
        const double det = sw * sll - sl * sl;
        if (det <= 0 || sll <= 0) continue;
        double d = (sw * slx - sx * sl) / det, off = (sll * sx - sl * slx) / det;
        if (off > 0) off = 0, d = slx / sll;  // the offset can only lower values
        if (!(d > 0)) continue;
        double e = 0;
        for (int j = 0; j < n; ++j) {
            const int l = std::clamp(static_cast<int>(std::lround((x[j] - off) / d)), 0, nmax);
            const double diff = x[j] - (d * l + off);
            e += w[j] * diff * diff;
        }
        if (best < 0 || e < best)
            best = static_cast<float>(e), *scale = static_cast<float>(d), *min = static_cast<float>(-off);
    }
}

// Inverse of kquant::unpack_scale_min_k4: 8 six-bit scales and mins into 12 bytes.
void pack_scale_min(const uint8_t sc[8], const uint8_t mn[8], uint8_t out[kKScaleSize]) {
    std::memset(out, 0, kKScaleSize);
    for (int j = 0; j < 4; ++j) {
        out[j] = static_cast<uint8_t>(sc[j] & 63);
        out[j + 4] = static_cast<uint8_t>(mn[j] & 63);
    }
    for (int j = 4; j < 8; ++j) {
        out[j + 4] = static_cast<uint8_t>((sc[j] & 0x0f) | (mn[j] & 0x0f) << 4);
        out[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
        out[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
    }
}

// The K-quant skeleton every weighted super-block type shares: per super-block of 256, the reference
// quantizer's block and a candidate that `fit(x, w, cand)` fits to the importance weights; the one with the
// smaller weighted error is written, so the weighted result is never worse per block.
template <typename Block, typename Fit>
void keep_better_per_block(GgmlType type, const float *xr, void *dst, int64_t n, const float *importance,
                           Fit fit) {
    std::vector<float> wr;
    element_weights(xr, n, importance, wr);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float *x = xr + b * kQK_K;
        const float *w = wr.data() + b * kQK_K;
        Block best{}, cand{};
        quantize_row(type, x, &best, kQK_K);
        fit(x, w, cand);
        const bool take =
            weighted_error_n(type, &cand, x, w, kQK_K) < weighted_error_n(type, &best, x, w, kQK_K);
        std::memcpy(static_cast<uint8_t *>(dst) + b * sizeof(Block), take ? &cand : &best, sizeof(Block));
    }
}

template <GgmlType kType>
void q45_K_row(const float *xr, void *dst, int64_t n, const float *importance) {
    constexpr int nmax = kType == GgmlType::Q4_K ? 15 : 31;
    using Block = std::conditional_t<kType == GgmlType::Q4_K, block_q4_K, block_q5_K>;
    keep_better_per_block<Block>(
        kType, xr, dst, n, importance, [&](const float *x, const float *w, Block &cand) {
            float scale[8], min[8];
            for (int s = 0; s < 8; ++s) fit_affine(x + 32 * s, w + 32 * s, 32, nmax, &scale[s], &min[s]);
            const float max_scale = *std::max_element(scale, scale + 8),
                        max_min = *std::max_element(min, min + 8);
            cand.d = fp32_to_fp16(max_scale / 63.0f);
            cand.dmin = fp32_to_fp16(max_min / 63.0f);
            const float d = fp16_to_fp32(cand.d), dmin = fp16_to_fp32(cand.dmin);
            uint8_t sc[8], mn[8];
            for (int s = 0; s < 8; ++s) {
                sc[s] = static_cast<uint8_t>(
                    d > 0 ? std::clamp(static_cast<int>(std::lround(scale[s] / d)), 0, 63) : 0);
                mn[s] = static_cast<uint8_t>(
                    dmin > 0 ? std::clamp(static_cast<int>(std::lround(min[s] / dmin)), 0, 63) : 0);
            }
            pack_scale_min(sc, mn, cand.scales);
            int q[kQK_K];
            for (int s = 0; s < 8; ++s) {
                const float ds = d * sc[s], ms = dmin * mn[s];
                for (int j = 0; j < 32; ++j)
                    q[32 * s + j] =
                        ds > 0 ? std::clamp(static_cast<int>(std::lround((x[32 * s + j] + ms) / ds)), 0, nmax)
                               : 0;
            }
            for (int c = 0; c < 4; ++c)
                for (int l = 0; l < 32; ++l)
                    cand.qs[32 * c + l] =
                        static_cast<uint8_t>((q[64 * c + l] & 0x0f) | (q[64 * c + 32 + l] & 0x0f) << 4);
            if constexpr (kType == GgmlType::Q5_K) {
                for (int l = 0; l < 32; ++l) {
                    uint8_t h = 0;
                    for (int c = 0; c < 4; ++c)
                        h |= static_cast<uint8_t>(((q[64 * c + l] >> 4) & 1) << (2 * c) |
                                                  ((q[64 * c + 32 + l] >> 4) & 1) << (2 * c + 1));
                    cand.qh[l] = h;
                }
            }
        });
}

// Q6_K: 16 sub-blocks of 16, x ~ d * scale_s * (q - 32) with signed 8-bit scales.
void q6_K_row(const float *xr, void *dst, int64_t n, const float *importance) {
    auto level = [](float v) {
        return static_cast<float>(std::clamp(static_cast<int>(std::lround(v)), -32, 31));
    };
    keep_better_per_block<block_q6_K>(
        GgmlType::Q6_K, xr, dst, n, importance, [&](const float *x, const float *w, block_q6_K &cand) {
            float scale[16];
            for (int s = 0; s < 16; ++s) {  // weighted symmetric fit of each sub-block
                const float *xs = x + 16 * s, *ws = w + 16 * s;
                float amax = 0, xmax = 0;
                for (int j = 0; j < 16; ++j)
                    if (std::fabs(xs[j]) > amax) amax = std::fabs(xs[j]), xmax = xs[j];
                scale[s] = 0;
                float be = -1;
                for (const float edge : {-32.0f, 31.0f})
                    for (int is = -8; is <= 8 && amax > 0; ++is) {
                        const float d0 = xmax / (edge * (1.0f + 0.02f * static_cast<float>(is)));
                        double sxl = 0, sll = 0;
                        for (int j = 0; j < 16; ++j) {
                            const float l = level(xs[j] / d0);
                            sxl += static_cast<double>(ws[j]) * xs[j] * l,
                                sll += static_cast<double>(ws[j]) * l * l;
                        }
                        const float d = sll > 0 ? static_cast<float>(sxl / sll) : 0.0f;
                        if (d == 0 || !std::isfinite(d)) continue;
                        float e = 0;
                        for (int j = 0; j < 16; ++j) {
                            const float l = level(xs[j] / d);
                            e += ws[j] * (xs[j] - d * l) * (xs[j] - d * l);
                        }
                        if (be < 0 || e < be) be = e, scale[s] = d;
                    }
            }
            float smax = 0, sabs = 0;
            for (float v : scale)
                if (std::fabs(v) > sabs) sabs = std::fabs(v), smax = v;
            cand.d = fp32_to_fp16(smax / -128.0f);
            const float d = fp16_to_fp32(cand.d);
            int q[kQK_K];
            for (int s = 0; s < 16; ++s) {
                const int sc =
                    d != 0 ? std::clamp(static_cast<int>(std::lround(scale[s] / d)), -128, 127) : 0;
                cand.scales[s] = static_cast<int8_t>(sc);
                const float ds = d * static_cast<float>(sc);
                for (int j = 0; j < 16; ++j)
                    q[16 * s + j] =
                        ds != 0 ? std::clamp(static_cast<int>(std::lround(x[16 * s + j] / ds)), -32, 31) + 32
                                : 32;
            }
            for (int h = 0; h < 2; ++h)
                for (int l = 0; l < 32; ++l) {
                    const int *qq = q + 128 * h;
                    cand.ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0x0f) | (qq[l + 64] & 0x0f) << 4);
                    cand.ql[64 * h + l + 32] =
                        static_cast<uint8_t>((qq[l + 32] & 0x0f) | (qq[l + 96] & 0x0f) << 4);
                    cand.qh[32 * h + l] =
                        static_cast<uint8_t>((qq[l] >> 4) | (qq[l + 32] >> 4) << 2 | (qq[l + 64] >> 4) << 4 |
                                             (qq[l + 96] >> 4) << 6);
                }
        });
}

// Weighted symmetric fit of n values to d * level, levels of `ls`: scales around the largest value mapped to
// either end level, each refit by least squares for the levels it picks. Returns d (0 for an all-zero group).
float fit_symmetric(const LevelSet &ls, const float *x, const float *w, int n) {
    float amax = 0, xmax = 0;
    for (int j = 0; j < n; ++j)
        if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), xmax = x[j];
    if (amax == 0) return 0;
    float best_d = 0, best_e = -1;
    for (const float edge : {ls.levels[0], ls.levels[ls.n - 1]}) {
        for (int is = -10; is <= 10; ++is) {
            const float d0 = xmax / (edge * (1.0f + 0.02f * static_cast<float>(is)));
            double sxl = 0, sll = 0;
            for (int j = 0; j < n; ++j) {
                const float l = ls.levels[nearest_level(ls, x[j] / d0)];
                sxl += static_cast<double>(w[j]) * x[j] * l, sll += static_cast<double>(w[j]) * l * l;
            }
            const float d = sll > 0 ? static_cast<float>(sxl / sll) : 0.0f;
            if (d == 0 || !std::isfinite(d)) continue;
            float e = 0;
            for (int j = 0; j < n; ++j) {
                const float diff = x[j] - d * ls.levels[nearest_level(ls, x[j] / d)];
                e += w[j] * diff * diff;
            }
            if (best_e < 0 || e < best_e) best_e = e, best_d = d;
        }
    }
    return best_d;
}

// The signed sub-block scales as 6-bit integers (-32..31) against a super-block scale d = -max/32.
float quantize_scales_6bit(const float *scale, int n, int *sc) {
    float smax = 0, sabs = 0;
    for (int s = 0; s < n; ++s)
        if (std::fabs(scale[s]) > sabs) sabs = std::fabs(scale[s]), smax = scale[s];
    const float d = fp16_to_fp32(fp32_to_fp16(smax / -32.0f));
    for (int s = 0; s < n; ++s)
        sc[s] = d != 0 ? std::clamp(static_cast<int>(std::lround(scale[s] / d)), -32, 31) : 0;
    return d;
}

// Q2_K: 16 sub-blocks of 16, x ~ d * sc * q - dmin * m with q in 0..3 and 4-bit sc, m.
void q2_K_row(const float *xr, void *dst, int64_t n, const float *importance) {
    keep_better_per_block<block_q2_K>(
        GgmlType::Q2_K, xr, dst, n, importance, [&](const float *x, const float *w, block_q2_K &cand) {
            float scale[16], min[16];
            for (int s = 0; s < 16; ++s) fit_affine(x + 16 * s, w + 16 * s, 16, 3, &scale[s], &min[s]);
            cand.d = fp32_to_fp16(*std::max_element(scale, scale + 16) / 15.0f);
            cand.dmin = fp32_to_fp16(*std::max_element(min, min + 16) / 15.0f);
            const float d = fp16_to_fp32(cand.d), dmin = fp16_to_fp32(cand.dmin);
            for (int s = 0; s < 16; ++s) {
                const int sc = d > 0 ? std::clamp(static_cast<int>(std::lround(scale[s] / d)), 0, 15) : 0;
                const int m = dmin > 0 ? std::clamp(static_cast<int>(std::lround(min[s] / dmin)), 0, 15) : 0;
                cand.scales[s] = static_cast<uint8_t>(sc | m << 4);
                const float ds = d * static_cast<float>(sc), ms = dmin * static_cast<float>(m);
                for (int j = 0; j < 16; ++j) {
                    const int e = 16 * s + j;
                    const int q =
                        ds > 0 ? std::clamp(static_cast<int>(std::lround((x[e] + ms) / ds)), 0, 3) : 0;
                    // Element 128h + 32k + r (r < 32): bits 2k of byte 32h + r.
                    cand.qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q << (2 * ((e % 128) / 32)));
                }
            }
        });
}

// Q3_K: 16 sub-blocks of 16, x ~ d * sc * q with q in -4..3 and 6-bit signed sc.
void q3_K_row(const float *xr, void *dst, int64_t n, const float *importance) {
    static const float kLevels[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
    const LevelSet ls{GgmlType::Q3_K, 8, kLevels};
    keep_better_per_block<block_q3_K>(
        GgmlType::Q3_K, xr, dst, n, importance, [&](const float *x, const float *w, block_q3_K &cand) {
            float scale[16];
            for (int s = 0; s < 16; ++s) scale[s] = fit_symmetric(ls, x + 16 * s, w + 16 * s, 16);
            int sc[16];
            const float d = quantize_scales_6bit(scale, 16, sc);
            cand.d = fp32_to_fp16(d);
            for (int s = 0; s < 16; ++s) {  // inverse of kquant::unpack_scales_q3_K
                const int v = sc[s] + 32;
                cand.scales[s % 8] |= static_cast<uint8_t>((v & 0x0f) << (s < 8 ? 0 : 4));
                cand.scales[8 + s % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (s / 4)));
                const float ds = d * static_cast<float>(sc[s]);
                for (int j = 0; j < 16; ++j) {
                    const int e = 16 * s + j;
                    const int q = ds != 0 ? std::clamp(static_cast<int>(std::lround(x[e] / ds)), -4, 3) : 0;
                    // Low 2 bits as Q2_K; bit 4h + k of hmask[r] set when q >= 0 (else the low bits hold q +
                    // 4).
                    const int h = e / 128, k = (e % 128) / 32, r = e % 32;
                    cand.qs[32 * h + r] |= static_cast<uint8_t>(((q + 4) & 3) << (2 * k));
                    if (q >= 0) cand.hmask[r] |= static_cast<uint8_t>(1u << (4 * h + k));
                }
            }
        });
}

// IQ4_XS: 8 sub-blocks of 32 on the IQ4_NL levels, 6-bit signed sub-block scales.
void iq4_xs_row(const float *xr, void *dst, int64_t n, const float *importance) {
    static const float kNl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const LevelSet ls{GgmlType::IQ4_NL, 16, kNl};
    keep_better_per_block<block_iq4_xs>(
        GgmlType::IQ4_XS, xr, dst, n, importance, [&](const float *x, const float *w, block_iq4_xs &cand) {
            float scale[8];
            for (int s = 0; s < 8; ++s) scale[s] = fit_symmetric(ls, x + 32 * s, w + 32 * s, 32);
            int sc[8];
            const float d = quantize_scales_6bit(scale, 8, sc);
            cand.d = fp32_to_fp16(d);
            for (int s = 0; s < 8; ++s) {
                const int v = sc[s] + 32;
                cand.scales_l[s / 2] |= static_cast<uint8_t>((v & 0x0f) << (4 * (s % 2)));
                cand.scales_h |= static_cast<uint16_t>((v >> 4) << (2 * s));
                const float ds = d * static_cast<float>(sc[s]);
                for (int j = 0; j < 16; ++j) {
                    const int lo = nearest_level(ls, ds != 0 ? x[32 * s + j] / ds : 0.0f);
                    const int hi = nearest_level(ls, ds != 0 ? x[32 * s + 16 + j] / ds : 0.0f);
                    cand.qs[16 * s + j] = static_cast<uint8_t>(lo | hi << 4);
                }
            }
        });
}

}  // namespace

WeightedRowFn weighted_quantizer(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
            return symmetric_row<GgmlType::Q4_0>;
        case GgmlType::Q5_0:
            return symmetric_row<GgmlType::Q5_0>;
        case GgmlType::IQ4_NL:
            return symmetric_row<GgmlType::IQ4_NL>;
        case GgmlType::Q4_1:
            return affine_row<GgmlType::Q4_1>;
        case GgmlType::Q5_1:
            return affine_row<GgmlType::Q5_1>;
        case GgmlType::Q4_K:
            return q45_K_row<GgmlType::Q4_K>;
        case GgmlType::Q5_K:
            return q45_K_row<GgmlType::Q5_K>;
        case GgmlType::Q6_K:
            return q6_K_row;
        case GgmlType::Q2_K:
            return q2_K_row;
        case GgmlType::Q3_K:
            return q3_K_row;
        case GgmlType::IQ4_XS:
            return iq4_xs_row;
        default:
            return nullptr;
    }
}

}  // namespace lctx::quantize
