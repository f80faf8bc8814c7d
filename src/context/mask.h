// The attention masks of a micro-batch, built from the cache cells: entry (t, j) says whether token t may
// attend to cell j (0) or not (-inf). A token sees the cells of its (first) sequence at positions not after
// its own (causal) or all of them (non-causal). Models with sliding-window layers get a second mask for those
// layers that also hides every cell n_swa or more positions back. ALiBi models read a visible cell's entry as
// minus its distance, -|pos_q - pos_k|, which the attention multiplies by each head's slope.
#pragma once
#include <cstdint>
#include <vector>

#include "context/kv_cache.h"

namespace lctx {

struct MaskRules {
    bool causal = true;
    uint32_t n_swa = 0;  // > 0: fill mask_swa too (b4748: hidden when pos_q - pos_k >= n_swa)
    bool alibi = false;  // visible entries hold -|pos_q - pos_k| instead of 0
};

// Fills mask (and mask_swa when rules.n_swa > 0), [n_tokens][n_kv] each, for tokens at positions pos in
// sequences seq_id[t][0], over cells [0, n_kv).
void build_masks(const std::vector<KvCell> &cells, uint32_t n_kv, int32_t n_tokens, const int32_t *pos,
                 int32_t *const *seq_id, const MaskRules &rules, float *mask, float *mask_swa);

}  // namespace lctx
