// Runtime CPU feature detection: what the processor implements AND what the OS saves across context
// switches. x86 (cpuid + xgetbv, cpu_features_x86.cpp): the SIMD kernels in *_avx2.cpp / *_avx512.cpp /
// *_amx.cpp are only entered when the matching level is reported here. ARM64 (getauxval's AT_HWCAP /
// AT_HWCAP2 on Linux and Android, sysctl on Apple; cpu_features_arm.cpp): the same for *_neon.cpp /
// *_dotprod.cpp / *_i8mm.cpp. Each architecture's probe leaves the other's fields false.
#pragma once

namespace lctx::kernels {

struct CpuFeatures {
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool bmi2 = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool amx_tile = false;
    bool amx_int8 = false;
    bool amx_bf16 = false;
    bool os_avx = false;     // XCR0 has SSE + AVX (YMM) state enabled
    bool os_avx512 = false;  // XCR0 also has opmask + ZMM state enabled
    bool os_amx = false;     // XCR0 has the tile state enabled and the OS let this process use it (Linux:
                             // arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA), asked once at the probe)

    // ARM64 (AArch64): Advanced SIMD (always there on Linux/Android AArch64), the 8-bit dot products
    // (SDOT/UDOT, FEAT_DotProd), the 8-bit matrix multiplies (SMMLA, FEAT_I8MM), half-precision arithmetic.
    bool asimd = false;
    bool asimddp = false;
    bool i8mm = false;
    bool fphp = false;

    // The levels the kernels are built for: each needs every flag its files are compiled with.
    bool has_avx2_level() const { return os_avx && avx && avx2 && fma && f16c && bmi2; }
    bool has_avx512_level() const {
        return has_avx2_level() && os_avx512 && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni &&
               avx512bf16;
    }
    // AMX tile multiplies (int8) on top of the AVX-512 level: the AMX kernels scale their results with it.
    bool has_amx_level() const { return has_avx512_level() && amx_tile && amx_int8 && os_amx; }
    // ARM64: neon < dotprod < i8mm, each level's files compiled with the flags of those below it too.
    bool has_neon_level() const { return asimd; }
    bool has_dotprod_level() const { return has_neon_level() && asimddp; }
    bool has_i8mm_level() const { return has_dotprod_level() && i8mm; }
};

// Probed once, then cached.
const CpuFeatures &cpu_features();

namespace detail {
// The probe of the architecture this is built for (cpu_features_x86.cpp, cpu_features_arm.cpp; nothing
// found elsewhere).
CpuFeatures probe_cpu_features();
}  // namespace detail

}  // namespace lctx::kernels
