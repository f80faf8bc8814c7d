// matmul for every weight type with kernels, odd shapes, 1..N tokens, 1 and 2 threads, strided x / y,
// against a double-precision evaluation of each (weight row, activation row) block formula, with the
// activations quantized by the reference quantizer (the bytes every ISA's quantize_act produces).
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dot_test_util.h"
#include "kernels/dot.h"
#include "tensor/types.h"

namespace lctx::kernels::matmul_test {
namespace {

using test::is_float_type;
using test::kWeightTypes;

struct Problem {
    GgmlType type;
    int64_t rows, cols, n_tokens, ldx, ldy;
    std::vector<uint8_t> w;  // [rows][row_bytes]
    size_t row_bytes = 0;
    std::vector<float> x;      // [n_tokens][ldx]
    std::vector<uint8_t> act;  // [n_tokens][act_row]: reference quantization of x
    size_t act_row = 0;
};

Problem make_problem(GgmlType t, int64_t rows, int64_t cols, int64_t n_tokens, uint32_t seed) {
    Problem p{t, rows, cols, n_tokens, cols + 3, rows + 5, {}, 0, {}, {}, 0};
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> mag(-1.0f, 1.0f);
    p.row_bytes = row_size(t, cols);
    p.w.resize(p.row_bytes * rows);
    std::vector<float> wrow(cols);
    for (int64_t r = 0; r < rows; ++r) {
        const float s = std::pow(10.0f, mag(rng));  // rows of different magnitudes
        for (float &v : wrow) v = normal(rng) * s;
        quantize_row(t, wrow.data(), p.w.data() + r * p.row_bytes, cols);
    }
    p.x.assign(n_tokens * p.ldx, 1e30f);  // the gap between rows must not be read
    for (int64_t i = 0; i < n_tokens; ++i)
        for (int64_t c = 0; c < cols; ++c) p.x[i * p.ldx + c] = normal(rng) * std::pow(10.0f, mag(rng));
    const GgmlType at = type_traits(t).vec_dot_type;
    p.act_row = row_size(at, cols);
    p.act.resize(p.act_row * n_tokens);
    for (int64_t i = 0; i < n_tokens; ++i)
        quantize_row(at, p.x.data() + i * p.ldx, p.act.data() + i * p.act_row, cols);
    return p;
}

double rounding_bound(GgmlType t, int64_t n, double abs_sum) {
    const double k =
        is_float_type(t) ? static_cast<double>(n) + 16 : 8.0 * (n / type_traits(t).block_size) + 16;
    return (k + 4) * 0x1p-24 * abs_sum;
}

// Runs matmul and checks every output against the exact block formula; returns the outputs.
std::vector<float> check(const Problem &p, ThreadPool &pool, MatmulScratch &scratch) {
    constexpr float kSentinel = -12345.0f;
    std::vector<float> y(p.n_tokens * p.ldy, kSentinel);
    WeightView w{p.type, p.w.data(), p.rows, p.cols, p.row_bytes};
    matmul(w, p.x.data(), p.ldx, p.n_tokens, y.data(), p.ldy, pool, scratch);
    int failures = 0;
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        for (int64_t r = 0; r < p.ldy; ++r) {
            const float got = y[t * p.ldy + r];
            if (r >= p.rows) {
                EXPECT_EQ(got, kSentinel) << "wrote past the rows: token " << t << " row " << r;
                continue;
            }
            const test::TermSum e =
                test::exact_dot(p.type, p.cols, p.w.data() + r * p.row_bytes, p.act.data() + t * p.act_row);
            const double bound = rounding_bound(p.type, p.cols, e.abs);
            if (!(std::fabs(got - e.sum) <= bound) && ++failures < 5)
                ADD_FAILURE() << "token " << t << " row " << r << ": got " << got << " exact " << e.sum
                              << " bound " << bound;
        }
    }
    EXPECT_EQ(failures, 0);
    return y;
}

class MatmulTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulTest, OddShapesAndTokenCounts) {
    const GgmlType t = GetParam();
    const int64_t bs = type_traits(t).block_size;
    ThreadPool pool1(1), pool2(2);
    MatmulScratch scratch;
    uint32_t seed = 17u * static_cast<uint32_t>(t);
    const std::vector<int64_t> cols_list = is_float_type(t) ? std::vector<int64_t>{1, 7, 32, 45, 64, 200}
                                                            : std::vector<int64_t>{bs, 3 * bs, 5 * bs};
    for (int64_t cols : cols_list) {
        for (int64_t rows : {1, 2, 3, 5, 8, 13, 37}) {
            for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 16, 19}) {
                SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " tokens " +
                             std::to_string(n_tokens));
                const Problem p = make_problem(t, rows, cols, n_tokens, seed++);
                const std::vector<float> y1 = check(p, pool1, scratch);
                const std::vector<float> y2 = check(p, pool2, scratch);
                if (HasFailure()) return;
                // Every output is computed by one thread: the thread count does not change any bit.
                EXPECT_EQ(y1, y2);
            }
        }
    }
}

