#include "model/cls_head.h"

#include <cmath>
#include <vector>

#include "model/projection.h"
#include "util/error.h"

namespace lctx {

bool has_cls_head(const ModelWeights &w) {
    return w.cls.data && !w.cls_b.empty() && (!w.cls_out.data || !w.cls_out_b.empty());
}

void cls_head_scores(const Model &model, const float *h, int64_t n, float *scores, kernels::ThreadPool &pool,
                     ProjectionScratch &scratch) {
    const ModelWeights &w = model.weights();
    if (!has_cls_head(w)) throw Error("the model has no classification head (cls, cls.output) to rank with");
    const int64_t n_embd = model.hparams().n_embd, n_cls = w.cls.rows;
    std::vector<float> pooled(static_cast<size_t>(n * n_cls));  // [n][n_cls]
    project({{&w.cls, &w.cls_b, pooled.data(), n_cls}}, h, n_embd, n, pool, scratch);
    for (float &v : pooled) v = std::tanh(v);
    if (!w.cls_out.data) {
        for (int64_t i = 0; i < n; ++i) scores[i] = pooled[static_cast<size_t>(i * n_cls)];
        return;
    }
    project({{&w.cls_out, &w.cls_out_b, scores, 1}}, pooled.data(), n_cls, n, pool, scratch);
}

}  // namespace lctx
