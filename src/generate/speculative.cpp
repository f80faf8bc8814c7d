#include "generate/speculative.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lctx::generate {

namespace {

float prob_of(const Dist &d, llama_token id) {
    for (const TokenProb &t : d)
        if (t.id == id) return t.p;
    return 0.0f;
}

// A uniform draw in [0, 1).
double uniform(std::mt19937 &rng) {
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// A draw from weights w (not normalized; their sum > 0).
llama_token draw_weighted(const Dist &w, std::mt19937 &rng) {
    double total = 0;
    for (const TokenProb &t : w) total += t.p;
    const double u = uniform(rng) * total;
    double acc = 0;
    for (const TokenProb &t : w) {
        acc += t.p;
        if (u < acc) return t.id;
    }
    // Rounding at the top end: the last token with weight.
    for (auto it = w.rbegin(); it != w.rend(); ++it)
        if (it->p > 0) return it->id;
    return w.empty() ? LLAMA_TOKEN_NULL : w.back().id;
}

// Positions pos0.., sequence seq, every token an output when all_logits.
void fill_batch(llama_batch &b, const llama_token *tokens, int32_t n, llama_pos pos0, bool all_logits,
                llama_seq_id seq = 0) {
    b.n_tokens = n;
    for (int32_t i = 0; i < n; ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = all_logits || i == n - 1;
    }
}

std::string decode_error(int32_t rc) {
    return "llama_decode failed (status " + std::to_string(rc) + ")";
}

}  // namespace

llama_token spec_draw(const Dist &p, std::mt19937 &rng) {
    return draw_weighted(p, rng);
}

Verdict spec_accept(const Dist &p, const Dist &q, llama_token drafted, std::mt19937 &rng) {
    const double pd = prob_of(p, drafted);
    const double qd = q.empty() ? 1.0 : prob_of(q, drafted);
    const double ratio = qd > 0 ? pd / qd : (pd > 0 ? 1.0 : 0.0);
    if (ratio >= 1.0 || uniform(rng) < ratio) return {true, drafted};
    // Rejected: the residual max(0, p - q), which the acceptance above leaves out of p.
    Dist residual;
    residual.reserve(p.size());
    for (const TokenProb &t : p) {
        const double qt = q.empty() ? (t.id == drafted ? 1.0 : 0.0) : prob_of(q, t.id);
        const double r = t.p - qt;
        if (r > 0) residual.push_back({t.id, static_cast<float>(r)});
    }
    // p == q leaves nothing (and then the draft is always accepted): a draw from p is the same law.
    return {false, draw_weighted(residual.empty() ? p : residual, rng)};
}

std::string spec_vocab_check(const llama_vocab *target, const llama_vocab *draft) {
    if (llama_vocab_type(target) != llama_vocab_type(draft))
        return "the draft model's vocabulary type (" + std::to_string(llama_vocab_type(draft)) +
               ") differs from the target's (" + std::to_string(llama_vocab_type(target)) + ")";
    if (llama_vocab_get_add_bos(target) != llama_vocab_get_add_bos(draft) ||
        llama_vocab_get_add_eos(target) != llama_vocab_get_add_eos(draft) ||
        llama_vocab_bos(target) != llama_vocab_bos(draft) ||
        llama_vocab_eos(target) != llama_vocab_eos(draft))
        return "the draft model's special tokens differ from the target's (BOS " +
               std::to_string(llama_vocab_bos(draft)) + " vs " + std::to_string(llama_vocab_bos(target)) +
               ", EOS " + std::to_string(llama_vocab_eos(draft)) + " vs " +
               std::to_string(llama_vocab_eos(target)) + ", add BOS " +
               std::to_string(llama_vocab_get_add_bos(draft)) + " vs " +
               std::to_string(llama_vocab_get_add_bos(target)) + ", add EOS " +
               std::to_string(llama_vocab_get_add_eos(draft)) + " vs " +
               std::to_string(llama_vocab_get_add_eos(target)) + ")";
    const int32_t nt = llama_vocab_n_tokens(target), nd = llama_vocab_n_tokens(draft);
    if (std::abs(nt - nd) > 128)
        return "the draft model's vocabulary has " + std::to_string(nd) + " tokens and the target's " +
               std::to_string(nt) + " (at most 128 apart)";
    for (int32_t id = 5; id < std::min(nt, nd); ++id) {
        const char *a = llama_vocab_get_text(target, id);
        const char *b = llama_vocab_get_text(draft, id);
        if (std::strcmp(a ? a : "", b ? b : "") != 0)
            return "token " + std::to_string(id) + " is '" + std::string(b ? b : "") +
                   "' in the draft model and '" + std::string(a ? a : "") +
                   "' in the target: the vocabularies differ";
    }
    return "";
}

std::string spec_context_check(const llama_context *ctx, const char *which) {
    if (llama_model_is_recurrent(llama_get_model(ctx)))
        return std::string("the ") + which +
               " model is recurrent (one state per sequence, as mamba): it cannot drop rejected draft "
               "tokens, "
               "so speculative decoding cannot run on it";
    return "";
}

// ---- n-gram lookup ----

NgramDrafter::NgramDrafter(int32_t ngram_min, int32_t ngram_max)
    : ngram_min_(std::max(1, ngram_min)), ngram_max_(std::max(ngram_min_, ngram_max)) {}

void NgramDrafter::draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) {
    out->tokens.clear();
    out->q.clear();
    const int32_t n = static_cast<int32_t>(history.size());
    if (n_max <= 0) return;
    for (int32_t m = std::min(ngram_max_, n - 1); m >= ngram_min_; --m) {
        const llama_token *pat = history.data() + (n - m);
        for (int32_t s = n - m - 1; s >= 0; --s) {
            if (!std::equal(pat, pat + m, history.data() + s)) continue;
            // What followed the match; an index past the history reads the draft itself (a period of
            // n - m - s tokens repeats).
            for (int32_t i = 0; i < n_max; ++i) {
                const int32_t idx = s + m + i;
                out->tokens.push_back(idx < n ? history[static_cast<size_t>(idx)]
                                              : out->tokens[static_cast<size_t>(idx - n)]);
            }
            return;
        }
    }
}

