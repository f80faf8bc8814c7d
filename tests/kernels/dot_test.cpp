// Every (weight type, ISA) dot-product path against the scalar reference and against an independent
// double-precision evaluation of the type's block formula.
//
// Two kinds of input:
// * exact: block scales are powers of two and the activations are kept small, so every partial sum
//   any implementation forms is a multiple of 1/4 below 2^24 and therefore exact in float. The result
//   must then equal the double evaluation bit for bit: this pins down the integer part (nibble order,
//   high bits, sub-block scales, offsets, sign handling) with no tolerance at all.
// * random: random weight bytes with scales over a wide dynamic range, activations quantized from
//   floats whose per-block magnitude varies by 10^±4. Each float term of a dot is formed with at most
//   4 roundings and the terms are summed in some order by at most K additions, so the error is below
//   (K + 4) * 2^-24 * sum|elementwise products| (the classical bound for any summation order).
#include "kernels/dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dot_test_util.h"
#include "isa_level.h"
#include "kernels/interleave.h"
#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::kernels::dot_test {
namespace {

using test::TermSum;

using test::is_float_type;
using test::kWeightTypes;

// Element counts: 1, 2, 3, 7, 13 blocks, plus counts that reach the unrolled and tail paths.
std::vector<int64_t> row_lengths(GgmlType t) {
    if (is_float_type(t)) return {1, 2, 3, 7, 13, 16, 31, 32, 33, 64, 100, 129, 257};
    const int64_t bs = type_traits(t).block_size;
    std::vector<int64_t> v;
    for (int64_t nb : {1, 2, 3, 7, 13, 16}) v.push_back(nb * bs);
    return v;
}

void put_f16(uint8_t *p, float v) {
    const fp16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

struct Rows {
    std::vector<uint8_t> x, y;
};

// Weight row: random bytes, then the scale fields from `scale()`. Float types: `value()` per element.
template <typename ScaleFn, typename ValueFn>
std::vector<uint8_t> make_weights(GgmlType t, int64_t n, std::mt19937 &rng, ScaleFn scale, ValueFn value) {
    std::vector<uint8_t> x(row_size(t, n));
    if (is_float_type(t)) {
        std::vector<float> f(static_cast<size_t>(n));
        for (float &v : f) v = value();
        quantize_row(t, f.data(), x.data(), n);
        return x;
    }
    for (uint8_t &b : x) b = static_cast<uint8_t>(rng());
    ptrdiff_t od = 0, om = 0;
    test::scale_offsets(t, &od, &om);
    const size_t bsz = type_traits(t).type_size;
    for (size_t off = 0; off < x.size(); off += bsz) {
        put_f16(&x[off + od], scale());
        if (om >= 0) put_f16(&x[off + om], scale());
    }
    return x;
}

// Activation row built directly (exact mode): integers in [-amax, amax], each nonzero with
// probability `density`, block scales from {1/2, 1}.
std::vector<uint8_t> make_exact_activation(GgmlType act, int64_t n, std::mt19937 &rng, int amax,
                                           double density) {
    std::uniform_int_distribution<int> val(-amax, amax);
    std::bernoulli_distribution keep(density);
    auto q = [&] { return keep(rng) ? val(rng) : 0; };
    auto pow2 = [&] { return (rng() & 1) ? 0.5f : 1.0f; };
    std::vector<uint8_t> y(row_size(act, n));
    switch (act) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16: {
            std::vector<float> f(static_cast<size_t>(n));
            for (float &v : f) v = static_cast<float>(q()) * pow2();
            quantize_row(act, f.data(), y.data(), n);
            return y;
        }
        case GgmlType::Q8_0:
        case GgmlType::Q8_1: {
            const bool q81 = act == GgmlType::Q8_1;
            const size_t bsz = type_traits(act).type_size;
            for (int64_t ib = 0; ib < n / 32; ++ib) {
                uint8_t *b = &y[static_cast<size_t>(ib) * bsz];
                int8_t *qs = reinterpret_cast<int8_t *>(
                    b + (q81 ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs)));
                int sum = 0;
                for (int j = 0; j < 32; ++j) sum += qs[j] = static_cast<int8_t>(q());
                const float d = pow2();
                put_f16(b, d);
                if (q81) put_f16(b + offsetof(block_q8_1, s), static_cast<float>(sum) * d);
            }
            return y;
        }
        case GgmlType::Q8_K: {
            for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
                block_q8_K b{};
                b.d = pow2();
                for (int j = 0; j < kQK_K; ++j) {
                    b.qs[j] = static_cast<int8_t>(q());
                    b.bsums[j / 16] = static_cast<int16_t>(b.bsums[j / 16] + b.qs[j]);
                }
                std::memcpy(&y[static_cast<size_t>(ib) * sizeof(b)], &b, sizeof(b));
            }
            return y;
        }
        default:
            ADD_FAILURE() << "no exact activation for " << type_name(act);
            return y;
    }
}

