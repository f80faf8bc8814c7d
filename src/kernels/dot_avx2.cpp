// AVX2 + FMA + F16C dot-product kernels: the shared 256-bit set (dot_x86_inl.h) with vpmaddubsw int8 dots.
#include "kernels/dot.h"

#if defined(__x86_64__)
#include "kernels/dot_x86_inl.h"
#include "kernels/gemm_interleaved_x86_inl.h"

namespace lctx::kernels {
namespace {

// F32 in plain rows at the 256-bit level (the KV cache; model weights are interleaved, interleave.h): from
// kStageMinAct activations on, whole groups of 8 rows go through the staged kernel (each row chunk copied
// once into L1 for every activation of the call, where the plain 4 x 3 tile re-reads rows of 8 KiB and more
// from L2 for every 3 activations); rows past the last group, rows whose length is not whole 8s, and fewer
// activations take the plain tile. Either gives the plain tile's values (one 8-lane sum per output over the
// row, reduced at the end). L = LoadF16xF32: F16 rows against F32 activations, the same arithmetic.
template <class L>
void gemm_float_plain(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                      int64_t nc, float *y, int64_t ldy) {
    int64_t r0 = 0;
    if (nc >= kStageMinAct && n % 8 == 0 && nr >= 8 && !float_stage_off()) {
        r0 = nr / 8 * 8;
        gemm_float_x8_staged<L, true>(n, w, ldw, r0, act, lda, nc, y, ldy);
    }
    if (r0 < nr)
        gemm_tiled<FloatTile, L, false>(n, static_cast<const uint8_t *>(w) + r0 * ldw, ldw, nr - r0, act, lda,
                                        nc, y + r0, ldy);
}

}  // namespace
}  // namespace lctx::kernels
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
    if (weight_type == GgmlType::F32) return &gemm_float_plain<LoadF32>;
    return shared_gemm(weight_type);
}
GemmFn gemm_f16_by_f32_avx2() {
    return &gemm_float_plain<LoadF16xF32>;
}
GemmFn gemm_interleaved_avx2(GgmlType weight_type) {
    return shared_gemm_interleaved_256(weight_type);
}
int interleaved_tile_acts_avx2(GgmlType weight_type) {
    return shared_interleaved_tile_acts<V256>(weight_type);
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
GemmFn gemm_f16_by_f32_avx2() {
    return nullptr;
}
GemmFn gemm_interleaved_avx2(GgmlType) {
    return nullptr;
}
int interleaved_tile_acts_avx2(GgmlType) {
    return 0;
}
#endif

}  // namespace lctx::kernels::detail
