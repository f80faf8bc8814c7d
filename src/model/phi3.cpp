// The phi3 family (Phi-3, Phi-3.5, Phi-4-mini): llama's layer with fused tensors, NeoX rotation and LongRoPE.
// attn_qkv holds the q, k and v rows one after the other, ffn_up the gate rows then the up rows (2 n_ff);
// bind_phi3 binds each part as a row range, so the pass below reads them like separate matrices. LongRoPE
// files carry two tables of per-pair frequency divisors; layer_rope picks the long one when a sequence's
// share of the context exceeds the original training context, and rope.scaling.attn_factor scales the
// rotated q and k (hparams). A file with a sliding window (Phi-3-mini-4k: 2047) applies it in every layer
// (the batch's mask_swa). The forward pass over one micro-batch:
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wqkv (rows q | k | v);  rope_neox(q), rope_neox(k) with the chosen factors;  store k, v
//     x += attention(q, cached K, cached V, mask, or the sliding-window mask) Wo
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wup[gate rows]) * (h Wup[up rows])) Wdown
//   logits = (rmsnorm(x) * output_norm) Woutput      (only for the rows that were asked for)
#include <cmath>

#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"
#include "util/error.h"

namespace lctx {

void bind_phi3(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;
    if (hp.n_embd_head_k != hp.n_embd_head_v)
        throw Error("phi3 needs equal key and value head sizes, the file has " +
                    std::to_string(hp.n_embd_head_k) + " and " + std::to_string(hp.n_embd_head_v));

    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output = b.matrix("output.weight", n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings (Phi-4-mini)

    b.check_layer_count("phi3", hp.n_layer, 6);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        // The fused q | k | v rows as Phi-3 files have them; separate matrices as newer llama.cpp also reads.
        const kernels::WeightView qkv =
            b.matrix(p + "attn_qkv.weight", n_embd, q_dim + k_dim + v_dim, Need::Optional);
        if (qkv.data) {
            l.wq = row_range(qkv, 0, q_dim);
            l.wk = row_range(qkv, q_dim, k_dim);
            l.wv = row_range(qkv, q_dim + k_dim, v_dim);
        } else {
            l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
            l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
            l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
        }
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        const kernels::WeightView gate_up = b.matrix(p + "ffn_up.weight", n_embd, 2 * n_ff);
        l.ffn_gate = row_range(gate_up, 0, n_ff);
        l.ffn_up = row_range(gate_up, n_ff, n_ff);
    }
    // LongRoPE's two tables, shared by every layer (b4748 declares them once, for layer 0), of head_dim / 2
    // entries as b4748 sizes them; with partial rotary dimensions the rotation reads the first n_rot / 2.
    w.rope_long = b.vector("rope_factors_long.weight", hp.n_embd_head_k / 2, Need::Optional);
    w.rope_short = b.vector("rope_factors_short.weight", hp.n_embd_head_k / 2, Need::Optional);
}

bool forward_phi3(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                  kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t q_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    // NeoX with the LongRoPE factors this context's size calls for; every layer rotates alike.
    const kernels::RopeParams rope = layer_rope(model, 0, kv);
    AttendOptions attn;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd_head_k));

    float *x = grow_layer_scratch(hp, n_tokens, s);

    embed_tokens(w.token_embd, b, n_embd, x);
    rope_angles_rows(b, rope, s);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);

        // ---- attention block: the fused q | k | v product ----
        prefetch_kv_store(kv, il, b, v_dim);
        kernels::rms_norm_rows(x, l.attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        project({{&l.wq, nullptr, s.q.data(), q_dim},
                 {&l.wk, nullptr, s.k.data(), k_dim},
                 {&l.wv, nullptr, s.v.data(), v_dim}},
                s.cur.data(), n_embd, n_tokens, pool, s.mm);
        kernels::rope_rows(s.q.data(), n_tokens, q_dim, hp.n_head, hp.n_embd_head_k, s.rope_cs.data(), rope,
                           pool);
        kernels::rope_rows(s.k.data(), n_tokens, k_dim, hp.n_head_kv, hp.n_embd_head_k, s.rope_cs.data(),
                           rope, pool);
        store_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim);
        attn.mask = hp.layer_is_swa(il) ? b.mask_swa : b.mask;
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);

        gather_rows(rows, x, n_embd);  // from here on the activations hold rows.n rows
        project({{&l.wo, nullptr, s.out.data(), n_embd}}, s.attn.data(), o_dim, rows.n, pool, s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);

        // ---- feed-forward block: SwiGLU over the gate and up halves of the fused ffn_up ----
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
