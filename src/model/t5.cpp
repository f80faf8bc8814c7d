// The t5 family (T5, T5 v1.1, Flan-T5): an encoder and a decoder. Its tensors (bind_t5) and its two passes
// over one micro-batch. Attention has no rotation and no 1/sqrt(d) scale; its scores get a learned bias per
// head from the relative position of key and query (relative_position_masks: bidirectional buckets in the
// encoder, causal ones in the decoder; one table per stack, held by its first layer). The feed-forward block
// is GELU-gated (T5 v1.1, Flan-T5) or, without a gate tensor, ReLU (the original T5).
//
// Encoder (llama_encode; the context gives it private cells and a mask of each token's own sequences):
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv;  attended where they are (keep_kv), not stored
//     x += attention(q, K, V, mask + bias(kv_pos - pos)) Wo
//     h = rmsnorm(x) * ffn_norm
//     x += (gelu(h Wgate) * (h Wup)) Wdown
//     x += control_vector[il]                      (when one is applied)
//   enc_out = rmsnorm(x) * enc.output_norm          (every row: the context keeps them per sequence)
//
// Decoder (llama_decode):
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv;  store k, v in the cells
//     x += attention(q, cached K, cached V, causal mask + bias(kv_pos - pos)) Wo
//     h = rmsnorm(x) * cross_attn_norm
//     x += attention(h Wq', enc_out Wk', enc_out Wv', cross mask) Wo'   (K', V' projected by the first
//                                                      pass after an encode, kept by the context for the
//                                                      next)
//     h = rmsnorm(x) * ffn_norm
//     x += (gelu(h Wgate) * (h Wup)) Wdown
//     x += control_vector[il]                      (when one is applied)
//   logits = (rmsnorm(x) * dec.output_norm) Woutput  (Woutput: token_embd when tied, without T5's rescale)
#include <algorithm>
#include <string>

#include "kernels/rows.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"
#include "util/error.h"

namespace lctx {

namespace {

// The tensors of one layer of either stack; prefix "enc.blk.N." or "dec.blk.N.".
void bind_t5_layer(WeightBinder &b, const HParams &hp, const std::string &p, bool decoder, LayerWeights &l) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa(), v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;
    const int64_t n_bias = static_cast<int64_t>(hp.n_rel_buckets) * hp.n_head;

    l.attn_rel_b = b.vector(p + "attn_rel_b.weight", n_bias, Need::Optional);
    l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
    l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
    l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
    l.wo = b.matrix(p + "attn_o.weight", o_dim, n_embd);
    if (decoder) {
        // b4748 declares a cross-attention bias too and never reads it: bound so a file holding one loads.
        b.vector(p + "cross_attn_rel_b.weight", n_bias, Need::Optional);
        l.cross_attn_norm = b.vector(p + "cross_attn_norm.weight", n_embd);
        l.cross_wq = b.matrix(p + "cross_attn_q.weight", n_embd, q_dim);
        l.cross_wk = b.matrix(p + "cross_attn_k.weight", n_embd, k_dim);
        l.cross_wv = b.matrix(p + "cross_attn_v.weight", n_embd, v_dim);
        l.cross_wo = b.matrix(p + "cross_attn_o.weight", o_dim, n_embd);
    }
    l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
    l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff, Need::Optional);
    l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
    l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
}

// The relative-position bias table of layer il: its own, else the stack's first layer's.
const ParamVector &rel_bias(const std::vector<LayerWeights> &stack, uint32_t il) {
    return stack[il].attn_rel_b.empty() ? stack[0].attn_rel_b : stack[il].attn_rel_b;
}

// x += ffn(h): GELU-gated when the layer has a gate, else ReLU.
void ffn_t5(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
            ForwardScratch &s, kernels::ThreadPool &pool) {
    if (l.ffn_gate.data)
        ffn_geglu(hp, l, h, n_rows, out, s, pool);
    else
        ffn_relu(hp, l, h, n_rows, out, s, pool);
}

}  // namespace

