// Temperature samplers: rescale logits (they never drop candidates, though t <= 0 masks all but one).
#pragma once
#include "sampling/sampler.h"

namespace lctx {

// llama_sampler_init_temp: divides every logit by t. t <= 0 keeps only the (first) maximum logit and
// sets every other one to -inf, so any later selecting sampler behaves greedily.
class TempSampler final : public Sampler {
  public:
    explicit TempSampler(float t) : temp_(t) {}
    const char *name() const override { return "temp"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TempSampler>(*this); }

  private:
    float temp_;
};

// llama_sampler_init_temp_ext: entropy-based dynamic temperature. With delta > 0 and at least two
// candidates: softmax; normalised entropy e = H / log(n); temperature
// t_dyn = t_min + (t_max - t_min) * e^exponent with t_min = max(0, t - delta), t_max = t + delta;
// logits are divided by t_dyn and p is recomputed (the array stays sorted). delta <= 0 is temp(t).
class TempExtSampler final : public Sampler {
  public:
    TempExtSampler(float t, float delta, float exponent) : temp_(t), delta_(delta), exponent_(exponent) {}
    const char *name() const override { return "temp-ext"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TempExtSampler>(*this); }

  private:
    float temp_;
    float delta_;
    float exponent_;
};

}  // namespace lctx
