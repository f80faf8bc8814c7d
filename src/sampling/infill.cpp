#include "sampling/infill.h"

#include <cmath>
#include <limits>

#include "sampling/candidates.h"

namespace lctx {

const std::string &InfillSampler::piece(Token t) const {
    static const std::string none;
    return t >= 0 && static_cast<size_t>(t) < v_->piece.size() ? v_->piece[t] : none;
}

void InfillSampler::apply(TokenDataArray &cur) {
    if (cur.size == 0) return;  // nothing to decide (upstream would write the EOT into data[0])
    candidates_softmax(cur);
    float p_text = 0.0f, p_eog = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) (eog(cur.data[i].id) ? p_eog : p_text) += cur.data[i].p;

    // Keeps the candidates `keep` says, renormalized; returns the mass kept.
    auto filter = [&](auto keep) {
        const size_t n = cur.size;
        float sum = 0.0f;
        cur.size = 0;
        for (size_t i = 0; i < n; ++i) {
            if (!keep(cur.data[i])) continue;
            sum += cur.data[i].p;
            cur.data[cur.size++] = cur.data[i];
        }
        for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= sum;
        return sum;
    };

    if (3 * p_eog * static_cast<float>(cur.size) > p_text) {
        filter([&](const TokenData &d) { return eog(d.id); });
        return;
    }

    // A candidate whose text starts another's: the likelier of the two takes both probabilities.
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (size_t i0 = 0; i0 < cur.size; ++i0) {
        for (size_t i1 = 0; i1 < cur.size; ++i1) {
            if (cur.data[i0].logit == kNegInf) break;
            if (i0 == i1 || cur.data[i1].logit == kNegInf) continue;
            const std::string &a = piece(cur.data[i0].id), &b = piece(cur.data[i1].id);
            if (a.empty() || a.size() > b.size() || b.compare(0, a.size(), a) != 0) continue;
            size_t dst = i0, src = i1;
            if (cur.data[i1].p > cur.data[i0].p) std::swap(dst, src);
            cur.data[dst].p += cur.data[src].p;
            cur.data[src].logit = kNegInf;
            cur.data[src].p = 0.0f;
        }
    }

    size_t n_text = 0;
    const size_t n_before = cur.size;
    float sum = 0.0f;
    cur.size = 0;
    for (size_t i = 0; i < n_before; ++i) {
        const bool is_eog = eog(cur.data[i].id);
        if (cur.data[i].p < 0.2f && !is_eog) continue;
        n_text += !is_eog;
        sum += cur.data[i].p;
        cur.data[cur.size++] = cur.data[i];
    }
    if (n_text == 0) {  // nothing worth writing: end the infill
        cur.size = 1;
        cur.data[0].id = v_->eot;
        cur.data[0].logit = 1.0f;
        return;
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= sum;

    const auto threshold = static_cast<float>(1.0 / static_cast<double>(n_text + 1));
    filter([&](const TokenData &d) { return d.p >= threshold || eog(d.id); });
}

}  // namespace lctx
