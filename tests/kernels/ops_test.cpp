// Element-wise and row ops against naive double-precision formulas.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/dot.h"
#include "kernels/ops_x86.h"
#include "kernels/rows.h"
#include "kernels/threadpool.h"
#include "tensor/fp16.h"

namespace lctx::kernels::ops_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_vec(int64_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float &f : v) f = d(rng);
    return v;
}

// |got - want| <= rel * |want| + abs, element by element.
void expect_close(const std::vector<float> &got, const std::vector<double> &want, double rel, double abs) {
    ASSERT_EQ(got.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs) && ++bad < 5)
            ADD_FAILURE() << "i " << i << ": got " << got[i] << " want " << want[i];
    }
}

const int64_t kLengths[] = {1, 3, 8, 15, 16, 17, 64, 100, 2048, 2051};

TEST(OpsTest, RmsNorm) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const std::vector<float> x = random_vec(n, 1 + n, 3.0f), w = random_vec(n, 2 + n);
        double ss = 0;
        for (float v : x) ss += static_cast<double>(v) * v;
        const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
        std::vector<double> want(n), want_nw(n);
        for (int64_t i = 0; i < n; ++i) {
            want[i] = x[i] * inv * w[i];
            want_nw[i] = x[i] * inv;
        }
        std::vector<float> y(n);
        rms_norm(x.data(), w.data(), y.data(), n, 1e-5f);
        expect_close(y, want, 1e-5, 1e-6);
        rms_norm(x.data(), nullptr, y.data(), n, 1e-5f);
        expect_close(y, want_nw, 1e-5, 1e-6);
        // in place
        std::vector<float> z = x;
        rms_norm(z.data(), w.data(), z.data(), n, 1e-5f);
        expect_close(z, want, 1e-5, 1e-6);
    }
}

TEST(OpsTest, LayerNorm) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_vec(n, 3 + n, 2.0f);
        for (float &v : x) v += 5.0f;  // a mean far from 0
        const std::vector<float> w = random_vec(n, 4 + n), b = random_vec(n, 5 + n);
        double mean = 0;
        for (float v : x) mean += v;
        mean /= n;
        double var = 0;
        for (float v : x) var += (v - mean) * (v - mean);
        var /= n;
        const double inv = 1.0 / std::sqrt(var + 1e-5);
        std::vector<double> want(n), want_plain(n);
        for (int64_t i = 0; i < n; ++i) {
            want_plain[i] = (x[i] - mean) * inv;
            want[i] = want_plain[i] * w[i] + b[i];
        }
        std::vector<float> y(n);
        layer_norm(x.data(), w.data(), b.data(), y.data(), n, 1e-5f);
        expect_close(y, want, 1e-4, 1e-5);
        layer_norm(x.data(), nullptr, nullptr, y.data(), n, 1e-5f);
        expect_close(y, want_plain, 1e-4, 1e-5);
        // a weight alone, a bias alone
        std::vector<double> want_w(n), want_b(n);
        for (int64_t i = 0; i < n; ++i) {
            want_w[i] = want_plain[i] * w[i];
            want_b[i] = want_plain[i] + b[i];
        }
        layer_norm(x.data(), w.data(), nullptr, y.data(), n, 1e-5f);
        expect_close(y, want_w, 1e-4, 1e-5);
        layer_norm(x.data(), nullptr, b.data(), y.data(), n, 1e-5f);
        expect_close(y, want_b, 1e-4, 1e-5);
    }
}

