// Perplexity of a token stream as llama-perplexity computes it (its default mode, no --ppl-stride), over
// the public C API alone: the text is cut into windows ("chunks") of n_ctx tokens, each window's first
// token becomes BOS, each is decoded on an empty cache, and only the second half of each window is scored
// (so every scored token has at least n_ctx/2 tokens of context). Several windows share one batch as
// parallel sequences (n_batch / n_ctx of them); a window longer than n_batch takes several batches.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::cli {

// How a run is laid out, from the text length and the options (-c, -b, --chunks).
struct PerplexityPlan {
    int32_t n_ctx = 0;    // window length (-c)
    int32_t n_batch = 0;  // tokens of one llama_decode: n_seq * n_ctx, or less than n_ctx
    int32_t n_seq = 0;    // windows decoded side by side (n_batch / n_ctx, at least 1)
    int32_t n_chunk = 0;  // windows evaluated
    int32_t first = 0;    // position of the first output scored in a window (n_ctx / 2)
    int32_t scored = 0;   // tokens scored per window: n_ctx - first - 1
    // Tokens of context the run needs (the context size to create): n_seq * n_ctx.
    int32_t context_size() const { return n_seq * n_ctx; }
};

// Checks the options against the text; returns the plan, or sets *why (one line) and returns a plan with
// n_chunk 0. n_chunks < 0: every whole window of the text.
PerplexityPlan perplexity_plan(int64_t n_tokens, int32_t n_ctx, int32_t n_batch, int32_t n_chunks,
                               std::string *why);

struct PerplexityChunk {
    int32_t index = 0;        // 1-based, as llama-perplexity prints it
    int32_t token_begin = 0;  // the window is tokens [token_begin, token_begin + n_ctx)
    std::vector<double> nll;  // negative log-likelihood of each scored token, in order
    double nll_sum = 0.0;
    double ppl = 0.0;             // this window alone: exp(nll_sum / nll.size())
    double cumulative_ppl = 0.0;  // windows 1..index together (the printed "[k]v" value)
};

struct PerplexityResult {
    std::vector<PerplexityChunk> chunks;
    int64_t count = 0;  // tokens scored in all
    double mean_nll = 0.0;
    double ppl = 0.0;      // exp(mean_nll)
    double ppl_err = 0.0;  // ppl * standard error of the mean nll
};

// Called after every batch with the windows finished so far (new ones at the back, n_new of them).
using PerplexityProgress = std::function<void(const PerplexityResult &so_far, int32_t n_new)>;

// Runs the plan on `ctx` (which must hold plan.context_size() cells, plan.n_batch tokens per batch and
// plan.n_seq sequences). `tokens` as llama_tokenize gives them with add_special (BOS first when the
// vocabulary adds one). Returns false with *why set when a decode fails.
bool perplexity_run(llama_context *ctx, const std::vector<llama_token> &tokens, const PerplexityPlan &plan,
                    const PerplexityProgress &progress, PerplexityResult *out, std::string *why);

// -log softmax(logits)[token], as llama-perplexity computes it: the maximum subtracted, the exponentials
// (float) summed in double.
double token_nll(const float *logits, int32_t n_vocab, llama_token token);

}  // namespace lctx::cli
