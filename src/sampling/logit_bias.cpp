#include "sampling/logit_bias.h"

#include <algorithm>

namespace lctx {

LogitBiasSampler::LogitBiasSampler(int32_t n_vocab, const LogitBias *biases, size_t n_biases)
    : n_vocab_(n_vocab), biases_(biases, biases + (biases != nullptr ? n_biases : 0)) {}

void LogitBiasSampler::apply(TokenDataArray &cur) {
    if (biases_.empty() || cur.size == 0) return;
    bool changed = false;

    // Fast path: an array still in vocabulary order has token t at index t.
    to_search_.clear();
    for (const LogitBias &b : biases_) {
        if (b.token >= 0 && static_cast<size_t>(b.token) < cur.size && cur.data[b.token].id == b.token) {
            cur.data[b.token].logit += b.bias;
            changed = true;
        } else {
            to_search_.push_back(b);
        }
    }

    if (!to_search_.empty()) {
        // Reordered or shortened array: look each candidate up among the remaining entries (sorted by
        // token, stably, so duplicates still apply in list order).
        std::stable_sort(to_search_.begin(), to_search_.end(),
                         [](const LogitBias &a, const LogitBias &b) { return a.token < b.token; });
        for (size_t i = 0; i < cur.size; ++i) {
            const Token id = cur.data[i].id;
            auto it = std::lower_bound(to_search_.begin(), to_search_.end(), id,
                                       [](const LogitBias &b, Token t) { return b.token < t; });
            for (; it != to_search_.end() && it->token == id; ++it) {
                cur.data[i].logit += it->bias;
                changed = true;
            }
        }
    }

    if (changed) cur.sorted = false;
}

}  // namespace lctx