// Naive rope: pair (a, b) of each head rotated by pos * base^(-2i/n_rot) * freq_scale. The kernel forms
// the angle of pair i by i float multiplications (as ggml does, which the golden logits depend on), so
// its angle carries a relative error up to ~(i + 4) * 2^-24; *tol receives the resulting bound per element.
std::vector<double> rope_ref(const std::vector<float> &x, int n_head, int head_dim, double pos,
                             const RopeParams &p, std::vector<double> *tol = nullptr) {
    std::vector<double> y(x.begin(), x.end());
    if (tol) tol->assign(x.size(), 1e-6);
    const int half = p.n_rot / 2;
    for (int h = 0; h < n_head; ++h) {
        for (int i = 0; i < half; ++i) {
            const double ff = p.freq_factors ? p.freq_factors[i] : 1.0;
            const double theta =
                pos * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot) / ff * p.freq_scale;
            const int a = p.mode == RopeMode::Normal ? 2 * i : i;
            const int b = p.mode == RopeMode::Normal ? 2 * i + 1 : i + half;
            const double x0 = x[h * head_dim + a], x1 = x[h * head_dim + b];
            y[h * head_dim + a] = (x0 * std::cos(theta) - x1 * std::sin(theta)) * p.attn_factor;
            y[h * head_dim + b] = (x0 * std::sin(theta) + x1 * std::cos(theta)) * p.attn_factor;
            if (tol) {
                const double e = (std::fabs(x0) + std::fabs(x1)) * (theta * (i + 4) * 0x1p-24 + 1e-6);
                (*tol)[h * head_dim + a] += e;
                (*tol)[h * head_dim + b] += e;
            }
        }
    }
    return y;
}

TEST(OpsTest, RopeNormalAndNeox) {
    for (RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
        for (int head_dim : {8, 64, 128}) {
            for (int n_rot : {head_dim, head_dim / 2}) {
                for (float pos : {0.0f, 1.0f, 17.0f, 1000.0f}) {
                    SCOPED_TRACE(std::to_string(static_cast<int>(mode)) + " hd " + std::to_string(head_dim) +
                                 " rot " + std::to_string(n_rot) + " pos " + std::to_string(pos));
                    RopeParams p;
                    p.n_rot = n_rot;
                    p.mode = mode;
                    p.freq_base = 10000.0f;
                    const int n_head = 3;
                    const std::vector<float> x = random_vec(n_head * head_dim, 7 + head_dim + n_rot);
                    std::vector<double> tol;
                    const std::vector<double> want = rope_ref(x, n_head, head_dim, pos, p, &tol);
                    std::vector<float> y = x;
                    rope(y.data(), n_head, head_dim, pos, p);
                    int bad = 0;
                    for (size_t i = 0; i < y.size(); ++i)
                        if (!(std::fabs(y[i] - want[i]) <= tol[i]) && ++bad < 5)
                            ADD_FAILURE()
                                << "i " << i << ": got " << y[i] << " want " << want[i] << " tol " << tol[i];
                }
            }
        }
    }
}

TEST(OpsTest, RopeFreqScaleAndFactors) {
    RopeParams p;
    p.n_rot = 16;
    p.freq_base = 500000.0f;
    p.freq_scale = 0.25f;
    std::vector<float> ff(8);
    for (int i = 0; i < 8; ++i) ff[i] = 1.0f + i;
    p.freq_factors = ff.data();
    const std::vector<float> x = random_vec(2 * 16, 11);
    const std::vector<double> want = rope_ref(x, 2, 16, 37.0, p);
    std::vector<float> y = x;
    rope(y.data(), 2, 16, 37.0f, p);
    expect_close(y, want, 0, 1e-5);
}

// The forward pass computes a position's angles once (rope_angles) and rotates q, k and every layer with
// them (rope_apply): the same bits as rope, in both pair layouts, with a partial rotation.
TEST(OpsTest, RopeAnglesOnceGivesRopesBits) {
    for (RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
        RopeParams p;
        p.n_rot = 24;  // of a head of 32
        p.mode = mode;
        p.freq_base = 10000.0f;
        const std::vector<float> x = random_vec(3 * 32, 13);
        std::vector<float> a = x, b = x, cs(p.n_rot);
        rope(a.data(), 3, 32, 123.0f, p);
        rope_angles(123.0f, p, cs.data());
        rope_apply(b.data(), 3, 32, cs.data(), p);
        EXPECT_EQ(a, b);
        EXPECT_NE(a, x);
    }
}

