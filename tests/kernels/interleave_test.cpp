// Interleaved weights (kernels/interleave.h): the layout round-trips every row byte for byte in groups of 8
// and 16 rows, and the interleaved gemm of every ISA this CPU runs matches an exact evaluation of the plain
// rows' block formula, with a value that does not depend on the tile an output falls in, nor (integer
// types) on the group size. matmul over an interleaved view is
// checked against the exact value too (its summation order differs from the plain kernels', so not bit for
// bit).
#include "kernels/interleave.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dot_test_util.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "tensor/fp16.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::kernels::interleave_test {
namespace {

struct Mat {
    GgmlType type;
    int64_t rows, cols;
    size_t row_bytes;         // plain
    size_t packed_row_bytes;  // interleaved_row_bytes
    std::vector<uint8_t> plain, packed;
};

Mat make_mat(GgmlType t, int64_t rows, int64_t cols, uint32_t seed, int group) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> mag(-1.0f, 1.0f);
    Mat m{t, rows, cols, row_size(t, cols), interleaved_row_bytes(t, cols), {}, {}};
    m.plain.resize(m.row_bytes * rows);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        const float s = std::pow(10.0f, mag(rng));
        for (float &v : row) v = normal(rng) * s;
        // Outliers push other elements to the extreme codes, which must survive the layout.
        if (r % 3 == 0) row[0] = 50.0f * s;
        if (r % 5 == 1) row[cols - 1] = -60.0f * s;
        quantize_row(t, row.data(), m.plain.data() + r * m.row_bytes, cols);
    }
    m.packed.resize(m.packed_row_bytes * interleaved_rows(rows, group));
    interleave_rows(t, group, m.plain.data(), m.row_bytes, rows, cols, m.packed.data());
    return m;
}

std::vector<uint8_t> make_act(GgmlType t, int64_t n_act, int64_t cols, uint32_t seed, size_t *act_row) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const GgmlType at = type_traits(t).vec_dot_type;
    *act_row = row_size(at, cols);
    std::vector<uint8_t> act(*act_row * n_act);
    std::vector<float> x(cols);
    for (int64_t c = 0; c < n_act; ++c) {
        for (float &v : x) v = normal(rng);
        quantize_row(at, x.data(), act.data() + c * *act_row, cols);
    }
    return act;
}

double bound(int64_t cols, double abs_sum) {
    return (8.0 * (cols / 32) + 20) * 0x1p-24 * abs_sum;
}

constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_K,
                               GgmlType::Q6_K, GgmlType::F32,  GgmlType::F16,  GgmlType::BF16};

// Columns: a few blocks, odd block counts, and a real model width.
std::vector<int64_t> cols_for(GgmlType t) {
    const int64_t bs = interleave_block_elems(t);
    // F32 / F16 / BF16 also 69 blocks: the staged kernel's chunks of 64 blocks and a short last one.
    if (bs == 8) return {bs, 3 * bs, 69 * bs, 2048};
    return {bs, 3 * bs, bs == 256 ? 2304 : 2048};
}