void bind_t5(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    w.token_embd = b.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
    w.enc_output_norm = b.vector("enc.output_norm.weight", hp.n_embd);
    w.output_norm = b.vector("dec.output_norm.weight", hp.n_embd);
    w.output = b.matrix("output.weight", hp.n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings

    b.check_layer_count("t5", hp.n_layer, 8);
    b.check_layer_count("t5.decoder", hp.n_layer_dec, 13);
    w.enc_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il)
        bind_t5_layer(b, hp, "enc.blk." + std::to_string(il) + ".", false, w.enc_layers[il]);
    w.layers.resize(hp.n_layer_dec);
    for (uint32_t il = 0; il < hp.n_layer_dec; ++il)
        bind_t5_layer(b, hp, "dec.blk." + std::to_string(il) + ".", true, w.layers[il]);
    // Without a bias table in the first layer there is nothing for the others to fall back on.
    if (w.enc_layers[0].attn_rel_b.empty())
        throw Error("tensor 'enc.blk.0.attn_rel_b.weight' is missing (the encoder's relative-position bias)");
    if (w.layers[0].attn_rel_b.empty())
        throw Error("tensor 'dec.blk.0.attn_rel_b.weight' is missing (the decoder's relative-position bias)");
}

bool forward_t5_encoder(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                        kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t q_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    const LayerRows rows = all_rows(b, s);  // every token's output is kept
    AttendOptions attn;                     // scale 1; the per-head masks carry the bias
    attn.mask_head_stride = n_tokens * b.n_kv;
    attn.encoder_pass = true;
    const float *bias_of = nullptr;  // the table s.bias was built from

    float *x = grow_layer_scratch(hp, n_tokens, s);
    embed_tokens(w.token_embd, b, n_embd, x);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.enc_layers[il];
        const ParamVector &rel_b = rel_bias(w.enc_layers, il);
        if (bias_of != rel_b.data()) {
            relative_position_masks(hp, rel_b, b, b.mask, /*bidirectional=*/true, s.bias);
            bias_of = rel_b.data();
        }
        attn.mask = s.bias.data();

        // ---- self-attention block (bidirectional) ----
        kernels::rms_norm_rows(x, l.attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        project({{&l.wq, &l.bq, s.q.data(), q_dim},
                 {&l.wk, &l.bk, s.k.data(), k_dim},
                 {&l.wv, &l.bv, s.v.data(), v_dim}},
                s.cur.data(), n_embd, n_tokens, pool, s.mm);
        keep_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim, attn);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), attn, pool);
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, n_tokens, pool, s.mm);
        kernels::add_rows(x, s.out.data(), n_tokens, n_embd, pool);

        // ---- feed-forward block ----
        kernels::rms_norm_rows(x, l.ffn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        ffn_t5(hp, l, s.cur.data(), n_tokens, s.out.data(), s, pool);
        kernels::add_rows(x, s.out.data(), n_tokens, n_embd, pool);
        add_control_vector(b, il, x, n_tokens, n_embd);  // as b4748, in both stacks

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: the normalized rows are the encoder output ----
    gather_rows({b.out_rows, b.n_outputs, b.n_outputs != n_tokens}, x, n_embd);
    if (b.hidden)
        kernels::rms_norm_rows(x, w.enc_output_norm.data(), b.hidden, b.n_outputs, n_embd, hp.norm_rms_eps,
                               pool);
    return true;
}

