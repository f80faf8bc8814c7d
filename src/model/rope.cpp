// One place that says how a layer rotates its queries and keys (see forward.h): families with per-layer
// RoPE settings answer here, and the context's K-shift uses the same answer.
#include "model/forward.h"
#include "model/model.h"

namespace lctx {

kernels::RopeParams layer_rope(const Model &model, uint32_t il) {
    (void)il;  // the llama family rotates every layer alike
    kernels::RopeParams rope = model.hparams().rope;
    const ParamVector &ff = model.weights().rope_freqs;
    if (!ff.empty()) rope.freq_factors = ff.data();
    return rope;
}

}  // namespace lctx
