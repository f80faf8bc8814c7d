// The gemma2 family (Gemma 2 2B, 9B, 27B): llama's layer with a norm after each block as well as before it,
// a GELU-gated feed-forward, soft-capped attention scores and logits, sliding-window attention in every
// other layer and the output tied to the embeddings. Norm weights are used as stored (converters fold
// Gemma's 1 + w into them). Its tensors (bind_gemma2) and its forward pass over one micro-batch:
//   x = embed(tokens) * sqrt(n_embd)
//   for each layer (the even ones see only the last n_swa positions: the batch's sliding-window mask):
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv;  rope_neox(q), rope_neox(k);  q *= query_scale;  store k, v in the cells
//     a = attention(q, cached K, cached V, mask) with scores = cap_a * tanh(q.k / cap_a)   (softmax scale 1)
//     x += rmsnorm(a Wo) * post_attention_norm
//     h = rmsnorm(x) * ffn_norm
//     x += rmsnorm((gelu(h Wgate) * (h Wup)) Wdown) * post_ffw_norm
//   logits = cap_f * tanh(((rmsnorm(x) * output_norm) Wembd) / cap_f)    (only for the rows asked for)
// query_scale is 1/sqrt(head_dim), but 1/sqrt(n_embd / n_head) for the 27B (46 layers), as b4748 has it.
#include <cmath>

#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"

namespace lctx {

void bind_gemma2(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;

    // As b4748 declares them: no output matrix (the embeddings are the output), both extra norms required.
    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output = w.token_embd;

    b.check_layer_count("gemma2", hp.n_layer, 11);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.attn_post_norm = b.vector(p + "post_attention_norm.weight", n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        l.ffn_post_norm = b.vector(p + "post_ffw_norm.weight", n_embd);
    }
}

bool forward_gemma2(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
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
    const kernels::RopeParams rope = layer_rope(model, 0, kv);  // NeoX, every layer alike
    const float query_scale =
        1.0f / std::sqrt(static_cast<float>(hp.n_layer == 46 ? hp.n_embd / hp.n_head : hp.n_embd_head_k));
    AttendOptions attn;  // q carries the scale; the cap applies to the raw q.k
    attn.scale = 1.0f;
    attn.softcap = hp.attn_softcap;

    float *x = grow_layer_scratch(hp, n_tokens, s);
    grow(s.ffn_a, n_tokens * n_ff);  // ffn_a: [n_rows][n_ff]  gate, then gelu(gate) * up
    grow(s.ffn_b, n_tokens * n_ff);  // ffn_b: [n_rows][n_ff]  up

    embed_tokens(w.token_embd, b, n_embd, x);
    kernels::scale_inplace(x, std::sqrt(static_cast<float>(n_embd)), n_tokens * n_embd);
    rope_angles_rows(b, rope, s);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);
        attn.mask = hp.layer_is_swa(il) ? b.mask_swa : b.mask;

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
        kernels::scale_inplace(s.q.data(), query_scale, n_tokens * q_dim);
        store_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);

        gather_rows(rows, x, n_embd);  // from here on the activations hold rows.n rows
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, rows.n, pool, s.mm);
        kernels::rms_norm_rows(s.out.data(), l.attn_post_norm.data(), s.out.data(), rows.n, n_embd,
                               hp.norm_rms_eps, pool);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);

        // ---- feed-forward block (GeGLU), normalized after as well ----
        kernels::rms_norm_rows(x, l.ffn_norm.data(), s.cur.data(), rows.n, n_embd, hp.norm_rms_eps, pool);
        project({{&l.ffn_gate, &l.ffn_gate_b, s.ffn_a.data(), n_ff},
                 {&l.ffn_up, &l.ffn_up_b, s.ffn_b.data(), n_ff}},
                s.cur.data(), n_embd, rows.n, pool, s.mm);
        kernels::geglu_rows(s.ffn_a.data(), s.ffn_b.data(), s.ffn_a.data(), rows.n, n_ff, pool);
        project({{&l.ffn_down, &l.ffn_down_b, s.out.data(), n_embd}}, s.ffn_a.data(), n_ff, rows.n, pool,
                s.mm);
        kernels::rms_norm_rows(s.out.data(), l.ffn_post_norm.data(), s.out.data(), rows.n, n_embd,
                               hp.norm_rms_eps, pool);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        add_control_vector(b, il, x, rows.n, n_embd);

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: x now holds the n_outputs requested rows; the logits are soft-capped ----
    output_rms(hp, w, b, x, s, pool);
    if (b.logits && hp.final_softcap > 0.0f)
        kernels::softcap_rows(b.logits, b.n_outputs, hp.n_vocab, hp.final_softcap, pool);
    return true;
}

}  // namespace lctx
