#include "tools/lctx/bench_roofline.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>
#include <vector>

#include "kernels/dot.h"
#include "model/families.h"
#include "tensor/types.h"

namespace lctx::bench {

namespace {

// Each probe runs `iters` rounds of independent dependency chains (enough of them to cover the latency of
// every pipe) and returns a value derived from all of them, so nothing is optimized away. They return the
// operations done.

#if defined(__x86_64__)
// Twelve named accumulators (not an array, which the compiler may keep in memory), each step one
// instruction per accumulator. They start from distinct values: identical chains would be merged into one.
#define LCTX_DISTINCT(set1, scale)                                                                      \
    a0 = set1(scale 0), a1 = set1(scale 1), a2 = set1(scale 2), a3 = set1(scale 3), a4 = set1(scale 4), \
    a5 = set1(scale 5), a6 = set1(scale 6), a7 = set1(scale 7), a8 = set1(scale 8), a9 = set1(scale 9), \
    a10 = set1(scale 10), a11 = set1(scale 11)
// Each round also passes `opaque` through an empty asm that claims to change it, so the compiler cannot take
// it as a constant and fold the rounds into a closed form (clang turns an integer sum of a constant into one
// multiply).
#define LCTX_ROUNDS12(step, opaque)          \
    for (uint64_t i = 0; i < iters; ++i) {   \
        __asm__ volatile("" : "+v"(opaque)); \
        step(a0);                            \
        step(a1);                            \
        step(a2);                            \
        step(a3);                            \
        step(a4);                            \
        step(a5);                            \
        step(a6);                            \
        step(a7);                            \
        step(a8);                            \
        step(a9);                            \
        step(a10);                           \
        step(a11);                           \
    }

// What a 512-bit float probe hands back: two lanes of the sum of its twelve chains.
__attribute__((target("avx512f"))) float sink12_512(__m512 a0, __m512 a1, __m512 a2, __m512 a3, __m512 a4,
                                                    __m512 a5, __m512 a6, __m512 a7, __m512 a8, __m512 a9,
                                                    __m512 a10, __m512 a11) {
    const __m512 s =
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),
                                    _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
    alignas(64) float v[16];
    _mm512_store_ps(v, s);
    return v[0] + v[15];
}

__attribute__((target("avx512f"))) double fma_avx512(uint64_t iters, float *sink) {
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    LCTX_DISTINCT(_mm512_set1_ps, 1.0f + 0.001f *);
    __m512 m = _mm512_set1_ps(0.999999f);
    const __m512 c = _mm512_set1_ps(1e-6f);
#define LCTX_STEP(x) x = _mm512_fmadd_ps(x, m, c)
    LCTX_ROUNDS12(LCTX_STEP, m)
#undef LCTX_STEP
    *sink = sink12_512(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
    return static_cast<double>(iters) * 12 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2(uint64_t iters, float *sink) {
    __m256 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    LCTX_DISTINCT(_mm256_set1_ps, 1.0f + 0.001f *);
    __m256 m = _mm256_set1_ps(0.999999f);
    const __m256 c = _mm256_set1_ps(1e-6f);
#define LCTX_STEP(x) x = _mm256_fmadd_ps(x, m, c)
    LCTX_ROUNDS12(LCTX_STEP, m)
#undef LCTX_STEP
    const __m256 s =
        _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)),
                                    _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11))));
    alignas(32) float v[8];
    _mm256_store_ps(v, s);
    *sink = v[0] + v[7];
    return static_cast<double>(iters) * 12 * 8 * 2;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) double dot_avx512(uint64_t iters, float *sink) {
    __m512i a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    LCTX_DISTINCT(_mm512_set1_epi32, 1 +);
    __m512i x = _mm512_set1_epi8(3);
    const __m512i y = _mm512_set1_epi8(-2);
#define LCTX_STEP(acc) acc = _mm512_dpbusd_epi32(acc, x, y)
    LCTX_ROUNDS12(LCTX_STEP, x)
#undef LCTX_STEP
    const __m512i s = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
        _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)),
                         _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11))));
    alignas(64) int32_t v[16];
    _mm512_store_si512(v, s);
    *sink = static_cast<float>(v[0] + v[15]);
    return static_cast<double>(iters) * 12 * 64 * 2;
}

