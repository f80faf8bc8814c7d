#include "sampling/temperature.h"

#include <algorithm>
#include <cmath>

#include "sampling/candidates.h"

namespace lctx {

void TempSampler::apply(TokenDataArray &cur) {
    candidates_temperature(cur, temp_);
}

void TempExtSampler::apply(TokenDataArray &cur) {
    if (delta_ <= 0.0f) {
        candidates_temperature(cur, temp_);
        return;
    }
    if (cur.size <= 1) return;  // one candidate: nothing to rescale

    const float t_min = std::max(0.0f, temp_ - delta_);
    const float t_max = temp_ + delta_;
    const float max_entropy = std::log(static_cast<float>(cur.size));  // uniform over n candidates

    candidates_softmax(cur);
    float entropy = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
        const float p = cur.data[i].p;
        if (p > 0.0f) entropy -= p * std::log(p);
    }
    const float t_dyn = t_min + (t_max - t_min) * std::pow(entropy / max_entropy, exponent_);

    // Scaling keeps the order (t_dyn > 0) or masks all but the first maximum (t_dyn <= 0): the array
    // stays sorted, and p is recomputed in double as llama.cpp does.
    candidates_temperature(cur, t_dyn);
    const double max_l = cur.data[0].logit;
    if (!std::isfinite(max_l)) {
        candidates_softmax(cur);  // degenerate (-inf / +inf) cases: let the guarded softmax decide
        return;
    }
    double sum = 0.0;
    for (size_t i = 0; i < cur.size; ++i) {
        const double p = std::exp(static_cast<double>(cur.data[i].logit) - max_l);
        cur.data[i].p = static_cast<float>(p);
        sum += p;
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].p = static_cast<float>(cur.data[i].p / sum);
}

}  // namespace lctx
