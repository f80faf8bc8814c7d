// The plain (not interleaved) gemm kernels of every weight type at every ISA level this CPU runs, called
// directly on odd shapes (1..13 weight rows x 1..7 activation rows, strided, rows of several blocks with
// tails: an odd block count for the 32-element types, lengths off every vector width for the float types):
// * every output is within the float rounding bound of the exact block formula, and close to the same
//   ISA's vec_dot (both within that bound);
// * at the ARM64 levels, every output alone is bit-identical to the level's vec_dot (their multi-activation
//   tiles take the dot products' steps);
// * every output is bit-identical to the same (row, activation) computed alone in a 1 x 1 call, whatever
//   the tile shape and position (GemmFn's promise: matmul results do not depend on batch size or thread
//   split);
// * nothing outside the n_rows x n_act outputs is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dot_test_util.h"
#include "kernels/dot.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/types.h"

namespace lctx::kernels::gemm_isa_test {
namespace {

using test::is_float_type;

// 17 rows: the staged F32 kernel (8-row groups) runs two groups and a tail.
constexpr int64_t kMaxRows = 17, kMaxAct = 7;
constexpr float kSentinel = -12345.0f;

// kMaxRows weight rows `w_stride` bytes apart and kMaxAct activation rows (the type's vec_dot_type)
// `a_stride` bytes apart; the gaps hold garbage that must not be read into a result.
struct Problem {
    GgmlType type;
    int64_t cols;
    size_t w_stride, a_stride;
    std::vector<uint8_t> w, act;
    const uint8_t *wrow(int64_t r) const { return w.data() + r * w_stride; }
    const uint8_t *arow(int64_t c) const { return act.data() + c * a_stride; }
};

// Odd rows (every row of a float type): quantized from floats (valid, typical blocks); even rows of block
// types: random bytes with random half scales over 2^-12..2 (every quant and sub-scale value, e.g. Q6_K's
// -128 scale). Activation rows quantized by the reference quantizer from floats whose magnitude changes
// every 16 elements.
Problem make_problem(GgmlType t, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> expo(-12.0f, 1.0f), mant(1.0f, 2.0f), spread(-3.0f, 3.0f);
    const GgmlType at = type_traits(t).vec_dot_type;
    // Strides keep each row at its block's alignment (2 bytes; 4 for F32), no more.
    const size_t w_gap = t == GgmlType::F32 ? 8 : 6;
    Problem p{t, cols, row_size(t, cols) + w_gap, row_size(at, cols) + 8, {}, {}};
    p.w.resize(p.w_stride * kMaxRows);
    p.act.resize(p.a_stride * kMaxAct);
    for (uint8_t &b : p.w) b = static_cast<uint8_t>(rng());
    for (uint8_t &b : p.act) b = static_cast<uint8_t>(rng());
    std::vector<float> f(static_cast<size_t>(cols));
    ptrdiff_t od = -1, om = -1;
    if (!is_float_type(t)) test::scale_offsets(t, &od, &om);
    const size_t bsz = type_traits(t).type_size;
    for (int64_t r = 0; r < kMaxRows; ++r) {
        uint8_t *row = p.w.data() + r * p.w_stride;
        if (r % 2 || is_float_type(t)) {  // random bytes of a float type would hold NaNs
            const float s = std::pow(10.0f, spread(rng));
            for (float &v : f) v = normal(rng) * s;
            quantize_row(t, f.data(), row, cols);
            continue;
        }
        for (size_t off = 0; off < row_size(t, cols); off += bsz) {
            for (ptrdiff_t o : {od, om}) {
                if (o < 0) continue;
                const float v = ((rng() & 1) ? -1.0f : 1.0f) * mant(rng) * std::exp2(expo(rng));
                const fp16_t h = fp32_to_fp16(v);
                std::memcpy(row + off + o, &h, 2);
            }
        }
    }
    for (int64_t c = 0; c < kMaxAct; ++c) {
        float s = 1.0f;
        for (int64_t i = 0; i < cols; ++i) {
            if (i % 16 == 0) s = std::pow(10.0f, spread(rng));
            f[static_cast<size_t>(i)] = normal(rng) * s;
        }
        quantize_row(at, f.data(), p.act.data() + c * p.a_stride, cols);
    }
    return p;
}

// The matmul test's bound: the float error of any summation order of the block terms (of every product for
// the float types).
double rounding_bound(GgmlType t, int64_t n, double abs_sum) {
    const double k =
        is_float_type(t) ? static_cast<double>(n) + 16 : 8.0 * (n / type_traits(t).block_size) + 16;
    return (k + 4) * 0x1p-24 * abs_sum;
}

// Row lengths of 1, 3 and 5 super-blocks' size with a tail: an odd number of blocks for the 32-element types
// and 7, 21, 35 elements past the vector widths for the float types. The float types also get whole 8s for
// the staged F32 kernel of the 256-bit level (chunks of at most 64 blocks of 8): (2) 2 super-blocks, one
// chunk; (4) one block, a chunk of half a cache line a row; (6) 69 blocks, two chunks of 35 and 34.
int64_t row_length(GgmlType t, int64_t nsb) {
    const int64_t bs = type_traits(t).block_size;
    if (bs == kQK_K) return nsb * kQK_K;
    if (bs == 1) return nsb == 2 ? 2 * kQK_K : nsb == 4 ? 8 : nsb == 6 ? 69 * 8 : nsb * kQK_K + 7 * nsb;
    return nsb * kQK_K + bs * nsb;
}
bool is_whole_8s_case(int64_t nsb) {
    return nsb == 2 || nsb == 4 || nsb == 6;
}

class GemmIsaTest : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {
  protected:
    GgmlType type() const { return std::get<0>(GetParam()); }
    Isa isa() const { return std::get<1>(GetParam()); }
};

TEST_P(GemmIsaTest, OddShapesMatchVecDotAndOneByOne) {
    const TypeKernels &k = type_kernels(type(), isa());
    ASSERT_NE(k.gemm, nullptr);
    ASSERT_EQ(k.act_type, type_traits(type()).vec_dot_type);
    const bool arm_level = isa() == Isa::Neon || isa() == Isa::Dotprod;
    for (int64_t nsb : {1, 2, 3, 4, 5, 6}) {
        if (is_whole_8s_case(nsb) && type_traits(type()).block_size != 1) continue;
        const int64_t cols = row_length(type(), nsb);
        SCOPED_TRACE("cols " + std::to_string(cols));
        const Problem p =
            make_problem(type(), cols, 1000u * static_cast<uint32_t>(type()) + static_cast<uint32_t>(nsb));

        // Every (row, activation) alone: the reference values for bit-identity, checked against the
        // exact formula and vec_dot.
        std::vector<float> one(kMaxRows * kMaxAct);  // [act][row]
        for (int64_t c = 0; c < kMaxAct; ++c) {
            for (int64_t r = 0; r < kMaxRows; ++r) {
                float out[2] = {kSentinel, kSentinel};
                k.gemm(cols, p.wrow(r), p.w_stride, 1, p.arow(c), p.a_stride, 1, out, 1);
                ASSERT_EQ(out[1], kSentinel) << "1 x 1 call wrote past its output";
                one[c * kMaxRows + r] = out[0];
                const test::TermSum e = test::exact_dot(type(), cols, p.wrow(r), p.arow(c));
                const double bound = rounding_bound(type(), cols, e.abs);
                ASSERT_GT(e.abs, 0.0);
                EXPECT_LE(std::fabs(out[0] - e.sum), bound)
                    << "row " << r << " act " << c << ": exact " << e.sum;
                const float dot = k.vec_dot(cols, p.wrow(r), p.arow(c));
                EXPECT_LE(std::fabs(static_cast<double>(out[0]) - dot), 2 * bound)
                    << "row " << r << " act " << c << ": vec_dot " << dot;
                // ARM64: the gemm's tiles take the level's dot products' steps, so their bits.
                if (arm_level) {
                    EXPECT_EQ(std::memcmp(&out[0], &dot, sizeof dot), 0)
                        << "row " << r << " act " << c << ": " << out[0] << ", vec_dot " << dot;
                }
            }
        }
        if (HasFailure()) return;

        // Every block shape, at every offset where it fits in steps of 1 row / 2 activations.
        for (int64_t nr = 1; nr <= kMaxRows; ++nr) {
            for (int64_t nc = 1; nc <= kMaxAct; ++nc) {
                for (int64_t r0 = 0; r0 + nr <= kMaxRows; r0 += (nr > 6 ? 1 : 5)) {
                    for (int64_t c0 = 0; c0 + nc <= kMaxAct; c0 += 2) {
                        const int64_t ldy = nr + 3;
                        std::vector<float> y(static_cast<size_t>(ldy * (nc + 1)), kSentinel);
                        k.gemm(cols, p.wrow(r0), p.w_stride, nr, p.arow(c0), p.a_stride, nc, y.data(), ldy);
                        int bad = 0;
                        for (int64_t c = 0; c <= nc; ++c) {
                            for (int64_t r = 0; r < ldy; ++r) {
                                const float got = y[c * ldy + r];
                                if (c == nc || r >= nr) {
                                    if (got != kSentinel && ++bad <= 3)
                                        ADD_FAILURE()
                                            << nr << " x " << nc << " at (" << r0 << ", " << c0
                                            << ") wrote outside its block at (" << r << ", " << c << ")";
                                    continue;
                                }
                                const float want = one[(c0 + c) * kMaxRows + r0 + r];
                                // Bit identity (a NaN would fail too, as it should).
                                if (std::memcmp(&got, &want, sizeof got) != 0 && ++bad <= 3)
                                    ADD_FAILURE()
                                        << nr << " x " << nc << " at (" << r0 << ", " << c0 << "): output ("
                                        << r << ", " << c << ") = " << got << ", alone " << want;
                            }
                        }
                        if (bad) return;
                    }
                }
            }
        }
    }
}

std::vector<std::tuple<GgmlType, Isa>> params() {
    std::vector<std::tuple<GgmlType, Isa>> v;
    for (GgmlType t : test::kWeightTypes)
        for (Isa isa : test::available_isas()) v.emplace_back(t, isa);
    return v;
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GgmlType, Isa>> &info) {
    return std::string(type_name(std::get<0>(info.param))) + "_" + isa_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemmIsaTest, ::testing::ValuesIn(params()), param_name);

// gemm_f16_by_f32 (F16 rows against F32 activations) gives, at each level, the bits of that level's F32 gemm
// on the rows converted to f32: every shape of 1..17 rows x 1..9 activations at lengths with tails, whole 8s
// (the staged 8-row groups from 4 activations on at the 256-bit level, one and two chunks) and rows long
// enough for the one-activation streaming tiles; rows and activations strided, nothing outside written.
class GemmF16ByF32Test : public ::testing::TestWithParam<Isa> {};

TEST_P(GemmF16ByF32Test, GivesTheF32GemmsBitsOnTheConvertedRows) {
    const Isa isa = GetParam();
    const GemmFn mixed = gemm_f16_by_f32(isa);
    const GemmFn f32 = type_kernels(GgmlType::F32, isa).gemm;
    ASSERT_NE(mixed, nullptr);
    constexpr int64_t kRows = 17, kActs = 9;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t cols : {1, 7, 8, 29, 64, 263, 512, 552, 600, 1031}) {
        SCOPED_TRACE("cols " + std::to_string(cols));
        const int64_t ldw16 = cols + 3, ldw32 = cols + 5, lda = cols + 2;  // elements
        std::vector<uint16_t> w16(static_cast<size_t>(kRows * ldw16));
        std::vector<float> w32(static_cast<size_t>(kRows * ldw32)), act(static_cast<size_t>(kActs * lda));
        for (uint16_t &h : w16) h = fp32_to_fp16(normal(rng) * 4.0f);
        for (int64_t r = 0; r < kRows; ++r)
            for (int64_t i = 0; i < cols; ++i) w32[r * ldw32 + i] = fp16_to_fp32(w16[r * ldw16 + i]);
        for (float &v : act) v = normal(rng) * 0.01f;
        for (int64_t nr = 1; nr <= kRows; ++nr) {
            for (int64_t nc = 1; nc <= kActs; ++nc) {
                const int64_t r0 = kRows - nr, ldy = nr + 2;
                std::vector<float> want(static_cast<size_t>(ldy * (nc + 1)), kSentinel), got = want;
                f32(cols, w32.data() + r0 * ldw32, ldw32 * sizeof(float), nr, act.data(), lda * sizeof(float),
                    nc, want.data(), ldy);
                mixed(cols, w16.data() + r0 * ldw16, ldw16 * sizeof(uint16_t), nr, act.data(),
                      lda * sizeof(float), nc, got.data(), ldy);
                ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * got.size()), 0)
                    << nr << " rows x " << nc << " activations";
                ASSERT_EQ(got[nr], kSentinel) << "wrote outside its block";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, GemmF16ByF32Test, ::testing::ValuesIn(test::available_isas()),
                         [](const ::testing::TestParamInfo<Isa> &info) { return isa_name(info.param); });

}  // namespace
}  // namespace lctx::kernels::gemm_isa_test
