// Threaded row quantization (see row_quantizer.h).
#include "quantize/row_quantizer.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "quantize/weighted_quants.h"

namespace lctx::quantize {

bool takes_importance(GgmlType type) {
    return weighted_quantizer(type) != nullptr;
}

namespace {

// Runs work(r0, r1) over [0, nrows) split among threads; an exception in a worker is rethrown here.
template <typename Work>
void split_rows(int64_t nrows, int64_t n_per_row, int n_threads, Work &&work) {
    // Threads only pay off for enough work: at least 16K values each, as llama-quantize's chunks.
    const int64_t min_rows = std::max<int64_t>(1, (32 * 512) / std::max<int64_t>(1, n_per_row));
    const int64_t n_use = std::clamp<int64_t>(nrows / min_rows, 1, std::max(1, n_threads));
    if (n_use == 1) {
        work(0, nrows);
        return;
    }
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(static_cast<size_t>(n_use));
    const int64_t per = (nrows + n_use - 1) / n_use;
    for (int64_t t = 0; t < n_use; ++t) {
        const int64_t r0 = t * per, r1 = std::min(nrows, r0 + per);
        if (r0 >= r1) break;
        pool.emplace_back([&, t, r0, r1] {
            try {
                work(r0, r1);
            } catch (...) {
                errors[static_cast<size_t>(t)] = std::current_exception();
            }
        });
    }
    for (std::thread &th : pool) th.join();
    for (const std::exception_ptr &e : errors)
        if (e) std::rethrow_exception(e);
}

void quantize_one(GgmlType type, WeightedRowFn weighted, const float *x, void *y, int64_t n,
                  const float *importance) {
    if (weighted)
        weighted(x, y, n, importance);
    else
        quantize_row(type, x, y, n);
}

}  // namespace

void quantize_rows(GgmlType type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                   const float *importance, int n_threads) {
    const size_t rbytes = row_size(type, n_per_row);
    const WeightedRowFn weighted = importance ? weighted_quantizer(type) : nullptr;
    split_rows(nrows, n_per_row, n_threads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            quantize_one(type, weighted, src + r * n_per_row,
                         static_cast<uint8_t *>(dst) + static_cast<size_t>(r) * rbytes, n_per_row,
                         importance);
    });
}

void convert_rows(GgmlType type, GgmlType src_type, const void *src, void *dst, int64_t nrows,
                  int64_t n_per_row, const float *importance, int n_threads) {
    const size_t in_bytes = row_size(src_type, n_per_row), out_bytes = row_size(type, n_per_row);
    const WeightedRowFn weighted = importance ? weighted_quantizer(type) : nullptr;
    split_rows(nrows, n_per_row, n_threads, [&](int64_t r0, int64_t r1) {
        std::vector<float> x(static_cast<size_t>(n_per_row));  // [n_per_row]
        std::vector<uint64_t> staged;  // a source row copied to aligned memory when the file's is not aligned
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *in = static_cast<const uint8_t *>(src) + static_cast<size_t>(r) * in_bytes;
            if (src_type == GgmlType::F32) {
                std::memcpy(x.data(), in, in_bytes);  // a mapped file's rows need not be aligned for floats
            } else {
                if (reinterpret_cast<uintptr_t>(in) % alignof(uint64_t) !=
                    0) {  // the dequantizers read blocks in place
                    staged.resize((in_bytes + 7) / 8);
                    std::memcpy(staged.data(), in, in_bytes);
                    in = reinterpret_cast<const uint8_t *>(staged.data());
                }
                dequantize_row(src_type, in, x.data(), n_per_row);
            }
            quantize_one(type, weighted, x.data(),
                         static_cast<uint8_t *>(dst) + static_cast<size_t>(r) * out_bytes, n_per_row,
                         importance);
        }
    });
}

}  // namespace lctx::quantize
