// The whole state of a context as bytes, for tests that check "refused, nothing changed": the last call's
// outputs (output map, logits, per-token and pooled embeddings, the sequences a cls/rank pooling missed),
// the KV cache (search head, used count, pending shift, every cell's position, shift delta and sequences,
// and the K/V data of the cells in use), the encoder's cells and output, and the control vector.
//
// Taking a snapshot reads only: it goes through the context's const views, never through
// llama_state_get_data (which settles pending shifts first), so a snapshot leaves a pending shift pending.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "context/context.h"
#include "context/state.h"
#include "state/state_layout.h"

namespace state_test {

namespace detail {

template <typename T>
void put(std::vector<uint8_t> &out, const T &v) {
    const auto *p = reinterpret_cast<const uint8_t *>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
void put_vec(std::vector<uint8_t> &out, const std::vector<T> &v) {
    put<uint64_t>(out, v.size());
    const auto *p = reinterpret_cast<const uint8_t *>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
}

inline void put_seqs(std::vector<uint8_t> &out, const lctx::SeqSet &s) {
    for (int i = 0; i < lctx::kMaxSeqs; ++i) out.push_back(s.test(static_cast<size_t>(i)) ? 1 : 0);
}

// Cells, search head, used count, pending shift and the raw K/V memory of a cache.
inline void put_cache(std::vector<uint8_t> &out, const lctx::KvCache &kv) {
    put<uint32_t>(out, kv.size());
    put<uint32_t>(out, kv.head());
    put<uint32_t>(out, kv.used());
    put<uint8_t>(out, kv.has_shift() ? 1 : 0);
    for (const lctx::KvCell &c : kv.cells()) {
        put<int32_t>(out, c.pos);
        put<int32_t>(out, c.delta);
        put_seqs(out, c.seq);
    }
    // The K/V data of the cells in use (a free cell's bytes mean nothing: a refused call may leave some).
    const lctx::KvView &v = kv.view();
    for (uint32_t il = 0; il < kv.n_layer(); ++il)
        for (uint32_t i = 0; i < kv.size(); ++i) {
            if (kv.cells()[i].empty()) continue;
            const uint8_t *k = v.k[il] + static_cast<size_t>(i) * v.k_row_bytes;
            out.insert(out.end(), k, k + v.k_row_bytes);
            if (!v.v_trans) {
                const uint8_t *r = v.v[il] + static_cast<size_t>(i) * v.v_row_bytes;
                out.insert(out.end(), r, r + v.v_row_bytes);
                continue;
            }
            for (uint32_t ch = 0; ch < kv.n_embd_v(); ++ch) {
                const uint8_t *e = v.v[il] + (static_cast<size_t>(ch) * v.size + i) * v.v_elem_bytes;
                out.insert(out.end(), e, e + v.v_elem_bytes);
            }
        }
}

}  // namespace detail

// The KV cache part alone (cells, head, used, pending shift, K/V data), without the outputs.
inline std::vector<uint8_t> kv_snapshot(const lctx::Context &ctx) {
    std::vector<uint8_t> out;
    detail::put_cache(out, ctx.kv());
    return out;
}

inline std::vector<uint8_t> snapshot(const lctx::Context &ctx) {
    using namespace detail;
    std::vector<uint8_t> out = kv_snapshot(ctx);
    put<int32_t>(out, ctx.n_outputs());
    put_vec(out, ctx.output_ids());
    put_vec(out, ctx.logit_rows());
    put_vec(out, ctx.embedding_rows());
    put<uint64_t>(out, ctx.pooled_embeddings().size());
    for (const auto &[seq, v] : ctx.pooled_embeddings()) {
        put<int32_t>(out, seq);
        put_vec(out, v);
    }
    put_vec(out, ctx.sequences_without_position_0());
    put<uint8_t>(out, ctx.encoder_cells() ? 1 : 0);
    if (ctx.encoder_cells()) put_cache(out, *ctx.encoder_cells());
    put_vec(out, ctx.encoder_output());
    put<uint64_t>(out, ctx.encoder_output_sequences().size());
    for (const lctx::SeqSet &s : ctx.encoder_output_sequences()) put_seqs(out, s);
    put<uint8_t>(out, ctx.encoder_rows_readable() ? 1 : 0);
    put_vec(out, ctx.control_vector());
    put<uint8_t>(out, ctx.causal_attn() ? 1 : 0);
    put<uint8_t>(out, ctx.params().embeddings ? 1 : 0);
    return out;
}

// The context's llama_state_get_data image (which settles a pending shift first), to load elsewhere.
inline std::vector<uint8_t> state_image(lctx::Context &ctx) {
    std::vector<uint8_t> bytes(lctx::ContextState::size(ctx));
    lctx::BufferStateWriter w(bytes.data(), bytes.size());
    lctx::ContextState::write(ctx, w);
    return bytes;
}

// The KV cache part of a llama_state_get_data image (every cell's position and sequences, the K/V data),
// without the outputs.
inline std::vector<uint8_t> kv_part(const std::vector<uint8_t> &state) {
    const Layout l = parse_layout(state.data(), state.size(), /*seq=*/false);
    return {state.begin() + static_cast<std::ptrdiff_t>(l.cell_count_off), state.end()};
}

}  // namespace state_test
