// Speculative decoding over llama.h: a drafter proposes the next tokens cheaply (a smaller draft model with
// its own context, or prompt lookup: an n-gram of the text so far found earlier in it), and the target
// model checks a whole draft in one decode (the last token plus the draft, logits at every position). The
// longest prefix of the draft that agrees with what the target itself chooses is kept, plus the target's own
// token after it; the rejected cells leave both KV caches (llama_kv_cache_seq_rm).
//
// Greedy output is token for token the output without speculation. Sampled output keeps the target's
// distribution: a drafted token d with draft probability q(d) is accepted with probability
// min(1, p(d) / q(d)), and on a rejection the token is drawn from norm(max(0, p - q)) (Leviathan et al.,
// Chen et al. 2023). A deterministic drafter (n-gram, a greedy draft model) has q = 1 at d.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::generate {

// A distribution over token ids: (id, probability) pairs, probabilities summing to 1.
struct TokenProb {
    llama_token id;
    float p;
};
using Dist = std::vector<TokenProb>;

// ---- the acceptance rule, exposed for tests ----

// What one draft position gives: the draft token was accepted, or the token drawn in its place.
struct Verdict {
    bool accepted = false;
    llama_token token = LLAMA_TOKEN_NULL;  // the draft token when accepted, else the replacement
};
// p: the target's distribution at this position; q: the draft's (empty: a point mass at `drafted`). Accepts
// with probability min(1, p(d) / q(d)); else draws from norm(max(0, p - q)).
Verdict spec_accept(const Dist &p, const Dist &q, llama_token drafted, std::mt19937 &rng);
// A draw from p (the target's token after the last draft position, or with no draft at all).
llama_token spec_draw(const Dist &p, std::mt19937 &rng);

// ---- vocabulary compatibility ----

// "" when a draft model's vocabulary can draft for the target's, else why not, in words a user can act on:
// the same vocabulary type, the same BOS / EOS tokens and add-BOS / add-EOS habits, sizes within 128 of each
// other, and the same text for every token id both have from 5 on (llama.cpp's speculative example checks).
std::string spec_vocab_check(const llama_vocab *target, const llama_vocab *draft);

// "" when speculative decoding can run on this context, else why not: a recurrent model (mamba) keeps one
// state per sequence and cannot drop the rejected tokens.
std::string spec_context_check(const llama_context *ctx, const char *which);

// ---- drafters ----

struct Draft {
    std::vector<llama_token> tokens;
    std::vector<Dist> q;  // per token the draft's distribution, or empty: deterministic drafts
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Up to n_max tokens to follow `history` (every token so far, prompt and generated).
    virtual void draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) = 0;
};

// Prompt lookup: the longest n-gram (ngram_max down to ngram_min tokens) that ends the history and occurred
// before, at its latest earlier place; the draft is what followed it there (continued periodically when the
// match runs into the end, so a repeating text drafts its repetition).
class NgramDrafter : public Drafter {
  public:
    NgramDrafter(int32_t ngram_min, int32_t ngram_max);
    void draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) override;

  private:
    int32_t ngram_min_, ngram_max_;
};

// A draft model in its own context (one sequence of it: 0 for a lone generation, a slot's own in the
// server), drafting greedily: it stops when the draft's top probability falls below p_min. Its cache keeps
// the history it has seen; on the next call the part that differs (the rejected draft, another request's
// text) is removed and only new tokens are decoded.
class ModelDrafter : public Drafter {
  public:
    // ctx is not owned; the caller checked spec_vocab_check and spec_context_check.
    ModelDrafter(llama_context *ctx, float p_min, llama_seq_id seq = 0);
    ~ModelDrafter() override;
    void draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) override;

  private:
    llama_context *ctx_;
    float p_min_;
    llama_seq_id seq_;
    int32_t n_vocab_;
    std::vector<llama_token> cached_;  // the tokens in the draft's cache, positions 0..
    llama_batch batch_;
};

// ---- verification ----

struct SpecParams {
    int32_t n_max = 16;  // --draft-max
    int32_t n_min = 5;   // --draft-min: a shorter draft is not used (one plain step instead)
    int32_t n_ctx = 0;   // the positions the history may use; 0: the context's size (a chat keeps to -c)
};

