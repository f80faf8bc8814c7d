// The bert family (BERT, bge, all-MiniLM, ...): an encoder. Learned absolute positions and token types are
// added to the token embeddings; every layer is post-norm (LayerNorm after each residual sum, with biases);
// every projection has a bias; the feed-forward is GELU; attention is non-causal (the context's mask lets a
// token see every token of its own sequences). No output matrix: the last layer's states are the
// embeddings, which the context pools per sequence. Its tensors (bind_bert) and its pass over a micro-batch:
//   x = layernorm(embed(tokens) + token_types[0] + position_embd[pos]) * token_embd_norm + token_embd_norm_b
//   for each layer:
//     q, k, v = x Wq + bq, x Wk + bk, x Wv + bv;  keep k, v (keep_kv: an encoder's stay where they are)
//     x = layernorm(x + attention(q, K, V, mask) Wo + bo) * attn_output_norm + b
//     x = layernorm(x + gelu(x Wup + bup) Wdown + bdown) * layer_output_norm + b
//   hidden = x                                    (only for the rows asked for)
// A reranker adds a classification head over the CLS state (cls, cls.output: model/cls_head.h).
// nomic-bert (nomic-embed-text) runs the same layer with three differences: no position embeddings but
// rotated q and k (NeoX), fused q|k|v without biases, and a SwiGLU feed-forward (silu(x Wgate) * (x Wup))
// Wdown.
#include <cmath>
#include <cstring>

#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"

namespace lctx {

namespace {

// What bert and nomic-bert share outside the layers: the embedding tables and their norm, the optional head.
void bind_encoder_io(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd;
    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.token_types = b.matrix("token_types.weight", n_embd, hp.n_token_types);
    w.token_embd_norm = b.vector("token_embd_norm.weight", n_embd);
    w.token_embd_norm_b = b.vector("token_embd_norm.bias", n_embd);
    w.cls = b.matrix("cls.weight", n_embd, n_embd, Need::Optional);
    w.cls_b = b.vector("cls.bias", n_embd, Need::Optional);
    w.cls_out = b.matrix("cls.output.weight", n_embd, 1, Need::Optional);
    w.cls_out_b = b.vector("cls.output.bias", 1, Need::Optional);
}

// The post-norm LayerNorms of a layer.
void bind_layer_norms(WeightBinder &b, const std::string &p, int64_t n_embd, LayerWeights &l) {
    l.attn_out_norm = b.vector(p + "attn_output_norm.weight", n_embd);
    l.attn_out_norm_b = b.vector(p + "attn_output_norm.bias", n_embd);
    l.layer_out_norm = b.vector(p + "layer_output_norm.weight", n_embd);
    l.layer_out_norm_b = b.vector(p + "layer_output_norm.bias", n_embd);
}

}  // namespace

void bind_bert(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t kv_dim = hp.n_embd_k_gqa();

    // As b4748 declares them: every norm and projection has its bias; the classification head is optional.
    bind_encoder_io(b, hp, w);
    w.pos_embd = b.matrix("position_embd.weight", n_embd, hp.n_ctx_train);

    b.check_layer_count("bert", hp.n_layer, 16);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.wq = b.matrix(p + "attn_q.weight", n_embd, n_embd);
        l.bq = b.vector(p + "attn_q.bias", n_embd);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, kv_dim);
        l.bk = b.vector(p + "attn_k.bias", kv_dim);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, kv_dim);
        l.bv = b.vector(p + "attn_v.bias", kv_dim);
        l.wo = b.matrix(p + "attn_output.weight", n_embd, n_embd);
        l.bo = b.vector(p + "attn_output.bias", n_embd);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
        l.ffn_up_b = b.vector(p + "ffn_up.bias", n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        l.ffn_down_b = b.vector(p + "ffn_down.bias", n_embd);
        bind_layer_norms(b, p, n_embd, l);
    }
}

void bind_nomic_bert(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t kv_dim = hp.n_embd_k_gqa();

    // As b4748 declares them: fused q|k|v, no biases but the norms', a gated feed-forward.
    bind_encoder_io(b, hp, w);
    b.check_layer_count("nomic-bert", hp.n_layer, 9);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        const kernels::WeightView qkv = b.matrix(p + "attn_qkv.weight", n_embd, n_embd + 2 * kv_dim);
        l.wq = row_range(qkv, 0, n_embd);
        l.wk = row_range(qkv, n_embd, kv_dim);
        l.wv = row_range(qkv, n_embd + kv_dim, kv_dim);
        l.wo = b.matrix(p + "attn_output.weight", n_embd, n_embd);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        bind_layer_norms(b, p, n_embd, l);
    }
}