float call(VecDotFn f, int64_t n, const std::vector<uint8_t> &x, const std::vector<uint8_t> &y) {
    return f(n, x.data(), y.data());
}

class DotTest : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {
  protected:
    GgmlType type() const { return std::get<0>(GetParam()); }
    Isa isa() const { return std::get<1>(GetParam()); }
};

TEST_P(DotTest, KernelTableMatchesTypeTraits) {
    const TypeKernels &k = type_kernels(type(), isa());
    EXPECT_EQ(k.act_type, type_traits(type()).vec_dot_type);
    EXPECT_NE(k.vec_dot, nullptr);
    EXPECT_NE(k.quantize_act, nullptr);
}

TEST_P(DotTest, ExactInputsGiveTheExactBlockFormula) {
    const TypeKernels &k = type_kernels(type(), isa());
    std::mt19937 rng(1234u + static_cast<uint32_t>(type()));
    std::uniform_int_distribution<int> small(-8, 8);
    auto scale = [&] {
        const float mag = (rng() & 1) ? 2.0f : 1.0f;
        return (rng() & 1) ? -mag : mag;
    };
    auto value = [&] { return static_cast<float>(small(rng)) * ((rng() & 1) ? 0.5f : 2.0f); };
    for (int64_t n : row_lengths(type())) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const std::vector<uint8_t> x = make_weights(type(), n, rng, scale, value);
        // Shrink the activations until every partial sum stays well inside float's exact range.
        int amax = 127;
        double density = 1.0;
        std::vector<uint8_t> y;
        TermSum exact;
        for (;;) {
            y = make_exact_activation(k.act_type, n, rng, amax, density);
            exact = test::exact_dot(type(), n, x.data(), y.data());
            if (exact.abs / 0.25 < 0x1p22) break;
            if (amax > 1)
                amax /= 2;
            else
                density /= 2;
        }
        ASSERT_GT(exact.abs, 0.0) << "degenerate input";
        EXPECT_EQ(static_cast<double>(call(k.vec_dot, n, x, y)), exact.sum) << "amax " << amax;
        EXPECT_EQ(static_cast<double>(vec_dot_ref(type(), n, x.data(), y.data())), exact.sum) << "reference";
    }
}

// Upper bound on the float error of any implementation (see the file comment).
double rounding_bound(GgmlType t, int64_t n, double abs_sum) {
    const double k =
        is_float_type(t) ? static_cast<double>(n) + 16 : 8.0 * (n / type_traits(t).block_size) + 16;
    return (k + 4) * 0x1p-24 * abs_sum;
}