bool forward_t5_decoder(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                        kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t q_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    if (!b.enc_out || b.n_enc <= 0 || !b.cross_mask)
        throw Error("the t5 decoder needs the encoder's output: run llama_encode first");
    // Every row goes through every layer (cross-attention reads the mask rows of all tokens); the output
    // rows are picked at the end.
    const LayerRows rows = all_rows(b, s);
    AttendOptions self_attn;  // scale 1; the per-head masks carry the bias
    self_attn.mask_head_stride = n_tokens * b.n_kv;
    const float *bias_of = nullptr;

    // Cross-attention reads the encoder output's K and V as a cache of its own: n_enc f32 rows per layer in
    // the context's b.cross_kv, or without one in s.k, s.v (free once the self-attention's K/V are stored).
    const int64_t cross_layer = static_cast<int64_t>(b.n_enc) * (k_dim + v_dim);
    ForwardBatch cross_b = b;  // the same tokens, attending over the encoder's rows
    cross_b.n_kv = b.n_enc;
    cross_b.mask = b.cross_mask;
    cross_b.mask_spans = cross_b.mask_swa_spans =
        nullptr;  // the self-attention's (the attention finds these)
    KvView cross;
    cross.type_k = cross.type_v = GgmlType::F32;
    cross.v_trans = false;
    cross.size = static_cast<uint32_t>(b.n_enc);
    cross.k_row_bytes = sizeof(float) * k_dim;
    cross.v_row_bytes = sizeof(float) * v_dim;
    AttendOptions cross_attn;  // scale 1, no bias

    float *x = grow_layer_scratch(hp, std::max<int64_t>(n_tokens, b.n_enc), s);
    embed_tokens(w.token_embd, b, n_embd, x);

    for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
        const LayerWeights &l = w.layers[il];
        const ParamVector &rel_b = rel_bias(w.layers, il);
        if (bias_of != rel_b.data()) {
            relative_position_masks(hp, rel_b, b, b.mask, /*bidirectional=*/false, s.bias);
            bias_of = rel_b.data();
        }
        self_attn.mask = s.bias.data();

        // ---- self-attention block (causal, over the cache) ----
        prefetch_kv_store(kv, il, b, v_dim);
        kernels::rms_norm_rows(x, l.attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        project({{&l.wq, &l.bq, s.q.data(), q_dim},
                 {&l.wk, &l.bk, s.k.data(), k_dim},
                 {&l.wv, &l.bv, s.v.data(), v_dim}},
                s.cur.data(), n_embd, n_tokens, pool, s.mm);
        store_kv(kv, il, b, s.k.data(), s.v.data(), k_dim, v_dim);
        attend(hp, kv, il, b, s.q.data(), rows, s.attn.data(), self_attn, pool);
        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, n_tokens, pool, s.mm);
        kernels::add_rows(x, s.out.data(), n_tokens, n_embd, pool);

        // ---- cross-attention block (over the encoder output of each token's sequence) ----
        kernels::rms_norm_rows(x, l.cross_attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps,
                               pool);
        project({{&l.cross_wq, nullptr, s.q.data(), q_dim}}, s.cur.data(), n_embd, n_tokens, pool, s.mm);
        float *ck = b.cross_kv ? b.cross_kv + il * cross_layer : s.k.data();
        float *cv = b.cross_kv ? ck + static_cast<int64_t>(b.n_enc) * k_dim : s.v.data();
        if (!b.cross_kv_ready)
            project({{&l.cross_wk, nullptr, ck, k_dim}, {&l.cross_wv, nullptr, cv, v_dim}}, b.enc_out, n_embd,
                    b.n_enc, pool, s.mm);
        cross.k = {reinterpret_cast<uint8_t *>(ck)};
        cross.v = {reinterpret_cast<uint8_t *>(cv)};
        attend(hp, cross, 0, cross_b, s.q.data(), rows, s.attn.data(), cross_attn, pool);
        project({{&l.cross_wo, nullptr, s.out.data(), n_embd}}, s.attn.data(), o_dim, n_tokens, pool, s.mm);
        kernels::add_rows(x, s.out.data(), n_tokens, n_embd, pool);

        // ---- feed-forward block ----
        kernels::rms_norm_rows(x, l.ffn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        ffn_t5(hp, l, s.cur.data(), n_tokens, s.out.data(), s, pool);
        kernels::add_rows(x, s.out.data(), n_tokens, n_embd, pool);
        add_control_vector(b, il, x, n_tokens, n_embd);  // as b4748, in both stacks

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: the rows asked for ----
    gather_rows({b.out_rows, b.n_outputs, b.n_outputs != n_tokens}, x, n_embd);
    output_rms(hp, w, b, x, s, pool);
    return true;
}

}  // namespace lctx