struct SpecSampling {
    // The target's sampler chain without its final draw (penalties, DRY, top-k, top-p, min-p, temperature
    // ...); not owned, may be null (the raw logits). Every chosen token is accepted into it.
    llama_sampler *filters = nullptr;
    bool greedy = true;  // argmax after the filters; else a draw from their softmax
    uint32_t seed = 0;
};

struct SpecStats {
    int64_t n_steps = 0;     // target decodes
    int64_t n_drafted = 0;   // draft tokens checked
    int64_t n_accepted = 0;  // of them accepted
    double acceptance() const { return n_drafted > 0 ? static_cast<double>(n_accepted) / n_drafted : 0.0; }
};

// A drafter's proposal cut to what one verification can take: at most k_max tokens, only ids below n_vocab
// (a draft vocabulary a little larger than the target's can propose others), and nothing at all when fewer
// than n_min remain (or k_max < n_min); q cut to the same length. drafter may be null (no draft).
void spec_draft(Drafter *drafter, const std::vector<llama_token> &history, int32_t k_max, int32_t n_min,
                int32_t n_vocab, Draft *out);

// The verify half of a step: given the target's logits at the last token and at every draft position,
// chooses the tokens (the acceptance rule above, through the sampling's filters). Speculator uses it for its
// one sequence; the server for each drafting slot of its continuous batch, whose rows share one decode.
class SpecVerifier {
  public:
    SpecVerifier(int32_t n_vocab, const SpecSampling &sampling);
    // row(i), i = 0..k (k = d.tokens.size()): the target's logits choosing the token after the history and
    // d.tokens[0..i). Appends the accepted draft tokens and then the target's own token to *out (at least
    // one token; every chosen token is accepted into the filters) and returns how many draft tokens were
    // accepted, or -1 with *error set.
    int32_t verify(const Draft &d, const std::function<const float *(int32_t)> &row,
                   std::vector<llama_token> *out, std::string *error);

  private:
    Dist target_dist(const float *logits);

    int32_t n_vocab_;
    SpecSampling sampling_;
    std::mt19937 rng_;
    std::vector<llama_token_data> cand_;
};

class Speculator {
  public:
    // target: not owned, sequence 0; drafter may be null (plain decoding, one token per step).
    Speculator(llama_context *target, Drafter *drafter, const SpecParams &params,
               const SpecSampling &sampling);
    ~Speculator();
    Speculator(const Speculator &) = delete;
    Speculator &operator=(const Speculator &) = delete;

    // Decodes the prompt (positions 0.., in batches of n_batch as plain decoding does) and keeps its last
    // token's logits for the first step; the cache must be empty. "" or why it failed.
    std::string prefill(const std::vector<llama_token> &history);
    // The caller decoded the whole history itself (a chat's turn on top of its cached conversation, a
    // token before a context shift) and the context's last logits are its last token's: the next step
    // chooses from them, also at a history of n_ctx tokens (the caller shifts before that token is decoded).
    // "" or why not.
    std::string resume();
    // One target decode: history's last token (not yet in the cache; after prefill it is) plus a draft in
    // one batch. Appends the accepted draft tokens and the target's own next token to `history` and to `out`
    // (at least one token); afterwards the cache holds every token of history but the last. Needs
    // history.size() < n_ctx (<= after resume): a token is only chosen for a position that fits the context
    // unless the caller shifts it. "" or why it failed.
    std::string step(std::vector<llama_token> &history, std::vector<llama_token> *out);

    const SpecStats &stats() const { return stats_; }

  private:
    llama_context *ctx_;
    Drafter *drafter_;
    SpecParams params_;
    SpecVerifier verifier_;
    int32_t n_vocab_, n_ctx_, n_batch_;
    llama_batch batch_;
    std::vector<float> pending_;  // the last prompt token's logits, until the first step uses them
    bool resumed_ = false;        // pending_ came from the caller's decode (resume)
    SpecStats stats_;
};

}  // namespace lctx::generate
