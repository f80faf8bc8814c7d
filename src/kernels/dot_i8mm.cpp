// ARM64 i8mm level (FEAT_I8MM: SMMLA): for now the dotprod level's kernels (no lookup here returns a kernel
// of its own, so the table takes the level below). Compiled with +dotprod+i8mm on ARM64 only.
#include "kernels/dot.h"

namespace lctx::kernels::detail {

GemmFn gemm_interleaved_i8mm(GgmlType) {
    return nullptr;
}

}  // namespace lctx::kernels::detail
