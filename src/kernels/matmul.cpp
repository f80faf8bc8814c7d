#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "util/error.h"

namespace lctx::kernels {

namespace {

// Below this many multiply-adds a second thread costs more to wake and join than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Activation rows per pass over a row chunk: their converted blocks stay in L2 while a weight tile
// (4 rows) in L1 meets all of them.
constexpr int64_t kTokenChunk = 64;

}  // namespace

void matmul(const WeightView &w, const float *x, int64_t ldx, int64_t n_tokens, float *y, int64_t ldy,
            ThreadPool &pool, MatmulScratch &scratch) {
    if (n_tokens <= 0 || w.rows <= 0) return;
    const TypeKernels &k = type_kernels(w.type);
    const GemmFn gemm = w.interleaved ? k.gemm_x8 : k.gemm;
    if (!gemm) throw Error(std::string("no interleaved kernel for ") + type_name(w.type));
    const size_t act_row = row_size(k.act_type, w.cols);
    const size_t need = act_row * static_cast<size_t>(n_tokens);
    if (scratch.act.size() < need) scratch.act.resize(need);
    uint8_t *act = scratch.act.data();  // [n_tokens][act_row bytes]

    const int64_t work = w.rows * w.cols * n_tokens;
    const int nth = work < kMinParallelWork ? 1 : pool.n_active();

    if (nth > 1 && n_tokens >= 4) {
        pool.parallel_for(n_tokens, 1, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) k.quantize_act(x + t * ldx, act + t * act_row, w.cols);
        }, nth);
    } else {
        for (int64_t t = 0; t < n_tokens; ++t) k.quantize_act(x + t * ldx, act + t * act_row, w.cols);
    }

    if (nth == 1) {
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
            const int64_t nt = std::min(kTokenChunk, n_tokens - t0);
            gemm(w.cols, w.data, w.row_bytes, w.rows, act + t0 * act_row, act_row, nt, y + t0 * ldy, ldy);
        }
        return;
    }

    // Work items: (token chunk, row chunk), handed out dynamically so that a thread the OS delays does
    // not hold the others up. Row chunks are multiples of the 4-row tile, about 8 per thread and token
    // chunk, at least 16 rows.
    const int64_t n_tc = (n_tokens + kTokenChunk - 1) / kTokenChunk;
    int64_t row_chunk = (w.rows + 8 * nth - 1) / (8 * nth);
    row_chunk = std::max<int64_t>(16, (row_chunk + 7) / 8 * 8);  // whole 4-row tiles and 8-row groups
    if (n_tokens > 4) row_chunk = std::min<int64_t>(row_chunk, 64);
    const int64_t n_rc = (w.rows + row_chunk - 1) / row_chunk;
    const int64_t n_items = n_tc * n_rc;
    std::atomic<int64_t> next{0};
    pool.run(
        [&](int, int) {
            for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_items;
                 i = next.fetch_add(1, std::memory_order_relaxed)) {
                const int64_t t0 = (i / n_rc) * kTokenChunk, r0 = (i % n_rc) * row_chunk;
                const int64_t nt = std::min(kTokenChunk, n_tokens - t0), nr = std::min(row_chunk, w.rows - r0);
                gemm(w.cols, w.data + r0 * w.row_bytes, w.row_bytes, nr, act + t0 * act_row, act_row, nt,
                       y + t0 * ldy + r0, ldy);
            }
        },
        nth);
}

void weight_row_to_f32(const WeightView &w, int64_t row, float *dst) {
    if (row < 0 || row >= w.rows) throw Error("weight row " + std::to_string(row) + " out of range");
    if (w.interleaved) {
        std::vector<uint8_t> plain(w.row_bytes);
        deinterleave_row(w.type, w.data, w.row_bytes, row, w.cols, plain.data());
        dequantize_row(w.type, plain.data(), dst, w.cols);
        return;
    }
    dequantize_row(w.type, w.data + row * w.row_bytes, dst, w.cols);
}

}  // namespace lctx::kernels
