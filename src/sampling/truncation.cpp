#include "sampling/truncation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "sampling/candidates.h"

namespace lctx {

void TopKSampler::apply(TokenDataArray &cur) {
    candidates_top_k(cur, k_);
}

void TopPSampler::apply(TokenDataArray &cur) {
    if (p_ >= 1.0f || cur.size == 0) return;
    candidates_softmax(cur);
    float cum = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
        cum += cur.data[i].p;
        if (cum >= p_ && i + 1 >= min_keep_) {
            cur.size = i + 1;
            return;
        }
    }
}

void MinPSampler::apply(TokenDataArray &cur) {
    if (p_ <= 0.0f || cur.size == 0) return;
    // At least one candidate always survives: the maximum passes the threshold whenever p <= 1.
    const size_t min_keep = std::max<size_t>(min_keep_, 1);

    if (!cur.sorted) {
        // Unsorted: filter in place, keeping order, if enough candidates pass; else sort below.
        float max_l = -std::numeric_limits<float>::infinity();
        for (size_t i = 0; i < cur.size; ++i) max_l = std::max(max_l, cur.data[i].logit);
        const float min_l = max_l + std::log(p_);
        size_t n_pass = 0;
        for (size_t i = 0; i < cur.size; ++i) n_pass += cur.data[i].logit >= min_l;
        if (n_pass >= min_keep) {
            size_t w = 0;
            for (size_t i = 0; i < cur.size; ++i) {
                if (cur.data[i].logit >= min_l) cur.data[w++] = cur.data[i];
            }
            cur.size = w;
            return;
        }
        candidates_sort(cur);
    }

    const float min_l = cur.data[0].logit + std::log(p_);
    size_t keep = 1;
    while (keep < cur.size && (cur.data[keep].logit >= min_l || keep < min_keep)) ++keep;
    cur.size = keep;
}

void TypicalSampler::apply(TokenDataArray &cur) {
    if (p_ >= 1.0f || cur.size == 0) return;
    candidates_softmax(cur);

    float entropy = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
        const float p = cur.data[i].p;
        if (p > 0.0f) entropy -= p * std::log(p);  // 0 * log 0 counts as 0
    }

    // Distance of each candidate's surprise from the entropy; p = 0 gives +inf (least typical).
    std::vector<float> score(cur.size);
    for (size_t i = 0; i < cur.size; ++i) score[i] = std::fabs(-std::log(cur.data[i].p) - entropy);
    std::vector<size_t> order(cur.size);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });

    // min_keep = 0 keeps every candidate (only reordered), as b4748 does: its `i >= min_keep - 1` wraps
    // around to SIZE_MAX, and llama.cpp's common code passes 0 by default.
    size_t keep = cur.size;
    float cum = 0.0f;
    for (size_t i = 0; i < order.size() && min_keep_ > 0; ++i) {
        cum += cur.data[order[i]].p;
        if (cum > p_ && i + 1 >= min_keep_) {
            keep = i + 1;
            break;
        }
    }

    tmp_.resize(keep);
    for (size_t i = 0; i < keep; ++i) tmp_[i] = cur.data[order[i]];
    std::copy(tmp_.begin(), tmp_.end(), cur.data);
    cur.size = keep;
    cur.sorted = false;
}

void TopNSigmaSampler::apply(TokenDataArray &cur) {
    // n = 0 keeps only the maximal logits (the cut is the maximum itself), as in b4748; a negative n would
    // mask every candidate there (the cut lies above the maximum): here it does nothing. One candidate
    // still ends with the softmax (p = 1, sorted), as b4748.
    if (n_ < 0.0f || cur.size == 0) return;
    const float neg_inf = -std::numeric_limits<float>::infinity();

    float max_l = neg_inf;
    double sum = 0.0;
    size_t n_finite = 0;
    for (size_t i = 0; i < cur.size; ++i) {
        const float l = cur.data[i].logit;
        if (l == neg_inf) continue;  // already masked (e.g. by a grammar): not part of the statistics
        max_l = std::max(max_l, l);
        sum += l;
        ++n_finite;
    }
    if (n_finite > 0) {
        const double mean = sum / static_cast<double>(n_finite);
        double acc = 0.0;
        for (size_t i = 0; i < cur.size; ++i) {
            const float l = cur.data[i].logit;
            if (l != neg_inf) acc += (l - mean) * (l - mean);
        }
        const float sigma = static_cast<float>(std::sqrt(acc / static_cast<double>(n_finite)));
        const float cut = max_l - n_ * sigma;
        for (size_t i = 0; i < cur.size; ++i) {
            if (cur.data[i].logit < cut) cur.data[i].logit = neg_inf;
        }
    }
    candidates_softmax(cur);
}

XtcSampler::XtcSampler(float p, float t, size_t min_keep, uint32_t seed)
    : probability_(p),
      threshold_(t),
      min_keep_(min_keep),
      seed_(seed),
      seed_cur_(resolve_seed(seed)),
      rng_(seed_cur_) {}

void XtcSampler::apply(TokenDataArray &cur) {
    if (probability_ <= 0.0f || threshold_ > 0.5f || cur.size < 2) return;
    std::uniform_real_distribution<float> coin(0.0f, 1.0f);
    if (coin(rng_) > probability_) return;

    candidates_softmax(cur);
    // The candidates at or above the threshold form a prefix (sorted); keep only its last one.
    size_t last_above = 0;
    for (size_t i = 0; i < cur.size && cur.data[i].p >= threshold_; ++i) last_above = i;
    if (last_above > 0 && cur.size - last_above >= min_keep_) {
        cur.data += last_above;
        cur.size -= last_above;
    }
}

void XtcSampler::reset() {
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
}

}  // namespace lctx
