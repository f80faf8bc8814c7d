#include "kernels/attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/dot.h"
#include "kernels/ops.h"

namespace lctx::kernels {

void attention(const AttentionArgs &a, ThreadPool &pool) {
    const TypeKernels &kk = type_kernels(a.type_k);
    const TypeKernels *kv = a.v_trans ? &type_kernels(a.type_v) : nullptr;
    const size_t q_act_bytes = row_size(kk.act_type, a.head_dim_k);
    const size_t p_act_bytes = kv ? row_size(kv->act_type, a.n_kv) : 0;
    const size_t k_head_bytes = row_size(a.type_k, a.head_dim_k);
    const size_t v_elem_bytes = a.v_trans ? type_traits(a.type_v).type_size : 0;
    const size_t v_head_bytes = a.v_trans ? 0 : row_size(a.type_v, a.head_dim_v);
    const int gqa = a.n_head / a.n_head_kv;
    const int64_t n_items = static_cast<int64_t>(a.n_rows) * a.n_head;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();

    const int64_t work = n_items * a.n_kv * (a.head_dim_k + a.head_dim_v);
    const int max_threads = work < (int64_t{1} << 16) ? 1 : pool.n_active();
    pool.parallel_for(n_items, 1, [&](int64_t i0, int64_t i1) {
        // per-thread scratch: scores [n_kv], converted q, converted p, one dequantized V row
        std::vector<float> scores(a.n_kv), vrow(a.v_trans ? 0 : a.head_dim_v);
        std::vector<uint8_t> qbuf(q_act_bytes), pbuf(p_act_bytes);
        for (int64_t it = i0; it < i1; ++it) {
            const int r = a.rows[it / a.n_head];
            const int h = static_cast<int>(it % a.n_head);
            const int g = h / gqa;
            const float *mask = a.mask + static_cast<int64_t>(r) * a.ldmask;

            kk.quantize_act(a.q + r * a.ldq + static_cast<int64_t>(h) * a.head_dim_k, qbuf.data(), a.head_dim_k);
            const uint8_t *kbase = a.k + g * k_head_bytes;
            for (int j = 0; j < a.n_kv; ++j) {
                if (mask[j] == kNegInf) {
                    scores[j] = 0.0f;  // masked below
                    continue;
                }
                float s = kk.vec_dot(a.head_dim_k, kbase + j * a.k_row_bytes, qbuf.data());
                if (a.softcap > 0.0f) s = a.softcap * std::tanh(s * a.scale / a.softcap) / a.scale;
                scores[j] = s;
            }
            softmax(scores.data(), mask, a.n_kv, a.scale);

            float *o = a.out + static_cast<int64_t>(it / a.n_head) * a.ldo + static_cast<int64_t>(h) * a.head_dim_v;
            if (a.v_trans) {
                kv->quantize_act(scores.data(), pbuf.data(), a.n_kv);
                const size_t ch_bytes = static_cast<size_t>(a.v_cells) * v_elem_bytes;
                const uint8_t *vbase = a.v + static_cast<size_t>(g) * a.head_dim_v * ch_bytes;
                for (int c = 0; c < a.head_dim_v; ++c) o[c] = kv->vec_dot(a.n_kv, vbase + c * ch_bytes, pbuf.data());
            } else {
                std::memset(o, 0, sizeof(float) * a.head_dim_v);
                for (int j = 0; j < a.n_kv; ++j) {
                    if (scores[j] == 0.0f) continue;
                    dequantize_row(a.type_v, a.v + j * a.v_row_bytes + g * v_head_bytes, vrow.data(), a.head_dim_v);
                    for (int c = 0; c < a.head_dim_v; ++c) o[c] += scores[j] * vrow[c];
                }
            }
        }
    }, max_threads);
}

}  // namespace lctx::kernels