void check_random(GgmlType t, Isa isa, int64_t n, uint32_t seed, size_t misalign) {
    const TypeKernels &k = type_kernels(t, isa);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> expo(-12.0f, 0.0f), mant(1.0f, 2.0f), spread(-4.0f, 4.0f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto scale = [&] { return ((rng() & 1) ? -1.0f : 1.0f) * mant(rng) * std::exp2(expo(rng)); };
    // Float weights: |x| up to ~2^8 for F16's range, more for F32 / BF16.
    const float float_spread = t == GgmlType::F16 ? 2.0f : 6.0f;
    auto value = [&] { return normal(rng) * std::pow(10.0f, float_spread * (mant(rng) - 1.5f)); };
    std::vector<uint8_t> x = make_weights(t, n, rng, scale, value);
    std::vector<float> act(static_cast<size_t>(n));
    // Halves and Q8_1's s = d * sum(q) (a half) overflow past 65504: keep those activations within 10^±2.
    const bool half_limited = k.act_type == GgmlType::F16 || k.act_type == GgmlType::Q8_1;
    const float act_spread = half_limited ? 0.5f : 1.0f;
    float block_scale = 1.0f;
    const int64_t bs = type_traits(k.act_type).block_size;
    for (int64_t i = 0; i < n; ++i) {
        if (i % std::max<int64_t>(bs, 16) == 0) block_scale = std::pow(10.0f, spread(rng) * act_spread);
        act[static_cast<size_t>(i)] = normal(rng) * block_scale;
    }
    std::vector<uint8_t> y(row_size(k.act_type, n));
    quantize_row(k.act_type, act.data(), y.data(), n);

    // Copies that are not vector-aligned (but keep the 4-byte alignment every block struct needs).
    std::vector<uint8_t> xs(x.size() + misalign), ys(y.size() + misalign);
    std::memcpy(xs.data() + misalign, x.data(), x.size());
    std::memcpy(ys.data() + misalign, y.data(), y.size());

    const TermSum exact = test::exact_dot(t, n, x.data(), y.data());
    const double bound = rounding_bound(t, n, exact.abs);
    const double got = k.vec_dot(n, xs.data() + misalign, ys.data() + misalign);
    const double ref = vec_dot_ref(t, n, x.data(), y.data());
    EXPECT_LE(std::fabs(got - exact.sum), bound) << "got " << got << " exact " << exact.sum;
    EXPECT_LE(std::fabs(got - ref), 2 * bound) << "got " << got << " reference " << ref;
    ASSERT_GT(exact.abs, 0.0) << "degenerate input";
}

TEST_P(DotTest, RandomInputsWithinRoundingBound) {
    uint32_t seed = 99u + 1000u * static_cast<uint32_t>(type());
    for (int64_t n : row_lengths(type())) {
        SCOPED_TRACE("n = " + std::to_string(n));
        for (int rep = 0; rep < 4; ++rep) check_random(type(), isa(), n, seed++, 0);
    }
}

TEST_P(DotTest, LongUnalignedRows) {
    const int64_t n = is_float_type(type()) ? 4099 : 4096 + 2 * type_traits(type()).block_size;
    for (size_t misalign : {4, 12}) {
        SCOPED_TRACE("misalign " + std::to_string(misalign));
        check_random(type(), isa(), n, 7u + static_cast<uint32_t>(misalign), misalign);
    }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GgmlType, Isa>> &info) {
    return std::string(type_name(std::get<0>(info.param))) + "_" + isa_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DotTest,
                         ::testing::Combine(::testing::ValuesIn(kWeightTypes),
                                            ::testing::ValuesIn(test::available_isas())),
                         param_name);

// ---- dispatch ----

TEST(DotDispatch, IsaNames) {
    EXPECT_STREQ(isa_name(Isa::Scalar), "scalar");
    EXPECT_STREQ(isa_name(Isa::Avx2), "avx2");
    EXPECT_STREQ(isa_name(Isa::Avx512), "avx512");
    EXPECT_STREQ(isa_name(Isa::Amx), "amx");
    EXPECT_STREQ(isa_name(Isa::Neon), "neon");
    EXPECT_STREQ(isa_name(Isa::Dotprod), "dotprod");
    EXPECT_STREQ(isa_name(Isa::I8mm), "i8mm");
}

TEST(DotDispatch, ActiveIsNeverAboveDetected) {
    EXPECT_TRUE(isa_at_least(isa_detected(), isa_active()));
}

// Each family is ordered, scalar is below both, and no level of one family is at least one of the other.
TEST(DotDispatch, LevelsAreOrderedWithinTheirFamily) {
    const Isa x86[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx};
    const Isa arm[] = {Isa::Scalar, Isa::Neon, Isa::Dotprod, Isa::I8mm};
    for (const Isa *fam : {x86, arm})
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) EXPECT_EQ(isa_at_least(fam[i], fam[j]), i >= j) << i << " " << j;
    for (int i = 1; i < 4; ++i)
        for (int j = 1; j < 4; ++j) {
            EXPECT_FALSE(isa_at_least(x86[i], arm[j])) << isa_name(x86[i]) << " " << isa_name(arm[j]);
            EXPECT_FALSE(isa_at_least(arm[j], x86[i])) << isa_name(arm[j]) << " " << isa_name(x86[i]);
        }
}

