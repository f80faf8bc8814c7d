#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>

#include "kernels/dot.h"
#include "util/error.h"

namespace lctx::kernels {

void matmul(const WeightView &w, const float *x, int64_t ldx, int64_t n_tokens, float *y, int64_t ldy,
            ThreadPool &pool, MatmulScratch &scratch) {
    if (n_tokens <= 0 || w.rows <= 0) return;
    const TypeKernels &k = type_kernels(w.type);
    const size_t act_row = row_size(k.act_type, w.cols);
    scratch.act.resize(act_row * static_cast<size_t>(n_tokens));
    uint8_t *act = scratch.act.data();

    // Below ~64K multiply-adds a second thread costs more to wake than it saves.
    const int max_threads = w.rows * w.cols * n_tokens < (int64_t{1} << 16) ? 1 : pool.n_active();

    // act: [n_tokens][act_row bytes]
    pool.parallel_for(
        n_tokens, 1,
        [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) k.quantize_act(x + t * ldx, act + t * act_row, w.cols);
        },
        n_tokens < 8 ? 1 : max_threads);

    // Rows are split in chunks of 16 so that both cores get equal shares and a chunk's weights stay
    // in L1 while all tokens pass over them.
    constexpr int64_t kRowTile = 16;
    pool.parallel_for(w.rows, kRowTile, [&](int64_t r0, int64_t r1) {
        for (int64_t rb = r0; rb < r1; rb += kRowTile) {
            const int64_t re = std::min(r1, rb + kRowTile);
            for (int64_t t = 0; t < n_tokens; ++t) {
                const uint8_t *a = act + t * act_row;
                float *yt = y + t * ldy;
                for (int64_t r = rb; r < re; ++r) yt[r] = k.vec_dot(w.cols, w.data + r * w.row_bytes, a);
            }
        }
    }, max_threads);
}

void weight_row_to_f32(const WeightView &w, int64_t row, float *dst) {
    if (row < 0 || row >= w.rows) throw Error("weight row " + std::to_string(row) + " out of range");
    dequantize_row(w.type, w.data + row * w.row_bytes, dst, w.cols);
}

}  // namespace lctx::kernels