// rope_apply at the active level (NEON on ARM64) is the rotation of each pair by the given angles, to a few
// roundings of the double evaluation: both pair layouts, rotated halves that are not whole vectors, and
// the dimensions past n_rot left as they were.
TEST(OpsTest, RopeApplyRotatesByTheGivenAngles) {
    for (RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
        for (int n_rot : {2, 6, 8, 10, 24, 30, 64, 128}) {
            for (int extra : {0, 6}) {
                SCOPED_TRACE(std::to_string(static_cast<int>(mode)) + " rot " + std::to_string(n_rot) +
                             " + " + std::to_string(extra));
                RopeParams p;
                p.n_rot = n_rot;
                p.mode = mode;
                p.freq_base = 10000.0f;
                const int n_head = 3, head_dim = n_rot + extra, half = n_rot / 2;
                const std::vector<float> x = random_vec(n_head * head_dim, 17 + n_rot + extra);
                std::vector<float> cs(n_rot), y = x;
                rope_angles(77.0f, p, cs.data());
                rope_apply(y.data(), n_head, head_dim, cs.data(), p);
                for (int h = 0; h < n_head; ++h) {
                    const float *v = x.data() + h * head_dim;
                    const float *got = y.data() + h * head_dim;
                    for (int i = 0; i < half; ++i) {
                        const int a = mode == RopeMode::Normal ? 2 * i : i;
                        const int b = mode == RopeMode::Normal ? 2 * i + 1 : i + half;
                        const double c = cs[i], sn = cs[half + i], x0 = v[a], x1 = v[b];
                        const double tol = 4 * 0x1p-24 * (std::fabs(x0) + std::fabs(x1));
                        EXPECT_NEAR(got[a], x0 * c - x1 * sn, tol) << "head " << h << " pair " << i;
                        EXPECT_NEAR(got[b], x0 * sn + x1 * c, tol) << "head " << h << " pair " << i;
                    }
                    for (int e = n_rot; e < head_dim; ++e) EXPECT_EQ(got[e], v[e]) << "head " << h;
                }
                if (::testing::Test::HasFailure()) return;
            }
        }
    }
}

TEST(OpsTest, RopeShiftF16MatchesF32) {
    RopeParams p;
    p.n_rot = 32;
    std::vector<float> x = random_vec(2 * 32, 12);
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        h[i] = fp32_to_fp16(x[i]);
        x[i] = fp16_to_fp32(h[i]);
    }
    const std::vector<double> want = rope_ref(x, 2, 32, 5.0, p);
    rope_shift_f16(h.data(), 2, 32, 5.0f, p);
    std::vector<float> got(h.size());
    for (size_t i = 0; i < h.size(); ++i) got[i] = fp16_to_fp32(h[i]);
    expect_close(got, want, 1e-3, 1e-4);
}

TEST(OpsTest, SoftmaxWithMaskAndScale) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_vec(n, 13 + n, 4.0f);
        std::vector<float> mask(n, 0.0f);
        std::mt19937 rng(static_cast<uint32_t>(n));
        for (int64_t i = 0; i < n; ++i)
            if (rng() % 3 == 0) mask[i] = -kInf;
        mask[n / 2] = 0.0f;  // at least one visible
        const float scale = 0.37f;
        double mx = -1e300;
        for (int64_t i = 0; i < n; ++i)
            if (mask[i] == 0.0f) mx = std::max(mx, static_cast<double>(x[i]) * scale);
        double sum = 0;
        std::vector<double> want(n, 0.0);
        for (int64_t i = 0; i < n; ++i) {
            if (mask[i] == 0.0f) sum += want[i] = std::exp(static_cast<double>(x[i]) * scale - mx);
        }
        for (double &v : want) v /= sum;
        std::vector<float> y = x;
        softmax(y.data(), mask.data(), n, scale);
        expect_close(y, want, 1e-5, 1e-7);
        for (int64_t i = 0; i < n; ++i) {
            if (mask[i] != 0.0f) {
                EXPECT_EQ(y[i], 0.0f);
            }
        }
        // No mask
        double mx2 = -1e300, sum2 = 0;
        for (float v : x) mx2 = std::max(mx2, static_cast<double>(v));
        std::vector<double> want2(n);
        for (int64_t i = 0; i < n; ++i) sum2 += want2[i] = std::exp(static_cast<double>(x[i]) - mx2);
        for (double &v : want2) v /= sum2;
        y = x;
        softmax(y.data(), nullptr, n, 1.0f);
        expect_close(y, want2, 1e-5, 1e-7);
    }
}

