#include "tools/lctx/perplexity.h"

#include <algorithm>
#include <cmath>

namespace lctx::cli {

PerplexityPlan perplexity_plan(int64_t n_tokens, int32_t n_ctx, int32_t n_batch, int32_t n_chunks,
                               std::string *why) {
    PerplexityPlan p;
    // At least 8: a window scores n_ctx - n_ctx/2 - 1 tokens and the uncertainty needs two of them.
    if (n_ctx < 8) {
        *why = "-c " + std::to_string(n_ctx) + ": a window needs at least 8 tokens";
        return p;
    }
    if (n_batch < 1) {
        *why = "-b " + std::to_string(n_batch) + ": the batch needs at least one token";
        return p;
    }
    if (n_tokens < n_ctx) {
        *why = "the text has " + std::to_string(n_tokens) + " tokens; one window of -c " +
               std::to_string(n_ctx) + " needs " + std::to_string(n_ctx) +
               " (use a smaller -c or a longer text)";
        return p;
    }
    p.n_ctx = n_ctx;
    // llama-perplexity: n_batch / n_ctx windows per batch; a batch smaller than a window splits it.
    p.n_seq = std::max(1, n_batch / n_ctx);
    p.n_batch = std::min(n_batch, p.n_seq * n_ctx);
    const int64_t whole = n_tokens / n_ctx;
    p.n_chunk = static_cast<int32_t>(n_chunks < 0 ? whole : std::min<int64_t>(n_chunks, whole));
    if (p.n_chunk == 0) {
        *why = "--chunks 0: nothing to evaluate";
        return p;
    }
    p.n_seq = std::min(p.n_seq, p.n_chunk);  // no cells for windows that never come
    p.n_batch = std::min(p.n_batch, p.n_seq * n_ctx);
    p.first = n_ctx / 2;
    p.scored = n_ctx - p.first - 1;
    return p;
}

double token_nll(const float *logits, int32_t n_vocab, llama_token token) {
    float max_logit = logits[0];
    for (int32_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
    return -(static_cast<double>(logits[token] - max_logit) - std::log(sum_exp));
}

namespace {

// Mean, its uncertainty and the cumulative value after `count` tokens of running sums.
void finish(PerplexityResult &r, double nll, double nll2) {
    r.mean_nll = nll / static_cast<double>(r.count);
    r.ppl = std::exp(r.mean_nll);
    const double var = nll2 / static_cast<double>(r.count) - r.mean_nll * r.mean_nll;
    r.ppl_err = var > 0.0 && r.count > 1 ? r.ppl * std::sqrt(var / static_cast<double>(r.count - 1)) : 0.0;
}

}  // namespace

bool perplexity_run(llama_context *ctx, const std::vector<llama_token> &tokens, const PerplexityPlan &plan,
                    const PerplexityProgress &progress, PerplexityResult *out, std::string *why) {
    const llama_model *model = llama_get_model(ctx);
    const llama_vocab *vocab = llama_model_get_vocab(model);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    const bool add_bos = llama_vocab_get_add_bos(vocab);
    const int32_t c = plan.n_ctx;
    const int32_t num_batches = (c + plan.n_batch - 1) / plan.n_batch;  // > 1 only with one window a batch

    PerplexityResult &r = *out;
    r = PerplexityResult{};
    double nll = 0.0, nll2 = 0.0;
    llama_batch batch = llama_batch_init(plan.n_batch, 0, 1);
    bool ok = true;
    for (int32_t i = 0; i < plan.n_chunk && ok; i += plan.n_seq) {
        const int32_t start = i * c;
        const int32_t n_seq_batch = std::min(plan.n_seq, plan.n_chunk - i);
        std::vector<PerplexityChunk> chunks(static_cast<size_t>(n_seq_batch));
        for (int32_t s = 0; s < n_seq_batch; ++s) {
            chunks[s].index = i + s + 1;
            chunks[s].token_begin = start + s * c;
            chunks[s].nll.reserve(static_cast<size_t>(plan.scored));
        }
        llama_kv_cache_clear(ctx);
        for (int32_t j = 0; j < num_batches && ok; ++j) {
            const int32_t pos0 = j * plan.n_batch;  // first position of this batch in each window
            const int32_t n = std::min(c - pos0, plan.n_batch);
            batch.n_tokens = 0;
            for (int32_t s = 0; s < n_seq_batch; ++s) {
                for (int32_t k = 0; k < n; ++k) {
                    const int32_t pos = pos0 + k;
                    const int32_t idx = batch.n_tokens++;
                    // Each window starts with BOS in place of its first token.
                    batch.token[idx] =
                        add_bos && pos == 0 ? llama_vocab_bos(vocab) : tokens[chunks[s].token_begin + pos];
                    batch.pos[idx] = pos;
                    batch.n_seq_id[idx] = 1;
                    batch.seq_id[idx][0] = s;
                    // Only the outputs that score a token: positions first .. n_ctx - 2.
                    batch.logits[idx] = pos >= plan.first && pos <= c - 2;
                }
            }
            if (llama_decode(ctx, batch) != 0) {
                *why = "decoding window " + std::to_string(i + 1) + " failed";
                ok = false;
                break;
            }
            for (int32_t idx = 0; idx < batch.n_tokens; ++idx) {
                if (!batch.logits[idx]) continue;
                const float *logits = llama_get_logits_ith(ctx, idx);
                if (!logits) {
                    *why = "the model gives no logits for window " + std::to_string(i + 1) +
                           " (an embedding model has none)";
                    ok = false;
                    break;
                }
                PerplexityChunk &ch = chunks[static_cast<size_t>(batch.seq_id[idx][0])];
                const double v = token_nll(logits, n_vocab, tokens[ch.token_begin + batch.pos[idx] + 1]);
                ch.nll.push_back(v);
            }
        }
        if (!ok) break;
        for (PerplexityChunk &ch : chunks) {
            for (double v : ch.nll) {
                ch.nll_sum += v;
                nll += v;
                nll2 += v * v;
            }
            r.count += static_cast<int64_t>(ch.nll.size());
            ch.ppl = std::exp(ch.nll_sum / static_cast<double>(ch.nll.size()));
            ch.cumulative_ppl = std::exp(nll / static_cast<double>(r.count));
            r.chunks.push_back(std::move(ch));
        }
        finish(r, nll, nll2);
        if (progress) progress(r, n_seq_batch);
    }
    llama_batch_free(batch);
    return ok;
}

}  // namespace lctx::cli