// bf16 pairs into f32 lanes: 32 multiply-adds per instruction, as the AVX-512 BF16 kernels use it.
__attribute__((target("avx512f,avx512bf16"))) double bf16_avx512(uint64_t iters, float *sink) {
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    LCTX_DISTINCT(_mm512_set1_ps, 0.001f *);
    __m512i x = _mm512_set1_epi16(0x3f80);        // 1.0 in bf16
    const __m512i y = _mm512_set1_epi16(0x3727);  // about 1e-5
#define LCTX_STEP(acc) acc = _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)y)
    LCTX_ROUNDS12(LCTX_STEP, x)
#undef LCTX_STEP
    *sink = sink12_512(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
    return static_cast<double>(iters) * 12 * 32 * 2;
}

// AVX2 has no int8 dot: a product pair goes through maddubs (u8 x s8 -> i16 pairs) and madd (-> i32), then
// an add into the accumulator, as the AVX2 kernels do.
__attribute__((target("avx2"))) double dot_avx2(uint64_t iters, float *sink) {
    __m256i a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    LCTX_DISTINCT(_mm256_set1_epi32, 1 +);
    __m256i x = _mm256_set1_epi8(3);
    const __m256i y = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
    // x changes each round (through an empty asm), so the products cannot be hoisted out of the loop.
#define LCTX_STEP(acc) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones))
    for (uint64_t i = 0; i < iters; ++i) {
        __asm__ volatile("" : "+x"(x));
        LCTX_STEP(a0);
        LCTX_STEP(a1);
        LCTX_STEP(a2);
        LCTX_STEP(a3);
        LCTX_STEP(a4);
        LCTX_STEP(a5);
        LCTX_STEP(a6);
        LCTX_STEP(a7);
        LCTX_STEP(a8);
        LCTX_STEP(a9);
        LCTX_STEP(a10);
        LCTX_STEP(a11);
    }
#undef LCTX_STEP
    const __m256i s = _mm256_add_epi32(
        _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)),
                         _mm256_add_epi32(_mm256_add_epi32(a8, a9), _mm256_add_epi32(a10, a11))));
    alignas(32) int32_t v[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(v), s);
    *sink = static_cast<float>(v[0] + v[7]);
    return static_cast<double>(iters) * 12 * 32 * 2;
}

#undef LCTX_ROUNDS12
#undef LCTX_DISTINCT

#endif  // __x86_64__

#if defined(__aarch64__)
// ARM64: 128-bit FMAs (fmla) at every level, and the 8-bit dot products the dotprod level's kernels use
// (sdot: 16 products summed into four i32 lanes per instruction), in twelve independent chains.
double fma_neon(uint64_t iters, float *sink) {
    float32x4_t a[12];
    for (int k = 0; k < 12; ++k) a[k] = vdupq_n_f32(1.0f + 0.001f * static_cast<float>(k));
    float32x4_t x = vdupq_n_f32(0.999999f);
    const float32x4_t y = vdupq_n_f32(1e-6f);
    for (uint64_t i = 0; i < iters; ++i) {
        __asm__ volatile("" : "+w"(x));
        for (int k = 0; k < 12; ++k) a[k] = vfmaq_f32(y, a[k], x);
    }
    float32x4_t s = a[0];
    for (int k = 1; k < 12; ++k) s = vaddq_f32(s, a[k]);
    *sink = vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 3);
    return static_cast<double>(iters) * 12 * 4 * 2;
}

__attribute__((target("arch=armv8.2-a+dotprod"))) double dot_dotprod(uint64_t iters, float *sink) {
    int32x4_t a[12];
    for (int k = 0; k < 12; ++k) a[k] = vdupq_n_s32(k);
    int8x16_t x = vdupq_n_s8(3);
    const int8x16_t y = vdupq_n_s8(-2);
    for (uint64_t i = 0; i < iters; ++i) {
        __asm__ volatile("" : "+w"(x));
        for (int k = 0; k < 12; ++k) a[k] = vdotq_s32(a[k], x, y);
    }
    int32x4_t s = a[0];
    for (int k = 1; k < 12; ++k) s = vaddq_s32(s, a[k]);
    *sink = static_cast<float>(vgetq_lane_s32(s, 0) + vgetq_lane_s32(s, 3));
    return static_cast<double>(iters) * 12 * 16 * 2;
}