TEST(Interleave, Eligibility) {
    EXPECT_TRUE(can_interleave(GgmlType::Q4_0, 8, 32));
    EXPECT_TRUE(can_interleave(GgmlType::Q8_0, 2048, 5632));
    EXPECT_TRUE(can_interleave(GgmlType::Q4_0, 12, 64));  // a padded last group
    EXPECT_EQ(interleaved_rows(12, 8), 16);
    EXPECT_EQ(interleaved_rows(16, 8), 16);
    EXPECT_EQ(interleaved_rows(12, 16), 16);
    EXPECT_EQ(interleaved_rows(17, 16), 32);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        EXPECT_TRUE(has_group_layout(t, 8)) << type_name(t);
        EXPECT_TRUE(has_group_layout(t, 16)) << type_name(t);
    }
    EXPECT_TRUE(has_group_layout(GgmlType::F16, 8));
    EXPECT_FALSE(has_group_layout(GgmlType::F16, 16));  // two rows per 512-bit register instead
    EXPECT_FALSE(has_group_layout(GgmlType::Q4_0, 4));
    EXPECT_TRUE(can_interleave(GgmlType::Q4_K, 8, 256));
    EXPECT_FALSE(can_interleave(GgmlType::Q4_K, 8, 288));  // not whole super-blocks
    EXPECT_FALSE(can_interleave(GgmlType::Q5_K, 8, 256));  // no interleaved layout
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q4_0, 64), row_size(GgmlType::Q4_0, 64));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q6_K, 512), row_size(GgmlType::Q6_K, 512));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q4_K, 512), 2 * sizeof(block_q4_KxG<16>) / 16);
    EXPECT_TRUE(can_interleave(GgmlType::F16, 8, 64));
    EXPECT_TRUE(can_interleave(GgmlType::BF16, 3, 2048));
    EXPECT_FALSE(can_interleave(GgmlType::F16, 8, 60));  // not whole 8-element blocks
    EXPECT_TRUE(can_interleave(GgmlType::F32, 8, 64));
    EXPECT_FALSE(can_interleave(GgmlType::F32, 8, 60));
    EXPECT_FALSE(has_group_layout(GgmlType::F32, 16));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::F32, 64), row_size(GgmlType::F32, 64));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::F16, 64), row_size(GgmlType::F16, 64));
    EXPECT_FALSE(can_interleave(GgmlType::Q4_0, 0, 32));
    std::vector<uint8_t> buf(row_size(GgmlType::Q4_K, 256) * 8);
    EXPECT_THROW(
        interleave_rows(GgmlType::Q5_K, 8, buf.data(), row_size(GgmlType::Q5_K, 256), 8, 256, buf.data()),
        Error);
    EXPECT_THROW(
        interleave_rows(GgmlType::F16, 16, buf.data(), row_size(GgmlType::F16, 256), 8, 256, buf.data()),
        Error);
}

TEST(Interleave, RoundTripsEveryRow) {
    for (int group : {8, 16}) {
        for (GgmlType t : kTypes) {
            if (!has_group_layout(t, group)) continue;
            const Mat m = make_mat(t, 40, 3 * interleave_block_elems(t), 3, group);
            EXPECT_NE(m.plain, m.packed);
            std::vector<uint8_t> row(m.row_bytes);
            for (int64_t r = 0; r < m.rows; ++r) {
                deinterleave_row(t, group, m.packed.data(), m.packed_row_bytes, r, m.cols, row.data());
                ASSERT_EQ(0, std::memcmp(row.data(), m.plain.data() + r * m.row_bytes, m.row_bytes))
                    << type_name(t) << " group " << group << " row " << r;
            }
        }
    }
}

class GemmInterleavedTest : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {};

TEST_P(GemmInterleavedTest, MatchesExactAndIsTileInvariant) {
    const auto [t, isa] = GetParam();
    const TypeKernels &k = type_kernels(t, isa);
    ASSERT_NE(k.gemm_interleaved, nullptr);
    const int g = k.group_rows;
    ASSERT_TRUE(has_group_layout(t, g));
    uint32_t seed = 11;
    for (int64_t cols : cols_for(t)) {
        for (int64_t rows : {g, 2 * g, 5 * g}) {
            // 6, 8: the 512-bit 32-element types' tiles of up to 8 activations (batched decodes); 16+: AMX
            // tiles and their tail
            for (int64_t n_act : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 35}) {
                SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " acts " +
                             std::to_string(n_act));
                const Mat m = make_mat(t, rows, cols, seed++, g);
                size_t act_row = 0;
                const std::vector<uint8_t> act = make_act(t, n_act, cols, seed++, &act_row);
                const int64_t ldy = rows + 3;
                std::vector<float> y(n_act * ldy, -7.0f);
                k.gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row,
                                   n_act, y.data(), ldy);
                for (int64_t c = 0; c < n_act; ++c) {
                    float one[kMaxGroupRows];  // the current group's outputs for this activation alone
                    for (int64_t r = 0; r < ldy; ++r) {
                        const float got = y[c * ldy + r];
                        if (r >= rows) {
                            ASSERT_EQ(got, -7.0f) << "wrote past the rows";
                            continue;
                        }
                        const test::TermSum e = test::exact_dot(t, cols, m.plain.data() + r * m.row_bytes,
                                                                act.data() + c * act_row);
                        ASSERT_LE(std::fabs(got - e.sum), bound(cols, e.abs)) << "act " << c << " row " << r;
                        // The same output alone (one group, one activation) has the same bits; each group
                        // is computed alone once, at its first row.
                        const int64_t g0 = r / g * g;
                        if (r == g0)
                            k.gemm_interleaved(cols, m.packed.data() + g0 * m.packed_row_bytes,
                                               m.packed_row_bytes, g, act.data() + c * act_row, act_row, 1,
                                               one, g);
                        ASSERT_EQ(got, one[r - g0]) << "act " << c << " row " << r;
                    }
                }
            }
        }
    }
}

