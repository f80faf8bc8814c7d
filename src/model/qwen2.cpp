// The qwen2 family (Qwen1.5, Qwen2, Qwen2.5): llama's layer with biases on q, k and v and NeoX rotation
// (pairs n_rot / 2 apart). Only its tensors differ (bind_qwen2: the q/k/v biases are required, the output may
// be tied); its forward pass is llama's (src/model/llama.cpp), where project() adds the biases bound here and
// the rotation follows the model's RoPE settings:
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq + bq, h Wk + bk, h Wv + bv;  rope_neox(q), rope_neox(k);  store k, v in the cells
//     x += attention(q, cached K, cached V, mask) Wo
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wgate) * (h Wup)) Wdown
//   logits = (rmsnorm(x) * output_norm) Woutput      (only for the rows that were asked for)
#include <string>

#include "model/families.h"
#include "model/model.h"
#include "model/weight_binder.h"

namespace lctx {

void bind_qwen2(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;

    // As b4748 declares them: the q/k/v biases are required, the output matrix may be tied.
    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output = b.matrix("output.weight", n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings (Qwen2-0.5B, Qwen2.5-0.5B ...)

    b.check_layer_count("qwen2", hp.n_layer, 12);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
        l.bq = b.vector(p + "attn_q.bias", q_dim);
        l.bk = b.vector(p + "attn_k.bias", k_dim);
        l.bv = b.vector(p + "attn_v.bias", v_dim);
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
    }
}

}  // namespace lctx
