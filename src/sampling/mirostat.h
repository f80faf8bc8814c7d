// Mirostat v1 and v2 (Basu et al., 2020): selecting samplers that steer the observed surprise
// (-log2 p of the chosen token) towards a target tau by adapting a threshold mu (starts at 2 tau).
#pragma once
#include <random>

#include "sampling/sampler.h"

namespace lctx {

// llama_sampler_init_mirostat(n_vocab, seed, tau, eta, m). Softmax; estimates the Zipf exponent s_hat
// from the top m candidates by least squares of log(p_i / p_i+1) against log((i+2)/(i+1)); keeps the
// top k = (e_hat * 2^mu / (1 - n_vocab^-e_hat))^(1/s_hat) candidates (e_hat = s_hat - 1, k clamped
// to [1, size]; a k below 1, at or above 2^31 or NaN keeps one, as b4748's max(int(k), 1) does on
// x86); softmax again; draws one; then
// mu -= eta * (-log2 p_chosen - tau).
class MirostatSampler final : public Sampler {
  public:
    MirostatSampler(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m);

    const char *name() const override { return "mirostat"; }
    void apply(TokenDataArray &cur) override;
    void reset() override;  // mu = 2 tau, re-seed
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<MirostatSampler>(*this); }
    uint32_t seed() const override { return seed_cur_; }
    float mu() const { return mu_; }

  private:
    int32_t n_vocab_;
    uint32_t seed_;
    uint32_t seed_cur_;
    float tau_;
    float eta_;
    int32_t m_;
    float mu_;
    std::mt19937 rng_;
};

// llama_sampler_init_mirostat_v2(seed, tau, eta). Softmax; keeps the sorted prefix whose surprise
// -log2 p is <= mu (at least one candidate); softmax again; draws one; mu -= eta * (surprise - tau).
class MirostatV2Sampler final : public Sampler {
  public:
    MirostatV2Sampler(uint32_t seed, float tau, float eta);

    const char *name() const override { return "mirostat-v2"; }
    void apply(TokenDataArray &cur) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<MirostatV2Sampler>(*this); }
    uint32_t seed() const override { return seed_cur_; }
    float mu() const { return mu_; }

  private:
    uint32_t seed_;
    uint32_t seed_cur_;
    float tau_;
    float eta_;
    float mu_;
    std::mt19937 rng_;
};

}  // namespace lctx