#if defined(__x86_64__)  // the x86 levels' tile widths (their files are compiled on x86 only)
// A batched decode step (one token of each of up to 8 sequences) reads each weight group once: the 512-bit
// tiles of the 32-element integer types take 8 activations (the 256-bit ones 4, all their registers hold).
TEST(Interleave, BatchedDecodeTilesTakeEightActivations) {
    if (!isa_at_least(isa_detected(), Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0}) {
        EXPECT_GE(detail::interleaved_tile_acts_avx2(t), 4) << type_name(t);
        if (isa_at_least(isa_detected(), Isa::Avx512)) {
            EXPECT_GE(detail::interleaved_tile_acts_avx512(t), 8) << type_name(t);
        }
    }
    if (isa_at_least(isa_detected(), Isa::Avx512)) {
        EXPECT_GE(detail::interleaved_tile_acts_avx512(GgmlType::Q6_K), 4);  // 8 activations in two passes
    }
    EXPECT_EQ(detail::interleaved_tile_acts_avx512(GgmlType::F16), 0);
}
#endif

// The 512-bit kernels over 16-row groups give every row of an integer type the bits the 256-bit kernels
// give it over 8-row groups (exact integer sums, the same float steps): the two levels agree exactly.
TEST(Interleave, SixteenRowGroupsGiveTheEightRowValues) {
    if (!isa_at_least(isa_detected(), Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        SCOPED_TRACE(type_name(t));
        const TypeKernels &k8 = type_kernels(t, Isa::Avx2), &k16 = type_kernels(t, Isa::Avx512);
        ASSERT_EQ(k8.group_rows, 8);
        ASSERT_EQ(k16.group_rows, 16);
        const int64_t rows = 48, cols = cols_for(t).back(), n_act = 5;
        const Mat m8 = make_mat(t, rows, cols, 21, 8), m16 = make_mat(t, rows, cols, 21, 16);
        ASSERT_EQ(m8.plain, m16.plain);
        size_t act_row = 0;
        const std::vector<uint8_t> act = make_act(t, n_act, cols, 22, &act_row);
        std::vector<float> y8(n_act * rows), y16(n_act * rows);
        k8.gemm_interleaved(cols, m8.packed.data(), m8.packed_row_bytes, rows, act.data(), act_row, n_act,
                            y8.data(), rows);
        k16.gemm_interleaved(cols, m16.packed.data(), m16.packed_row_bytes, rows, act.data(), act_row, n_act,
                             y16.data(), rows);
        EXPECT_EQ(y8, y16);
    }
}

// ARM64: the three levels compute the same integer sums (widening multiplies, SDOT by lane, SMMLA on zipped
// line pairs) and take the same float steps per output, so their interleaved gemms agree bit for bit, for an
// odd activation count too (the i8mm level's last activation goes through the dotprod kernel; its K-quants
// are the dotprod level's, its float types the NEON level's). Every layout has an ARM kernel (not the
// scalar one that de-interleaves the group).
TEST(Interleave, ArmLevelsGiveTheSameBits) {
    if (!isa_at_least(isa_detected(), Isa::Dotprod)) GTEST_SKIP() << "no dotprod on this CPU";
    std::vector<Isa> levels = {Isa::Neon, Isa::Dotprod};
    if (isa_at_least(isa_detected(), Isa::I8mm)) levels.push_back(Isa::I8mm);
    for (GgmlType t : kTypes) {
        SCOPED_TRACE(type_name(t));
        const int64_t rows = 24, cols = type_traits(t).block_size == 256 ? 512 : 160;
        const Mat m = make_mat(t, rows, cols, 41, 8);
        for (int64_t n_act : {1, 2, 5}) {
            size_t act_row = 0;
            const std::vector<uint8_t> act = make_act(t, n_act, cols, 42, &act_row);
            std::vector<float> want;
            for (Isa isa : levels) {
                const TypeKernels &k = type_kernels(t, isa);
                ASSERT_EQ(k.group_rows, 8) << isa_name(isa);
                std::vector<float> got(n_act * rows, -1.0f);
                k.gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row,
                                   n_act, got.data(), rows);
                if (want.empty())
                    want = got;
                else
                    EXPECT_EQ(got, want) << isa_name(isa) << ", " << n_act << " activations";
            }
            EXPECT_NE(type_kernels(t, levels.back()).gemm_interleaved,
                      type_kernels(t, Isa::Scalar).gemm_interleaved);
        }
    }
}

