// Interleaved weights (kernels/interleave.h): the layout round-trips every row byte for byte, and the
// gemm_x8 kernel of every ISA this CPU runs matches an exact evaluation of the plain rows' block formula,
// with a value that does not depend on the tile an output falls in. matmul over an interleaved view is
// checked against the exact value too (its summation order differs from the plain kernels', so not bit for
// bit).
#include "kernels/interleave.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dot_test_util.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::kernels {
namespace {

struct Mat {
    GgmlType type;
    int64_t rows, cols;
    size_t row_bytes;         // plain
    size_t packed_row_bytes;  // interleaved_row_bytes
    std::vector<uint8_t> plain, packed;
};

Mat make_mat(GgmlType t, int64_t rows, int64_t cols, uint32_t seed) {
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
    m.packed.resize(m.packed_row_bytes * interleaved_rows(rows));
    interleave_rows(t, m.plain.data(), m.row_bytes, rows, cols, m.packed.data());
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
                               GgmlType::Q6_K, GgmlType::F16,  GgmlType::BF16};

// Columns: a few blocks, odd block counts, and a real model width.
std::vector<int64_t> cols_for(GgmlType t) {
    const int64_t bs = interleave_block_elems(t);
    return {bs, 3 * bs, bs == 256 ? 2304 : 2048};
}

TEST(Interleave, Eligibility) {
    EXPECT_TRUE(can_interleave(GgmlType::Q4_0, 8, 32));
    EXPECT_TRUE(can_interleave(GgmlType::Q8_0, 2048, 5632));
    EXPECT_TRUE(can_interleave(GgmlType::Q4_0, 12, 64));  // a padded last group
    EXPECT_EQ(interleaved_rows(12), 16);
    EXPECT_EQ(interleaved_rows(16), 16);
    EXPECT_TRUE(can_interleave(GgmlType::Q4_K, 8, 256));
    EXPECT_FALSE(can_interleave(GgmlType::Q4_K, 8, 288));  // not whole super-blocks
    EXPECT_FALSE(can_interleave(GgmlType::Q5_K, 8, 256));  // no interleaved layout
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q4_0, 64), row_size(GgmlType::Q4_0, 64));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q6_K, 512), row_size(GgmlType::Q6_K, 512));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::Q4_K, 512), 2 * sizeof(block_q4_Kx8) / 8);
    EXPECT_TRUE(can_interleave(GgmlType::F16, 8, 64));
    EXPECT_TRUE(can_interleave(GgmlType::BF16, 3, 2048));
    EXPECT_FALSE(can_interleave(GgmlType::F16, 8, 60));  // not whole 8-element blocks
    EXPECT_FALSE(can_interleave(GgmlType::F32, 8, 64));
    EXPECT_EQ(interleaved_row_bytes(GgmlType::F16, 64), row_size(GgmlType::F16, 64));
    EXPECT_FALSE(can_interleave(GgmlType::Q4_0, 0, 32));
    std::vector<uint8_t> buf(row_size(GgmlType::Q4_K, 256) * 8);
    EXPECT_THROW(
        interleave_rows(GgmlType::Q5_K, buf.data(), row_size(GgmlType::Q5_K, 256), 8, 256, buf.data()),
        Error);
}

TEST(Interleave, RoundTripsEveryRow) {
    for (GgmlType t : kTypes) {
        const Mat m = make_mat(t, 24, 3 * interleave_block_elems(t), 3);
        EXPECT_NE(m.plain, m.packed);
        std::vector<uint8_t> row(m.row_bytes);
        for (int64_t r = 0; r < m.rows; ++r) {
            deinterleave_row(t, m.packed.data(), m.packed_row_bytes, r, m.cols, row.data());
            ASSERT_EQ(0, std::memcmp(row.data(), m.plain.data() + r * m.row_bytes, m.row_bytes))
                << type_name(t) << " row " << r;
        }
    }
}

class GemmX8Test : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {};

