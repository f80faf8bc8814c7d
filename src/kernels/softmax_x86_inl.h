// softmax's first step (ops_x86.h, scale_mask_max_*) over whole vectors: included by ops_avx2.cpp with
// 8-lane vectors and by ops_avx512.cpp with 16-lane ones (their V8 / V16); each element takes the same
// operations on both, so the two give the same bits.
#pragma once
#include <cstdint>

namespace lctx::kernels::detail {
namespace {

// x[i] = x[i] * scale, plus mask[i] (slope 1: the mask's own bits) or slope * mask[i] (ALiBi: the mask holds
// distances; one fused multiply-add onto x[i] * scale, written out, as the compiler formed it before), for
// the whole vectors of V from the start. Returns their maximum lane by lane; *done: the elements done.
template <class V>
typename V::Reg scale_mask_max_vectors(float *x, const float *mask, int64_t n, float scale, float slope,
                                       int64_t *done) {
    typename V::Reg vmax = V::set1(-__builtin_inff());
    const typename V::Reg vs = V::set1(scale);
    int64_t i = 0;
    if (mask && slope != 1.0f) {
        const typename V::Reg vslope = V::set1(slope);
        for (; i + V::kLanes <= n; i += V::kLanes) {
            const typename V::Reg v = V::fmadd(vslope, V::load(mask + i), V::mul(V::load(x + i), vs));
            V::store(x + i, v);
            vmax = V::max(vmax, v);
        }
    } else {
        for (; i + V::kLanes <= n; i += V::kLanes) {
            typename V::Reg v = V::mul(V::load(x + i), vs);
            if (mask) v = V::add(v, V::load(mask + i));
            V::store(x + i, v);
            vmax = V::max(vmax, v);
        }
    }
    *done = i;
    return vmax;
}

}  // namespace
}  // namespace lctx::kernels::detail