// The float groups keep each output's 8 lane sums in the plain tiles' order: at the 256-bit level an
// interleaved matrix gives the bits of its plain rows (so a model's values do not change with the layout),
// and the 512-bit F32 / F16 kernels (two rows per register) give the 256-bit ones' bits.
TEST(Interleave, FloatGroupsGiveThePlainTilesBits) {
    if (!isa_at_least(isa_detected(), Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
    const bool avx512 = isa_at_least(isa_detected(), Isa::Avx512);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        SCOPED_TRACE(type_name(t));
        const TypeKernels &k = type_kernels(t, Isa::Avx2);
        for (auto [cols, n_act] :
             {std::pair<int64_t, int64_t>{2048, 1}, {2048, 3}, {24, 2}, {552, 5}, {1576, 9}}) {
            const int64_t rows = 24;
            const Mat m = make_mat(t, rows, cols, 31, 8);
            size_t act_row = 0;
            const std::vector<uint8_t> act = make_act(t, n_act, cols, 32, &act_row);
            std::vector<float> yi(n_act * rows), yp(n_act * rows, -1.0f);
            k.gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row, n_act,
                               yi.data(), rows);
            k.gemm(cols, m.plain.data(), m.row_bytes, rows, act.data(), act_row, n_act, yp.data(), rows);
            EXPECT_EQ(yi, yp) << cols << " columns, " << n_act << " activations";
            if (avx512 && t != GgmlType::BF16) {  // BF16's 512-bit kernel adds pairs in vdpbf16ps
                std::vector<float> y5(n_act * rows, -1.0f);
                type_kernels(t, Isa::Avx512)
                    .gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row,
                                      n_act, y5.data(), rows);
                EXPECT_EQ(y5, yi) << cols << " columns, " << n_act << " activations (512-bit)";
            }
        }
    }
}

// Where a level's interleaved kernel takes activations in a wide form (TypeKernels::gemm_interleaved_wide:
// F16 at avx512), each value converts as quantize_act's does (NaN, infinities, overflow, subnormals), and the
// products are the plain form's bit for bit, for every activation count (tiles of 1-6, chunks past 128) and
// column count (a block, odd blocks, a model's width).
TEST(Interleave, WideActivationsGiveTheNarrowBits) {
    int levels = 0;
    for (Isa isa : test::available_interleaved_isas()) {
        const TypeKernels &k = type_kernels(GgmlType::F16, isa);
        if (!k.gemm_interleaved_wide) continue;
        SCOPED_TRACE(isa_name(isa));
        ++levels;
        ASSERT_NE(k.quantize_act_wide, nullptr);
        std::vector<float> x;
        for (uint32_t b = 0; b < 0x10000; b += 7) x.push_back(fp16_to_fp32(static_cast<fp16_t>(b)));
        for (float v : {65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f, 3e-8f, -6e-8f, 1e-30f, 0.0f, -0.0f,
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()})
            x.push_back(v);
        std::mt19937 rng(11);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (int i = 0; i < 1001; ++i) x.push_back(normal(rng));  // an odd count: the tail too
        const auto n = static_cast<int64_t>(x.size());
        std::vector<fp16_t> h(n);
        std::vector<float> wide(n);
        k.quantize_act(x.data(), h.data(), n);
        k.quantize_act_wide(x.data(), wide.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(fp16_to_fp32(h[i])))
                << x[i] << " (element " << i << ")";

        for (int64_t cols : {8, 24, 552, 2048}) {
            const int64_t rows = 3 * k.group_rows;
            const Mat m = make_mat(GgmlType::F16, rows, cols, 13, k.group_rows);
            for (int64_t n_act : {1, 3, 6, 7, 13, 130}) {
                std::vector<float> a(n_act * cols);
                for (float &v : a) v = normal(rng);
                std::vector<fp16_t> an(a.size());
                std::vector<float> aw(a.size()), yn(n_act * rows), yw(n_act * rows, -1.0f);
                for (int64_t c = 0; c < n_act; ++c) {
                    k.quantize_act(a.data() + c * cols, an.data() + c * cols, cols);
                    k.quantize_act_wide(a.data() + c * cols, aw.data() + c * cols, cols);
                }
                k.gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, an.data(), 2 * cols,
                                   n_act, yn.data(), rows);
                k.gemm_interleaved_wide(cols, m.packed.data(), m.packed_row_bytes, rows, aw.data(), 4 * cols,
                                        n_act, yw.data(), rows);
                ASSERT_EQ(yw, yn) << cols << " columns, " << n_act << " activations";
            }
        }
    }
    if (levels == 0) GTEST_SKIP() << "no AVX-512 on this CPU";  // the one level with a wide form
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GgmlType, Isa>> &info) {
    return std::string(type_name(std::get<0>(info.param))) + "_" + isa_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Types, GemmInterleavedTest,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(test::available_interleaved_isas())),
                         param_name);

