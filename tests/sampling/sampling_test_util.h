// Small builders shared by the sampling tests: a candidate array owned by a vector.
#pragma once
#include <cmath>
#include <vector>

#include "sampling/token_data.h"

namespace lctx::test {

// Candidates with ids 0..n-1 (or the given ids), p = 0, unsorted, nothing selected.
struct Cands {
    std::vector<TokenData> buf;
    TokenDataArray arr{};

    explicit Cands(const std::vector<float> &logits, std::vector<Token> ids = {}) {
        buf.resize(logits.size());
        for (size_t i = 0; i < logits.size(); ++i) {
            buf[i] = TokenData{ids.empty() ? static_cast<Token>(i) : ids[i], logits[i], 0.0f};
        }
        arr = TokenDataArray{buf.data(), buf.size(), -1, false};
    }
    // Candidates whose softmax is exactly proportional to `probs` (logit = log p).
    static Cands from_probs(const std::vector<float> &probs, std::vector<Token> ids = {}) {
        std::vector<float> logits;
        for (float p : probs) logits.push_back(std::log(p));
        return Cands(logits, std::move(ids));
    }

    std::vector<Token> ids() const {
        std::vector<Token> out;
        for (size_t i = 0; i < arr.size; ++i) out.push_back(arr.data[i].id);
        return out;
    }
    std::vector<float> logits() const {
        std::vector<float> out;
        for (size_t i = 0; i < arr.size; ++i) out.push_back(arr.data[i].logit);
        return out;
    }
    const TokenData &find(Token id) const {
        for (size_t i = 0; i < arr.size; ++i) {
            if (arr.data[i].id == id) return arr.data[i];
        }
        static const TokenData missing{-1, NAN, NAN};
        return missing;
    }
};

}  // namespace lctx::test
