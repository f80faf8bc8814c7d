// The infill sampler (llama_sampler_init_infill, b4748): for fill-in-the-middle, decides between ending the
// infill and continuing. When end-of-generation tokens hold enough of the mass (3 * p_eog * n > p_text) only
// they remain; otherwise candidates whose text is a prefix of another's give it their probability, those
// under 0.2 go, and then those under 1 / (kept + 1); when no text candidate survives, the single EOT token is
// left with logit 1.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace lctx {

struct InfillVocab {
    std::vector<std::string> piece;  // [n_vocab] token text without special tokens rendered
    std::vector<char> is_eog;        // [n_vocab]
    Token eot = -1;                  // the end-of-turn token (-1 when the vocabulary has none)
};

class InfillSampler final : public Sampler {
  public:
    explicit InfillSampler(std::shared_ptr<const InfillVocab> v) : v_(std::move(v)) {}

    const char *name() const override { return "infill"; }
    void apply(TokenDataArray &cur) override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<InfillSampler>(*this); }

  private:
    bool eog(Token t) const { return t >= 0 && static_cast<size_t>(t) < v_->is_eog.size() && v_->is_eog[t]; }
    const std::string &piece(Token t) const;

    std::shared_ptr<const InfillVocab> v_;
};

}  // namespace lctx
