// Internal: the parsing of LCTX_ISA, shared by isa_active() and the tests' level copies (tests/isa_level.h),
// which must tell a request above the CPU's level (that isa_active() lowers) from one it keeps.
#pragma once

#include "kernels/dot.h"

namespace lctx::kernels::detail {

// The level LCTX_ISA=`env_value` names in *isa; false for nullptr or "" (no request). Throws lctx::Error for
// a name that is not a level.
bool isa_requested(const char *env_value, Isa *isa);

}  // namespace lctx::kernels::detail