#if defined(__x86_64__)
// The AVX-512 steps of softmax give the AVX2 versions' bits at every length: the scaled and masked scores
// and their maximum (no mask, a mask, an ALiBi slope), the exps and their sum, the scaled probabilities.
TEST(OpsTest, SoftmaxStepsAtAvx512HaveTheAvx2Bits) {
    if (!isa_at_least(isa_detected(), Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 47, 100, 2051}) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_vec(n, 29 + static_cast<uint32_t>(n), 30.0f);
        for (int64_t i = 0; i < n; i += 5) x[i] = -kInf;
        x[n / 2] = 100.0f;  // above the max: +inf
        std::vector<float> y = x;
        const double s2 = detail::exp_sum_avx2(x.data(), n, 10.0f),
                     s5 = detail::exp_sum_avx512(y.data(), n, 10.0f);
        EXPECT_EQ(x, y);
        EXPECT_EQ(s2, s5);

        const std::vector<float> scores = random_vec(n, 31 + static_cast<uint32_t>(n), 8.0f);
        std::vector<float> mask = random_vec(n, 37 + static_cast<uint32_t>(n), 4.0f);
        mask[(n - 1) / 3] = -kInf;
        for (const float *m :
             {static_cast<const float *>(nullptr), static_cast<const float *>(mask.data())}) {
            for (float slope : {1.0f, 0.25f}) {
                std::vector<float> a = scores, b = scores;
                const float m2 = detail::scale_mask_max_avx2(a.data(), m, n, 0.125f, slope),
                            m5 = detail::scale_mask_max_avx512(b.data(), m, n, 0.125f, slope);
                EXPECT_EQ(a, b) << (m ? "mask" : "no mask") << ", slope " << slope;
                EXPECT_EQ(std::bit_cast<uint32_t>(m2), std::bit_cast<uint32_t>(m5));
            }
        }
        std::vector<float> a = scores, b = scores;
        detail::scale_avx2(a.data(), 0.37f, n);
        detail::scale_avx512(b.data(), 0.37f, n);
        EXPECT_EQ(a, b);
    }
}
#endif

#if defined(__x86_64__)
// Each element's exp in exp_sum is the one it gets alone (exp256 / exp512 of one lane): in the vectors that
// go in lockstep (32 elements at avx2, 64 at avx512), in the 16- and 8-element loops, and in the tail.
TEST(OpsTest, ExpSumTakesEachElementsOwnExpOnEveryPath) {
    using ExpSumFn = double (*)(float *, int64_t, float);
    std::vector<std::pair<const char *, ExpSumFn>> levels;
    if (isa_at_least(isa_detected(), Isa::Avx2)) levels.push_back({"avx2", &detail::exp_sum_avx2});
    if (isa_at_least(isa_detected(), Isa::Avx512)) levels.push_back({"avx512", &detail::exp_sum_avx512});
    if (levels.empty()) GTEST_SKIP() << "no AVX2 on this CPU";
    for (const auto &[name, exp_sum] : levels) {
        for (int64_t n : {31, 32, 63, 64, 65, 96, 129, 512, 1000}) {
            SCOPED_TRACE(std::string(name) + " n " + std::to_string(n));
            std::vector<float> x = random_vec(n, 41 + static_cast<uint32_t>(n), 30.0f);
            for (int64_t i = 3; i < n; i += 7) x[i] = -kInf;
            x[n / 3] = 100.0f;  // above the max: +inf
            std::vector<float> all = x;
            exp_sum(all.data(), n, 10.0f);
            for (int64_t i = 0; i < n; ++i) {
                float one = x[i];
                exp_sum(&one, 1, 10.0f);
                ASSERT_EQ(std::bit_cast<uint32_t>(all[i]), std::bit_cast<uint32_t>(one)) << "element " << i;
            }
        }
    }
}

