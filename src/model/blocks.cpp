#include "model/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/rows.h"
#include "model/lora_adapter.h"
#include "model/projection.h"
#include "util/error.h"

namespace lctx {

float *grow_layer_scratch(const HParams &hp, int64_t n_tokens, ForwardScratch &s) {
    const auto n = static_cast<size_t>(n_tokens);
    grow(s.x, n * hp.n_embd);
    grow(s.cur, n * hp.n_embd);
    grow(s.out, n * hp.n_embd);
    grow(s.q, n * hp.n_head * hp.n_embd_head_k);
    grow(s.k, n * hp.n_embd_k_gqa());
    grow(s.v, n * hp.n_embd_v_gqa());
    grow(s.attn, n * hp.n_head * hp.n_embd_head_v);
    return s.x.data();
}

void embed_tokens(const kernels::WeightView &token_embd, const ForwardBatch &b, int64_t n_embd, float *x) {
    for (int64_t t = 0; t < b.n_tokens; ++t) {
        if (b.tokens)
            kernels::weight_row_to_f32(token_embd, b.tokens[t], x + t * n_embd);
        else
            std::memcpy(x + t * n_embd, b.embd + t * n_embd, sizeof(float) * n_embd);
    }
    if (!b.lora.empty()) add_lora_embeddings(b.lora, &token_embd, b, n_embd, x);
}

void rope_angles_rows(const ForwardBatch &b, const kernels::RopeParams &rope, ForwardScratch &s) {
    grow(s.rope_cs, static_cast<size_t>(b.n_tokens) * rope.n_rot);
    for (int64_t t = 0; t < b.n_tokens; ++t)
        kernels::rope_angles(static_cast<float>(b.pos[t]), rope, s.rope_cs.data() + t * rope.n_rot);
}

LayerRows layer_rows(const HParams &hp, uint32_t il, const ForwardBatch &b, ForwardScratch &s) {
    if (il + 1 == hp.n_layer) return {b.out_rows, b.n_outputs, b.n_outputs != b.n_tokens};
    return all_rows(b, s);
}

LayerRows all_rows(const ForwardBatch &b, ForwardScratch &s) {
    if (s.rows.size() < static_cast<size_t>(b.n_tokens)) {
        s.rows.resize(static_cast<size_t>(b.n_tokens));
        for (size_t t = 0; t < s.rows.size(); ++t) s.rows[t] = static_cast<int32_t>(t);
    }
    return {s.rows.data(), b.n_tokens, false};
}

void gather_rows(const LayerRows &r, float *x, int64_t width) {
    if (!r.gathered) return;
    for (int64_t i = 0; i < r.n; ++i)
        std::memmove(x + i * width, x + static_cast<int64_t>(r.rows[i]) * width, sizeof(float) * width);
}

namespace {

std::vector<int32_t> &bucket_scratch() {
    thread_local std::vector<int32_t> row;
    return row;
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

}  // namespace

void prefetch_kv_store(const KvView &kv, uint32_t il, const ForwardBatch &b, int64_t v_dim) {
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

void store_kv(const KvView &kv, uint32_t il, const ForwardBatch &b, const float *k, const float *v,
              int64_t k_dim, int64_t v_dim) {
    for (int t = 0; t < b.n_tokens; ++t)
        to_cache_row(kv.type_k, k + t * k_dim, kv.k[il] + b.cells[t] * kv.k_row_bytes, k_dim);
    if (!kv.v_trans) {
        for (int t = 0; t < b.n_tokens; ++t)
            to_cache_row(kv.type_v, v + t * v_dim, kv.v[il] + b.cells[t] * kv.v_row_bytes, v_dim);
        return;
    }
    // Transposed V: up to kBlock tokens' rows converted side by side, then written channel by channel, so
    // that a prompt's consecutive cells fill each channel row's lines in turn. (Token by token, every
    // element went to another channel row, kv.size elements apart: a stride of a few KiB that keeps
    // evicting its own lines, 5% of an encoder's pass.)
    constexpr int kBlock = 64;
    std::vector<uint8_t> &rows = v_row_scratch();
    rows.resize(kv.v_elem_bytes * v_dim * std::min(b.n_tokens, kBlock));
    auto scatter = [&]<typename E>(E, int t0, int nt) {
        const E *src = reinterpret_cast<const E *>(rows.data());
        E *dst = reinterpret_cast<E *>(kv.v[il]);
        for (int64_t c = 0; c < v_dim; ++c) {
            E *row = dst + c * kv.size;
            for (int t = 0; t < nt; ++t) row[b.cells[t0 + t]] = src[t * v_dim + c];
        }
    };
    for (int t0 = 0; t0 < b.n_tokens; t0 += kBlock) {
        const int nt = std::min(kBlock, b.n_tokens - t0);
        for (int t = 0; t < nt; ++t)
            to_cache_row(kv.type_v, v + (t0 + t) * v_dim, rows.data() + t * kv.v_elem_bytes * v_dim, v_dim);
        if (kv.v_elem_bytes == sizeof(float))  // (F32 / F16 / BF16 elements)
            scatter(float{}, t0, nt);
        else
            scatter(uint16_t{}, t0, nt);
    }
}

void recurrent_state_rows(const KvView &kv, uint32_t il, const ForwardBatch &b, ForwardScratch &s) {
    grow(s.conv_state, static_cast<size_t>(b.n_tokens));
    grow(s.ssm_state, static_cast<size_t>(b.n_tokens));
    for (int t = 0; t < b.n_tokens; ++t) {
        s.conv_state[t] = reinterpret_cast<float *>(kv.k[il] + b.cells[t] * kv.k_row_bytes);
        s.ssm_state[t] = reinterpret_cast<float *>(kv.v[il] + b.cells[t] * kv.v_row_bytes);
    }
}

void keep_kv(const KvView &kv, uint32_t il, const ForwardBatch &b, const float *k, const float *v,
             int64_t k_dim, int64_t v_dim, AttendOptions &opt) {
    if (!b.own_cells) {
        store_kv(kv, il, b, k, v, k_dim, v_dim);
        opt.k_rows = opt.v_rows = nullptr;
        return;
    }
    opt.k_rows = k;
    opt.v_rows = v;
}

void attend(const HParams &hp, const KvView &kv, uint32_t il, const ForwardBatch &b, const float *q,
            const LayerRows &r, float *out, const AttendOptions &opt, kernels::ThreadPool &pool) {
    kernels::AttentionArgs a;
    a.q = q;
    a.ldq = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_k;
    a.n_head = static_cast<int>(hp.n_head);
    a.n_head_kv = static_cast<int>(hp.n_head_kv);
    a.head_dim_k = static_cast<int>(hp.n_embd_head_k);
    a.head_dim_v = static_cast<int>(hp.n_embd_head_v);
    a.k = kv.k[il];
    a.type_k = kv.type_k;
    a.k_row_bytes = kv.k_row_bytes;
    a.v = kv.v[il];
    a.type_v = kv.type_v;
    a.v_trans = kv.v_trans;
    a.v_row_bytes = kv.v_row_bytes;
    a.v_cells = kv.size;
    if (opt.k_rows) {  // the pass's own rows (keep_kv): f32, V by rows, weighed where they are
        a.k = reinterpret_cast<const uint8_t *>(opt.k_rows);
        a.type_k = GgmlType::F32;
        a.k_row_bytes = sizeof(float) * hp.n_embd_k_gqa();
        a.v = reinterpret_cast<const uint8_t *>(opt.v_rows);
        a.type_v = GgmlType::F32;
        a.v_trans = false;
        a.v_row_bytes = sizeof(float) * hp.n_embd_v_gqa();
        a.v_cells = 0;
        a.own_values = true;
    }
    a.n_kv = b.n_kv;
    a.mask = opt.mask ? opt.mask : b.mask;
    a.ldmask = b.n_kv;
    a.spans = a.mask == b.mask ? b.mask_spans : a.mask == b.mask_swa ? b.mask_swa_spans : nullptr;
    a.scale = opt.scale;
    a.softcap = opt.softcap;
    a.alibi = opt.alibi;
    a.mask_head_stride = opt.mask_head_stride;
    a.encoder_pass = opt.encoder_pass;
    a.rows = r.rows;
    a.n_rows = static_cast<int>(r.n);
    a.out = out;
    a.ldo = static_cast<int64_t>(hp.n_head) * hp.n_embd_head_v;
    kernels::attention(a, pool);
}

void ffn_swiglu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
                ForwardScratch &s, kernels::ThreadPool &pool) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    grow(s.ffn_a, n_rows * n_ff);  // ffn_a: [n_rows][n_ff]  gate, then silu(gate) * up
    grow(s.ffn_b, n_rows * n_ff);  // ffn_b: [n_rows][n_ff]  up
    project(
        {{&l.ffn_gate, &l.ffn_gate_b, s.ffn_a.data(), n_ff}, {&l.ffn_up, &l.ffn_up_b, s.ffn_b.data(), n_ff}},
        h, n_embd, n_rows, pool, s.mm);
    kernels::swiglu_rows(s.ffn_a.data(), s.ffn_b.data(), s.ffn_a.data(), n_rows, n_ff, pool);
    project({{&l.ffn_down, &l.ffn_down_b, out, n_embd}}, s.ffn_a.data(), n_ff, n_rows, pool, s.mm);
}

void ffn_geglu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
               ForwardScratch &s, kernels::ThreadPool &pool) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    grow(s.ffn_a, n_rows * n_ff);  // ffn_a: [n_rows][n_ff]  gate, then gelu(gate) * up
    grow(s.ffn_b, n_rows * n_ff);  // ffn_b: [n_rows][n_ff]  up
    project(
        {{&l.ffn_gate, &l.ffn_gate_b, s.ffn_a.data(), n_ff}, {&l.ffn_up, &l.ffn_up_b, s.ffn_b.data(), n_ff}},
        h, n_embd, n_rows, pool, s.mm);
    kernels::geglu_rows(s.ffn_a.data(), s.ffn_b.data(), s.ffn_a.data(), n_rows, n_ff, pool);
    project({{&l.ffn_down, &l.ffn_down_b, out, n_embd}}, s.ffn_a.data(), n_ff, n_rows, pool, s.mm);
}

