// Micro-benchmarks of matmul (Google Benchmark), on shapes of TinyLlama-1.1B (n_embd 2048, n_ff 5632):
//   Gemm/<type>/<rows>/<cols>/<tokens>     the gemm kernel alone, one thread, weights cache-resident
//                                          (512 rows): compute speed in multiply-adds per second
//   GemmX8/<type>/<rows>/<cols>/<tokens>   the same over the interleaved layout (groups of 8 or 16 rows)
//   DotLoop/<type>/<rows>/<cols>/<tokens>  the same outputs by one vec_dot per output (the old path)
//   Matmul/<type>/<rows>/<cols>/<tokens>/<threads>  kernels::matmul with its pool (big weights: memory)
//   MatmulPP/<type>/<rows>/<cols>/512/<threads>  matmul over interleaved F16 / BF16 weights, model shapes
//   MatmulTiny/<type>/...  the same for the K types on shapes of a Q4_K_M model: 512 tokens, 1 token
// Built by CMake as build/bin/matmul_bench when Google Benchmark is installed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "tensor/types.h"

namespace {

using lctx::GgmlType;
using namespace lctx::kernels;

struct Data {
    std::vector<uint8_t> w, act;
    std::vector<float> x, y;
    size_t row_bytes = 0, act_row = 0;
};

Data make(GgmlType t, int64_t rows, int64_t cols, int64_t tokens) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Data d;
    const TypeKernels &k = type_kernels(t);
    d.row_bytes = lctx::row_size(t, cols);
    d.act_row = lctx::row_size(k.act_type, cols);
    d.w.resize(d.row_bytes * rows);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (float &v : row) v = normal(rng);
        lctx::quantize_row(t, row.data(), d.w.data() + r * d.row_bytes, cols);
    }
    d.x.resize(tokens * cols);
    for (float &v : d.x) v = normal(rng);
    d.act.resize(d.act_row * tokens);
    for (int64_t i = 0; i < tokens; ++i)
        k.quantize_act(d.x.data() + i * cols, d.act.data() + i * d.act_row, cols);
    d.y.resize(rows * tokens);
    return d;
}