TEST(DotDispatch, EnvironmentOnlyLowersTheLevel) {
    using detail::isa_lowered_by;
    EXPECT_EQ(isa_lowered_by(nullptr, Isa::Avx512), Isa::Avx512);
    EXPECT_EQ(isa_lowered_by("", Isa::Avx2), Isa::Avx2);
    EXPECT_EQ(isa_lowered_by("scalar", Isa::Avx512), Isa::Scalar);
    EXPECT_EQ(isa_lowered_by("avx2", Isa::Avx512), Isa::Avx2);
    EXPECT_EQ(isa_lowered_by("avx512", Isa::Avx512), Isa::Avx512);
    EXPECT_EQ(isa_lowered_by("avx512", Isa::Avx2), Isa::Avx2);
    EXPECT_EQ(isa_lowered_by("avx2", Isa::Scalar), Isa::Scalar);
    EXPECT_EQ(isa_lowered_by("amx", Isa::Amx), Isa::Amx);
    EXPECT_EQ(isa_lowered_by("avx512", Isa::Amx), Isa::Avx512);
    EXPECT_EQ(isa_lowered_by("amx", Isa::Avx512), Isa::Avx512);
    EXPECT_THROW(isa_lowered_by("sse", Isa::Avx2), Error);
    // ARM64's levels; a request of the other family is ignored as one above the CPU's level is.
    EXPECT_EQ(isa_lowered_by("neon", Isa::I8mm), Isa::Neon);
    EXPECT_EQ(isa_lowered_by("dotprod", Isa::I8mm), Isa::Dotprod);
    EXPECT_EQ(isa_lowered_by("i8mm", Isa::I8mm), Isa::I8mm);
    EXPECT_EQ(isa_lowered_by("i8mm", Isa::Neon), Isa::Neon);
    EXPECT_EQ(isa_lowered_by("scalar", Isa::Dotprod), Isa::Scalar);
    EXPECT_EQ(isa_lowered_by("neon", Isa::Scalar), Isa::Scalar);
    EXPECT_EQ(isa_lowered_by("avx2", Isa::Dotprod), Isa::Dotprod);
    EXPECT_EQ(isa_lowered_by("neon", Isa::Avx512), Isa::Avx512);
    EXPECT_THROW(isa_lowered_by("sve", Isa::I8mm), Error);
}

// A level copy of a suite (LCTX_ISA=level) runs when the CPU has the level and skips, naming both levels,
// when it lacks it: an AVX2-only CPU skips the avx512 and amx copies, an AVX-512 one without AMX the amx
// copy.
TEST(DotDispatch, LevelCopiesAboveTheCpuSkip) {
    using isa_level::skip_reason;
    const Isa all[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon, Isa::Dotprod, Isa::I8mm};
    for (Isa cpu : all) {
        EXPECT_EQ(skip_reason(nullptr, cpu), "") << isa_name(cpu);
        EXPECT_EQ(skip_reason("", cpu), "") << isa_name(cpu);
        for (Isa want : all) {
            const std::string why = skip_reason(isa_name(want), cpu);
            const bool same_family = want == Isa::Scalar || cpu == Isa::Scalar ||
                                     (static_cast<int>(want) >= 4) == (static_cast<int>(cpu) >= 4);
            if (same_family && static_cast<int>(want) <= static_cast<int>(cpu)) {
                EXPECT_EQ(why, "") << isa_name(want) << " on " << isa_name(cpu);
            } else {
                EXPECT_NE(why.find(std::string("LCTX_ISA=") + isa_name(want)), std::string::npos) << why;
                EXPECT_NE(why.find(std::string("best is ") + isa_name(cpu)), std::string::npos) << why;
            }
        }
    }
    EXPECT_THROW(skip_reason("avx", Isa::Avx2), Error);
    Isa got = Isa::Scalar;
    EXPECT_FALSE(detail::isa_requested(nullptr, &got));
    EXPECT_FALSE(detail::isa_requested("", &got));
    ASSERT_TRUE(detail::isa_requested("amx", &got));
    EXPECT_EQ(got, Isa::Amx);
    ASSERT_TRUE(detail::isa_requested("dotprod", &got));
    EXPECT_EQ(got, Isa::Dotprod);
}

TEST(DotDispatch, TypesWithoutKernelsThrow) {
    for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::I32, GgmlType::Q8_K, GgmlType::Q8_1, GgmlType::TQ1_0}) {
        EXPECT_FALSE(has_kernels(t)) << type_name(t);
        EXPECT_THROW(type_kernels(t, Isa::Scalar), Error) << type_name(t);
    }
    for (GgmlType t : kWeightTypes) EXPECT_TRUE(has_kernels(t)) << type_name(t);
}

TEST(DotDispatch, IsaAboveTheCpuThrows) {
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon, Isa::Dotprod, Isa::I8mm}) {
        if (isa_at_least(isa_detected(), isa)) {
            EXPECT_NO_THROW(type_kernels(GgmlType::Q8_0, isa)) << isa_name(isa);
        } else {
            EXPECT_THROW(type_kernels(GgmlType::Q8_0, isa), Error) << isa_name(isa);
        }
    }
}