TEST_P(GemmX8Test, MatchesExactAndIsTileInvariant) {
    const auto [t, isa] = GetParam();
    const TypeKernels &k = type_kernels(t, isa);
    ASSERT_NE(k.gemm_x8, nullptr);
    uint32_t seed = 11;
    for (int64_t cols : cols_for(t)) {
        for (int64_t rows : {8, 16, 40}) {
            for (int64_t n_act : {1, 2, 3, 4, 5, 7, 9, 16, 17, 35}) {  // 16+: AMX tiles and their tail
                SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " acts " +
                             std::to_string(n_act));
                const Mat m = make_mat(t, rows, cols, seed++);
                size_t act_row = 0;
                const std::vector<uint8_t> act = make_act(t, n_act, cols, seed++, &act_row);
                const int64_t ldy = rows + 3;
                std::vector<float> y(n_act * ldy, -7.0f);
                k.gemm_x8(cols, m.packed.data(), m.packed_row_bytes, rows, act.data(), act_row, n_act,
                          y.data(), ldy);
                for (int64_t c = 0; c < n_act; ++c) {
                    for (int64_t r = 0; r < ldy; ++r) {
                        const float got = y[c * ldy + r];
                        if (r >= rows) {
                            ASSERT_EQ(got, -7.0f) << "wrote past the rows";
                            continue;
                        }
                        const test::TermSum e = test::exact_dot(t, cols, m.plain.data() + r * m.row_bytes,
                                                                act.data() + c * act_row);
                        ASSERT_LE(std::fabs(got - e.sum), bound(cols, e.abs)) << "act " << c << " row " << r;
                        // The same output alone (one group, one activation) has the same bits.
                        const int64_t g0 = r / 8 * 8;
                        float one[8];
                        k.gemm_x8(cols, m.packed.data() + g0 * m.packed_row_bytes, m.packed_row_bytes, 8,
                                  act.data() + c * act_row, act_row, 1, one, 8);
                        ASSERT_EQ(got, one[r - g0]) << "act " << c << " row " << r;
                    }
                }
            }
        }
    }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GgmlType, Isa>> &info) {
    return std::string(type_name(std::get<0>(info.param))) + "_" + isa_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Types, GemmX8Test,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(test::available_x8_isas())),
                         param_name);

// matmul over an interleaved view, threaded, with token counts across the chunk size, against the exact
// value; a row of the view reads back through weight_row_to_f32 like the plain row.
TEST(Interleave, MatmulOverInterleavedView) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    for (GgmlType t : kTypes) {
        const int64_t rows = 136, cols = 512;
        const Mat m = make_mat(t, rows, cols, 77);
        WeightView w{t, m.packed.data(), rows, cols, m.packed_row_bytes, true};
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
        for (int64_t r : {0, 7, 8, 135}) {
            weight_row_to_f32(w, r, got.data());
            dequantize_row(t, m.plain.data() + r * m.row_bytes, want.data(), cols);
            EXPECT_EQ(got, want) << "row " << r;
        }
    }
}

// A row count that is not a multiple of 8 (a vocabulary): the last group is zero-padded, matmul writes only
// the real rows, and q/k/v-style calls sharing one input give the values of separate calls.
TEST(Interleave, PaddedLastGroupAndSharedInput) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    for (GgmlType t : kTypes) {
        SCOPED_TRACE(type_name(t));
        const int64_t cols = 2 * interleave_block_elems(t);
        const int64_t rows_a = 77, rows_b = 24, rows_c = 5;
        const Mat a = make_mat(t, rows_a, cols, 1), b = make_mat(t, rows_b, cols, 2),
                  c = make_mat(t, rows_c, cols, 3);
        EXPECT_EQ(a.packed.size(), a.packed_row_bytes * 80);
        const WeightView wa{t, a.packed.data(), rows_a, cols, a.packed_row_bytes, true};
        const WeightView wb{t, b.packed.data(), rows_b, cols, b.packed_row_bytes, true};
        const WeightView wc{t,    c.plain.data(), rows_c,
                            cols, c.row_bytes,    false};  // a plain one in the same call
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
}  // namespace lctx::kernels