// Calls with many activations (a prompt's token chunk): the 512-bit F16 / BF16 kernels go chunk by chunk
// over k once the activations outgrow L2, the 256-bit staged one always, through lane sums kept between
// chunks, a block of groups at a time, with the next weights prefetched. Every output still has the bits of
// the same output computed alone, and the exact value within the rounding bound. 40 rows: a block of 4
// groups and one more; 2048 columns: whole chunks; 1576: 197 blocks in uneven ones.
class GemmInterleavedFloatCallTest : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {};

TEST_P(GemmInterleavedFloatCallTest, LargeCallsKeepTheBitsOfOneOutputAlone) {
    const auto [t, isa] = GetParam();
    const TypeKernels &k = type_kernels(t, isa);
    ASSERT_NE(k.gemm_interleaved, nullptr);
    const int g = k.group_rows;
    uint32_t seed = 71;
    for (auto [cols, n_act] : {std::pair<int64_t, int64_t>{2048, 100}, {1576, 130}}) {
        SCOPED_TRACE(std::to_string(cols) + " columns, " + std::to_string(n_act) + " activations");
        const int64_t rows = 40;
        const Mat m = make_mat(t, rows, cols, seed++, g);
        size_t act_row = 0;
        const std::vector<uint8_t> act = make_act(t, n_act, cols, seed++, &act_row);
        std::vector<float> y(n_act * rows);
        k.gemm_interleaved(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row, n_act,
                           y.data(), rows);
        for (int64_t c = 0; c < n_act; ++c) {
            for (int64_t g0 = 0; g0 < rows; g0 += g) {
                float one[kMaxGroupRows];
                k.gemm_interleaved(cols, m.packed.data() + g0 * m.packed_row_bytes, m.packed_row_bytes, g,
                                   act.data() + c * act_row, act_row, 1, one, g);
                for (int64_t r = g0; r < g0 + g; ++r) {
                    ASSERT_EQ(y[c * rows + r], one[r - g0]) << "act " << c << " row " << r;
                    if ((c * rows + r) % 7 != 0) continue;  // the exact value for a sample
                    const test::TermSum e =
                        test::exact_dot(t, cols, m.plain.data() + r * m.row_bytes, act.data() + c * act_row);
                    ASSERT_LE(std::fabs(y[c * rows + r] - e.sum), bound(cols, e.abs))
                        << "act " << c << " row " << r;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, GemmInterleavedFloatCallTest,
                         ::testing::Combine(::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16),
                                            ::testing::ValuesIn(test::available_interleaved_isas())),
                         param_name);

// matmul over an interleaved view, threaded, with token counts across the chunk size, against the exact
// value; a row of the view reads back through weight_row_to_f32 like the plain row.
TEST(Interleave, MatmulOverInterleavedView) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    for (GgmlType t : kTypes) {
        const int64_t rows = 136, cols = 512;
        const int group = type_kernels(t).group_rows;
        const Mat m = make_mat(t, rows, cols, 77, group);
        WeightView w{t, m.packed.data(), rows, cols, m.packed_row_bytes, group};
        for (int64_t n_tok : {1, 5, 70}) {
            std::mt19937 rng(5);
            std::normal_distribution<float> normal(0.0f, 1.0f);
            std::vector<float> x(n_tok * cols), y(n_tok * rows);
            for (float &v : x) v = normal(rng);
            matmul(w, x.data(), cols, n_tok, y.data(), rows, pool, scratch);
            const GgmlType at = type_traits(t).vec_dot_type;
            std::vector<uint8_t> a(row_size(at, cols));
            for (int64_t i = 0; i < n_tok; ++i) {
                quantize_row(at, x.data() + i * cols, a.data(), cols);
                for (int64_t r = 0; r < rows; ++r) {
                    const test::TermSum e =
                        test::exact_dot(t, cols, m.plain.data() + r * m.row_bytes, a.data());
                    ASSERT_LE(std::fabs(y[i * rows + r] - e.sum), bound(cols, e.abs))
                        << type_name(t) << " token " << i << " row " << r;
                }
            }
        }
        std::vector<float> got(cols), want(cols);
        for (int64_t r : {0, 7, 8, 15, 16, 135}) {
            weight_row_to_f32(w, r, got.data());
            dequantize_row(t, m.plain.data() + r * m.row_bytes, want.data(), cols);
            EXPECT_EQ(got, want) << "row " << r;
        }
    }
}

// A row count that is not a multiple of the group (a vocabulary): the last group is zero-padded, matmul
// writes only the real rows, and q/k/v-style calls sharing one input give the values of separate calls.
TEST(Interleave, PaddedLastGroupAndSharedInput) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    for (GgmlType t : kTypes) {
        SCOPED_TRACE(type_name(t));
        const int64_t cols = 2 * interleave_block_elems(t);
        const int64_t rows_a = 77, rows_b = 24, rows_c = 5;
        const int group = type_kernels(t).group_rows;
        const Mat a = make_mat(t, rows_a, cols, 1, group), b = make_mat(t, rows_b, cols, 2, group),
                  c = make_mat(t, rows_c, cols, 3, group);
        EXPECT_EQ(a.packed.size(), a.packed_row_bytes * interleaved_rows(rows_a, group));
        const WeightView wa{t, a.packed.data(), rows_a, cols, a.packed_row_bytes, group};
        const WeightView wb{t, b.packed.data(), rows_b, cols, b.packed_row_bytes, group};
        const WeightView wc{t, c.plain.data(), rows_c, cols, c.row_bytes, 0};  // a plain one in the same call
        for (int64_t n_tok : {1, 3, 67}) {
            std::mt19937 rng(9);
            std::normal_distribution<float> normal(0.0f, 1.0f);
            std::vector<float> x(n_tok * cols);
            for (float &v : x) v = normal(rng);
            const int64_t lda = rows_a + 2, ldb = rows_b, ldc = rows_c + 1;
            std::vector<float> ya(n_tok * lda, -3.0f), yb(n_tok * ldb), yc(n_tok * ldc, -3.0f);
            const MatmulOutput outs[] = {{&wa, ya.data(), lda}, {&wb, yb.data(), ldb}, {&wc, yc.data(), ldc}};
            matmul_shared_input(outs, 3, x.data(), cols, n_tok, pool, scratch);
            std::vector<float> sa(n_tok * lda, -3.0f), sb(n_tok * ldb), sc(n_tok * ldc, -3.0f);
            matmul(wa, x.data(), cols, n_tok, sa.data(), lda, pool, scratch);
            matmul(wb, x.data(), cols, n_tok, sb.data(), ldb, pool, scratch);
            matmul(wc, x.data(), cols, n_tok, sc.data(), ldc, pool, scratch);
            EXPECT_EQ(ya, sa);
            EXPECT_EQ(yb, sb);
            EXPECT_EQ(yc, sc);
            const GgmlType at = type_traits(t).vec_dot_type;
            std::vector<uint8_t> q(row_size(at, cols));
            for (int64_t i = 0; i < n_tok; ++i) {
                quantize_row(at, x.data() + i * cols, q.data(), cols);
                for (int64_t r = 0; r < lda; ++r) {
                    const float got = ya[i * lda + r];
                    if (r >= rows_a) {
                        ASSERT_EQ(got, -3.0f) << "wrote past the rows";
                        continue;
                    }
                    const test::TermSum e =
                        test::exact_dot(t, cols, a.plain.data() + r * a.row_bytes, q.data());
                    ASSERT_LE(std::fabs(got - e.sum), bound(cols, e.abs)) << "token " << i << " row " << r;
                }
            }
        }
        std::vector<float> got(cols), want(cols);
        weight_row_to_f32(wa, rows_a - 1, got.data());
        dequantize_row(t, a.plain.data() + (rows_a - 1) * a.row_bytes, want.data(), cols);
        EXPECT_EQ(got, want);
    }
}

}  // namespace
}  // namespace lctx::kernels::interleave_test
