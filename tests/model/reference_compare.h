// What the model tests that check lctx against a reference forward pass written in the test share: the
// logits of every token of one sequence decoded in one batch, and the largest difference to a reference.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "context/context.h"
#include "model/model.h"

namespace lctx::testing {

// [n_tokens][n_vocab] logits of `tokens` at positions 0.. in sequence 0, with an f32 cache (no cache
// rounding: the comparison is of the arithmetic only).
inline std::vector<float> all_logits(const Model &m, const std::vector<int32_t> &tokens, uint32_t n_ctx,
                                     uint32_t n_seq_max = 1, uint32_t n_ubatch = 512) {
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_seq_max = n_seq_max;
    cp.n_ubatch = n_ubatch;
    cp.type_k = cp.type_v = GgmlType::F32;
    Context ctx(m, cp);
    std::vector<int8_t> all(tokens.size(), 1);
    Batch b;
    b.n_tokens = static_cast<int32_t>(tokens.size());
    b.token = tokens.data();
    b.logits = all.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
    std::vector<float> out;
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        const float *l = ctx.logits_ith(i);
        out.insert(out.end(), l, l + m.hparams().n_vocab);
    }
    return out;
}

inline double max_diff(const std::vector<float> &a, const std::vector<double> &b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
    return d;
}

}  // namespace lctx::testing