// NEON without dotprod: smull + sadalp (8 products of 8-bit pairs, widened and pairwise added).
double dot_neon(uint64_t iters, float *sink) {
    int32x4_t a[12];
    for (int k = 0; k < 12; ++k) a[k] = vdupq_n_s32(k);
    int8x8_t x = vdup_n_s8(3);
    const int8x8_t y = vdup_n_s8(-2);
    for (uint64_t i = 0; i < iters; ++i) {
        __asm__ volatile("" : "+w"(x));
        for (int k = 0; k < 12; ++k) a[k] = vpadalq_s16(a[k], vmull_s8(x, y));
    }
    int32x4_t s = a[0];
    for (int k = 1; k < 12; ++k) s = vaddq_s32(s, a[k]);
    *sink = static_cast<float>(vgetq_lane_s32(s, 0) + vgetq_lane_s32(s, 3));
    return static_cast<double>(iters) * 12 * 8 * 2;
}
#endif  // __aarch64__

double fma_scalar(uint64_t iters, float *sink) {
    float a[8];
    for (int k = 0; k < 8; ++k) a[k] = 1.0f + 0.001f * static_cast<float>(k);
    for (uint64_t i = 0; i < iters; ++i)
        for (int k = 0; k < 8; ++k) a[k] = a[k] * 0.999999f + 1e-6f;
    *sink = a[0] + a[7];
    return static_cast<double>(iters) * 8 * 2;
}

double dot_scalar(uint64_t iters, float *sink) {
    int32_t a[8] = {};
    volatile int8_t yv = -2;  // keeps the compiler from folding the loop into one multiply
    for (uint64_t i = 0; i < iters; ++i)
        for (int k = 0; k < 8; ++k) a[k] += 3 * yv;
    *sink = static_cast<float>(a[0] + a[7]);
    return static_cast<double>(iters) * 8 * 2;
}

using Probe = double (*)(uint64_t, float *);

// The probes of the active level: at the AVX-512 level the 256-bit forms too, since kernels there use both
// widths and some cores run 512-bit operations at half the rate of 256-bit ones (the peak is the faster).
std::vector<Probe> probes_for(PeakKind kind) {
    using kernels::Isa;
    using kernels::isa_at_least;
    const Isa isa = kernels::isa_active();
    const bool fma = kind == PeakKind::F32Fma;
#if defined(__x86_64__)
    if (kind == PeakKind::Bf16Dot)
        return isa_at_least(isa, Isa::Avx512) ? std::vector<Probe>{bf16_avx512}
                                              : probes_for(PeakKind::F32Fma);
    if (isa_at_least(isa, Isa::Avx512))
        return fma ? std::vector<Probe>{fma_avx512, fma_avx2} : std::vector<Probe>{dot_avx512, dot_avx2};
    if (isa == Isa::Avx2) return {fma ? fma_avx2 : dot_avx2};
#elif defined(__aarch64__)
    if (kind == PeakKind::Bf16Dot) return probes_for(PeakKind::F32Fma);  // the ARM levels convert BF16 to f32
    if (isa_at_least(isa, Isa::Dotprod)) return {fma ? fma_neon : dot_dotprod};
    if (isa == Isa::Neon) return {fma ? fma_neon : dot_neon};
#endif
    if (kind == PeakKind::Bf16Dot) return probes_for(PeakKind::F32Fma);
    return {fma ? fma_scalar : dot_scalar};
}

}  // namespace

const char *peak_kind_name(PeakKind k) {
    switch (k) {
        case PeakKind::F32Fma:
            return "f32 FMA";
        case PeakKind::Int8Dot:
            return "int8 dot";
        case PeakKind::Bf16Dot:
            return "bf16 dot";
    }
    return "?";
}

