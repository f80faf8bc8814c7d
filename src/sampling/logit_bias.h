// Fixed additive biases on chosen tokens (llama_sampler_init_logit_bias).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace lctx {

// Layout-identical to llama.h's llama_logit_bias {llama_token token; float bias;}.
struct LogitBias {
    Token token;
    float bias;
};
static_assert(sizeof(LogitBias) == 8 && offsetof(LogitBias, bias) == 4);

// Adds each entry's bias to the logit of the candidate with that token id. Entries are copied;
// duplicate entries for one token all apply (in list order); entries naming a token that is not among
// the candidates (including out-of-range ids) are ignored, as upstream does. Marks the array unsorted
// when it changed a logit.
class LogitBiasSampler final : public Sampler {
  public:
    LogitBiasSampler(int32_t n_vocab, const LogitBias *biases, size_t n_biases);

    const char *name() const override { return "logit-bias"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<LogitBiasSampler>(*this); }

    int32_t n_vocab() const { return n_vocab_; }
    const std::vector<LogitBias> &biases() const { return biases_; }

  private:
    int32_t n_vocab_;
    std::vector<LogitBias> biases_;
    std::vector<LogitBias> to_search_;  // scratch: entries whose token is not at index == id
};

}  // namespace lctx
