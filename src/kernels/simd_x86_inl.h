// What every per-ISA kernel file (*_avx2.cpp, *_avx512.cpp, *_amx.cpp) starts from: the intrinsics and the
// small load and conversion helpers they share.
//
// The helpers are in an anonymous namespace on purpose: an inline function with external linkage compiled
// with -mavx512f could be merged by the linker with a baseline caller's copy and fault on older CPUs. For
// the same reason these files call no inline function from other headers (fp16.h included).
#pragma once
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics fill "don't care" operands with self-initialised _mm512_undefined_*() values,
// which -W(maybe-)uninitialized reports at every use once inlined; the values are never read. Set before
// <immintrin.h> and kept for the rest of the including file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tensor/block_layouts.h"

namespace lctx::kernels {
namespace {

// Holds v in a register at this point, so that a sum passing through it is added in program order. GCC may
// reassociate integer adds (any order gives the same value) into a tree over all of a block's products,
// which keeps them live at once and spills them to the stack.
template <class T>
inline void keep_in_register(T &v) {
    asm("" : "+x"(v));
}

inline float h2f(fp16_t h) {
    return _cvtsh_ss(h);
}
inline fp16_t f2h(float f) {
    return static_cast<fp16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
inline float bf2f(uint16_t h) {
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

// Part t of n split into `parts` parts of even size, the larger ones first (128 in 22 parts: 18 of 6, 4 of
// 5): the tiles of a kernel's activations or query vectors, where a last small tile would leave its FMA ports
// idle.
inline int even_part(int64_t n, int64_t parts, int64_t t) {
    return static_cast<int>(n / parts + (t < n % parts ? 1 : 0));
}

inline __m256i loadu256(const void *p) {
    return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}
inline __m128i loadu128(const void *p) {
    return _mm_loadu_si128(static_cast<const __m128i *>(p));
}
inline void storeu256(void *p, __m256i v) {
    _mm256_storeu_si256(static_cast<__m256i *>(p), v);
}

}  // namespace
}  // namespace lctx::kernels
