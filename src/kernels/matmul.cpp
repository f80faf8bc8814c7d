#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>

#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "kernels/ops.h"
#include "util/error.h"

namespace lctx::kernels {

namespace {

// Below this many multiply-adds a second thread costs more to wake and join than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Activation rows per pass over a row chunk: their converted blocks stay in L2 while a weight tile
// (4 rows) in L1 meets all of them.
constexpr int64_t kTokenChunk = 64;
// Kernels that stage both operands per call (TypeKernels::gemm_interleaved_stages) get calls of up to this
// many activation rows and kStagedRowChunk weight rows, so that staging is a small part of each call.
constexpr int64_t kStagedTokenChunk = 128;
constexpr int64_t kStagedRowChunk = 256;
constexpr int64_t kMaxTokenChunk = kStagedTokenChunk;

}  // namespace

namespace {

// One weight of a call with its output and precomputed kernel.
struct Target {
    const WeightView *w;
    float *y;
    int64_t ldy;
    GemmFn gemm;
    int64_t full_rows;  // rows the kernel computes in place (interleaved: whole groups)
};

// Rows [r0, r0 + nr) of one target for tokens [t0, t0 + nt). An interleaved matrix whose row count is not a
// multiple of its group keeps a zero-padded last group: its rows are computed into a buffer and the real ones
// copied.
void run_item(const Target &t, const uint8_t *act, size_t act_row, int64_t t0, int64_t nt, int64_t r0,
              int64_t nr) {
    const WeightView &w = *t.w;
    const int64_t in_place = std::min(nr, std::max<int64_t>(0, t.full_rows - r0));
    if (in_place > 0)
        t.gemm(w.cols, w.data + r0 * w.row_bytes, w.row_bytes, in_place, act + t0 * act_row, act_row, nt,
               t.y + t0 * t.ldy + r0, t.ldy);
    if (in_place == nr) return;
    const int64_t g0 = t.full_rows;  // the padded group
    const int g = w.group_rows;
    float tail[kMaxTokenChunk * kMaxGroupRows];
    t.gemm(w.cols, w.data + g0 * w.row_bytes, w.row_bytes, g, act + t0 * act_row, act_row, nt, tail, g);
    for (int64_t i = 0; i < nt; ++i)
        for (int64_t r = g0; r < w.rows; ++r) t.y[(t0 + i) * t.ldy + r] = tail[i * g + (r - g0)];
}

}  // namespace

void matmul(const WeightView &w, const float *x, int64_t ldx, int64_t n_tokens, float *y, int64_t ldy,
            ThreadPool &pool, MatmulScratch &scratch) {
    const MatmulOutput out{&w, y, ldy};
    matmul_shared_input(&out, 1, x, ldx, n_tokens, pool, scratch);
}

void matmul_shared_input(const MatmulOutput *outs, int n_outs, const float *x, int64_t ldx, int64_t n_tokens,
                         ThreadPool &pool, MatmulScratch &scratch) {
    if (n_tokens <= 0 || n_outs <= 0) return;
    const TypeKernels &k0 = type_kernels(outs[0].w->type);
    const int64_t cols = outs[0].w->cols;
    // Weights whose activations convert differently go one call each.
    for (int i = 1; i < n_outs; ++i) {
        if (outs[i].w->cols != cols || type_kernels(outs[i].w->type).act_type != k0.act_type) {
            for (int j = 0; j < n_outs; ++j)
                matmul_shared_input(outs + j, 1, x, ldx, n_tokens, pool, scratch);
            return;
        }
    }
    Target targets[kMaxSharedOutputs];
    if (n_outs > kMaxSharedOutputs) throw Error("matmul_shared_input: too many outputs");
    int64_t work = 0;
    bool staged = n_tokens >= 16;
    // Activations converted once into the wide form where every target's kernel takes it
    // (TypeKernels::gemm_interleaved_wide): a prompt's, not a decoded token's (the form is 2x the bytes).
    bool wide = n_tokens >= 16 && k0.quantize_act_wide;
    for (int i = 0; i < n_outs; ++i) {
        const WeightView &w = *outs[i].w;
        const TypeKernels &k = type_kernels(w.type);
        const GemmFn gemm = w.interleaved() ? k.gemm_interleaved : k.gemm;
        if (w.interleaved() && (!gemm || w.group_rows != k.group_rows))
            throw Error(std::string("no kernel for ") + type_name(w.type) +
                        " weights interleaved in groups of " + std::to_string(w.group_rows) + " rows");
        targets[i] = {&w, outs[i].y, outs[i].ldy, gemm,
                      w.interleaved() ? w.rows / w.group_rows * w.group_rows : w.rows};
        work += w.rows * w.cols * n_tokens;
        staged = staged && w.interleaved() && k.gemm_interleaved_stages;
        wide =
            wide && w.interleaved() && k.gemm_interleaved_wide && k.quantize_act_wide == k0.quantize_act_wide;
    }
    if (wide)
        for (int i = 0; i < n_outs; ++i)
            targets[i].gemm = type_kernels(targets[i].w->type).gemm_interleaved_wide;
    const int64_t token_chunk = staged ? kStagedTokenChunk : kTokenChunk;
    const QuantizeActFn quantize = wide ? k0.quantize_act_wide : k0.quantize_act;

    const size_t act_row = wide ? sizeof(float) * static_cast<size_t>(cols) : row_size(k0.act_type, cols);
    const size_t need = act_row * static_cast<size_t>(n_tokens);
    if (scratch.act.size() < need) scratch.act.resize(need);
    uint8_t *act = scratch.act.data();  // [n_tokens][act_row bytes]

    const int nth = work < kMinParallelWork ? 1 : pool.n_active();
    if (nth > 1 && n_tokens >= 4) {
        pool.parallel_for(
            n_tokens, 1,
            [&](int64_t t0, int64_t t1) {
                for (int64_t t = t0; t < t1; ++t) quantize(x + t * ldx, act + t * act_row, cols);
            },
            nth);
    } else {
        for (int64_t t = 0; t < n_tokens; ++t) quantize(x + t * ldx, act + t * act_row, cols);
    }

    if (nth == 1) {
        for (int i = 0; i < n_outs; ++i)
            for (int64_t t0 = 0; t0 < n_tokens; t0 += token_chunk)
                run_item(targets[i], act, act_row, t0, std::min(token_chunk, n_tokens - t0), 0,
                         targets[i].w->rows);
        return;
    }

    // Work items: (target, token chunk, row chunk) in the order the weights lie in memory; each thread
    // streams its own contiguous share and then helps with the others' (ThreadPool::for_each_item). Row
    // chunks are whole groups of 16 rows (so of 8 too, and of 4-row tiles), about 8 per thread and token
    // chunk of the largest target, at least 16 rows.
    const int64_t n_tc = (n_tokens + token_chunk - 1) / token_chunk;
    int64_t max_rows = 0;
    for (int i = 0; i < n_outs; ++i) max_rows = std::max(max_rows, targets[i].w->rows);
    int64_t row_chunk = (max_rows + 8 * nth - 1) / (8 * nth);
    row_chunk = std::max<int64_t>(16, (row_chunk + 15) / 16 * 16);
    row_chunk = std::min<int64_t>(row_chunk, staged ? kStagedRowChunk : n_tokens > 4 ? 64 : row_chunk);
    // Staging kernels with enough token chunks to go round: one item per (target, token chunk), so that each
    // staged activation chunk meets every row (the weights are then read once per chunk and thread).
    if (staged && n_tc >= 2 * nth) row_chunk = (max_rows + 15) / 16 * 16;
    int64_t first_item[kMaxSharedOutputs + 1];
    first_item[0] = 0;
    for (int i = 0; i < n_outs; ++i)
        first_item[i + 1] = first_item[i] + n_tc * ((targets[i].w->rows + row_chunk - 1) / row_chunk);
    const int64_t n_items = first_item[n_outs];
    pool.for_each_item(
        n_items,
        [&](int64_t i) {
            int ti = 0;
            while (i >= first_item[ti + 1]) ++ti;
            const Target &t = targets[ti];
            const int64_t n_rc = (t.w->rows + row_chunk - 1) / row_chunk;
            const int64_t local = i - first_item[ti];
            const int64_t t0 = (local / n_rc) * token_chunk, r0 = (local % n_rc) * row_chunk;
            run_item(t, act, act_row, t0, std::min(token_chunk, n_tokens - t0), r0,
                     std::min(row_chunk, t.w->rows - r0));
        },
        nth);
}

namespace {
// F16 rows (embedding tables) converted by the CPU's instructions: the same values as dequantize_row's loop
// (a bge-small pass over short texts spent 0.7% of its time in that loop).
void plain_row_to_f32(GgmlType type, const uint8_t *src, float *dst, int64_t n) {
    if (type == GgmlType::F16) return f16_to_f32(src, dst, n);
    dequantize_row(type, src, dst, n);
}
}  // namespace

void weight_row_to_f32(const WeightView &w, int64_t row, float *dst) {
    if (row < 0 || row >= w.rows) throw Error("weight row " + std::to_string(row) + " out of range");
    if (w.interleaved()) {
        thread_local std::vector<uint8_t> plain;  // one row, reused by every lookup of this thread
        plain.resize(row_size(w.type, w.cols));
        deinterleave_row(w.type, w.group_rows, w.data, w.row_bytes, row, w.cols, plain.data());
        plain_row_to_f32(w.type, plain.data(), dst, w.cols);
        return;
    }
    plain_row_to_f32(w.type, w.data + row * w.row_bytes, dst, w.cols);
}

}  // namespace lctx::kernels