bool forward_bert(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                  kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t kv_dim = hp.n_embd_k_gqa();
    const int64_t n_ff = hp.n_ff;
    const bool rotary = hp.arch == Arch::NomicBert;  // rotates q and k instead of learned positions
    const kernels::RopeParams rope = layer_rope(model, 0, kv);
    AttendOptions attn;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd_head_k));
    attn.encoder_pass = true;

    float *x = grow_layer_scratch(hp, n_tokens, s);
    grow(s.ffn_a, n_tokens * n_ff);    // ffn_a: [n_rows][n_ff]   up, then gelu(up)
    grow(s.ffn_b, n_tokens * n_embd);  // ffn_b: [n_rows][n_embd] a looked-up embedding row

    // ---- input: token + type 0 (+ position: the context checked pos < n_ctx_train), then LayerNorm ----
    embed_tokens(w.token_embd, b, n_embd, x);
    kernels::weight_row_to_f32(w.token_types, 0, s.ffn_b.data());
    for (int64_t t = 0; t < n_tokens; ++t) kernels::add_inplace(x + t * n_embd, s.ffn_b.data(), n_embd);
    for (int64_t t = 0; t < n_tokens && !rotary; ++t) {
        kernels::weight_row_to_f32(w.pos_embd, b.pos[t], s.ffn_b.data());
        kernels::add_inplace(x + t * n_embd, s.ffn_b.data(), n_embd);
    }
    if (rotary) rope_angles_rows(b, rope, s);
    kernels::layer_norm_rows(x, w.token_embd_norm.data(), w.token_embd_norm_b.data(), x, n_tokens, n_embd,
                             hp.norm_eps, pool);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);

        // ---- attention block (bert: no rotation, positions are in the embeddings) ----
        project({{&l.wq, &l.bq, s.q.data(), n_embd},
                 {&l.wk, &l.bk, s.k.data(), kv_dim},
                 {&l.wv, &l.bv, s.v.data(), kv_dim}},
                x, n_embd, n_tokens, pool, s.mm);
        if (rotary) {
            kernels::rope_rows(s.q.data(), n_tokens, n_embd, hp.n_head, hp.n_embd_head_k, s.rope_cs.data(),
                               rope, pool);
            kernels::rope_rows(s.k.data(), n_tokens, kv_dim, hp.n_head_kv, hp.n_embd_head_k, s.rope_cs.data(),
                               rope, pool);
        }
        keep_kv(kv, il, b, s.k.data(), s.v.data(), kv_dim, kv_dim, attn);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);

        gather_rows(rows, x, n_embd);  // from here on the activations hold rows.n rows
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), n_embd, rows.n, pool, s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        kernels::layer_norm_rows(x, l.attn_out_norm.data(), l.attn_out_norm_b.data(), x, rows.n, n_embd,
                                 hp.norm_eps, pool);

        // ---- feed-forward block (GELU; nomic-bert: SwiGLU), post-norm ----
        if (l.ffn_gate.data) {
            ffn_swiglu(hp, l, x, rows.n, s.out.data(), s, pool);
        } else {
            project({{&l.ffn_up, &l.ffn_up_b, s.ffn_a.data(), n_ff}}, x, n_embd, rows.n, pool, s.mm);
            kernels::gelu_rows(s.ffn_a.data(), rows.n, n_ff, pool);
            project({{&l.ffn_down, &l.ffn_down_b, s.out.data(), n_embd}}, s.ffn_a.data(), n_ff, rows.n, pool,
                    s.mm);
        }
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        kernels::layer_norm_rows(x, l.layer_out_norm.data(), l.layer_out_norm_b.data(), x, rows.n, n_embd,
                                 hp.norm_eps, pool);
        // (no control vector: b4748 applies none to bert)

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: x holds the n_outputs requested rows, already normalized by the last layer ----
    if (b.hidden) std::memcpy(b.hidden, x, sizeof(float) * b.n_outputs * n_embd);
    return true;
}

}  // namespace lctx