// ---- draft model ----

ModelDrafter::ModelDrafter(llama_context *ctx, float p_min, llama_seq_id seq)
    : ctx_(ctx),
      p_min_(p_min),
      seq_(seq),
      n_vocab_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)))),
      batch_(llama_batch_init(static_cast<int32_t>(llama_n_batch(ctx)), 0, 1)) {
    llama_kv_cache_seq_rm(ctx_, seq_, 0, -1);
}

ModelDrafter::~ModelDrafter() {
    llama_batch_free(batch_);
}

void ModelDrafter::draft(const std::vector<llama_token> &history, int32_t n_max, Draft *out) {
    out->tokens.clear();
    out->q.clear();
    const int32_t n = static_cast<int32_t>(history.size());
    n_max = std::min(n_max, static_cast<int32_t>(llama_n_ctx(ctx_)) - n);
    if (n == 0 || n_max <= 0) return;
    // Keep the common prefix (at most n - 1 tokens: the last is decoded again for its logits).
    size_t k = 0;
    while (k < cached_.size() && k + 1 < history.size() && cached_[k] == history[k]) ++k;
    if (!llama_kv_cache_seq_rm(ctx_, seq_, static_cast<llama_pos>(k), -1)) {
        llama_kv_cache_seq_rm(ctx_, seq_, 0, -1);
        k = 0;
    }
    cached_.resize(k);
    const int32_t n_batch = static_cast<int32_t>(llama_n_batch(ctx_));
    for (int32_t i = static_cast<int32_t>(k); i < n; i += n_batch) {
        const int32_t len = std::min(n_batch, n - i);
        fill_batch(batch_, history.data() + i, len, i, false, seq_);
        if (llama_decode(ctx_, batch_) != 0) {
            llama_kv_cache_seq_rm(ctx_, seq_, 0, -1);
            cached_.clear();
            return;
        }
        cached_.insert(cached_.end(), history.begin() + i, history.begin() + i + len);
    }
    int32_t row = batch_.n_tokens - 1;
    for (;;) {
        const float *logits = llama_get_logits_ith(ctx_, row);
        if (!logits) return;
        llama_token best = 0;
        for (llama_token t = 1; t < n_vocab_; ++t)
            if (logits[t] > logits[best]) best = t;
        double sum = 0;
        for (llama_token t = 0; t < n_vocab_; ++t)
            sum += std::exp(static_cast<double>(logits[t] - logits[best]));
        if (!(1.0 / sum >= p_min_)) return;
        out->tokens.push_back(best);
        if (static_cast<int32_t>(out->tokens.size()) >= n_max) return;
        fill_batch(batch_, &best, 1, static_cast<llama_pos>(cached_.size()), true, seq_);
        if (llama_decode(ctx_, batch_) != 0) return;  // the next call finds the cache as cached_ says
        cached_.push_back(best);
        row = 0;
    }
}

