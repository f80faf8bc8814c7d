// The sampler interface and the sampler chain. The design maps 1:1 onto llama.cpp's llama_sampler_i
// (name, accept, apply, reset, clone; free is the destructor) so the C API can wrap it directly:
// llama_sampler_chain_init/_add/_get/_n/_remove -> SamplerChain, llama_sampler_sample -> sample(),
// llama_sampler_get_seed -> Sampler::seed(), llama_perf_sampler* -> SamplerChain's perf counters.
// Samplers are not thread-safe; use one per thread.
//
// Where these samplers deliberately differ from llama.cpp b4748 is listed in one place: include/llama.h,
// "Samplers: where lctx differs from b4748".
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/token_data.h"

namespace lctx {

class Sampler {
  public:
    virtual ~Sampler() = default;
    Sampler &operator=(const Sampler &) = delete;

    // Built-in names are llama.cpp's: "greedy", "dist", "top-k", "penalties", ... The string lives as
    // long as the sampler.
    virtual const char *name() const = 0;
    // Tells the sampler that `token` was chosen (updates history such as the penalties window).
    virtual void accept(Token /*token*/) {}
    // Filters / rescales the candidates; a selecting sampler also sets cur.selected.
    virtual void apply(TokenDataArray &cur) = 0;
    // Clears history and re-seeds the RNG (a kDefaultSeed sampler draws a fresh random seed).
    virtual void reset() {}
    // A deep copy, including current state (RNG, history, mu).
    virtual std::unique_ptr<Sampler> clone() const = 0;
    // llama_sampler_get_seed: the seed in use by dist / mirostat / mirostat-v2; for a chain, the seed
    // of the last member that has one; kDefaultSeed for everything else.
    virtual uint32_t seed() const { return kDefaultSeed; }

  protected:
    Sampler() = default;
    Sampler(const Sampler &) = default;  // for clone() implementations
};

// llama_sampler_sample on raw logits: builds one candidate per vocabulary entry (id = index, p = 0,
// selected = -1, unsorted), applies `smpl`, reads data[selected].id, calls smpl.accept() with it and
// returns it. Throws lctx::Error when logits is null, n_vocab <= 0, a logit is NaN, or no candidate was
// selected (the chain does not end in greedy/dist/mirostat, or every candidate was -inf for dist).
// `scratch` (optional) is reused for the candidate buffer to avoid an allocation per token.
Token sample(Sampler &smpl, const float *logits, int32_t n_vocab, std::vector<TokenData> *scratch = nullptr);

struct SamplerChainParams {
    bool no_perf = true;  // true: do not time apply/accept (llama_sampler_chain_default_params)
};

// Applies its members in insertion order. The chain owns its members.
class SamplerChain final : public Sampler {
  public:
    explicit SamplerChain(SamplerChainParams params = {}) : params_(params) {}

    const char *name() const override { return "chain"; }
    void accept(Token token) override;  // forwards to every member; counts one sample
    void apply(TokenDataArray &cur) override;
    void reset() override;  // resets every member and the perf counters
    std::unique_ptr<Sampler> clone() const override;
    uint32_t seed() const override;

    // Appends `smpl` and takes ownership of it.
    void add(std::unique_ptr<Sampler> smpl);
    // The i-th member (borrowed), or nullptr when i is out of range.
    Sampler *get(int32_t i) const;
    // Takes out the i-th member and returns it, or nullptr when i is out of range.
    std::unique_ptr<Sampler> remove(int32_t i);
    int32_t size() const { return static_cast<int32_t>(samplers_.size()); }

    // sample() above, reusing the chain's own candidate buffer.
    Token sample(const float *logits, int32_t n_vocab);

    const SamplerChainParams &params() const { return params_; }
    // Perf counters (llama_perf_sampler): time spent in apply/accept (only when !no_perf) and the
    // number of accepted tokens.
    double t_sample_ms() const { return 1e-3 * static_cast<double>(t_sample_us_); }
    int32_t n_sample() const { return n_sample_; }
    void perf_reset() {
        t_sample_us_ = 0;
        n_sample_ = 0;
    }

  private:
    SamplerChainParams params_;
    std::vector<std::unique_ptr<Sampler>> samplers_;
    int64_t t_sample_us_ = 0;
    int32_t n_sample_ = 0;
    std::vector<TokenData> scratch_;  // candidate buffer for sample(); never copied by clone()
};

}  // namespace lctx
