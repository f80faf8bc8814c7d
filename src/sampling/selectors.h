// Selecting samplers: they set cur.selected, so a chain that is sampled must end with one of them
// (or a Mirostat sampler). Softmax is the deprecated llama_sampler_init_softmax, kept for the C API.
#pragma once
#include <random>

#include "sampling/sampler.h"

namespace lctx {

// llama_sampler_init_greedy: selects the highest logit. Ties go to the lowest index in the array
// (= the lowest token id when the array is in vocabulary order, or the first in sort order).
// An empty array leaves selected at -1. Does not reorder or change the candidates.
class GreedySampler final : public Sampler {
  public:
    const char *name() const override { return "greedy"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<GreedySampler>(*this); }
};

// llama_sampler_init_dist: softmax (sorts), then draws an index by probability with its own mt19937.
// Same seed and same candidates give the same choice. When no candidate has mass (empty, or all -inf)
// selected stays -1.
class DistSampler final : public Sampler {
  public:
    explicit DistSampler(uint32_t seed);

    const char *name() const override { return "dist"; }
    void apply(TokenDataArray &cur) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<DistSampler>(*this); }
    uint32_t seed() const override { return seed_cur_; }

  private:
    uint32_t seed_;      // as requested (may be kDefaultSeed)
    uint32_t seed_cur_;  // in use
    std::mt19937 rng_;
};

// llama_sampler_init_softmax (deprecated upstream): sorts by logit and fills p.
class SoftmaxSampler final : public Sampler {
  public:
    const char *name() const override { return "softmax"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<SoftmaxSampler>(*this); }
};

}  // namespace lctx
