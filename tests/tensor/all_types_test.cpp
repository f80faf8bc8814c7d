// Every type the table marks has_compute, through the public dispatchers of types.h: quantize ->
// dequantize stays within the type's precision, quantization is deterministic, and vec_dot_ref agrees
// with the float dot of the dequantized rows. The per-family tests (quants_legacy_test, quants_k_test)
// check the exact bits; this one guards the dispatch table and the type table staying consistent.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "quant_test_util.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx::all_types_test {
namespace {

std::vector<GgmlType> compute_types() {
    std::vector<GgmlType> v;
    for (int32_t id = 0; id < kGgmlTypeCount; ++id)
        if (type_is_known(id) && type_traits(static_cast<GgmlType>(id)).has_compute)
            v.push_back(static_cast<GgmlType>(id));
    return v;
}

// Relative RMS error of quantize -> dequantize on N(0, 1) rows. Uniform rounding with step D has RMS
// error D/sqrt(12); with D ~ (block absmax ~ 2.5-3 sigma) / levels-per-side this sets the scale; the
// values are ~1.2x what the reference quantizers reach (and what llama.cpp's files show, see
// model_files_test.cpp), so a broken format (errors of order 1) cannot pass.
double max_rel_rms(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return 0.0;
        case GgmlType::F16:
            return 3e-4;  // 2^-11 / sqrt(3) = 2.8e-4 for uniform mantissas
        case GgmlType::BF16:
            return 2.3e-3;  // 2^-8 / sqrt(3)
        case GgmlType::Q8_0:
        case GgmlType::Q8_1:
            return 0.0066;
        case GgmlType::Q8_K:
            return 0.0085;  // one scale per 256: absmax ~3.3 sigma, 3.3/127/3.46 = 0.0075
        case GgmlType::Q6_K:
            return 0.022;
        case GgmlType::Q5_K:
            return 0.044;
        case GgmlType::Q5_1:
            return 0.046;
        case GgmlType::Q5_0:
            return 0.052;
        case GgmlType::Q4_K:
            return 0.087;
        case GgmlType::IQ4_XS:
            return 0.093;
        case GgmlType::IQ4_NL:
            return 0.092;
        case GgmlType::Q4_1:
            return 0.095;
        case GgmlType::Q4_0:
            return 0.104;
        case GgmlType::Q3_K:
            return 0.182;
        case GgmlType::Q2_K:
            return 0.36;
        default:
            return -1;
    }
}

bool is_activation_only(GgmlType t) {
    return t == GgmlType::Q8_1 || t == GgmlType::Q8_K;
}

class AllTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(AllTypes, QuantizeDequantizeWithinPrecision) {
    const GgmlType t = GetParam();
    ASSERT_TRUE(can_quantize(t));
    const double bound = max_rel_rms(t);
    ASSERT_GE(bound, 0.0) << "no precision bound for " << type_name(t) << ": add one";
    const int64_t n = 256 * 16;
    const std::vector<float> x = test::random_row(n, 4242);
    // A type in compute_types() must quantize: an error here is a failure, not a skip.
    const std::vector<uint8_t> q = test::quantize(t, x);
    EXPECT_EQ(q, test::quantize(t, x)) << "quantization is not deterministic";
    const std::vector<float> y = test::dequantize(t, q, n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << type_name(t) << " [" << i << "]";
        se += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
        sx += static_cast<double>(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(se / sx), bound) << type_name(t);
}

TEST_P(AllTypes, DotMatchesDequantizedDot) {
    const GgmlType t = GetParam();
    if (is_activation_only(t)) {
        EXPECT_THROW(vec_dot_ref(t, 256, nullptr, nullptr), Error);
        return;
    }
    const GgmlType vdt = type_traits(t).vec_dot_type;
    const int64_t n = 256 * 16;
    const std::vector<float> xf = test::random_row(n, 11, 32, 1.0f);
    const std::vector<float> yf = test::random_row(n, 12, 32, 1.0f);
    const std::vector<uint8_t> xq = test::quantize(t, xf), yq = test::quantize(vdt, yf);
    const std::vector<float> xd = test::dequantize(t, xq, n);
    const std::vector<float> yd = test::dequantize(vdt, yq, n);
    double sum_abs = 0;
    for (int64_t i = 0; i < n; ++i) sum_abs += std::fabs(static_cast<double>(xd[i]) * yd[i]);
    const double ref = test::dot_double(xd, yd);
    // Float rounding of per-block scaled sums: a few 2^-24 per block over <= 128 blocks, i.e. under
    // 2e-5 of sum |x y|. Types with a min (Q4_1, Q5_1 against Q8_1) fold it in through y's half-rounded
    // s = d * sum(q), which costs up to ~2^-10 of |m * sum y| per block: 1e-3 of sum |x y| here.
    const bool has_min = t == GgmlType::Q4_1 || t == GgmlType::Q5_1;
    const double tol = (has_min ? 1e-3 : 2e-5) * sum_abs;
    EXPECT_NEAR(vec_dot_ref(t, n, xq.data(), yq.data()), ref, tol) << type_name(t);
}

INSTANTIATE_TEST_SUITE_P(Table, AllTypes, ::testing::ValuesIn(compute_types()),
                         [](const ::testing::TestParamInfo<GgmlType> &info) {
                             return std::string(type_name(info.param));
                         });

}  // namespace
}  // namespace lctx::all_types_test
