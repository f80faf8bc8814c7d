// Embedding normalization (llama-embedding's --embd-normalize kinds) and cosine similarity, on vectors whose
// norms are worked out by hand.
#include "generate/embd_normalize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lctx::generate::embd_normalize_test {
namespace {

std::vector<float> normalized(std::vector<float> v, int kind) {
    embd_normalize(v.data(), v.size(), kind);
    return v;
}

TEST(EmbdNormalize, EachKind) {
    const std::vector<float> v = {3.0f, -4.0f};
    EXPECT_EQ(normalized(v, -1), v);
    const std::vector<float> maxabs = normalized(v, 0);  // |-4| becomes 32760
    EXPECT_FLOAT_EQ(maxabs[0], 24570.0f);
    EXPECT_FLOAT_EQ(maxabs[1], -32760.0f);
    const std::vector<float> taxicab = normalized(v, 1);  // sum |x| = 7
    EXPECT_FLOAT_EQ(taxicab[0], 3.0f / 7.0f);
    EXPECT_FLOAT_EQ(taxicab[1], -4.0f / 7.0f);
    const std::vector<float> euclid = normalized(v, 2);  // sqrt(9 + 16) = 5
    EXPECT_FLOAT_EQ(euclid[0], 0.6f);
    EXPECT_FLOAT_EQ(euclid[1], -0.8f);
    const std::vector<float> p3 = normalized(v, 3);  // (27 + 64)^(1/3)
    const float n3 = static_cast<float>(std::cbrt(91.0));
    EXPECT_FLOAT_EQ(p3[0], 3.0f / n3);
    EXPECT_FLOAT_EQ(p3[1], -4.0f / n3);
    for (int kind : {0, 1, 2, 3}) EXPECT_EQ(normalized({0.0f, 0.0f}, kind), (std::vector<float>{0.0f, 0.0f}));
}

TEST(EmbdNormalize, Cosine) {
    const float a[] = {1, 0}, b[] = {0, 2}, c[] = {-3, 0}, d[] = {1, 1}, z[] = {0, 0};
    EXPECT_DOUBLE_EQ(embd_cosine(a, a, 2), 1.0);
    EXPECT_DOUBLE_EQ(embd_cosine(a, b, 2), 0.0);
    EXPECT_DOUBLE_EQ(embd_cosine(a, c, 2), -1.0);
    EXPECT_NEAR(embd_cosine(a, d, 2), std::sqrt(0.5), 1e-12);
    EXPECT_DOUBLE_EQ(embd_cosine(z, z, 2), 1.0);
    EXPECT_DOUBLE_EQ(embd_cosine(a, z, 2), 0.0);
}

}  // namespace
}  // namespace lctx::generate::embd_normalize_test
