// C API: KV-cache sequence operations, counters and the debugging view.
#include <cstdlib>
#include <cstring>

#include "capi/capi_internal.h"
#include "lctx/lctx_ext.h"

namespace {

lctx::KvCache &kv_of(llama_context *ctx) {
    return ctx->impl->kv();
}

void apply_pending(llama_context *ctx) {
    ctx->impl->kv().apply_shift(*ctx->model->impl);
    if (ctx->defrag_pending) {
        ctx->impl->kv().defrag();
        ctx->defrag_pending = false;
    }
}

}  // namespace

extern "C" {

int32_t llama_get_kv_cache_token_count(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return ctx->impl->kv().n_tokens();
}

int32_t llama_get_kv_cache_used_cells(const struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, 0);
    return static_cast<int32_t>(ctx->impl->kv().used());
}

void llama_kv_cache_clear(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    kv_of(ctx).clear();
    ctx->defrag_pending = false;
}

bool llama_kv_cache_seq_rm(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    LCTX_CAPI_REQUIRE(ctx, false);
    return kv_of(ctx).seq_rm(seq_id, p0, p1);
}

void llama_kv_cache_seq_cp(struct llama_context *ctx, llama_seq_id seq_id_src, llama_seq_id seq_id_dst,
                           llama_pos p0, llama_pos p1) {
    LCTX_CAPI_REQUIRE(ctx, );
    if (seq_id_src < 0 || seq_id_dst < 0 || seq_id_src >= lctx::kMaxSeqs || seq_id_dst >= lctx::kMaxSeqs) {
        LCTX_LOG_ERROR("%s: sequence ids %d -> %d must lie in [0, %d)", __func__, seq_id_src, seq_id_dst,
                       lctx::kMaxSeqs);
        return;
    }
    kv_of(ctx).seq_cp(seq_id_src, seq_id_dst, p0, p1);
}

void llama_kv_cache_seq_keep(struct llama_context *ctx, llama_seq_id seq_id) {
    LCTX_CAPI_REQUIRE(ctx, );
    kv_of(ctx).seq_keep(seq_id);
}

void llama_kv_cache_seq_add(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0, llama_pos p1,
                            llama_pos delta) {
    LCTX_CAPI_REQUIRE(ctx, );
    kv_of(ctx).seq_add(seq_id, p0, p1, delta);
}

void llama_kv_cache_seq_div(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0, llama_pos p1,
                            int d) {
    LCTX_CAPI_REQUIRE(ctx, );
    if (!kv_of(ctx).seq_div(seq_id, p0, p1, d))
        LCTX_LOG_ERROR("%s: divisor %d must be at least 1; nothing changed", __func__, d);
}

llama_pos llama_kv_cache_seq_pos_max(struct llama_context *ctx, llama_seq_id seq_id) {
    LCTX_CAPI_REQUIRE(ctx, -1);
    return kv_of(ctx).seq_pos_max(seq_id);
}

void llama_kv_cache_defrag(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    ctx->defrag_pending = true;
}

void llama_kv_cache_update(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, );
    lctx::capi::guard_void(__func__, [&] { apply_pending(ctx); });
}

void lctx_kv_cache_place_by_sequence(struct llama_context *ctx, bool enable) {
    LCTX_CAPI_REQUIRE(ctx, );
    kv_of(ctx).set_place_by_sequence(enable);
}

bool llama_kv_cache_can_shift(struct llama_context *ctx) {
    LCTX_CAPI_REQUIRE(ctx, false);
    return !ctx->impl->kv().recurrent();  // a recurrent state has no positions to move (b4748)
}

// ---- debugging view ----

struct llama_kv_cache_view llama_kv_cache_view_init(const struct llama_context *ctx, int32_t n_seq_max) {
    llama_kv_cache_view v{};
    v.n_cells = 0;
    v.n_seq_max = n_seq_max > 0 ? n_seq_max : 1;
    v.max_contiguous_idx = -1;
    (void)ctx;
    return v;
}

void llama_kv_cache_view_free(struct llama_kv_cache_view *view) {
    if (!view) return;
    std::free(view->cells);
    std::free(view->cells_sequences);
    view->cells = nullptr;
    view->cells_sequences = nullptr;
}

void llama_kv_cache_view_update(const struct llama_context *ctx, struct llama_kv_cache_view *view) {
    LCTX_CAPI_REQUIRE(ctx, );
    LCTX_CAPI_REQUIRE(view, );
    const lctx::KvCache &kv = ctx->impl->kv();
    const int32_t n = static_cast<int32_t>(kv.size());
    const int32_t n_seq = view->n_seq_max > 0 ? view->n_seq_max : 1;
    if (view->n_cells != n || !view->cells) {
        void *cells = std::realloc(view->cells, sizeof(llama_kv_cache_view_cell) * n);
        void *seqs =
            std::realloc(view->cells_sequences, sizeof(llama_seq_id) * static_cast<size_t>(n) * n_seq);
        if (cells) view->cells = static_cast<llama_kv_cache_view_cell *>(cells);
        if (seqs) view->cells_sequences = static_cast<llama_seq_id *>(seqs);
        if (!cells || !seqs) {
            LCTX_LOG_ERROR("%s: out of memory", __func__);
            return;
        }
        view->n_cells = n;
    }
    const std::vector<lctx::KvCell> &cells = kv.cells();
    int32_t used = 0, tokens = 0, best = 0, best_idx = -1, run = 0;
    for (int32_t i = 0; i < n; ++i) {
        const lctx::KvCell &c = cells[i];
        view->cells[i].pos = c.pos;
        llama_seq_id *ids = view->cells_sequences + static_cast<size_t>(i) * n_seq;
        int32_t k = 0;
        for (int32_t s = 0; s < lctx::kMaxSeqs && k < n_seq; ++s)
            if (c.seq.test(s)) ids[k++] = s;
        for (; k < n_seq; ++k) ids[k] = -1;
        tokens += static_cast<int32_t>(c.seq.count());
        if (c.pos >= 0 && !c.empty()) {
            used++;
            run = 0;
        } else if (++run > best) {
            best = run;
            best_idx = i - run + 1;
        }
    }
    view->n_seq_max = n_seq;
    view->token_count = tokens;
    view->used_cells = used;
    view->max_contiguous = best;
    view->max_contiguous_idx = best_idx;
}

}  // extern "C"
