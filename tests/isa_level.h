// The level copies of a suite (ctest names "scalar.", "avx2.", "avx512.", "amx."; on ARM64 "neon.",
// "dotprod.", "i8mm."; run with LCTX_ISA set; see CMakeLists.txt) must run the level their name says or
// report that they were skipped: isa_active() quietly lowers a request above the CPU's level, which would run
// (and pass) a lower level's code under the name.
#pragma once
#include <string>

#include "kernels/isa_request.h"

namespace isa_level {

// Why a run under LCTX_ISA=env cannot run the requested level on a CPU whose best level is `detected`;
// empty when it can (or nothing is requested). Throws lctx::Error for a name that is not a level.
inline std::string skip_reason(const char *env, lctx::kernels::Isa detected) {
    lctx::kernels::Isa want;
    if (!lctx::kernels::detail::isa_requested(env, &want)) return {};
    if (lctx::kernels::isa_at_least(detected, want)) return {};
    return std::string("LCTX_ISA=") + env + " asks for a level this CPU lacks (its best is " +
           lctx::kernels::isa_name(detected) + ")";
}

}  // namespace isa_level
