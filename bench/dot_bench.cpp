// Micro-benchmarks of the dot-product kernels (Google Benchmark), one thread:
//   VecDot/<type>/<isa>/hot   one 4096-element row pair, repeated (cache-resident: compute speed)
//   MatVec/<type>/<isa>       4096 x 4096 weights against one activation (memory speed; bytes/s = weights)
//   QuantizeAct/<type>/<isa>  f32 -> activation type, 4096 elements
// Not in CMake yet; build by hand, e.g.
//   g++ -O2 -std=c++20 -Isrc bench/dot_bench.cpp build-kernels/lib/liblctx.a -lbenchmark -lpthread
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/dot.h"
#include "tensor/types.h"

namespace {

using lctx::GgmlType;
using namespace lctx::kernels;

constexpr GgmlType kTypes[] = {
    GgmlType::Q8_0, GgmlType::Q4_0,   GgmlType::F16,  GgmlType::BF16, GgmlType::F32,
    GgmlType::Q4_K, GgmlType::Q6_K,   GgmlType::Q5_K, GgmlType::Q4_1, GgmlType::Q5_0,
    GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS,
};

std::vector<float> random_floats(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v) x = normal(rng);
    return v;
}

std::vector<uint8_t> quantized(GgmlType t, int64_t n, uint32_t seed) {
    const std::vector<float> f = random_floats(n, seed);
    std::vector<uint8_t> q(lctx::row_size(t, n));
    lctx::quantize_row(t, f.data(), q.data(), n);
    return q;
}

void bm_vec_dot_hot(benchmark::State &state, GgmlType t, Isa isa) {
    constexpr int64_t n = 4096;
    const TypeKernels &k = type_kernels(t, isa);
    const std::vector<uint8_t> x = quantized(t, n, 1);
    std::vector<uint8_t> y(lctx::row_size(k.act_type, n));
    const std::vector<float> a = random_floats(n, 2);
    k.quantize_act(a.data(), y.data(), n);
    for (auto _ : state) benchmark::DoNotOptimize(k.vec_dot(n, x.data(), y.data()));
    state.SetItemsProcessed(state.iterations() * n);
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(x.size()));
}

void bm_mat_vec(benchmark::State &state, GgmlType t, Isa isa) {
    constexpr int64_t n = 4096, rows = 4096;
    const TypeKernels &k = type_kernels(t, isa);
    const size_t rs = lctx::row_size(t, n);
    // One quantized row repeated: quantizing 16M elements with the reference would dominate the run.
    const std::vector<uint8_t> row = quantized(t, n, 1);
    std::vector<uint8_t> w(rs * rows);
    for (int64_t r = 0; r < rows; ++r)
        std::copy(row.begin(), row.end(), w.begin() + static_cast<ptrdiff_t>(r * rs));
    std::vector<uint8_t> y(lctx::row_size(k.act_type, n));
    const std::vector<float> a = random_floats(n, 2);
    k.quantize_act(a.data(), y.data(), n);
    std::vector<float> out(rows);
    for (auto _ : state) {
        for (int64_t r = 0; r < rows; ++r)
            out[static_cast<size_t>(r)] = k.vec_dot(n, w.data() + r * rs, y.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.size()));
}

void bm_quantize_act(benchmark::State &state, GgmlType t, Isa isa) {
    constexpr int64_t n = 4096;
    const TypeKernels &k = type_kernels(t, isa);
    const std::vector<float> a = random_floats(n, 3);
    std::vector<uint8_t> y(lctx::row_size(k.act_type, n));
    for (auto _ : state) {
        k.quantize_act(a.data(), y.data(), n);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * n);
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<Isa> isas = {Isa::Scalar};
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Neon, Isa::Dotprod})
        if (lctx::kernels::isa_at_least(isa_detected(), isa)) isas.push_back(isa);
    for (GgmlType t : kTypes) {
        for (Isa isa : isas) {
            const std::string suffix = std::string(lctx::type_name(t)) + "/" + isa_name(isa);
            benchmark::RegisterBenchmark(("VecDot/" + suffix + "/hot").c_str(), bm_vec_dot_hot, t, isa);
            benchmark::RegisterBenchmark(("MatVec/" + suffix).c_str(), bm_mat_vec, t, isa)
                ->Unit(benchmark::kMillisecond);
        }
    }
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::F16, GgmlType::BF16}) {
        for (Isa isa : isas) {
            const TypeKernels &k = type_kernels(t, Isa::Scalar);
            const std::string name =
                std::string("QuantizeAct/") + lctx::type_name(k.act_type) + "/" + isa_name(isa);
            benchmark::RegisterBenchmark(name.c_str(), bm_quantize_act, t, isa);
        }
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
