// The llama family's forward pass over one micro-batch, read top to bottom:
//   x = embed(tokens)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv   (one pass: h converted once);  rope(q), rope(k);  store k, v in the cells
//     x += attention(q, cached K, cached V, mask) Wo
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wgate) * (h Wup)) Wdown
//   (each product adds the file's optional bias, if it has one: project())
//   logits = (rmsnorm(x) * output_norm) Woutput      (only for the rows that were asked for)
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/dot.h"
#include "kernels/ops.h"
#include "kernels/rows.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/projection.h"
#include "util/error.h"

namespace lctx {

namespace {

void grow(std::vector<float> &buf, size_t n) {
    if (buf.size() < n) buf.resize(n);
}

std::vector<uint8_t> &v_row_scratch() {
    thread_local std::vector<uint8_t> row;
    return row;
}

// f32 -> a cache type. A cache type that is also an activation type (F16, BF16, Q8_0, F32) uses the
// kernels' vectorized converter, which gives the reference quantizer's bytes (tested per ISA).
void to_cache_row(GgmlType t, const float *x, uint8_t *y, int64_t n) {
    const kernels::TypeKernels &k = kernels::type_kernels(t);
    if (k.act_type == t && k.quantize_act) {
        k.quantize_act(x, y, n);
    } else {
        quantize_row(t, x, y, n);
    }
}

// Writes token rows of k ([n_tokens][n_embd_k_gqa]) and v into their cells, converting to the
// cache types.
void store_kv(const KvView &kv, int il, const ForwardBatch &b, const float *k, const float *v, int64_t k_dim,
              int64_t v_dim) {
    for (int t = 0; t < b.n_tokens; ++t) {
        const uint32_t cell = b.cells[t];
        to_cache_row(kv.type_k, k + t * k_dim, kv.k[il] + cell * kv.k_row_bytes, k_dim);
        if (kv.v_trans) {
            // Convert the row once, then scatter its elements down the channel rows.
            std::vector<uint8_t> &row = v_row_scratch();
            row.resize(kv.v_elem_bytes * v_dim);
            to_cache_row(kv.type_v, v + t * v_dim, row.data(), v_dim);
            for (int64_t c = 0; c < v_dim; ++c)
                std::memcpy(kv.v[il] + (c * kv.size + cell) * kv.v_elem_bytes,
                            row.data() + c * kv.v_elem_bytes, kv.v_elem_bytes);
        } else {
            to_cache_row(kv.type_v, v + t * v_dim, kv.v[il] + cell * kv.v_row_bytes, v_dim);
        }
    }
}

// Asks for the cache lines the K/V store will write (the batch's cells in layer il) while the q/k/v product
// streams its weights: between two decoded tokens the weights pass through every cache and evict them, and
// the transposed V store touches one line per channel.
void prefetch_kv_store(const KvView &kv, int il, const ForwardBatch &b, int64_t v_dim) {
    if (b.n_tokens > 4) return;  // a prompt's consecutive cells share their V lines: few misses per token
    for (int t = 0; t < b.n_tokens; ++t) {
        const uint32_t cell = b.cells[t];
        kernels::prefetch_rows_for_write(kv.k[il] + cell * kv.k_row_bytes, 1, 0, kv.k_row_bytes);
        if (kv.v_trans)  // the cell's column: one element in each of v_dim channel rows
            kernels::prefetch_rows_for_write(kv.v[il] + cell * kv.v_elem_bytes, v_dim,
                                             kv.size * kv.v_elem_bytes, kv.v_elem_bytes);
        else
            kernels::prefetch_rows_for_write(kv.v[il] + cell * kv.v_row_bytes, 1, 0, kv.v_row_bytes);
    }
}

}  // namespace

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
    const int64_t n_ff = hp.n_ff;
    const kernels::RopeParams rope = layer_rope(model, 0);  // every llama layer rotates alike

    grow(s.x, n_tokens * n_embd);    // x:    [n_tokens][n_embd]   residual stream
    grow(s.cur, n_tokens * n_embd);  // cur:  [n_tokens][n_embd]   normalized input of a block
    grow(s.q, n_tokens * q_dim);     // q:    [n_tokens][n_head * head_dim_k]
    grow(s.k, n_tokens * k_dim);     // k:    [n_tokens][n_head_kv * head_dim_k]
    grow(s.v, n_tokens * v_dim);     // v:    [n_tokens][n_head_kv * head_dim_v]
    grow(s.attn, n_tokens * o_dim);  // attn: [n_rows][n_head * head_dim_v]
    grow(s.ffn_a, n_tokens * n_ff);  // ffn_a: [n_rows][n_ff]  gate, then silu(gate) * up
    grow(s.ffn_b, n_tokens * n_ff);  // ffn_b: [n_rows][n_ff]  up
    grow(s.out, n_tokens * n_embd);  // out:  [n_rows][n_embd]   block output before the residual add
    float *x = s.x.data();

