// Truncating samplers: each keeps a subset of the candidates (shrinking cur.size, or for XTC also
// advancing cur.data) or masks candidates to -inf. None of them selects a token.
#pragma once
#include <cstddef>
#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace lctx {

// llama_sampler_init_top_k: keeps the k highest-logit candidates, sorted. k <= 0 keeps everything (and
// sorts it); k larger than the array keeps everything.
class TopKSampler final : public Sampler {
  public:
    explicit TopKSampler(int32_t k) : k_(k) {}
    const char *name() const override { return "top-k"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopKSampler>(*this); }

  private:
    int32_t k_;
};

// llama_sampler_init_top_p: softmax, then keeps the shortest prefix (in sort order) whose cumulative
// probability reaches p, and never fewer than min_keep. p >= 1 does nothing.
class TopPSampler final : public Sampler {
  public:
    TopPSampler(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    const char *name() const override { return "top-p"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopPSampler>(*this); }

  private:
    float p_;
    size_t min_keep_;
};

// llama_sampler_init_min_p: drops candidates whose probability is below p times the top probability,
// i.e. whose logit is below max_logit + log(p); keeps at least min_keep (and at least one). Works on
// logits only (p is not filled). An unsorted array keeps its order; a sorted one stays sorted.
// p <= 0 does nothing.
class MinPSampler final : public Sampler {
  public:
    MinPSampler(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    const char *name() const override { return "min-p"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<MinPSampler>(*this); }

  private:
    float p_;
    size_t min_keep_;
};

// llama_sampler_init_typical: locally typical sampling. Softmax; entropy H = -sum p log p; candidates
// ordered by |(-log p) - H| (closest to typical first; ties keep the previous order), and the
// shortest such prefix whose cumulative probability exceeds p is kept (at least min_keep; min_keep = 0
// keeps all, as in b4748). The result is in that typical order, marked unsorted. p >= 1 does nothing.
class TypicalSampler final : public Sampler {
  public:
    TypicalSampler(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    const char *name() const override { return "typical"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TypicalSampler>(*this); }

  private:
    float p_;
    size_t min_keep_;
    std::vector<TokenData> tmp_;  // reorder buffer
};

// llama_sampler_init_top_n_sigma: sets to -inf every logit below max - n * sigma, where max, the mean
// and the (population) standard deviation sigma are taken over the finite logits; then softmax.
// n = 0 keeps only the maximal logits; n < 0 or fewer than two candidates does nothing.
class TopNSigmaSampler final : public Sampler {
  public:
    explicit TopNSigmaSampler(float n) : n_(n) {}
    const char *name() const override { return "top-n-sigma"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopNSigmaSampler>(*this); }

  private:
    float n_;
};

// llama_sampler_init_xtc: "exclude top choices". With probability p (drawn from its own mt19937) it
// removes every candidate whose probability is >= t except the least probable of them, by advancing
// cur.data, provided at least min_keep candidates remain. Does nothing when p <= 0, t > 0.5 or fewer
// than 2 candidates.
class XtcSampler final : public Sampler {
  public:
    XtcSampler(float p, float t, size_t min_keep, uint32_t seed);
    const char *name() const override { return "xtc"; }
    void apply(TokenDataArray &cur) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<XtcSampler>(*this); }
    // Not reported through seed(): llama_sampler_get_seed ignores XTC upstream.
    uint32_t current_seed() const { return seed_cur_; }

  private:
    float probability_;
    float threshold_;
    size_t min_keep_;
    uint32_t seed_;
    uint32_t seed_cur_;
    std::mt19937 rng_;
};

}  // namespace lctx
