// The steps the families' forward passes share, so that each family's file shows only what is its own:
// the embedding lookup, the KV store, attention over the cache, the SwiGLU feed-forward block and the
// output head. Each step works on row-major f32 activations ([rows][width]) in the pass's ForwardScratch.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "kernels/threadpool.h"
#include "model/forward.h"
#include "model/model.h"

namespace lctx {

// Grows a scratch buffer to at least n elements (buffers are reused across micro-batches).
template <typename T>
void grow(std::vector<T> &buf, size_t n) {
    if (buf.size() < n) buf.resize(n);
}

// Grows the buffers every layer uses to the micro-batch's n_tokens rows (a family grows its feed-forward
// buffers itself, their widths being its own) and returns the residual stream s.x:
//   x, cur, out [n_tokens][n_embd]      residual stream, normalized block input, block output
//   q [n_tokens][n_head * head_dim_k], k [..][n_head_kv * head_dim_k], v [..][n_head_kv * head_dim_v]
//   attn [n_tokens][n_head * head_dim_v]
float *grow_layer_scratch(const HParams &hp, int64_t n_tokens, ForwardScratch &s);

// x [n_tokens][n_embd] = the rows of token_embd for the batch's tokens, or its input embeddings.
void embed_tokens(const kernels::WeightView &token_embd, const ForwardBatch &b, int64_t n_embd, float *x);

// s.rope_cs [n_tokens][n_rot] = the rotation of each token's position (kernels::rope_angles), computed once
// for q, k and every layer that rotates alike.
void rope_angles_rows(const ForwardBatch &b, const kernels::RopeParams &rope, ForwardScratch &s);

// The rows a layer carries past attention: all rows of the micro-batch, except in the last layer, where
// only the output rows are needed (their K/V still come from every row).
struct LayerRows {
    const int32_t *rows;
    int64_t n;
    bool gathered;  // the last layer with fewer rows than tokens: gather_rows moves them to the front
};
LayerRows layer_rows(const HParams &hp, uint32_t il, const ForwardBatch &b, ForwardScratch &s);
// Every row of the micro-batch (0, 1, ..., n_tokens - 1).
LayerRows all_rows(const ForwardBatch &b, ForwardScratch &s);
// x [n_tokens][width] -> x [r.n][width]: row i = old row r.rows[i] (ascending, so in place); nothing to do
// unless r.gathered.
void gather_rows(const LayerRows &r, float *x, int64_t width);

// Asks for the cache lines the K/V store of layer il will write while the q/k/v product streams its weights
// (between two decoded tokens the weights pass through every cache and evict them, and the transposed V
// store touches one line per channel).
void prefetch_kv_store(const KvView &kv, uint32_t il, const ForwardBatch &b, int64_t v_dim);
// Writes the batch's k [n_tokens][k_dim] and v [n_tokens][v_dim] rows into their cells of layer il,
// converted to the cache types.
void store_kv(const KvView &kv, uint32_t il, const ForwardBatch &b, const float *k, const float *v,
              int64_t k_dim, int64_t v_dim);

// Recurrent families: s.conv_state[t] and s.ssm_state[t] = layer il's state of the cell of batch row t
// (the K row: convolution state, the V row: SSM state; f32). Rows of one sequence share their cell.
void recurrent_state_rows(const KvView &kv, uint32_t il, const ForwardBatch &b, ForwardScratch &s);

struct AttendOptions {
    float scale = 1.0f;            // applied to q.k (usually 1 / sqrt(head_dim_k))
    float softcap = 0.0f;          // > 0: scores = softcap * tanh(scores / softcap)
    const float *mask = nullptr;   // [n_tokens][n_kv]; null: the batch's mask
    const float *alibi = nullptr;  // [n_head] ALiBi slopes (kernels::alibi_slopes), or null
    // > 0: one mask per head, [n_head][n_tokens][n_kv] with this stride (relative_position_masks)
    int64_t mask_head_stride = 0;
    bool encoder_pass = false;  // an encoder's whole pass (kernels::AttentionArgs::encoder_pass)
    // The layer's own K [n_kv][n_head_kv * head_dim_k] and V [n_kv][n_head_kv * head_dim_v] rows (f32),
    // attended in place of the cache's cells (keep_kv names them), or null.
    const float *k_rows = nullptr;
    const float *v_rows = nullptr;
};
// The K and V rows layer il attends: written into their cells (store_kv), or, where the batch owns its cells
// (ForwardBatch::own_cells: an encoder's pass), left where they are and named in opt for attend to read in
// place. An encoder then copies nothing, and its cells' memory is never committed.
void keep_kv(const KvView &kv, uint32_t il, const ForwardBatch &b, const float *k, const float *v,
             int64_t k_dim, int64_t v_dim, AttendOptions &opt);
// out [r.n][n_head * head_dim_v] = attention of the query rows r.rows of q [n_tokens][n_head * head_dim_k]
// (already rotated) over cells [0, n_kv) of layer il's cache.
void attend(const HParams &hp, const KvView &kv, uint32_t il, const ForwardBatch &b, const float *q,
            const LayerRows &r, float *out, const AttendOptions &opt, kernels::ThreadPool &pool);

// T5's relative-position bucket (of n_buckets) of a key at rel = key_pos - query_pos. Bidirectional (an
// encoder): half the buckets for keys after the query, half for the others, by |rel|; otherwise (a decoder)
// all for keys at or before it, by max(-rel, 0). Within a half of nb buckets, distances below nb/2 have one
// bucket each, and the rest share the others on a log scale up to a distance of 128:
//   nb/2 + floor(ln(n / (nb/2)) / ln(128 / (nb/2)) * (nb - nb/2)), at most nb - 1.
int32_t relative_position_bucket(int64_t rel, uint32_t n_buckets, bool bidirectional);
// out [n_head][n_tokens][n_kv] = mask + rel_b[bucket(b.kv_pos[j] - b.pos[i])][h] for mask [n_tokens][n_kv]
// (-inf stays -inf): one attention mask per head (AttendOptions::mask_head_stride = n_tokens * n_kv).
// rel_b is [n_buckets][n_head].
void relative_position_masks(const HParams &hp, const ParamVector &rel_b, const ForwardBatch &b,
                             const float *mask, bool bidirectional, std::vector<float> &out);

// out [n_rows][n_embd] = (silu(h Wgate + bg) * (h Wup + bu)) Wdown + bd for h [n_rows][n_embd]; uses
// s.ffn_a and s.ffn_b (grown here).
void ffn_swiglu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
                ForwardScratch &s, kernels::ThreadPool &pool);
// The same with GELU (ggml's, kernels::gelu) in place of silu: (gelu(h Wgate) * (h Wup)) Wdown.
void ffn_geglu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
               ForwardScratch &s, kernels::ThreadPool &pool);
// out [n_rows][n_embd] = relu(h Wup + bu) Wdown + bd (no gate); uses s.ffn_a.
void ffn_relu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
              ForwardScratch &s, kernels::ThreadPool &pool);

// The batch's outputs from the final hidden states x [n_outputs][n_embd]: RMS-normalized with output_norm
// (into s.cur), then write_outputs.
void output_rms(const HParams &hp, const ModelWeights &w, const ForwardBatch &b, const float *x,
                ForwardScratch &s, kernels::ThreadPool &pool);
// b.hidden = normed (when asked), b.logits = normed Woutput (when asked), normed [n_outputs][n_embd].
void write_outputs(const HParams &hp, const ModelWeights &w, const ForwardBatch &b, const float *normed,
                   ForwardScratch &s, kernels::ThreadPool &pool);

}  // namespace lctx
