// The activation converters of every ISA path give the same bytes as the scalar reference
// quantize_row, including rounding ties, zero blocks, signed-magnitude ties and half/bf16 edge values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dot_test_util.h"
#include "kernels/dot.h"
#include "tensor/types.h"

namespace lctx::kernels::dot_quantize_act_test {
namespace {

constexpr GgmlType kActTypes[] = {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K,
                                  GgmlType::F16,  GgmlType::BF16, GgmlType::F32};

// A weight type whose activation type is `act` (type_kernels is keyed by weight type).
GgmlType weight_for(GgmlType act) {
    switch (act) {
        case GgmlType::Q8_0:
            return GgmlType::Q8_0;
        case GgmlType::Q8_1:
            return GgmlType::Q4_1;
        case GgmlType::Q8_K:
            return GgmlType::Q4_K;
        default:
            return act;
    }
}

// Rows whose elements exercise the converter: per-block magnitudes over 10^±6 (10^±2 where a half
// must hold the values), exact rounding ties, a zero block, +/- ties for the largest magnitude, and for
// Q8_K products that fall within a few ulps of a rounding tie.
std::vector<float> tricky_row(GgmlType act, int64_t n, uint32_t seed) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> spread(-1.0f, 1.0f);
    const int64_t bs = type_traits(act).block_size == 1 ? 32 : type_traits(act).block_size;
    const bool half_limited = act == GgmlType::F16 || act == GgmlType::Q8_1;
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t b = 0; b * bs < n; ++b) {
        const int64_t lo = b * bs, hi = std::min(n, lo + bs);
        const int kind = static_cast<int>(b % 5);
        const float scale = std::pow(10.0f, spread(rng) * (half_limited ? 2.0f : 6.0f));
        for (int64_t i = lo; i < hi; ++i) {
            float v = normal(rng) * scale;
            if (kind == 1) {
                // Largest |x| = 127 gives d = 1 (Q8_0/Q8_1) or -127/max = 1 (Q8_K): x = k + 1/2 are ties.
                v = static_cast<float>(static_cast<int>(rng() % 254) - 127) + 0.5f;
                if (i == lo) v = -127.0f;
            } else if (kind == 2) {
                v = 0.0f;  // a zero block
            } else if (kind == 4 && act == GgmlType::Q8_K) {
                // Products iscale * x within a few ulps of a half-integer: a kernel that rounds the product
                // before the rounding to an integer and one that rounds the exact product (an FMA) differ.
                const float max = -3.0f * scale, iscale = -127.0f / max;
                if (i == lo) {
                    v = max;
                } else {
                    v = (static_cast<float>(static_cast<int>(rng() % 250) - 125) + 0.5f) / iscale;
                    for (int s = static_cast<int>(rng() % 5) - 2; s != 0; s += s > 0 ? -1 : 1)
                        v = std::nextafter(v, s > 0 ? kInf : -kInf);
                }
            } else if (kind == 3 && (i - lo) % 5 == 1) {
                // The largest magnitude several times, the first with the other sign: Q8_K keys on the first.
                v = (i - lo == 1 ? -20.0f : 20.0f) * (b % 2 ? -scale : scale);
            }
            x[static_cast<size_t>(i)] = v;
        }
    }
    return x;
}

class QuantizeActTest : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {
  protected:
    GgmlType act() const { return std::get<0>(GetParam()); }
    Isa isa() const { return std::get<1>(GetParam()); }
    void expect_same_bytes(const std::vector<float> &x) {
        const int64_t n = static_cast<int64_t>(x.size());
        const TypeKernels &k = type_kernels(weight_for(act()), isa());
        ASSERT_EQ(k.act_type, act());
        std::vector<uint8_t> want(row_size(act(), n), 0xAA), got(row_size(act(), n), 0x55);
        quantize_row(act(), x.data(), want.data(), n);
        k.quantize_act(x.data(), got.data(), n);
        for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(got[i], want[i]) << "byte " << i << " of " << want.size() << " (n = " << n << ")";
        }
    }
};

TEST_P(QuantizeActTest, SameBytesAsReference) {
    const int64_t bs = type_traits(act()).block_size;
    std::vector<int64_t> lengths;
    if (bs == 1) {
        lengths = {1, 2, 3, 7, 8, 13, 17, 31, 32, 33, 100, 257};
    } else {
        for (int64_t nb : {1, 2, 3, 5, 7, 13}) lengths.push_back(nb * bs);
    }
    uint32_t seed = 5u;
    for (int64_t n : lengths) {
        for (int rep = 0; rep < 3; ++rep) expect_same_bytes(tricky_row(act(), n, seed++));
    }
}

// Plain float activation types only (block types: their tricky values are in SameBytesAsReference).
class FloatActTest : public QuantizeActTest {};

TEST_P(FloatActTest, FloatEdgeValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x = {0.0f,           -0.0f,          inf,         -inf,    nan,     -nan,
                            65504.0f,       65519.0f,       65520.0f,    1e-8f,   -3e-5f,  6.1e-5f,
                            5.96e-8f,       2.9e-8f,        1e-40f,      -1e-45f, 3.4e38f, 1.0009765625f,
                            1.00048828125f, 1.00146484375f, 0.33333334f, -2.5f,   1e30f,   -7.0e-39f};
    // Bit patterns that sit exactly on bf16 / half rounding ties.
    for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f800fffu, 0x3f801000u, 0x3f803000u, 0x7f7fffffu}) {
        float f;
        std::memcpy(&f, &bits, 4);
        x.push_back(f);
        x.push_back(-f);
    }
    expect_same_bytes(x);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GgmlType, Isa>> &info) {
    return std::string(type_name(std::get<0>(info.param))) + "_" + isa_name(std::get<1>(info.param));
}

// The vector levels only: the scalar level's converter is quantize_row itself (a copy for F32), which the
// tensor suite checks against the formats.
std::vector<Isa> vector_isas() {
    std::vector<Isa> v = test::available_isas();
    v.erase(v.begin());
    return v;
}
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QuantizeActTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FloatActTest);

INSTANTIATE_TEST_SUITE_P(AllActTypes, QuantizeActTest,
                         ::testing::Combine(::testing::ValuesIn(kActTypes),
                                            ::testing::ValuesIn(vector_isas())),
                         param_name);

const GgmlType kFloatActTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};
INSTANTIATE_TEST_SUITE_P(FloatActTypes, FloatActTest,
                         ::testing::Combine(::testing::ValuesIn(kFloatActTypes),
                                            ::testing::ValuesIn(vector_isas())),
                         param_name);

}  // namespace
}  // namespace lctx::kernels::dot_quantize_act_test