// Every level above scalar has its own dot product and gemm for every weight type (a type left to the scalar
// reference runs several times slower there), on x86 and on ARM64 alike.
TEST(DotDispatch, EveryLevelHasItsOwnKernelsForItsTypes) {
    for (Isa isa : test::available_isas()) {
        if (isa == Isa::Scalar) continue;
        for (GgmlType t : kWeightTypes) {
            const TypeKernels &k = type_kernels(t, isa), &ref = type_kernels(t, Isa::Scalar);
            EXPECT_NE(k.vec_dot, ref.vec_dot) << type_name(t) << " at " << isa_name(isa);
            EXPECT_NE(k.gemm, ref.gemm) << type_name(t) << " at " << isa_name(isa);
        }
    }
}

// ARM64: every type with an interleaved layout has the level's own kernel over it at every ARM level this
// CPU runs (model loading interleaves every such matrix whatever the level, so a missing kernel would leave
// it to the scalar one, which de-interleaves each group per call).
TEST(DotDispatch, ArmLevelsHaveKernelsForEveryInterleavedLayout) {
    for (Isa isa : {Isa::Neon, Isa::Dotprod, Isa::I8mm}) {
        if (!isa_at_least(isa_detected(), isa)) continue;
        for (GgmlType t : kWeightTypes) {
            if (interleave_block_elems(t) == 0) continue;
            const TypeKernels &k = type_kernels(t, isa);
            EXPECT_NE(k.gemm_interleaved, nullptr) << type_name(t) << " at " << isa_name(isa);
            EXPECT_NE(k.gemm_interleaved, type_kernels(t, Isa::Scalar).gemm_interleaved)
                << type_name(t) << " at " << isa_name(isa);
            EXPECT_EQ(k.group_rows, 8) << type_name(t) << " at " << isa_name(isa);
        }
    }
}

// Kernels that copy operands on every call ask matmul for large calls (gemm_interleaved_stages): the AMX
// tiles, and the 512-bit F16 kernel (it widens its activations); a level above that keeps a kernel keeps
// what it asks for.
TEST(DotDispatch, KernelsThatCopyOperandsAskForLargeCalls) {
    if (!isa_at_least(isa_detected(), Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
    for (Isa isa : {Isa::Avx512, isa_detected()}) {
        EXPECT_TRUE(type_kernels(GgmlType::F16, isa).gemm_interleaved_stages) << isa_name(isa);
        EXPECT_FALSE(type_kernels(GgmlType::BF16, isa).gemm_interleaved_stages) << isa_name(isa);
        EXPECT_FALSE(type_kernels(GgmlType::F32, isa).gemm_interleaved_stages) << isa_name(isa);
    }
    EXPECT_FALSE(type_kernels(GgmlType::F16, Isa::Avx2).gemm_interleaved_stages);
    EXPECT_FALSE(type_kernels(GgmlType::Q8_0, Isa::Avx512).gemm_interleaved_stages);
    if (isa_detected() == Isa::Amx) {
        EXPECT_TRUE(type_kernels(GgmlType::Q8_0, Isa::Amx).gemm_interleaved_stages);
    }
}

// The AMX level is the AVX-512 level with its own interleaved gemm for the int8 prompt tiles.
TEST(DotDispatch, AmxLevelSharesEverythingButInterleavedTiles) {
    if (isa_detected() != Isa::Amx) GTEST_SKIP() << "this CPU (or OS) offers no AMX tiles";
    for (GgmlType t : kWeightTypes) {
        const TypeKernels &a = type_kernels(t, Isa::Amx), &b = type_kernels(t, Isa::Avx512);
        EXPECT_EQ(a.vec_dot, b.vec_dot) << type_name(t);
        EXPECT_EQ(a.gemm, b.gemm) << type_name(t);
        EXPECT_EQ(a.quantize_act, b.quantize_act) << type_name(t);
    }
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        EXPECT_NE(type_kernels(t, Isa::Amx).gemm_interleaved, type_kernels(t, Isa::Avx512).gemm_interleaved)
            << type_name(t);
        EXPECT_EQ(type_kernels(t, Isa::Amx).group_rows, type_kernels(t, Isa::Avx512).group_rows)
            << type_name(t);
    }
}

}  // namespace
}  // namespace lctx::kernels::dot_test