void ffn_relu(const HParams &hp, const LayerWeights &l, const float *h, int64_t n_rows, float *out,
              ForwardScratch &s, kernels::ThreadPool &pool) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
    grow(s.ffn_a, n_rows * n_ff);  // ffn_a: [n_rows][n_ff]  up, then relu(up)
    project({{&l.ffn_up, &l.ffn_up_b, s.ffn_a.data(), n_ff}}, h, n_embd, n_rows, pool, s.mm);
    kernels::relu_inplace(s.ffn_a.data(), n_rows * n_ff);
    project({{&l.ffn_down, &l.ffn_down_b, out, n_embd}}, s.ffn_a.data(), n_ff, n_rows, pool, s.mm);
}

int32_t relative_position_bucket(int64_t rel, uint32_t n_buckets, bool bidirectional) {
    constexpr float kMaxDistance = 128.0f;  // T5's, which llama.cpp does not read from the file
    int32_t nb = static_cast<int32_t>(n_buckets), bucket = 0;
    int64_t n;  // the distance, made non-negative
    if (bidirectional) {
        nb /= 2;
        if (rel > 0) bucket = nb;
        n = rel < 0 ? -rel : rel;
    } else {
        n = rel < 0 ? -rel : 0;
    }
    const int32_t max_exact = nb / 2;
    if (n < max_exact) return bucket + static_cast<int32_t>(n);
    // in float, as llama.cpp computes it (a distance on a bucket's edge lands where it puts it)
    const float large = std::floor(static_cast<float>(max_exact) +
                                   std::log(static_cast<float>(n) / static_cast<float>(max_exact)) *
                                       static_cast<float>(nb - max_exact) /
                                       std::log(kMaxDistance / static_cast<float>(max_exact)));
    return bucket + std::min(static_cast<int32_t>(std::min(large, 1e9f)), nb - 1);
}

