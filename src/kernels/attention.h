// Scaled dot-product attention of a micro-batch's queries over the KV cache cells [0, n_kv).
// Scores are formed one query row and head at a time (n_kv values), so the full score matrix of a
// long context is never materialized. Cells masked with -inf are skipped, which makes a batch of many
// sequences cost what its visible cells cost.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/threadpool.h"
#include "tensor/types.h"

namespace lctx::kernels {

struct AttentionArgs {
    const float *q = nullptr;  // [n_tokens][ldq]: head h at q + h * head_dim_k (already roped)
    int64_t ldq = 0;
    int n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;

    const uint8_t *k = nullptr;  // [n_kv cells][k_row_bytes], heads of a row side by side
    GgmlType type_k = GgmlType::F16;
    size_t k_row_bytes = 0;

    const uint8_t *v = nullptr;  // v_trans: [channels][v_cells] elements; else [n_kv cells][v_row_bytes]
    GgmlType type_v = GgmlType::F16;
    bool v_trans = true;
    size_t v_row_bytes = 0;  // !v_trans
    uint32_t v_cells = 0;    // v_trans: cells per channel row (the cache size)

    int n_kv = 0;
    const float *mask = nullptr;  // [n_tokens][ldmask]: 0 or -inf per cell (ALiBi: -|pos_q - pos_k| or -inf)
    int64_t ldmask = 0;
    float scale = 1.0f;            // usually 1/sqrt(head_dim_k)
    float softcap = 0.0f;          // > 0: scores = softcap * tanh(scores * scale / softcap), then the mask
    const float *alibi = nullptr;  // [n_head] ALiBi slopes: head h adds alibi[h] * mask; null: the mask as is
    // > 0: each head has its own mask, head h's at mask + h * mask_head_stride (a per-head bias such as T5's
    // relative positions); the heads' masks must have their -inf cells in the same places.
    int64_t mask_head_stride = 0;

    // [mask rows][2]: the first visible cell of each mask row and one past its last (spans[2 t], spans[2 t +
    // 1]), as attention_mask_spans finds them; the context computes them once for every layer. Null: found
    // here.
    const int32_t *spans = nullptr;

    // The rows are a whole encoder pass over cells no decode reads again (BERT, T5's encoder): F32 keys may
    // then take the turned key blocks too, whose scores differ from the dot products' in the last bits (a
    // decode over an F32 cache keeps a one-token decode's bits, which scale-out's replicas rely on).
    bool encoder_pass = false;
    // V by rows that are the pass's own (an encoder's projections, attended where they are, v_trans false).
    // With the x86 row kernels (weighted_rows_*, ops_x86.h) never turned: an item's rows that see spans from
    // the same cell weigh them together, each output one chain of fused multiply-adds over its cells in
    // order. Elsewhere every call turns them into channel rows for the channel-row product. Either way an
    // output does not depend on the rows that share its call (a text's embedding, on the texts beside it).
    bool own_values = false;

    const int32_t *rows = nullptr;  // query rows to compute
    int n_rows = 0;
    float *out = nullptr;  // [n_rows][ldo]: head h at out + h * head_dim_v
    int64_t ldo = 0;
};

void attention(const AttentionArgs &a, ThreadPool &pool);

// The visible span of each of n_rows mask rows (ldmask apart) over n_kv cells: spans[2 t] is the first cell
// of row t that is not -inf, spans[2 t + 1] one past the last (equal when the row sees nothing).
void attention_mask_spans(const float *mask, int64_t ldmask, int n_rows, int n_kv, int32_t *spans);

// The ALiBi slope of each of n_head heads for a maximum bias (ggml's soft_max_ext): with n2 the largest power
// of two <= n_head, m0 = 2^(-max_bias / n2) and m1 = 2^(-max_bias / 2 / n2), head h < n2 gets m0^(h + 1) and
// the others m1^(2 (h - n2) + 1). max_bias <= 0 gives 1 for every head.
void alibi_slopes(int n_head, float max_bias, float *slopes);

}  // namespace lctx::kernels