// ---- verification ----

void spec_draft(Drafter *drafter, const std::vector<llama_token> &history, int32_t k_max, int32_t n_min,
                int32_t n_vocab, Draft *out) {
    out->tokens.clear();
    out->q.clear();
    if (!drafter || k_max <= 0 || k_max < n_min) return;
    drafter->draft(history, k_max, out);
    if (static_cast<int32_t>(out->tokens.size()) > k_max) out->tokens.resize(static_cast<size_t>(k_max));
    size_t valid = 0;
    while (valid < out->tokens.size() && out->tokens[valid] >= 0 && out->tokens[valid] < n_vocab) ++valid;
    out->tokens.resize(valid);
    if (static_cast<int32_t>(out->tokens.size()) < n_min) out->tokens.clear();
    if (out->q.size() > out->tokens.size() || (!out->q.empty() && out->q.size() != out->tokens.size()))
        out->q.resize(out->tokens.size());
}

SpecVerifier::SpecVerifier(int32_t n_vocab, const SpecSampling &sampling)
    : n_vocab_(n_vocab), sampling_(sampling), rng_(sampling.seed) {
    cand_.resize(static_cast<size_t>(n_vocab_));
}

Dist SpecVerifier::target_dist(const float *logits) {
    for (int32_t t = 0; t < n_vocab_; ++t) cand_[static_cast<size_t>(t)] = {t, logits[t], 0.0f};
    llama_token_data_array arr{cand_.data(), cand_.size(), -1, false};
    if (sampling_.filters) llama_sampler_apply(sampling_.filters, &arr);
    Dist d;
    if (arr.size == 0) return d;
    if (sampling_.greedy) {
        size_t best = 0;
        for (size_t k = 1; k < arr.size; ++k)
            if (arr.data[k].logit > arr.data[best].logit) best = k;  // strict: ties keep the first
        d.push_back({arr.data[best].id, 1.0f});
        return d;
    }
    float mx = -INFINITY;
    for (size_t k = 0; k < arr.size; ++k) mx = std::max(mx, arr.data[k].logit);
    if (!std::isfinite(mx)) return d;
    double sum = 0;
    d.reserve(arr.size);
    for (size_t k = 0; k < arr.size; ++k) {
        const double e = std::exp(static_cast<double>(arr.data[k].logit - mx));
        if (e > 0) {
            d.push_back({arr.data[k].id, static_cast<float>(e)});
            sum += e;
        }
    }
    for (TokenProb &t : d) t.p = static_cast<float>(t.p / sum);
    return d;
}

int32_t SpecVerifier::verify(const Draft &d, const std::function<const float *(int32_t)> &row,
                             std::vector<llama_token> *out, std::string *error) {
    const int32_t k = static_cast<int32_t>(d.tokens.size());
    int32_t accepted = 0;
    for (int32_t i = 0; i <= k; ++i) {
        const float *logits = row(i);
        if (!logits) {
            *error = "no logits for a draft position";
            return -1;
        }
        const Dist p = target_dist(logits);
        if (p.empty()) {
            *error = "the samplers left no token to choose";
            return -1;
        }
        llama_token tok;
        bool ok = false;
        if (i < k) {
            static const Dist point;
            const Verdict v = spec_accept(p, d.q.empty() ? point : d.q[static_cast<size_t>(i)],
                                          d.tokens[static_cast<size_t>(i)], rng_);
            tok = v.token;
            ok = v.accepted;
        } else {
            tok = sampling_.greedy ? p.front().id : spec_draw(p, rng_);
        }
        if (sampling_.filters) llama_sampler_accept(sampling_.filters, tok);
        out->push_back(tok);
        if (!ok) break;
        ++accepted;
    }
    return accepted;
}

