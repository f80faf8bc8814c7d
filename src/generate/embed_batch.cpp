#include "generate/embed_batch.h"

#include <algorithm>

#include "generate/tokens.h"

namespace lctx::generate {

size_t embed_pass_tokens(const llama_context *ctx) {
    return std::min({llama_n_batch(ctx), llama_n_ubatch(ctx), llama_n_ctx(ctx)});
}

std::vector<size_t> embed_pass_ends(const std::vector<size_t> &lengths, size_t max_seqs, size_t max_tokens) {
    std::vector<size_t> ends;
    if (max_seqs == 0 || max_tokens == 0) return ends;
    for (size_t n : lengths)
        if (n == 0 || n > max_tokens) return ends;
    for (size_t first = 0; first < lengths.size();) {
        size_t last = first, n_tok = 0;
        while (last < lengths.size() && last - first < max_seqs && n_tok + lengths[last] <= max_tokens)
            n_tok += lengths[last++];
        ends.push_back(last);
        first = last;
    }
    return ends;
}

namespace {

struct BatchHolder {
    llama_batch b;
    explicit BatchHolder(int32_t n) : b(llama_batch_init(n, 0, 1)) {}
    ~BatchHolder() { llama_batch_free(b); }
    BatchHolder(const BatchHolder &) = delete;
    BatchHolder &operator=(const BatchHolder &) = delete;
};

}  // namespace

std::string embed_sequences(llama_context *ctx, const std::vector<std::vector<llama_token>> &seqs,
                            std::vector<std::vector<float>> *out, size_t *n_passes) {
    if (seqs.empty()) return "no sequence to embed";
    const size_t max_tokens = embed_pass_tokens(ctx), max_seqs = llama_n_seq_max(ctx);
    std::vector<size_t> lengths;
    for (size_t i = 0; i < seqs.size(); ++i) {
        if (seqs[i].empty()) return "sequence " + std::to_string(i) + " has no tokens";
        if (seqs[i].size() > max_tokens)
            return "sequence " + std::to_string(i) + " has " + std::to_string(seqs[i].size()) +
                   " tokens; one pass takes at most " + std::to_string(max_tokens);
        lengths.push_back(seqs[i].size());
    }
    const std::vector<size_t> ends = embed_pass_ends(lengths, max_seqs, max_tokens);
    if (ends.empty()) return "the context takes no sequence in a pass (n_seq_max 0)";

    const llama_model *model = llama_get_model(ctx);
    const enum llama_pooling_type pooling = llama_pooling_type(ctx);
    const size_t n_embd = static_cast<size_t>(llama_model_n_embd(model));
    const size_t width = pooling == LLAMA_POOLING_TYPE_RANK ? 1 : n_embd;
    const bool encoder = llama_model_has_encoder(model);
    BatchHolder holder(static_cast<int32_t>(max_tokens));
    llama_batch &b = holder.b;
    std::vector<std::vector<float>> rows;
    size_t first = 0;
    for (size_t last : ends) {
        b.n_tokens = 0;
        for (size_t i = first; i < last; ++i)
            for (size_t k = 0; k < seqs[i].size(); ++k) {
                const int32_t j = b.n_tokens++;
                b.token[j] = seqs[i][k];
                b.pos[j] = static_cast<llama_pos>(k);
                b.n_seq_id[j] = 1;
                b.seq_id[j][0] = static_cast<llama_seq_id>(i - first);
                b.logits[j] = 1;
            }
        const std::string which =
            "the pass over sequences " + std::to_string(first) + ".." + std::to_string(last - 1);
        // A decoder's pass must not see the previous pass's tokens.
        if (!encoder) llama_kv_cache_clear(ctx);
        const int32_t rc = encoder ? llama_encode(ctx, b) : llama_decode(ctx, b);
        if (rc != 0)
            return which + " failed (" + (encoder ? "llama_encode" : "llama_decode") + " returned " +
                   std::to_string(rc) + ")";
        int32_t row = 0;
        for (size_t i = first; i < last; ++i) {
            if (pooling == LLAMA_POOLING_TYPE_NONE) {
                for (size_t k = 0; k < seqs[i].size(); ++k, ++row) {
                    const float *e = llama_get_embeddings_ith(ctx, row);
                    if (!e)
                        return which + " gave no vector for token " + std::to_string(k) + " of sequence " +
                               std::to_string(i);
                    rows.emplace_back(e, e + n_embd);
                }
            } else {
                const float *e = llama_get_embeddings_seq(ctx, static_cast<llama_seq_id>(i - first));
                if (!e) return which + " gave no vector for sequence " + std::to_string(i);
                rows.emplace_back(e, e + width);
            }
        }
        first = last;
    }
    if (n_passes) *n_passes = ends.size();
    *out = std::move(rows);
    return "";
}

std::vector<llama_token> rerank_tokens(const llama_vocab *vocab, const std::string &query,
                                       const std::string &doc) {
    std::vector<llama_token> out;
    auto special = [&](llama_token id) {
        if (id >= 0) out.push_back(id);
    };
    const std::vector<llama_token> q = tokenize(vocab, query, false, false);
    const std::vector<llama_token> d = tokenize(vocab, doc, false, false);
    special(llama_vocab_bos(vocab));
    out.insert(out.end(), q.begin(), q.end());
    special(llama_vocab_eos(vocab));
    special(llama_vocab_sep(vocab));
    out.insert(out.end(), d.begin(), d.end());
    special(llama_vocab_eos(vocab));
    return out;
}

}  // namespace lctx::generate
