#include "generate/context_shift.h"

namespace lctx::generate {

int32_t shift_context(llama_context *ctx, llama_seq_id seq, const ContextShift &policy) {
    if (!policy.enabled || !llama_kv_cache_can_shift(ctx)) return 0;
    const int32_t n_past = llama_kv_cache_seq_pos_max(ctx, seq) + 1;
    const int32_t n_keep = policy.n_keep < 0 ? 0 : policy.n_keep;
    if (n_past <= n_keep) return 0;
    const int32_t n_discard = (n_past - n_keep) / 2;
    if (n_discard == 0) return 0;
    llama_kv_cache_seq_rm(ctx, seq, n_keep, n_keep + n_discard);
    llama_kv_cache_seq_add(ctx, seq, n_keep + n_discard, n_past, -n_discard);
    return n_discard;
}

}  // namespace lctx::generate
