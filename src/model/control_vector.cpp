// Control vectors: a direction per layer added to the residual stream (llama_apply_adapter_cvec), the
// same for every family, after the layer's feed-forward block as llama.cpp applies them.
#include "kernels/ops.h"
#include "model/forward.h"

namespace lctx {

void add_control_vector(const ForwardBatch &b, uint32_t il, float *x, int64_t n_rows, int64_t n_embd) {
    const auto layer = static_cast<int32_t>(il);
    if (!b.cvec || layer < b.cvec_first || layer > b.cvec_last) return;
    const float *v = b.cvec + static_cast<int64_t>(il) * n_embd;
    for (int64_t r = 0; r < n_rows; ++r) kernels::add_inplace(x + r * n_embd, v, n_embd);
}

}  // namespace lctx
