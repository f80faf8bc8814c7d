// One place that says how a layer rotates its queries and keys (see forward.h): families with per-layer
// RoPE settings answer here, and the context's K-shift uses the same answer.
#include <algorithm>

#include "model/forward.h"
#include "model/model.h"

namespace lctx {

kernels::RopeParams layer_rope(const Model &model, uint32_t il, uint32_t n_ctx_per_seq) {
    (void)il;  // every family lctx runs rotates all its layers alike
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    kernels::RopeParams rope = hp.rope;
    // b4748's choice of frequency factors: the file's rope_freqs; else LongRoPE's long factors when a
    // sequence's share of the context exceeds the original training context, its short ones otherwise
    // (either may be absent: no factors then).
    const ParamVector *ff = &w.rope_freqs;
    if (ff->empty())
        ff = n_ctx_per_seq > static_cast<uint32_t>(std::max(hp.rope.n_ctx_orig, 0)) ? &w.rope_long
                                                                                    : &w.rope_short;
    if (!ff->empty()) rope.freq_factors = ff->data();
    return rope;
}

}  // namespace lctx
