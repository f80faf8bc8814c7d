// AVX2 + FMA + F16C dot-product kernels: the shared 256-bit set (dot_x86_inl.h) with vpmaddubsw int8 dots.
#include "kernels/dot.h"

#if defined(__x86_64__)
#include "kernels/dot_x86_inl.h"
#include "kernels/gemm_interleaved_x86_inl.h"
#endif

namespace lctx::kernels::detail {

#if defined(__x86_64__)
VecDotFn vec_dot_avx2(GgmlType weight_type) {
    return shared_vec_dot(weight_type);
}
QuantizeActFn quantize_act_avx2(GgmlType act_type) {
    return shared_quantize_act(act_type);
}
GemmFn gemm_avx2(GgmlType weight_type) {
    return shared_gemm(weight_type);
}
GemmFn gemm_interleaved_avx2(GgmlType weight_type) {
    return shared_gemm_interleaved_256(weight_type);
}
#else
VecDotFn vec_dot_avx2(GgmlType) {
    return nullptr;
}
QuantizeActFn quantize_act_avx2(GgmlType) {
    return nullptr;
}
GemmFn gemm_avx2(GgmlType) {
    return nullptr;
}
GemmFn gemm_interleaved_avx2(GgmlType) {
    return nullptr;
}
#endif

}  // namespace lctx::kernels::detail
