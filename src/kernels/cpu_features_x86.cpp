// The x86 probe (cpuid + xgetbv), compiled on x86 only (CMakeLists.txt: *_x86.cpp).
#include <cstdint>

#include "kernels/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
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

// Linux keeps the 8 KiB of tile registers out of a process's saved state until it asks for them; the first
// tile instruction of a process that did not ask is killed with SIGILL.
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

CpuFeatures probe() {
    CpuFeatures f;
    uint64_t xcr0 = 0;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    const unsigned max_leaf = a;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1;
    f.avx = (c >> 28) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (osxsave) {
        xcr0 = read_xcr0();
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
        f.amx_bf16 = (d >> 22) & 1;
        f.amx_tile = (d >> 24) & 1;
        f.amx_int8 = (d >> 25) & 1;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f.avx512bf16 = (a >> 5) & 1;
        }
    }
    // bits 17-18: XTILECFG, XTILEDATA
    if (f.amx_tile && (xcr0 & 0x60000) == 0x60000) f.os_amx = request_amx_permission();
    return f;
}
#else
CpuFeatures probe() {
    return CpuFeatures{};
}
#endif

}  // namespace

CpuFeatures detail::probe_cpu_features() {
    return probe();
}

}  // namespace lctx::kernels