void relative_position_masks(const HParams &hp, const ParamVector &rel_b, const ForwardBatch &b,
                             const float *mask, bool bidirectional, std::vector<float> &out) {
    const int64_t n_head = hp.n_head, n_tokens = b.n_tokens, n_kv = b.n_kv;
    if (!b.kv_pos)
        throw Error("relative-position attention needs the cells' positions (ForwardBatch::kv_pos)");
    grow(out, static_cast<size_t>(n_head * n_tokens * n_kv));
    std::vector<int32_t> &buckets = bucket_scratch();
    buckets.resize(static_cast<size_t>(n_kv));
    for (int64_t i = 0; i < n_tokens; ++i) {
        const float *m = mask + i * n_kv;
        for (int64_t j = 0; j < n_kv; ++j)  // only visible cells have a position to measure from
            buckets[j] = std::isinf(m[j]) ? 0
                                          : relative_position_bucket(int64_t{b.kv_pos[j]} - b.pos[i],
                                                                     hp.n_rel_buckets, bidirectional);
        for (int64_t h = 0; h < n_head; ++h) {
            float *o = out.data() + (h * n_tokens + i) * n_kv;
            for (int64_t j = 0; j < n_kv; ++j)
                o[j] = std::isinf(m[j]) ? m[j] : m[j] + rel_b[buckets[j] * n_head + h];
        }
    }
}

void output_rms(const HParams &hp, const ModelWeights &w, const ForwardBatch &b, const float *x,
                ForwardScratch &s, kernels::ThreadPool &pool) {
    grow(s.cur, static_cast<size_t>(b.n_outputs) * hp.n_embd);
    kernels::rms_norm_rows(x, w.output_norm.data(), s.cur.data(), b.n_outputs, hp.n_embd, hp.norm_rms_eps,
                           pool);
    write_outputs(hp, w, b, s.cur.data(), s, pool);
}

void write_outputs(const HParams &hp, const ModelWeights &w, const ForwardBatch &b, const float *normed,
                   ForwardScratch &s, kernels::ThreadPool &pool) {
    const int64_t n_out = b.n_outputs, n_embd = hp.n_embd;
    if (b.hidden) std::memcpy(b.hidden, normed, sizeof(float) * n_out * n_embd);
    if (b.logits) project({{&w.output, nullptr, b.logits, hp.n_vocab}}, normed, n_embd, n_out, pool, s.mm);
}

}  // namespace lctx
