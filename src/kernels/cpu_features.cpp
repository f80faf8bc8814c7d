#include "kernels/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace lctx::kernels {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// xgetbv through asm: the intrinsic would need -mxsave on this (baseline) file.
uint64_t read_xcr0() {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures probe() {
    CpuFeatures f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    const unsigned max_leaf = a;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1;
    f.avx = (c >> 28) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (osxsave) {
        const uint64_t xcr0 = read_xcr0();
        f.os_avx = (xcr0 & 0x6) == 0x6;                   // bit 1 SSE, bit 2 AVX
        f.os_avx512 = f.os_avx && (xcr0 & 0xe0) == 0xe0;  // bits 5-7: opmask, ZMM_Hi256, Hi16_ZMM
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        const unsigned max_sub = a;
        f.avx2 = (b >> 5) & 1;
        f.bmi2 = (b >> 8) & 1;
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        f.avx512vnni = (c >> 11) & 1;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f.avx512bf16 = (a >> 5) & 1;
        }
    }
    return f;
}
#else
CpuFeatures probe() {
    return CpuFeatures{};
}
#endif

}  // namespace

const CpuFeatures &cpu_features() {
    static const CpuFeatures f = probe();
    return f;
}

}  // namespace lctx::kernels
