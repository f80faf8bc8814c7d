// What a family's forward pass receives for one micro-batch, and the KV storage it writes to.
// The context (src/context) prepares these: it chose the cache cells and built the mask; the model
// only computes.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/threadpool.h"
#include "model/projection.h"
#include "tensor/types.h"

namespace lctx {

class Model;
struct HParams;

// Per-layer K and V storage of the KV cache. K rows: one per cell, n_embd_k_gqa elements of type_k.
// V: when v_trans, one row per channel holding `size` cells of type_v (so attention's weighted sum
// reads contiguous memory); otherwise one row per cell like K. A recurrent model's (mamba) cells hold its
// sequences' states instead: the K row a cell's convolution state, the V row its SSM state (f32, by rows).
struct KvView {
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    bool v_trans = true;
    uint32_t size = 0;         // cells
    size_t k_row_bytes = 0;    // bytes of one cell's K row
    size_t v_row_bytes = 0;    // bytes of one cell's V row (v_trans == false)
    size_t v_elem_bytes = 0;   // bytes of one V element (v_trans == true; F32/F16 only)
    std::vector<uint8_t *> k;  // [n_layer] -> [size][k_row_bytes]
    std::vector<uint8_t *> v;  // [n_layer] -> [size][v_row_bytes] or [n_embd_v_gqa][size] elements
    // The context's cells per sequence (b4748: n_ctx / n_seq_max): LongRoPE models rotate by other
    // frequencies when it exceeds their original training context (layer_rope).
    uint32_t n_ctx_per_seq = 0;
    // The context's RoPE settings (context_rope), without frequency factors: the forward pass and the K-shift
    // rotate with them.
    kernels::RopeParams rope;
};

struct ForwardBatch {
    int32_t n_tokens = 0;
    const int32_t *tokens = nullptr;  // [n_tokens] token ids, or null when embd is given
    const float *embd = nullptr;      // [n_tokens][n_embd] input embeddings
    const int32_t *pos = nullptr;     // [n_tokens]
    const uint32_t *cells = nullptr;  // [n_tokens] KV cell each token's K/V is written to
    int32_t n_kv = 0;                 // attention spans cells [0, n_kv)
    const float *mask = nullptr;      // [n_tokens][n_kv]: 0 (visible) or -inf (ALiBi: -|pos_q - pos_k|)
    const float *mask_swa = nullptr;  // the same for sliding-window layers (HParams::layer_is_swa), or null
    // [n_tokens][2] each mask row's visible span (kernels::attention_mask_spans), found once for every layer;
    // null: the attention finds them
    const int32_t *mask_spans = nullptr;
    const int32_t *mask_swa_spans = nullptr;
    const int32_t *kv_pos = nullptr;  // [n_kv] position of each cell (-1: empty; masked anyway)
    // The batch's tokens are cells 0..n_tokens-1 in order and no later pass reads those cells (an encoder's
    // pass, Context::run_encoder): a layer may attend its K and V rows where the projections put them instead
    // of storing them (keep_kv).
    bool own_cells = false;
    // Encoder-decoder models' decoder: the last encode's output [n_enc][n_embd] and which of its tokens each
    // token may attend to, cross_mask [n_tokens][n_enc] (0 or -inf). Null / 0 otherwise.
    const float *enc_out = nullptr;
    int32_t n_enc = 0;
    const float *cross_mask = nullptr;
    // The cross-attention's K and V of enc_out, [n_layer_dec][n_enc K rows, then n_enc V rows] (F32): the
    // decoder projects them into it when !cross_kv_ready, and reads them when ready (the context keeps them
    // from the first decode after an encode to the next encode). Null: projected into scratch every pass.
    float *cross_kv = nullptr;
    bool cross_kv_ready = false;
    int32_t n_outputs = 0;
    const int32_t *out_rows = nullptr;  // [n_outputs] ubatch rows whose outputs are wanted (ascending)
    float *logits = nullptr;            // [n_outputs][n_vocab], or null
    float *hidden = nullptr;            // [n_outputs][n_embd] normalized final hidden state, or null
    // Control vector (llama_apply_adapter_cvec): [n_layer][n_embd], added to the residual stream after
    // layer il's feed-forward block for il in [cvec_first, cvec_last]; null when none is applied.
    const float *cvec = nullptr;
    int32_t cvec_first = 0, cvec_last = -1;
    // LoRA adapters active on the context (model/lora_adapter.h); the embedding lookup adds their
    // token_embd pairs (the products get them through ForwardScratch::mm). Empty: none.
    std::span<const LoraActive> lora;
    // Polled between layers; returning true stops the pass (the caller discards the micro-batch).
    bool (*abort_cb)(void *) = nullptr;
    void *abort_data = nullptr;
};

// Scratch buffers of a forward pass, grown on demand and reused across micro-batches.
struct ForwardScratch {
    std::vector<float> x, cur, q, k, v, attn, ffn_a, ffn_b, out;  // activations
    std::vector<float> rope_cs;                                   // [n_tokens][n_rot] cos, sin
    std::vector<float> bias;    // [n_head][n_tokens][n_kv] per-head masks with a position bias (t5)
    std::vector<int32_t> rows;  // [n_tokens] 0, 1, ... (all_rows)
    std::vector<std::vector<float>> per_thread;  // attention scores and conversions
    std::vector<float> ssm_x, ssm_z, ssm_xc, ssm_dtr, ssm_bc, ssm_dt, ssm_y;  // state-space layers (mamba)
    std::vector<float *> conv_state, ssm_state;  // [n_tokens] each row's recurrent state
    ProjectionScratch mm;                        // the products' scratch (project())
};

// A context's RoPE parameters (llama_context_params' rope_* and yarn_* fields). The defaults are
// llama_context_default_params': 0 and a negative ext_factor mean "the model's", scaling_type -1 unspecified.
struct RopeOverrides {
    float freq_base = 0.0f;
    float freq_scale = 0.0f;
    int32_t scaling_type =
        -1;  // llama_rope_scaling_type: -1 unspecified, 0 none, 1 linear, 2 yarn, 3 longrope
    float ext_factor = -1.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    uint32_t orig_ctx = 0;
};

// What a context rotates with, by b4748's rules (llama_init_from_model): base and scale are the context's, or
// the model's when 0; scaling type none means no scaling; ext_factor < 0 means 1 for YaRN and 0 otherwise;
// attn_factor is the context's times the file's rope.scaling.attn_factor; n_ctx_orig is orig_ctx, else the
// file's original context, else n_ctx_train. Throws lctx::Error for a value that is not a setting (a scaling
// type outside the enum, a non-finite or non-positive base, scale or attention factor, ...).
kernels::RopeParams context_rope(const HParams &hp, const RopeOverrides &o);

// The RoPE parameters of layer il in a context whose cache is `kv` (its rope settings and cells per
// sequence): those settings with the model's frequency factors (rope_freqs, or LongRoPE's long or short ones,
// chosen as b4748 by the cells per sequence against the file's original context). The forward pass and the
// K-shift of the cache both take them from here, so a shifted key is rotated exactly as a key computed at its
// new position would be.
kernels::RopeParams layer_rope(const Model &model, uint32_t il, const KvView &kv);

// Adds the batch's control vector of layer il (if any) to each of the n_rows rows of x.
void add_control_vector(const ForwardBatch &b, uint32_t il, float *x, int64_t n_rows, int64_t n_embd);

// Dispatches to the family's forward pass (model/families.h); returns false when aborted through abort_cb.
bool forward(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &scratch,
             kernels::ThreadPool &pool);

}  // namespace lctx