// Attention's product with values stored by rows (ops_x86.h): each output is the chain of fused
// multiply-adds over the cells in order, on the values as dequantize_row gives them, passing over zero
// probabilities; AVX2 and AVX-512 give exactly its bits. Runs that cross chunks of cells, groups of heads
// past one register group, channels past whole vectors, cells and heads with zero probabilities (a cell
// nobody sees holds NaN, which must not reach any output).
TEST(OpsTest, WeightedRowsAreOneFmaChainPerOutput) {
    using detail::RowType;
    const bool avx2 = isa_at_least(isa_detected(), Isa::Avx2);
    const bool avx512 = isa_at_least(isa_detected(), Isa::Avx512);
    if (!avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    std::mt19937 rng(5);
    // every KV cache type (kv_cache.h): the float types, and the block types of 32
    const std::pair<RowType, GgmlType> types[] = {
        {RowType::F32, GgmlType::F32},      {RowType::F16, GgmlType::F16},
        {RowType::BF16, GgmlType::BF16},    {RowType::Q8_0, GgmlType::Q8_0},
        {RowType::Q4_0, GgmlType::Q4_0},    {RowType::Q4_1, GgmlType::Q4_1},
        {RowType::Q5_0, GgmlType::Q5_0},    {RowType::Q5_1, GgmlType::Q5_1},
        {RowType::IQ4_NL, GgmlType::IQ4_NL}};
    for (auto [type, gt] : types) {
        for (int n : {8, 32, 64, 72, 80, 96, 100, 128}) {
            if (type_traits(gt).is_quantized && n % 32 != 0) continue;
            for (int n_p : {1, 3, 4, 5, 8, 9, 12}) {
                for (int zeros : {0, 1}) {
                    SCOPED_TRACE(std::string(type_name(gt)) + " n " + std::to_string(n) + " heads " +
                                 std::to_string(n_p) + " zeros " + std::to_string(zeros));
                    const int n_cells = 300, j0 = 5, j1 = 290;
                    const size_t row_bytes = row_size(gt, n) + 6;  // rows a little apart
                    std::vector<uint8_t> v(n_cells * row_bytes);
                    std::vector<float> vdq(static_cast<size_t>(n_cells) * n);
                    for (int j = 0; j < n_cells; ++j) {
                        const std::vector<float> x = random_vec(n, rng());
                        quantize_row(gt, x.data(), v.data() + j * row_bytes, n);
                        dequantize_row(gt, v.data() + j * row_bytes, vdq.data() + j * n, n);
                    }
                    const int64_t ldp = n_cells + 3, ldo = n + 5;
                    std::vector<float> p(n_p * ldp);
                    for (float &e : p) e = std::uniform_real_distribution<float>(0.0f, 0.01f)(rng);
                    if (zeros) {
                        for (int j = j0; j < j1; j += 7)
                            for (int h = 0; h < n_p; ++h) p[h * ldp + j] = 0.0f;  // a cell nobody sees
                        for (int j = j0 + 3; j < j1; j += 11) p[(j % n_p) * ldp + j] = 0.0f;
                        if (type == RowType::F32)  // NaN values in the cells nobody sees
                            for (int j = j0; j < j1; j += 7) {
                                const float nan = std::nanf("");  // rows are 6 bytes apart: not aligned
                                std::memcpy(v.data() + j * row_bytes, &nan, sizeof nan);
                            }
                    }
                    std::vector<float> o0(n_p * ldo);
                    for (float &e : o0) e = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
                    std::vector<float> want = o0;
                    for (int h = 0; h < n_p; ++h)
                        for (int c = 0; c < n; ++c)
                            for (int j = j0; j < j1; ++j)
                                if (p[h * ldp + j] != 0.0f)
                                    want[h * ldo + c] =
                                        std::fma(p[h * ldp + j], vdq[j * n + c], want[h * ldo + c]);
                    std::vector<float> got = o0;
                    detail::weighted_rows_avx2(p.data(), ldp, n_p, v.data(), row_bytes, type, j0, j1,
                                               got.data(), ldo, n);
                    EXPECT_EQ(got, want) << "AVX2";
                    if (avx512) {
                        got = o0;
                        detail::weighted_rows_avx512(p.data(), ldp, n_p, v.data(), row_bytes, type, j0, j1,
                                                     got.data(), ldo, n);
                        EXPECT_EQ(got, want) << "AVX-512";
                    }
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}
#endif

TEST(OpsTest, SoftmaxAllMaskedGivesZeros) {
    std::vector<float> x = {1, 2, 3, 4, 5};
    std::vector<float> mask(5, -kInf);
    softmax(x.data(), mask.data(), 5, 1.0f);
    for (float v : x) EXPECT_EQ(v, 0.0f);
}

// Logits far above exp's range (attention scores of long contexts, a soft-capped head's 50s after scaling):
// softmax subtracts the row's maximum first, so nothing overflows. Every length, so that the vector bodies
// and their scalar tails (and the scalar level of `ctest -L scalar`) all see it.
TEST(OpsTest, SoftmaxOfLargeLogitsSubtractsTheMaximum) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_vec(n, 29 + n, 2.0f);
        for (float &v : x) v += 1000.0f;  // exp(1000) is inf in float and in double
        double mx = -1e300, sum = 0;
        for (float v : x) mx = std::max(mx, static_cast<double>(v));
        std::vector<double> want(n);
        for (int64_t i = 0; i < n; ++i) sum += want[i] = std::exp(static_cast<double>(x[i]) - mx);
        for (double &v : want) v /= sum;
        softmax(x.data(), nullptr, n, 1.0f);
        expect_close(x, want, 1e-5, 1e-7);
    }
}

// eps matters where the row's mean square is small: an all-zero row (a padded token) gives zeros, not
// 0 * inf = NaN, and a row of 1e-3 scales by 1/sqrt(1e-6 + 1e-5), not by 1000.
TEST(OpsTest, RmsNormEpsCountsForSmallRows) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const std::vector<float> zeros(n, 0.0f), w = random_vec(n, 31 + n);
        std::vector<float> y(n, 1.0f);
        rms_norm(zeros.data(), w.data(), y.data(), n, 1e-5f);
        for (float v : y) ASSERT_EQ(v, 0.0f);
        const std::vector<float> small(n, 1e-3f);
        const double inv = 1.0 / std::sqrt(1e-6 + 1e-5);
        std::vector<double> want(n);
        for (int64_t i = 0; i < n; ++i) want[i] = 1e-3 * inv * w[i];
        rms_norm(small.data(), w.data(), y.data(), n, 1e-5f);
        expect_close(y, want, 1e-5, 1e-6);
    }
}

// GELU as ggml computes it on the CPU (ops.h): the tanh approximation of x rounded to a half, rounded to a
// half.
double gelu_exact(double a) {
    return 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * a * (1.0 + 0.044715 * a * a)));
}
float gelu_ggml(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float h = fp16_to_fp32(fp32_to_fp16(x));
    return fp16_to_fp32(fp32_to_fp16(static_cast<float>(gelu_exact(h))));
}