double compute_peak(PeakKind kind, int n_threads) {
    n_threads = std::max(1, n_threads);
    // Short tries spread over ~50 ms, the best of them: a try that shares a core with something else (a
    // neighbour on a shared machine, the other engine's threads still spinning after its run) reads low. On a
    // shared AVX-512 AMD EPYC the int8 rate of one core still moves between 60% and 100% of its best for tens
    // of ms at a time, so `lctx bench` probes again at every repetition and keeps the best.
    constexpr int kTries = 6;
    const uint64_t iters = 500'000;  // ~1 ms per try at a few GHz
    const std::vector<Probe> probes = probes_for(kind);
    // The spinning threads of a run that just ended settle first.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    double best = 0;
    for (int run = 0; run < kTries; ++run)
        for (const Probe probe : probes) {
            std::vector<float> sinks(static_cast<size_t>(n_threads) * 16);  // a cache line apart
            std::vector<double> ops(n_threads);
            std::atomic<int> ready{0};
            std::atomic<bool> go{false};
            std::vector<std::thread> workers;
            for (int t = 0; t < n_threads; ++t)
                workers.emplace_back([&, t] {
                    ready.fetch_add(1);
                    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                    ops[t] = probe(iters, &sinks[static_cast<size_t>(t) * 16]);
                });
            while (ready.load() < n_threads) std::this_thread::yield();
            const auto t0 = std::chrono::steady_clock::now();
            go.store(true, std::memory_order_release);
            for (std::thread &w : workers) w.join();
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            double total = 0;
            for (double o : ops) total += o;
            if (s > 0) best = std::max(best, total / s);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    return best;
}

ComputeFacts compute_facts(const Model &model) {
    ComputeFacts f;
    const gguf::File &file = model.file();
    const gguf::TensorInfo *embd = nullptr;
    bool has_output = false;
    uint64_t quant_bytes = 0, float_bytes = 0, bf16_bytes = 0;
    auto count = [&](const gguf::TensorInfo &t) {
        f.matmul_macs += static_cast<uint64_t>(t.ne[0]) * static_cast<uint64_t>(t.ne[1]);
        (type_traits(t.type).is_quantized ? quant_bytes : float_bytes) += t.nbytes;
        if (t.type == GgmlType::BF16) bf16_bytes += t.nbytes;
    };
    for (const gguf::TensorInfo &t : file.tensors()) {
        const std::string_view name = t.name;
        if (name == "token_embd.weight") {
            embd = &t;
            continue;
        }
        if (name == "output.weight") has_output = true;
        // Matrices only; lookups (position and token-type embeddings) cost no products.
        // A reranker's classification head (cls, cls.output) runs once per sequence, not per token.
        if (t.ne.size() < 2 || t.n_elements() != t.ne[0] * t.ne[1] || name.starts_with("position_embd") ||
            name.starts_with("token_types") || name.starts_with("cls."))
            continue;
        count(t);
    }
    // The output projection reuses the embedding matrix; an encoder-only model (bert) has none.
    const Family *family = find_family(model.hparams().arch);
    const bool encoder_only = family && family->encode && !model.hparams().causal_attn;
    if (embd && !has_output && !encoder_only) count(*embd);
    const HParams &hp = model.hparams();
    f.attn_macs_per_key =
        static_cast<uint64_t>(hp.n_layer) * hp.n_head * (hp.n_embd_head_k + hp.n_embd_head_v);
    // BF16 kernels below the AVX-512 level convert to f32
    const bool bf16_dots = kernels::isa_at_least(kernels::isa_active(), kernels::Isa::Avx512);
    f.kind = quant_bytes > float_bytes                   ? PeakKind::Int8Dot
             : bf16_dots && 2 * bf16_bytes > float_bytes ? PeakKind::Bf16Dot
                                                         : PeakKind::F32Fma;
    return f;
}

double ops_per_encoded_token(const ComputeFacts &f, int n_len) {
    return 2.0 * (static_cast<double>(f.matmul_macs) +
                  static_cast<double>(f.attn_macs_per_key) * static_cast<double>(n_len));
}

double ops_per_prompt_token(const ComputeFacts &f, int n_prompt, int depth) {
    const double mean_keys = static_cast<double>(depth) + (static_cast<double>(n_prompt) + 1.0) / 2.0;
    return 2.0 * (static_cast<double>(f.matmul_macs) + static_cast<double>(f.attn_macs_per_key) * mean_keys);
}

}  // namespace lctx::bench