void BM_Gemm(benchmark::State &st, GgmlType t, bool by_dot) {
    const int64_t rows = st.range(0), cols = st.range(1), tokens = st.range(2);
    Data d = make(t, rows, cols, tokens);
    const TypeKernels &k = type_kernels(t);
    for (auto _ : st) {
        if (by_dot) {
            for (int64_t c = 0; c < tokens; ++c)
                for (int64_t r = 0; r < rows; ++r)
                    d.y[c * rows + r] =
                        k.vec_dot(cols, d.w.data() + r * d.row_bytes, d.act.data() + c * d.act_row);
        } else {
            k.gemm(cols, d.w.data(), d.row_bytes, rows, d.act.data(), d.act_row, tokens, d.y.data(), rows);
        }
        benchmark::DoNotOptimize(d.y.data());
    }
    st.counters["MAC/s"] = benchmark::Counter(static_cast<double>(rows * cols * tokens),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// The same as Gemm over the interleaved layout the model repacks its weights into.
void BM_GemmX8(benchmark::State &st, GgmlType t) {
    const int64_t rows = st.range(0), cols = st.range(1), tokens = st.range(2);
    Data d = make(t, rows, cols, tokens);
    const TypeKernels &k = type_kernels(t);
    const size_t ib = interleaved_row_bytes(t, cols);
    std::vector<uint8_t> w8(ib * interleaved_rows(rows, k.group_rows));
    interleave_rows(t, k.group_rows, d.w.data(), d.row_bytes, rows, cols, w8.data());
    for (auto _ : st) {
        k.gemm_interleaved(cols, w8.data(), ib, rows, d.act.data(), d.act_row, tokens, d.y.data(), rows);
        benchmark::DoNotOptimize(d.y.data());
    }
    st.counters["MAC/s"] = benchmark::Counter(static_cast<double>(rows * cols * tokens),
                                              benchmark::Counter::kIsIterationInvariantRate);
    st.counters["weight B/s"] =
        benchmark::Counter(static_cast<double>(w8.size()), benchmark::Counter::kIsIterationInvariantRate);
}

// A decoded token's pass over a model's worth of small matrices (distinct memory, 256 MiB and more in all, as
// mamba-130m's 4.5 MiB ssm_in): each call starts cold from memory, where GemmX8's one large matrix streams.
// GemmX8Seq/<type>/<rows>/<cols>/<matrices>
void BM_GemmX8Seq(benchmark::State &st, GgmlType t) {
    const int64_t rows = st.range(0), cols = st.range(1), n_mat = st.range(2);
    Data d = make(t, rows, cols, 1);
    const TypeKernels &k = type_kernels(t);
    const size_t ib = interleaved_row_bytes(t, cols);
    const size_t mat_bytes = ib * interleaved_rows(rows, k.group_rows);
    std::vector<uint8_t> w8(mat_bytes * n_mat);
    for (int64_t m = 0; m < n_mat; ++m)
        interleave_rows(t, k.group_rows, d.w.data(), d.row_bytes, rows, cols, w8.data() + m * mat_bytes);
    for (auto _ : st) {
        for (int64_t m = 0; m < n_mat; ++m)
            k.gemm_interleaved(cols, w8.data() + m * mat_bytes, ib, rows, d.act.data(), d.act_row, 1,
                               d.y.data(), rows);
        benchmark::DoNotOptimize(d.y.data());
    }
    st.counters["weight B/s"] =
        benchmark::Counter(static_cast<double>(w8.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Matmul(benchmark::State &st, GgmlType t) {
    const int64_t rows = st.range(0), cols = st.range(1), tokens = st.range(2);
    Data d = make(t, rows, cols, tokens);
    ThreadPool pool(static_cast<int>(st.range(3)));
    MatmulScratch scratch;
    WeightView w{t, d.w.data(), rows, cols, d.row_bytes};
    for (auto _ : st) {
        matmul(w, d.x.data(), cols, tokens, d.y.data(), rows, pool, scratch);
        benchmark::DoNotOptimize(d.y.data());
    }
    st.counters["weight B/s"] =
        benchmark::Counter(static_cast<double>(d.w.size()), benchmark::Counter::kIsIterationInvariantRate);
    st.counters["MAC/s"] = benchmark::Counter(static_cast<double>(rows * cols * tokens),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// kernels::matmul over the interleaved layout the model repacks F16 / BF16 weights into (prompt processing).
void BM_MatmulX8(benchmark::State &st, GgmlType t) {
    const int64_t rows = st.range(0), cols = st.range(1), tokens = st.range(2);
    Data d = make(t, rows, cols, tokens);
    const TypeKernels &k = type_kernels(t);
    const size_t ib = interleaved_row_bytes(t, cols);
    std::vector<uint8_t> w8(ib * interleaved_rows(rows, k.group_rows));
    interleave_rows(t, k.group_rows, d.w.data(), d.row_bytes, rows, cols, w8.data());
    ThreadPool pool(static_cast<int>(st.range(3)));
    MatmulScratch scratch;
    WeightView w{t, w8.data(), rows, cols, ib, k.group_rows};
    for (auto _ : st) {
        matmul(w, d.x.data(), cols, tokens, d.y.data(), rows, pool, scratch);
        benchmark::DoNotOptimize(d.y.data());
    }
    st.counters["MAC/s"] = benchmark::Counter(static_cast<double>(rows * cols * tokens),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16,
                       GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F32}) {
        const std::string n = lctx::type_name(t);
        for (bool by_dot : {false, true}) {
            benchmark::RegisterBenchmark((std::string(by_dot ? "DotLoop/" : "Gemm/") + n).c_str(),
                                         [t, by_dot](benchmark::State &st) { BM_Gemm(st, t, by_dot); })
                ->Args({512, 2048, 1})
                ->Args({512, 2048, 64});
        }
        if (can_interleave(t, 512, 2048))
            benchmark::RegisterBenchmark((std::string("GemmX8/") + n).c_str(),
                                         [t](benchmark::State &st) { BM_GemmX8(st, t); })
                ->Args({128, 2048, 1})
                ->Args({512, 2048, 1})
                ->Args({512, 2048, 2})
                ->Args({512, 2048, 4})
                ->Args({512, 2048, 8})  // batched decode: 8 and 16 sequences, one token each
                ->Args({512, 2048, 16})
                ->Args({512, 2048, 64})    // one prompt work item (AMX tiles where the CPU has them)
                ->Args({32768, 2048, 1})   // weights beyond the L3: memory speed
                ->Args({32768, 2048, 8});  // the same for a batched decode step of 8 sequences
        if (can_interleave(t, 512, 2048))
            benchmark::RegisterBenchmark((std::string("GemmX8Seq/") + n).c_str(),
                                         [t](benchmark::State &st) { BM_GemmX8Seq(st, t); })
                ->Args({3072, 768, 64})    // mamba-130m's ssm_in
                ->Args({768, 1536, 128})   // its ssm_out
                ->Args({32768, 2048, 2});  // GemmX8's large matrix, twice
        benchmark::RegisterBenchmark((std::string("Matmul/") + n).c_str(),
                                     [t](benchmark::State &st) { BM_Matmul(st, t); })
            ->Args({5632, 2048, 1, 1})
            ->Args({32768, 2048, 1, 1})
            ->Args({5632, 2048, 1, 2})
            ->Args({2048, 2048, 128, 1})
            ->Args({2048, 2048, 128, 2})
            ->UseRealTime();
    }
    // Prompt processing (512 tokens) of F16 / BF16 models: SmolLM-135M (576 x 576, 1536 x 576, 576 x 1536)
    // and TinyLlama-1.1B (2048 x 2048, 5632 x 2048, 2048 x 5632) weights, rows x cols, 1 and 2 threads.
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
        auto *b = benchmark::RegisterBenchmark((std::string("MatmulPP/") + lctx::type_name(t)).c_str(),
                                               [t](benchmark::State &st) { BM_MatmulX8(st, t); });
        for (int th : {1, 2})
            for (auto [rows, cols] :
                 {std::pair{576, 576}, {1536, 576}, {576, 1536}, {2048, 2048}, {5632, 2048}, {2048, 5632}})
                b->Args({rows, cols, 512, th});
        b->UseRealTime();
    }
    // Encoder passes of F16 embedding models, 1 thread: bge-small (384 x 384, 1536 x 384, 384 x 1536) over 16
    // texts of 22 tokens (a server's batch of short texts) and over 512 tokens; nomic-embed (2304 x 768 fused
    // q|k|v, 768 x 768, 3072 x 768, 768 x 3072) over 512.
    {
        auto *b = benchmark::RegisterBenchmark("MatmulEnc/f16",
                                               [](benchmark::State &st) { BM_MatmulX8(st, GgmlType::F16); });
        for (int tokens : {352, 512})
            for (auto [rows, cols] : {std::pair{384, 384}, {1536, 384}, {384, 1536}})
                b->Args({rows, cols, tokens, 1});
        for (auto [rows, cols] : {std::pair{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}})
            b->Args({rows, cols, 512, 1});
        b->UseRealTime();
    }
    // Prompt processing and generation of a TinyLlama-shaped Q4_K_M model (Q4_K + Q6_K, some Q5_K):
    // attention (2048 x 2048) and feed-forward (5632 x 2048) weights, 512 tokens and 1 token.
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K}) {
        benchmark::RegisterBenchmark((std::string("MatmulTiny/") + lctx::type_name(t)).c_str(),
                                     [t](benchmark::State &st) { BM_Matmul(st, t); })
            ->Args({2048, 2048, 512, 1})
            ->Args({5632, 2048, 512, 1})
            ->Args({2048, 2048, 1, 1})
            ->Args({5632, 2048, 1, 1})
            ->UseRealTime();
    }
}

// Registered before main runs, as the BENCHMARK macros do.
[[maybe_unused]] const bool kRegistered = (register_all(), true);

}  // namespace

BENCHMARK_MAIN();
