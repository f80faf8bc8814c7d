// The cached probe; the probes themselves are per architecture (cpu_features_x86.cpp, cpu_features_arm.cpp).
#include "kernels/cpu_features.h"

namespace lctx::kernels {

#if !defined(__x86_64__) && !defined(__i386__) && !defined(__aarch64__)
// An architecture without SIMD kernels here: the scalar level only.
CpuFeatures detail::probe_cpu_features() {
    return CpuFeatures{};
}
#endif

const CpuFeatures &cpu_features() {
    static const CpuFeatures f = detail::probe_cpu_features();
    return f;
}

}  // namespace lctx::kernels
