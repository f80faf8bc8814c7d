// Repetition / frequency / presence penalties over a window of the last n accepted tokens.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sampling/sampler.h"

namespace lctx {

// llama_sampler_init_penalties(penalty_last_n, penalty_repeat, penalty_freq, penalty_present) (b4748
// signature). For every candidate whose token occurs `count` > 0 times among the last penalty_last_n
// accepted tokens:
//   logit <= 0 ? logit *= penalty_repeat : logit /= penalty_repeat;
//   logit -= count * penalty_freq + penalty_present;
// Disabled when penalty_last_n == 0 or the values are neutral (1, 0, 0). A negative penalty_last_n is
// treated as 0 (as upstream does). apply() marks the array unsorted.
class PenaltiesSampler final : public Sampler {
  public:
    PenaltiesSampler(int32_t penalty_last_n, float penalty_repeat, float penalty_freq, float penalty_present);

    const char *name() const override { return "penalties"; }
    void accept(Token token) override;
    void apply(TokenDataArray &cur) override;
    void reset() override;  // forgets the history
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<PenaltiesSampler>(*this); }

    // Occurrences of `token` in the current window (for tests and debugging).
    int32_t count(Token token) const;
    size_t history_size() const { return n_held_; }

  private:
    int32_t last_n_;
    float repeat_;
    float freq_;
    float present_;

    std::vector<Token> ring_;  // [last_n_] the window; the oldest entry is at head_
    size_t head_ = 0;
    size_t n_held_ = 0;
    std::unordered_map<Token, int32_t> counts_;  // token -> occurrences in the window (> 0 only)
};

}  // namespace lctx
