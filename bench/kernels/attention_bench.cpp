// Micro-benchmarks of kernels::attention (Google Benchmark) over a KV cache laid out as the context lays
// it out, one decoded token or a chunk of prompt rows:
//   Attention/<shape>/<n_kv>/<rows>/<threads>/<v_rows>/<q8_0>
//     shape "smollm": 9 heads, 3 KV heads, head dim 64; "tinyllama": 32 heads, 4 KV heads, head dim 64
// and an encoder's pass over its own tokens: EncoderAttention/<shape>/<tokens>/<threads> (below).
// v_rows 0: V transposed (one channel row per cell span, the cache without flash attention); 1: V by
// cells' rows, as a flash-attention context stores it. q8_0 0: F16 K and V; 1: Q8_0 K and V by rows
// (`-fa 1 -ctk q8_0 -ctv q8_0`).
// Built by CMake as build/bin/attention_bench when Google Benchmark is installed.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/threadpool.h"
#include "tensor/types.h"

namespace {

using namespace lctx::kernels;

struct Shape {
    const char *name;
    int n_head, n_head_kv, head_dim;
};

// The fields every case sets alike: the shape's heads, rows 0..n_rows-1 of q (n_head heads each), the mask
// (n_rows x n_kv) and the output; the caller adds the cache.
AttentionArgs args_for(const Shape &sh, const std::vector<float> &q, std::vector<float> &out,
                       const std::vector<int32_t> &rows, const std::vector<float> &mask, int n_kv) {
    AttentionArgs a;
    a.q = q.data();
    a.ldq = static_cast<int64_t>(sh.n_head) * sh.head_dim;
    a.n_head = sh.n_head;
    a.n_head_kv = sh.n_head_kv;
    a.head_dim_k = a.head_dim_v = sh.head_dim;
    a.n_kv = n_kv;
    a.mask = mask.data();
    a.ldmask = n_kv;
    a.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    a.rows = rows.data();
    a.n_rows = static_cast<int>(rows.size());
    a.out = out.data();
    a.ldo = a.ldq;
    return a;
}

// Times attention(a) on n_threads; MAC/s counts the products with K and V.
void time_attention(benchmark::State &st, const AttentionArgs &a, int n_threads) {
    ThreadPool pool(n_threads);
    for (auto _ : st) {
        attention(a, pool);
        benchmark::DoNotOptimize(a.out);
    }
    st.counters["MAC/s"] =
        benchmark::Counter(static_cast<double>(a.n_rows) * a.n_head * a.n_kv * (a.head_dim_k + a.head_dim_v),
                           benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<int32_t> first_rows(int n) {
    std::vector<int32_t> rows(n);
    for (int r = 0; r < n; ++r) rows[r] = r;
    return rows;
}

void BM_Attention(benchmark::State &st, Shape sh) {
    const int n_kv = static_cast<int>(st.range(0)), n_rows = static_cast<int>(st.range(1));
    const int n_threads = static_cast<int>(st.range(2));
    const bool q8 = st.range(4) != 0;
    const bool v_rows = st.range(3) != 0 || q8;
    const lctx::GgmlType kv_type = q8 ? lctx::GgmlType::Q8_0 : lctx::GgmlType::F16;
    const int n_cells = n_kv;  // a cache exactly as large as the visible span
    const int k_dim = sh.n_head_kv * sh.head_dim;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    // cell rows of k_dim values (heads side by side; V the same way when by rows, else channel rows of cells)
    const size_t kv_row_bytes = lctx::row_size(kv_type, k_dim);
    std::vector<uint8_t> k(n_cells * kv_row_bytes), v(n_cells * kv_row_bytes);
    std::vector<float> x(k_dim);
    for (int j = 0; j < n_cells; ++j) {
        for (float &e : x) e = normal(rng);
        lctx::quantize_row(kv_type, x.data(), k.data() + j * kv_row_bytes, k_dim);
        for (float &e : x) e = normal(rng);
        lctx::quantize_row(kv_type, x.data(), v.data() + j * kv_row_bytes, k_dim);
    }
    const int64_t q_dim = static_cast<int64_t>(sh.n_head) * sh.head_dim;
    std::vector<float> q(static_cast<size_t>(n_rows) * q_dim), out(q.size());
    for (float &e : q) e = normal(rng);
    // Causal: the last n_rows cells are the rows' own tokens.
    std::vector<float> mask(static_cast<size_t>(n_rows) * n_kv, 0.0f);
    for (int r = 0; r < n_rows; ++r)
        for (int j = n_kv - n_rows + r + 1; j < n_kv; ++j)
            mask[static_cast<size_t>(r) * n_kv + j] = -INFINITY;
    const std::vector<int32_t> rows = first_rows(n_rows);
    AttentionArgs a = args_for(sh, q, out, rows, mask, n_kv);
    a.k = k.data();
    a.type_k = kv_type;
    a.k_row_bytes = kv_row_bytes;
    a.v = v.data();  // transposed: the same random F16 values read as [k_dim][n_cells]
    a.type_v = kv_type;
    a.v_trans = !v_rows;
    a.v_cells = static_cast<uint32_t>(n_cells);
    a.v_row_bytes = kv_row_bytes;
    time_attention(st, a, n_threads);
}

// An encoder's pass (bert, nomic-bert): n tokens of one sequence see each other (no mask), over the layer's
// own F32 K and V rows as the projections leave them (model/blocks.h keep_kv; AttentionArgs::own_values).
// EncoderAttention/<shape>/<n>/<threads>.
void BM_EncoderAttention(benchmark::State &st, Shape sh) {
    const int n = static_cast<int>(st.range(0)), n_threads = static_cast<int>(st.range(1));
    const int k_dim = sh.n_head_kv * sh.head_dim;
    const int64_t q_dim = static_cast<int64_t>(sh.n_head) * sh.head_dim;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k(static_cast<size_t>(n) * k_dim), v(k.size()), q(static_cast<size_t>(n) * q_dim),
        out(q.size()), mask(static_cast<size_t>(n) * n, 0.0f);
    for (float &e : k) e = normal(rng);
    for (float &e : v) e = normal(rng);
    for (float &e : q) e = normal(rng);
    const std::vector<int32_t> rows = first_rows(n);
    AttentionArgs a = args_for(sh, q, out, rows, mask, n);
    a.k = reinterpret_cast<const uint8_t *>(k.data());
    a.type_k = lctx::GgmlType::F32;
    a.k_row_bytes = sizeof(float) * k_dim;
    a.v = reinterpret_cast<const uint8_t *>(v.data());  // [n][k_dim] rows
    a.type_v = lctx::GgmlType::F32;
    a.v_trans = false;
    a.v_row_bytes = sizeof(float) * k_dim;
    a.encoder_pass = true;
    a.own_values = true;
    time_attention(st, a, n_threads);
}

void register_all() {
    for (Shape sh : {Shape{"bge-small", 12, 12, 32}, Shape{"nomic-embed", 12, 12, 64}})
        benchmark::RegisterBenchmark((std::string("EncoderAttention/") + sh.name).c_str(),
                                     [sh](benchmark::State &st) { BM_EncoderAttention(st, sh); })
            ->Args({128, 1})
            ->Args({512, 1})
            ->Args({512, 2})
            ->UseRealTime();
    for (Shape sh : {Shape{"smollm", 9, 3, 64}, Shape{"tinyllama", 32, 4, 64}}) {
        benchmark::RegisterBenchmark((std::string("Attention/") + sh.name).c_str(),
                                     [sh](benchmark::State &st) { BM_Attention(st, sh); })
            ->Args({32, 1, 1, 0, 0})
            ->Args({64, 1, 1, 0, 0})
            ->Args({128, 1, 1, 0, 0})
            ->Args({512, 1, 1, 0, 0})
            ->Args({64, 1, 2, 0, 0})
            ->Args({128, 1, 2, 0, 0})
            ->Args({512, 1, 2, 0, 0})
            ->Args({512, 64, 1, 0, 0})
            ->Args({4096, 1, 1, 0, 0})
            ->Args({4096, 1, 1, 1, 0})
            ->Args({4096, 1, 2, 0, 0})
            ->Args({4096, 1, 2, 1, 0})
            ->Args({4096, 1, 1, 1, 1})
            ->Args({4096, 64, 1, 0, 0})
            ->Args({4096, 64, 1, 1, 0})
            ->Args({4608, 512, 1, 0, 0})  // a 512-token prompt chunk at depth 4096 (pp512 -d 4096)
            ->Args({4608, 512, 1, 1, 0})
            ->Args({4608, 512, 1, 1, 1})
            ->UseRealTime();
    }
}

// Registered before main runs, as the BENCHMARK macros do.
[[maybe_unused]] const bool kRegistered = (register_all(), true);

}  // namespace

BENCHMARK_MAIN();
