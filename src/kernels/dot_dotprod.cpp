// ARM64 dotprod level (FEAT_DotProd: SDOT): the NEON level's integer kernels with SDOT for the 8-bit dot
// products (dot_arm_inl.h, dot_kquants_arm_inl.h, gemm_blocks_arm_inl.h, gemm_kquants_arm_inl.h); the same
// integer sums, so the same values as the NEON level. Compiled with +dotprod on ARM64 only (CMakeLists.txt:
// *_dotprod.cpp) and entered only when the CPU reports ASIMDDP.
#include "kernels/dot.h"
#include "kernels/dot_arm_inl.h"
#include "kernels/dot_kquants_arm_inl.h"
#include "kernels/gemm_blocks_arm_inl.h"
#include "kernels/gemm_kquants_arm_inl.h"

namespace lctx::kernels::detail {

VecDotFn vec_dot_dotprod(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
            return &arm::vec_dot_q8_0<true>;
        case GgmlType::Q4_0:
            return &arm::vec_dot_q4_0<true>;
        case GgmlType::Q4_1:
            return &arm::vec_dot_q4_1<true>;
        case GgmlType::Q5_0:
            return &arm::vec_dot_q5_0<true>;
        case GgmlType::Q5_1:
            return &arm::vec_dot_q5_1<true>;
        case GgmlType::IQ4_NL:
            return &arm::vec_dot_iq4_nl<true>;
        case GgmlType::Q2_K:
            return &arm::vec_dot_q2_K<true>;
        case GgmlType::Q3_K:
            return &arm::vec_dot_q3_K<true>;
        case GgmlType::Q4_K:
            return &arm::vec_dot_q4_K<true>;
        case GgmlType::Q5_K:
            return &arm::vec_dot_q5_K<true>;
        case GgmlType::Q6_K:
            return &arm::vec_dot_q6_K<true>;
        case GgmlType::IQ4_XS:
            return &arm::vec_dot_iq4_xs<true>;
        default:
            return nullptr;
    }
}

GemmFn gemm_dotprod(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
            return &arm::gemm_block_tiles<true, arm::Q8_0Tile>;
        case GgmlType::Q4_0:
            return &arm::gemm_block_tiles<true, arm::Q4_0Tile>;
        case GgmlType::Q4_1:
            return &arm::gemm_block_tiles<true, arm::Q4_1Tile>;
        case GgmlType::Q5_0:
            return &arm::gemm_block_tiles<true, arm::Q5_0Tile>;
        case GgmlType::Q5_1:
            return &arm::gemm_block_tiles<true, arm::Q5_1Tile>;
        case GgmlType::IQ4_NL:
            return &arm::gemm_block_tiles<true, arm::IQ4NLTile>;
        case GgmlType::Q2_K:
            return &arm::gemm_k_tiles<true, arm::Q2KTile>;
        case GgmlType::Q3_K:
            return &arm::gemm_k_tiles<true, arm::Q3KTile>;
        case GgmlType::Q4_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q4_K<true>>;
        case GgmlType::Q5_K:
            return &arm::gemm_k_tiles<true, arm::Q5KTile>;
        case GgmlType::Q6_K:
            return &arm::gemm_by_dots<&arm::vec_dot_q6_K<true>>;
        case GgmlType::IQ4_XS:
            return &arm::gemm_k_tiles<true, arm::IQ4XSTile>;
        default:
            return nullptr;
    }
}

GemmFn gemm_interleaved_dotprod(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
            return &arm::gemm_interleaved_x8<true, block_q8_0xG<8>, false>;
        case GgmlType::Q4_0:
            return &arm::gemm_interleaved_x8<true, block_q4_0xG<8>, true>;
        case GgmlType::Q5_0:
            return &arm::gemm_interleaved_x8<true, block_q5_0xG<8>, true>;
        case GgmlType::Q4_K:
            return &arm::gemm_interleaved_q4_K_x8<true>;
        case GgmlType::Q6_K:
            return &arm::gemm_interleaved_q6_K_x8<true>;
        default:
            return nullptr;
    }
}

}  // namespace lctx::kernels::detail
