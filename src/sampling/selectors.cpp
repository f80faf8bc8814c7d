#include "sampling/selectors.h"

#include "sampling/candidates.h"

namespace lctx {

void GreedySampler::apply(TokenDataArray &cur) {
    if (cur.size == 0) {
        cur.selected = -1;
        return;
    }
    size_t best = 0;
    for (size_t i = 1; i < cur.size; ++i) {
        // strict: ties keep the first
        if (logit_greater(cur.data[i].logit, cur.data[best].logit)) best = i;
    }
    cur.selected = static_cast<int64_t>(best);
}

DistSampler::DistSampler(uint32_t seed) : seed_(seed), seed_cur_(resolve_seed(seed)), rng_(seed_cur_) {}

void DistSampler::apply(TokenDataArray &cur) {
    candidates_softmax(cur);
    cur.selected = candidates_draw(cur, rng_);
}

void DistSampler::reset() {
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
}

void SoftmaxSampler::apply(TokenDataArray &cur) {
    candidates_softmax(cur);
}

}  // namespace lctx