    // ---- token embeddings ----
    for (int64_t t = 0; t < n_tokens; ++t) {
        if (b.tokens)
            kernels::weight_row_to_f32(w.token_embd, b.tokens[t], x + t * n_embd);
        else
            std::memcpy(x + t * n_embd, b.embd + t * n_embd, sizeof(float) * n_embd);
    }

    // ---- rotation angles of each token's position, shared by q, k and every layer ----
    grow(s.rope_cs, n_tokens * rope.n_rot);
    for (int64_t t = 0; t < n_tokens; ++t)
        kernels::rope_angles(static_cast<float>(b.pos[t]), rope, s.rope_cs.data() + t * rope.n_rot);

    // All rows go through every layer but the last, where only the output rows are needed after
    // attention (their K/V still come from all rows).
    std::vector<int32_t> all_rows(n_tokens);
    for (int64_t t = 0; t < n_tokens; ++t) all_rows[t] = static_cast<int32_t>(t);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const bool last = il + 1 == hp.n_layer;
        const int32_t *rows = last ? b.out_rows : all_rows.data();
        const int64_t n_rows = last ? b.n_outputs : n_tokens;

        // ---- attention block ----
        prefetch_kv_store(kv, static_cast<int>(il), b, v_dim);
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

        kernels::AttentionArgs a;
        a.q = s.q.data();
        a.ldq = q_dim;
        a.n_head = hp.n_head;
        a.n_head_kv = hp.n_head_kv;
        a.head_dim_k = hp.n_embd_head_k;
        a.head_dim_v = hp.n_embd_head_v;
        a.k = kv.k[il];
        a.type_k = kv.type_k;
        a.k_row_bytes = kv.k_row_bytes;
        a.v = kv.v[il];
        a.type_v = kv.type_v;
        a.v_trans = kv.v_trans;
        a.v_row_bytes = kv.v_row_bytes;
        a.v_cells = kv.size;
        a.n_kv = b.n_kv;
        a.mask = b.mask;
        a.ldmask = b.n_kv;
        a.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd_head_k));
        a.rows = rows;
        a.n_rows = static_cast<int>(n_rows);
        a.out = s.attn.data();
        a.ldo = o_dim;
        kernels::attention(a, pool);

        // From here on the activations hold n_rows rows; gather the residual of those rows.
        if (last && n_rows != n_tokens)
            for (int64_t i = 0; i < n_rows; ++i)
                std::memmove(x + i * n_embd, x + static_cast<int64_t>(rows[i]) * n_embd,
                             sizeof(float) * n_embd);

        project({{&l.wo, &l.bo, s.out.data(), n_embd}}, s.attn.data(), o_dim, n_rows, pool, s.mm);
        kernels::add_rows(x, s.out.data(), n_rows, n_embd, pool);

        // ---- feed-forward block (SwiGLU) ----
        kernels::rms_norm_rows(x, l.ffn_norm.data(), s.cur.data(), n_rows, n_embd, hp.norm_rms_eps, pool);
        project({{&l.ffn_gate, &l.ffn_gate_b, s.ffn_a.data(), n_ff},
                 {&l.ffn_up, &l.ffn_up_b, s.ffn_b.data(), n_ff}},
                s.cur.data(), n_embd, n_rows, pool, s.mm);
        kernels::swiglu_rows(s.ffn_a.data(), s.ffn_b.data(), s.ffn_a.data(), n_rows, n_ff, pool);
        project({{&l.ffn_down, &l.ffn_down_b, s.out.data(), n_embd}}, s.ffn_a.data(), n_ff, n_rows, pool,
                s.mm);
        kernels::add_rows(x, s.out.data(), n_rows, n_embd, pool);
        add_control_vector(b, il, x, n_rows, n_embd);

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    // ---- output: x now holds the n_outputs requested rows ----
    const int64_t n_out = b.n_outputs;
    kernels::rms_norm_rows(x, w.output_norm.data(), s.cur.data(), n_out, n_embd, hp.norm_rms_eps, pool);
    if (b.hidden) std::memcpy(b.hidden, s.cur.data(), sizeof(float) * n_out * n_embd);
    if (b.logits) kernels::matmul(w.output, s.cur.data(), n_embd, n_out, b.logits, hp.n_vocab, pool, s.mm);
    return true;
}

bool forward(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &scratch,
             kernels::ThreadPool &pool) {
    switch (model.hparams().arch) {
        case Arch::Llama:
            return forward_llama(model, kv, batch, scratch, pool);
        case Arch::Other:
            break;
    }
    throw Error("no forward pass for architecture " + model.hparams().arch_name);
}

}  // namespace lctx