// Big enough to be split across threads, with row counts that are not multiples of any tile.
TEST_P(MatmulTest, LargeShapesThreaded) {
    const GgmlType t = GetParam();
    const int64_t cols = is_float_type(t) ? 1000 : 4 * std::max<int64_t>(256, type_traits(t).block_size);
    ThreadPool pool(2);
    MatmulScratch scratch;
    for (int64_t rows : {131, 250}) {
        for (int64_t n_tokens : {1, 2, 6, 33}) {
            SCOPED_TRACE("rows " + std::to_string(rows) + " tokens " + std::to_string(n_tokens));
            const Problem p =
                make_problem(t, rows, cols, n_tokens, 5u + static_cast<uint32_t>(rows + n_tokens));
            check(p, pool, scratch);
            if (HasFailure()) return;
        }
    }
}

// A batch's rows get the same values as the same rows computed one token at a time (up to summation
// order, which the bound allows for), and the scratch is reused across sizes.
TEST_P(MatmulTest, ScratchReuseAcrossCalls) {
    const GgmlType t = GetParam();
    const int64_t bs = type_traits(t).block_size;
    ThreadPool pool(2);
    MatmulScratch scratch;
    const int64_t cols = is_float_type(t) ? 96 : 2 * bs;
    for (int64_t n_tokens : {40, 1, 12, 3}) {
        const Problem p = make_problem(t, 29, cols, n_tokens, 99u + static_cast<uint32_t>(n_tokens));
        check(p, pool, scratch);
    }
}

std::string param_name(const ::testing::TestParamInfo<GgmlType> &info) {
    return type_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, ::testing::ValuesIn(kWeightTypes), param_name);

TEST(MatmulMisc, ZeroTokensOrRowsWriteNothing) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    std::vector<uint8_t> w(row_size(GgmlType::F32, 8) * 2, 0);
    std::vector<float> x(8, 1.0f), y(4, 7.0f);
    WeightView v{GgmlType::F32, w.data(), 2, 8, row_size(GgmlType::F32, 8)};
    matmul(v, x.data(), 8, 0, y.data(), 2, pool, scratch);
    v.rows = 0;
    matmul(v, x.data(), 8, 1, y.data(), 2, pool, scratch);
    for (float f : y) EXPECT_EQ(f, 7.0f);
}

TEST(MatmulMisc, WeightRowToF32) {
    const Problem p = make_problem(GgmlType::Q4_0, 3, 64, 1, 3);
    WeightView w{p.type, p.w.data(), p.rows, p.cols, p.row_bytes};
    std::vector<float> got(64), want(64);
    weight_row_to_f32(w, 2, got.data());
    dequantize_row(GgmlType::Q4_0, p.w.data() + 2 * p.row_bytes, want.data(), 64);
    EXPECT_EQ(got, want);
    EXPECT_ANY_THROW(weight_row_to_f32(w, 3, got.data()));
}

}  // namespace
}  // namespace lctx::kernels::matmul_test
