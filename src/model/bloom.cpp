// The bloom family (BLOOM, BLOOMZ): LayerNorms with biases, biases on every projection, a plain GELU
// feed-forward, and ALiBi instead of RoPE: no rotation; head h adds slope_h * -|pos_q - pos_k| to its scores
// (the context's mask holds the distances, kernels::alibi_slopes the slopes). Its tensors (bind_bloom) and
// its forward pass over one micro-batch:
//   x = layernorm(embed(tokens)) * token_embd_norm + token_embd_norm_b
//   for each layer:
//     h = layernorm(x) * attn_norm + attn_norm_b
//     q, k, v = h Wqkv + bqkv (rows q | k | v);  store k, v in the cells
//     x += attention(q, cached K, cached V, mask, ALiBi slopes) Wo + bo
//     h = layernorm(x) * ffn_norm + ffn_norm_b
//     x += gelu(h Wup + bup) Wdown + bdown
//   logits = (layernorm(x) * output_norm + output_norm_b) Woutput     (only for the rows asked for)
#include <cmath>
#include <vector>

#include "kernels/attention.h"
#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"

namespace lctx {

void bind_bloom(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;

    // As b4748 declares them: every norm and projection has its bias; the output matrix may be tied.
    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.token_embd_norm = b.vector("token_embd_norm.weight", n_embd);
    w.token_embd_norm_b = b.vector("token_embd_norm.bias", n_embd);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output_norm_b = b.vector("output_norm.bias", n_embd);
    w.output = b.matrix("output.weight", n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings (the BLOOM releases)

    b.check_layer_count("bloom", hp.n_layer, 12);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.attn_norm_b = b.vector(p + "attn_norm.bias", n_embd);
        const kernels::WeightView qkv = b.matrix(p + "attn_qkv.weight", n_embd, q_dim + k_dim + v_dim);
        l.wq = row_range(qkv, 0, q_dim);
        l.wk = row_range(qkv, q_dim, k_dim);
        l.wv = row_range(qkv, q_dim + k_dim, v_dim);
        const ParamVector bqkv = b.vector(p + "attn_qkv.bias", q_dim + k_dim + v_dim);
        l.bq = vector_range(bqkv, 0, q_dim);
        l.bk = vector_range(bqkv, q_dim, k_dim);
        l.bv = vector_range(bqkv, q_dim + k_dim, v_dim);
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.bo = b.vector(p + "attn_output.bias", n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_norm_b = b.vector(p + "ffn_norm.bias", n_embd);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
        l.ffn_up_b = b.vector(p + "ffn_up.bias", n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        l.ffn_down_b = b.vector(p + "ffn_down.bias", n_embd);
    }
}

bool forward_bloom(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                   kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t q_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    const int64_t n_ff = hp.n_ff;
    std::vector<float> slopes(hp.n_head);  // [n_head]
    kernels::alibi_slopes(static_cast<int>(hp.n_head), hp.max_alibi_bias, slopes.data());
    AttendOptions attn;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd_head_k));
    attn.alibi = slopes.data();

    float *x = grow_layer_scratch(hp, n_tokens, s);
    grow(s.ffn_a, n_tokens * n_ff);  // ffn_a: [n_rows][n_ff]   up, then gelu(up)

    embed_tokens(w.token_embd, b, n_embd, x);
    kernels::layer_norm_rows(x, w.token_embd_norm.data(), w.token_embd_norm_b.data(), x, n_tokens, n_embd,
                             hp.norm_eps, pool);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);

        // ---- attention block (no rotation: ALiBi is in the mask) ----
        prefetch_kv_store(kv, il, b, v_dim);
        kernels::layer_norm_rows(x, l.attn_norm.data(), l.attn_norm_b.data(), s.cur.data(), n_tokens, n_embd,
                                 hp.norm_eps, pool);
        project({{&l.wq, &l.bq, s.q.data(), q_dim},
                 {&l.wk, &l.bk, s.k.data(), k_dim},
                 {&l.wv, &l.bv, s.v.data(), v_dim}},
                s.cur.data(), n_embd, n_tokens, pool, s.mm);
        store_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);

        gather_rows(rows, x, n_embd);  // from here on the activations hold rows.n rows
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, rows.n, pool, s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);

        // ---- feed-forward block (GELU) ----
        kernels::layer_norm_rows(x, l.ffn_norm.data(), l.ffn_norm_b.data(), s.cur.data(), rows.n, n_embd,
                                 hp.norm_eps, pool);
        project({{&l.ffn_up, &l.ffn_up_b, s.ffn_a.data(), n_ff}}, s.cur.data(), n_embd, rows.n, pool, s.mm);
        kernels::gelu_rows(s.ffn_a.data(), rows.n, n_ff, pool);
        project({{&l.ffn_down, &l.ffn_down_b, s.out.data(), n_embd}}, s.ffn_a.data(), n_ff, rows.n, pool,
                s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        add_control_vector(b, il, x, rows.n, n_embd);

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: x now holds the n_outputs requested rows ----
    kernels::layer_norm_rows(x, w.output_norm.data(), w.output_norm_b.data(), s.cur.data(), b.n_outputs,
                             n_embd, hp.norm_eps, pool);
    write_outputs(hp, w, b, s.cur.data(), s, pool);
    return true;
}

}  // namespace lctx