TEST(OpsTest, GatedActivations) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const std::vector<float> g = random_vec(n, 21 + n, 4.0f), u = random_vec(n, 22 + n);
        std::vector<double> sw(n), si(n);
        std::vector<float> ge(n), gl(n);
        for (int64_t i = 0; i < n; ++i) {
            const double a = g[i];
            si[i] = a / (1.0 + std::exp(-a));
            sw[i] = si[i] * u[i];
            gl[i] = gelu_ggml(g[i]);
            ge[i] = gl[i] * u[i];
        }
        std::vector<float> y(n);
        swiglu(g.data(), u.data(), y.data(), n);
        expect_close(y, sw, 1e-5, 1e-6);
        y = g;  // in place on the gate, as the model calls it
        swiglu(y.data(), u.data(), y.data(), n);
        expect_close(y, sw, 1e-5, 1e-6);
        geglu(g.data(), u.data(), y.data(), n);
        EXPECT_EQ(y, ge);
        y = g;
        geglu(y.data(), u.data(), y.data(), n);  // in place
        EXPECT_EQ(y, ge);
        y = g;
        silu_inplace(y.data(), n);
        expect_close(y, si, 1e-5, 1e-6);
        y = g;
        gelu_inplace(y.data(), n);
        EXPECT_EQ(y, gl);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(gelu(g[i]), gl[i]);
    }
}

// The half table is GELU to a half's precision: two roundings of 2^-11 relative (the input's moves the value
// by at most |gelu'| <= 1.13 times its own), and the clamps at +-10 are where GELU is 0 and x to float
// precision.
TEST(OpsTest, GeluIsGeluToHalfPrecision) {
    std::vector<float> x;
    for (float v = -12.0f; v <= 12.0f; v += 0.0137f) x.push_back(v);
    for (float v : {-10.0f, -9.999f, 10.0f, 9.999f, 0.0f, -0.0f, 1e-6f, -1e-6f, 1e-30f, 100.0f, -100.0f})
        x.push_back(v);
    std::vector<float> y = x;
    gelu_inplace(y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        const double want = gelu_exact(x[i]);
        EXPECT_NEAR(y[i], want, (std::fabs(want) + 1.13 * std::fabs(x[i])) * 0x1p-11 + 1e-7) << x[i];
        EXPECT_EQ(y[i], gelu_ggml(x[i])) << x[i];
    }
}

