// DRY ("don't repeat yourself", p-e-w's repetition penalty as llama.cpp b4748 has it): a candidate that
// would extend a sequence of tokens already seen earlier in the recent history, by at least
// `allowed_length` tokens, loses multiplier * base^(length - allowed_length) of its logit. Sequence breakers
// (by default newlines, ':', '"', '*') end the repetition a match may reach back over.
#pragma once
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sampling/sampler.h"

namespace lctx {

// A sequence breaker as tokens: its first token and the tokens that must follow it (empty for a breaker
// that one token holds whole). The C API derives them from the breaker strings and the vocabulary.
using DryBreaker = std::pair<Token, std::vector<Token>>;

// Breaker strings as token sequences (b4748's reading): for every token whose text (`detokenize`) holds the
// breaker, the token alone; for every token whose text ends with a beginning of the breaker, the token and
// the tokens of the breaker's rest (`tokenize`, at most 20). Breakers are cut to 40 bytes; empty ones are
// skipped with a warning. The vocabulary comes in as the two functions (this layer does not know it).
std::vector<DryBreaker> dry_breakers(int32_t n_vocab, const std::function<std::string(Token)> &detokenize,
                                     const std::function<std::vector<Token>(const std::string &)> &tokenize,
                                     const std::vector<std::string> &breakers);

// llama.cpp's default breakers: newline, ':', '"', '*'.
inline std::vector<std::string> dry_default_breakers() {
    return {"\n", ":", "\"", "*"};
}

struct DryParams {
    int32_t context_size = 0;     // the history limit that penalty_last_n = -1 stands for
    float multiplier = 0.0f;      // 0: off
    float base = 1.75f;           // < 1: off
    int32_t allowed_length = 2;   // repetitions up to this length are free
    int32_t penalty_last_n = -1;  // tokens of history looked at; -1: context_size; 0: off
};

class DrySampler final : public Sampler {
  public:
    DrySampler(const DryParams &p, std::vector<DryBreaker> breakers);

    const char *name() const override { return "dry"; }
    void accept(Token token) override;
    void apply(TokenDataArray &cur) override;
    void reset() override { history_.clear(); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<DrySampler>(*this); }

  private:
    bool enabled() const { return p_.multiplier != 0.0f && p_.base >= 1.0f && p_.penalty_last_n != 0; }
    // Tokens back from the newest that a repetition may span (the nearest breaker ends it).
    int32_t repetition_limit(int32_t n) const;

    DryParams p_;
    size_t window_ = 0;  // history kept
    std::unordered_multimap<Token, std::vector<Token>> breakers_;
    std::deque<Token> history_;                   // oldest first
    std::vector<int32_t> suffix_len_;             // scratch
    std::unordered_map<Token, int32_t> longest_;  // scratch
};

}  // namespace lctx
