// Embeddings of many token sequences through llama.h: the sequences packed into as few passes as the
// context allows, one pooled vector per sequence (or one per token with pooling none). Shared by `lctx embed`
// and the server's /v1/embeddings and /v1/rerank.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::generate {

// The most tokens one pass takes on ctx: n_batch, n_ubatch and n_ctx, the smallest (a non-causal model
// must see each pass in one micro-batch; a decoder's pass must fit its cache).
size_t embed_pass_tokens(const llama_context *ctx);

// Where each pass ends: the sequences in order, each pass as many whole sequences as fit `max_seqs` sequences
// and `max_tokens` tokens; ends[k] is one past the last sequence of pass k. Empty when a length is 0, longer
// than max_tokens, or a limit is 0 (embed_sequences says why).
std::vector<size_t> embed_pass_ends(const std::vector<size_t> &lengths, size_t max_seqs, size_t max_tokens);

// Embeds each sequence on ctx (made with embeddings on): packed into passes by embed_pass_ends with
// llama_n_seq_max(ctx) sequences and embed_pass_tokens(ctx) tokens, each pass run by llama_encode (a model
// with an encoder) or on a cleared cache by llama_decode. *out gets one row per sequence, in order: the
// pooled vector (n_embd floats; with rank pooling the head's score, 1 float); with pooling none, one row of
// n_embd floats per token, the sequences' rows one after the other. Returns "" or why not (no sequence, an
// empty sequence, one longer than a pass takes, a pass that fails or gives no vector), *out then untouched.
// *n_passes (when given) gets the number of passes run.
std::string embed_sequences(llama_context *ctx, const std::vector<std::vector<llama_token>> &seqs,
                            std::vector<std::vector<float>> *out, size_t *n_passes = nullptr);

// llama-server's rerank input: [BOS] query [EOS] [SEP] document [EOS], the texts tokenized without special
// tokens (a special token the vocabulary lacks is left out).
std::vector<llama_token> rerank_tokens(const llama_vocab *vocab, const std::string &query,
                                       const std::string &doc);

}  // namespace lctx::generate
