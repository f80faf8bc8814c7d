#include "model/projection.h"

#include "model/lora_adapter.h"
#include "util/error.h"

namespace lctx {

void project(std::initializer_list<Projection> outs, const float *x, int64_t ldx, int64_t n_rows,
             kernels::ThreadPool &pool, ProjectionScratch &scratch) {
    if (outs.size() > static_cast<size_t>(kernels::kMaxSharedOutputs))
        throw Error("project: too many projections of one input");
    if (outs.size() == 1) {
        const Projection &p = *outs.begin();
        kernels::matmul(*p.w, x, ldx, n_rows, p.y, p.ldy, pool, scratch.mm);
    } else {
        kernels::MatmulOutput mo[kernels::kMaxSharedOutputs];
        int n = 0;
        for (const Projection &p : outs) mo[n++] = {p.w, p.y, p.ldy};
        kernels::matmul_shared_input(mo, n, x, ldx, n_rows, pool, scratch.mm);
    }
    if (!scratch.lora.empty()) add_lora_products(scratch.lora, outs, x, ldx, n_rows, pool, scratch);
    // The bias rows are few and cheap next to the product; only files that have biases get here.
    for (const Projection &p : outs) {
        if (!p.bias || p.bias->empty()) continue;
        const float *b = p.bias->data();
        const int64_t n_out = p.w->rows;
        for (int64_t r = 0; r < n_rows; ++r) {
            float *y = p.y + r * p.ldy;
            for (int64_t i = 0; i < n_out; ++i) y[i] += b[i];
        }
    }
}

}  // namespace lctx