Speculator::Speculator(llama_context *target, Drafter *drafter, const SpecParams &params,
                       const SpecSampling &sampling)
    : ctx_(target),
      drafter_(drafter),
      params_(params),
      verifier_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(target))), sampling),
      n_vocab_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(target)))),
      n_ctx_(params.n_ctx > 0 ? std::min(params.n_ctx, static_cast<int32_t>(llama_n_ctx(target)))
                              : static_cast<int32_t>(llama_n_ctx(target))),
      n_batch_(static_cast<int32_t>(llama_n_batch(target))),
      batch_(llama_batch_init(n_batch_, 0, 1)) {}

Speculator::~Speculator() {
    llama_batch_free(batch_);
}

std::string Speculator::prefill(const std::vector<llama_token> &history) {
    // The whole prompt in the batches plain decoding uses, so that its cells hold what plain decoding's
    // hold (a kernel may round a row of a long batch differently from a short one); the last token's logits
    // are kept for the first step.
    const int32_t n = static_cast<int32_t>(history.size());
    if (n == 0) return "nothing to decode";
    for (int32_t i = 0; i < n; i += n_batch_) {
        const int32_t len = std::min(n_batch_, n - i);
        fill_batch(batch_, history.data() + i, len, i, false);
        if (const int32_t rc = llama_decode(ctx_, batch_); rc != 0) return decode_error(rc);
    }
    const float *last = llama_get_logits_ith(ctx_, -1);
    if (!last) return "no logits for the prompt's last token";
    pending_.assign(last, last + n_vocab_);
    return "";
}

std::string Speculator::resume() {
    const float *last = llama_get_logits_ith(ctx_, -1);
    if (!last) return "no logits for the history's last token";
    pending_.assign(last, last + n_vocab_);
    resumed_ = true;
    return "";
}

std::string Speculator::step(std::vector<llama_token> &history, std::vector<llama_token> *out) {
    const int32_t n = static_cast<int32_t>(history.size());
    if (n == 0) return "nothing to continue from";
    if (n >= n_ctx_ + (resumed_ ? 1 : 0)) return "the context is full";
    // The draft and the token after it must fit the context; the draft and the last token one batch.
    const int32_t k_max = std::min({params_.n_max, n_ctx_ - 1 - n, n_batch_ - 1});
    Draft d;
    spec_draft(drafter_, history, k_max, params_.n_min, n_vocab_, &d);
    const int32_t k = static_cast<int32_t>(d.tokens.size());
    // Logits row i chooses the token after history + draft[0..i): after prefill the last token's logits are
    // at hand and only the draft is decoded; else the last token goes first in the batch.
    const bool pending = !pending_.empty();
    std::vector<llama_token> seq;
    seq.reserve(static_cast<size_t>(k) + 1);
    if (!pending) seq.push_back(history.back());
    seq.insert(seq.end(), d.tokens.begin(), d.tokens.end());
    if (!seq.empty()) {
        fill_batch(batch_, seq.data(), static_cast<int32_t>(seq.size()), pending ? n : n - 1, true);
        if (const int32_t rc = llama_decode(ctx_, batch_); rc != 0) return decode_error(rc);
        ++stats_.n_steps;
    }
    auto row = [&](int32_t i) -> const float * {
        if (pending) return i == 0 ? pending_.data() : llama_get_logits_ith(ctx_, i - 1);
        return llama_get_logits_ith(ctx_, i);
    };
    stats_.n_drafted += k;
    std::vector<llama_token> chosen;
    std::string error;
    const int32_t accepted = verifier_.verify(d, row, &chosen, &error);
    if (accepted < 0) return error;
    history.insert(history.end(), chosen.begin(), chosen.end());
    out->insert(out->end(), chosen.begin(), chosen.end());
    stats_.n_accepted += accepted;
    pending_.clear();
    resumed_ = false;
    // The cache holds the old history and the accepted draft; the rest of the draft goes.
    if (accepted < k && !llama_kv_cache_seq_rm(ctx_, 0, n + accepted, -1))
        return "the target's cache could not drop the rejected draft tokens";
    return "";
}

}  // namespace lctx::generate
