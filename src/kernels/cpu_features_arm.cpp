// The ARM64 probe, compiled on ARM64 only (CMakeLists.txt: *_arm.cpp). Linux and Android (bionic has
// getauxval since API level 18) report the features the kernel lets user space use in AT_HWCAP / AT_HWCAP2;
// Apple's kernels report them through sysctl. Nothing here is glibc-only.
#include "kernels/cpu_features.h"

#if defined(__linux__) || defined(__ANDROID__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

namespace lctx::kernels {

namespace {

#if defined(__linux__) || defined(__ANDROID__)
// The bits of arch/arm64/include/uapi/asm/hwcap.h (named here, as older C libraries lack some).
constexpr unsigned long kHwcapFphp = 1ul << 9;
constexpr unsigned long kHwcapAsimd = 1ul << 1;
constexpr unsigned long kHwcapAsimddp = 1ul << 20;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;
#endif

#if defined(__APPLE__)
bool sysctl_flag(const char *name) {
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, nullptr, 0) == 0 && v != 0;
}
#endif

}  // namespace

CpuFeatures detail::probe_cpu_features() {
    CpuFeatures f;
#if defined(__linux__) || defined(__ANDROID__)
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f.asimd = (hw & kHwcapAsimd) != 0;
    f.asimddp = (hw & kHwcapAsimddp) != 0;
    f.fphp = (hw & kHwcapFphp) != 0;
    f.i8mm = (hw2 & kHwcap2I8mm) != 0;
#elif defined(__APPLE__)
    f.asimd = true;  // every Apple ARM64 core
    f.asimddp = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f.i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
    f.fphp = sysctl_flag("hw.optional.arm.FEAT_FP16");
#else
    f.asimd = true;  // Advanced SIMD is part of the AArch64 base architecture
#endif
    return f;
}

}  // namespace lctx::kernels