// GELU depends on x through its half alone: every half between -12 and 12, floats between halves and values
// past a half's range give gelu()'s bits (the table, ops.h) through gelu_inplace and geglu at this level (the
// vector code's gathers, the scalar tail).
TEST(OpsTest, GeluHasTheTablesBitsForEveryHalf) {
    std::vector<float> x;
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float v = fp16_to_fp32(static_cast<fp16_t>(b));
        if (std::fabs(v) <= 12.0f) x.push_back(v);
    }
    std::mt19937 rng(97);
    std::uniform_real_distribution<float> u(-11.0f, 11.0f);
    for (int i = 0; i < 20000; ++i) x.push_back(u(rng));
    x.push_back(std::numeric_limits<float>::infinity());
    x.push_back(-std::numeric_limits<float>::infinity());
    x.push_back(70000.0f);
    x.push_back(-70000.0f);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y = x, ones(x.size(), 1.0f), z(x.size());
    gelu_inplace(y.data(), n);
    geglu(x.data(), ones.data(), z.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        const float want = gelu(x[i]);
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want))
            << x[i] << " (element " << i << ")";
        ASSERT_EQ(std::bit_cast<uint32_t>(z[i]), std::bit_cast<uint32_t>(want))
            << x[i] << " (element " << i << ")";
    }
}

// Every half, in a row long enough for the vector code and its tail, converts as fp16_to_fp32 does (NaNs
// stay NaNs with their sign).
TEST(OpsTest, HalvesConvertExactly) {
    std::vector<uint16_t> h(0x10000 + 5);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
    std::vector<float> y(h.size());
    f16_to_f32(h.data(), y.data(), static_cast<int64_t>(h.size()));
    for (size_t i = 0; i < h.size(); ++i) {
        const float want = fp16_to_fp32(static_cast<fp16_t>(h[i]));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(y[i])) << "half " << h[i];
            ASSERT_EQ(std::signbit(y[i]), std::signbit(want)) << "half " << h[i];
        } else {
            ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want)) << "half " << h[i];
        }
    }
}

TEST(OpsTest, Softcap) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_vec(n, 41 + n, 40.0f);
        x[0] = 1e-4f;                          // near 0 the tanh of a small value
        if (n > 2) x[1] = 1e4f, x[2] = -1e4f;  // saturates at +-cap
        for (float cap : {5.0f, 30.0f}) {
            for (float scale : {1.0f, 0.125f}) {
                std::vector<double> want(n);
                for (int64_t i = 0; i < n; ++i)
                    want[i] = cap * std::tanh(static_cast<double>(x[i]) * scale / cap);
                std::vector<float> y = x;
                softcap(y.data(), n, cap, scale);
                // the vector tanh: an absolute error of a few 1e-8 (times the cap), relative 1e-6
                expect_close(y, want, 1e-6, cap * 2e-7);
                for (float v : y) EXPECT_LE(std::fabs(v), cap);
            }
        }
    }
}

// With ALiBi the mask holds -|pos_q - pos_k| and the head's slope multiplies it: softmax(x * scale + slope *
// m).
TEST(OpsTest, SoftmaxWithSlope) {
    for (int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const std::vector<float> x = random_vec(n, 51 + n, 3.0f);
        std::vector<float> mask(n);
        for (int64_t i = 0; i < n; ++i) mask[i] = i % 7 == 3 ? -kInf : -static_cast<float>(n - 1 - i);
        mask[n - 1] = 0.0f;
        const float scale = 0.125f, slope = 0.0625f;
        double mx = -1e300, sum = 0;
        std::vector<double> want(n, 0.0);
        for (int64_t i = 0; i < n; ++i)
            if (mask[i] != -kInf) mx = std::max(mx, double(x[i]) * scale + double(slope) * mask[i]);
        for (int64_t i = 0; i < n; ++i)
            if (mask[i] != -kInf)
                sum += want[i] = std::exp(double(x[i]) * scale + double(slope) * mask[i] - mx);
        for (double &v : want) v /= sum;
        std::vector<float> y = x;
        softmax(y.data(), mask.data(), n, scale, slope);
        expect_close(y, want, 1e-5, 1e-7);
        // a slope of 1 is the plain mask, bit for bit
        std::vector<float> a = x, b = x;
        softmax(a.data(), mask.data(), n, scale);
        softmax(b.data(), mask.data(), n, scale, 1.0f);
        EXPECT_EQ(a, b);
    }
}

