// The llama family: its tensors (bind_llama) and its forward pass over one micro-batch, read top to bottom:
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv   (one pass: h converted once);  rope(q), rope(k);  store k, v in the cells
//     x += attention(q, cached K, cached V, mask) Wo
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wgate) * (h Wup)) Wdown
//   (each product adds the file's optional bias, if it has one: project())
//   logits = (rmsnorm(x) * output_norm) Woutput      (only for the rows that were asked for)
#include <cmath>

#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"

namespace lctx {

void bind_llama(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;

    // The tensors, required and optional, as b4748 declares them (without experts).
    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output = b.matrix("output.weight", n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings

    b.check_layer_count("llama", hp.n_layer, 9);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.bq = b.vector(p + "attn_q.bias", q_dim, Need::Optional);
        l.bk = b.vector(p + "attn_k.bias", k_dim, Need::Optional);
        l.bv = b.vector(p + "attn_v.bias", v_dim, Need::Optional);
        l.bo = b.vector(p + "attn_output.bias", n_embd, Need::Optional);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
        l.ffn_gate_b = b.vector(p + "ffn_gate.bias", n_ff, Need::Optional);
        l.ffn_down_b = b.vector(p + "ffn_down.bias", n_embd, Need::Optional);
        l.ffn_up_b = b.vector(p + "ffn_up.bias", n_ff, Need::Optional);
    }
    // One table of per-pair frequency divisors, shared by every layer.
    w.rope_freqs = b.vector("rope_freqs.weight", hp.rope.n_rot / 2, Need::Optional);
}

bool forward_llama(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                   kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t q_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    const kernels::RopeParams rope = layer_rope(model, 0, kv);  // every layer rotates alike
    AttendOptions attn;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd_head_k));

    float *x = grow_layer_scratch(hp, n_tokens, s);

    embed_tokens(w.token_embd, b, n_embd, x);
    rope_angles_rows(b, rope, s);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);

        // ---- attention block ----
        prefetch_kv_store(kv, il, b, v_dim);
        kernels::rms_norm_rows(x, l.attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        project({{&l.wq, &l.bq, s.q.data(), q_dim},
                 {&l.wk, &l.bk, s.k.data(), k_dim},
                 {&l.wv, &l.bv, s.v.data(), v_dim}},
                s.cur.data(), n_embd, n_tokens, pool, s.mm);
        kernels::rope_rows(s.q.data(), n_tokens, q_dim, hp.n_head, hp.n_embd_head_k, s.rope_cs.data(), rope,
                           pool);
        kernels::rope_rows(s.k.data(), n_tokens, k_dim, hp.n_head_kv, hp.n_embd_head_k, s.rope_cs.data(),
                           rope, pool);
        store_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);

        gather_rows(rows, x, n_embd);  // from here on the activations hold rows.n rows
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, rows.n, pool, s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);

        // ---- feed-forward block (SwiGLU) ----
        kernels::rms_norm_rows(x, l.ffn_norm.data(), s.cur.data(), rows.n, n_embd, hp.norm_rms_eps, pool);
        ffn_swiglu(hp, l, s.cur.data(), rows.n, s.out.data(), s, pool);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        add_control_vector(b, il, x, rows.n, n_embd);

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: x now holds the n_outputs requested rows ----
    output_rms(hp, w, b, x, s, pool);
    return true;
}

}  // namespace lctx
