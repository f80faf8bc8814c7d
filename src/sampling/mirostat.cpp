#include "sampling/mirostat.h"

#include <algorithm>
#include <cmath>

#include "sampling/candidates.h"

namespace lctx {

namespace {

// Updates mu from the chosen candidate's surprise; nothing to learn when nothing was chosen.
void update_mu(float &mu, const TokenDataArray &cur, float tau, float eta) {
    if (cur.selected < 0) return;
    const float surprise = -std::log2(cur.data[cur.selected].p);
    mu -= eta * (surprise - tau);
}

}  // namespace

MirostatSampler::MirostatSampler(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m)
    : n_vocab_(n_vocab),
      seed_(seed),
      seed_cur_(resolve_seed(seed)),
      tau_(tau),
      eta_(eta),
      m_(m),
      mu_(2.0f * tau),
      rng_(seed_cur_) {}

void MirostatSampler::apply(TokenDataArray &cur) {
    if (cur.size == 0) {
        cur.selected = -1;
        return;
    }
    candidates_softmax(cur);

    // Least-squares fit of the Zipf exponent over the first m - 1 neighbouring pairs.
    float sum_tb = 0.0f;
    float sum_tt = 0.0f;
    const size_t n_pairs = std::min(static_cast<size_t>(std::max(m_ - 1, 0)), cur.size - 1);
    for (size_t i = 0; i < n_pairs; ++i) {
        const float t = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
        const float b = std::log(cur.data[i].p / cur.data[i + 1].p);
        sum_tb += t * b;
        sum_tt += t * t;
    }
    const float s_hat = sum_tt > 0.0f ? sum_tb / sum_tt : std::nanf("");
    const float e_hat = s_hat - 1.0f;
    const float k =
        std::pow((e_hat * std::pow(2.0f, mu_)) / (1.0f - std::pow(static_cast<float>(n_vocab_), -e_hat)),
                 1.0f / s_hat);
    // b4748 keeps max(int(k), 1): a k that no int holds (huge, infinite, NaN: too few candidates to
    // estimate, p = 0 pairs) converts to INT_MIN on x86 and keeps one candidate. That is done here
    // explicitly, without the undefined conversion.
    int64_t k_int = 1;
    if (k >= 1.0f && k < 2147483648.0f)
        k_int = std::min(static_cast<int64_t>(k), static_cast<int64_t>(cur.size));
    candidates_top_k(cur, k_int);
    candidates_softmax(cur);

    cur.selected = candidates_draw(cur, rng_);
    update_mu(mu_, cur, tau_, eta_);
}

void MirostatSampler::reset() {
    mu_ = 2.0f * tau_;
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
}

MirostatV2Sampler::MirostatV2Sampler(uint32_t seed, float tau, float eta)
    : seed_(seed), seed_cur_(resolve_seed(seed)), tau_(tau), eta_(eta), mu_(2.0f * tau), rng_(seed_cur_) {}

void MirostatV2Sampler::apply(TokenDataArray &cur) {
    if (cur.size == 0) {
        cur.selected = -1;
        return;
    }
    candidates_softmax(cur);
    size_t keep = 0;
    while (keep < cur.size && !(-std::log2(cur.data[keep].p) > mu_)) ++keep;
    cur.size = std::max<size_t>(keep, 1);
    candidates_softmax(cur);

    cur.selected = candidates_draw(cur, rng_);
    update_mu(mu_, cur, tau_, eta_);
}

void MirostatV2Sampler::reset() {
    mu_ = 2.0f * tau_;
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
}

}  // namespace lctx