// The row steps of a forward pass split big batches across threads: every row keeps the values of the
// single-row function, however the rows are shared out.
TEST(OpsTest, RowStepsGiveTheSingleRowValues) {
    const int64_t n_rows = 37, n = 2051;  // above the size that goes parallel
    const std::vector<float> x = random_vec(n_rows * n, 61, 3.0f), u = random_vec(n_rows * n, 62);
    const std::vector<float> w = random_vec(n, 63), b = random_vec(n, 64);
    ThreadPool pool(2);
    std::vector<float> got(x.size()), want(x.size());

    layer_norm_rows(x.data(), w.data(), b.data(), got.data(), n_rows, n, 1e-5f, pool);
    for (int64_t r = 0; r < n_rows; ++r)
        layer_norm(x.data() + r * n, w.data(), b.data(), want.data() + r * n, n, 1e-5f);
    EXPECT_EQ(got, want);

    geglu_rows(x.data(), u.data(), got.data(), n_rows, n, pool);
    for (int64_t r = 0; r < n_rows; ++r) geglu(x.data() + r * n, u.data() + r * n, want.data() + r * n, n);
    EXPECT_EQ(got, want);

    got = x;
    gelu_rows(got.data(), n_rows, n, pool);
    want = x;
    for (int64_t r = 0; r < n_rows; ++r) gelu_inplace(want.data() + r * n, n);
    EXPECT_EQ(got, want);

    got = x;
    softcap_rows(got.data(), n_rows, n, 2.5f, pool);
    want = x;
    for (int64_t r = 0; r < n_rows; ++r) softcap(want.data() + r * n, n, 2.5f);
    EXPECT_EQ(got, want);

    // a bias over the first n - 5 values of each row (rows n apart): the last 5 of each row untouched
    got = x;
    add_row_to_rows(got.data(), n, b.data(), n_rows, n - 5, pool);
    want = x;
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t i = 0; i < n - 5; ++i) want[r * n + i] += b[i];
    EXPECT_EQ(got, want);
}

TEST(OpsTest, SiluExtremes) {
    std::vector<float> x = {-100.0f, -88.0f, -20.0f, 0.0f, 20.0f, 88.0f, 100.0f, 1e-30f};
    std::vector<float> y = x;
    silu_inplace(y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        const double want = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
        EXPECT_NEAR(y[i], want, 1e-5 * std::fabs(want) + 1e-30) << x[i];
        EXPECT_TRUE(std::isfinite(y[i]));
    }
}

TEST(OpsTest, AddScaleMul) {
    for (int64_t n : kLengths) {
        const std::vector<float> a = random_vec(n, 31 + n), b = random_vec(n, 32 + n);
        std::vector<float> y = a;
        add_inplace(y.data(), b.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], a[i] + b[i]);
        y = a;
        scale_inplace(y.data(), 0.3f, n);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], a[i] * 0.3f);
        y = a;
        mul_inplace(y.data(), b.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], a[i] * b[i]);
    }
}

}  // namespace
}  // namespace lctx::kernels::ops_test

namespace lctx::kernels::ops_test {
namespace {

// ReLU keeps a positive value's bits and gives +0 for everything else (negatives, -0, NaN), at every length
// (the vector body and the tail).
TEST(OpsTest, ReluKeepsPositivesAndZeroesTheRest) {
    for (int64_t n : {0, 1, 7, 8, 31, 32, 33, 100}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 11) - 5.25f;
        if (n > 5) {
            x[1] = -0.0f;
            x[2] = std::nanf("");
            x[3] = 1e-40f;  // a denormal stays
            x[4] = -std::numeric_limits<float>::infinity();
        }
        std::vector<float> y = x;
        relu_inplace(y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const float want = x[i] > 0.0f ? x[i] : 0.0f;
            EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want)) << n << " " << i;
        }
    }
}

}  // namespace
}  // namespace lctx::kernels::ops_test
