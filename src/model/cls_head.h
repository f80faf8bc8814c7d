// The classification head of rerankers (b4748's rank pooling): one score per sequence from the hidden state
// of its CLS token (position 0), score = cls_out . tanh(cls h + cls_b) + cls_out_b. Without cls.output (some
// rerankers have a one-row cls instead) the score is the first value of tanh(cls h + cls_b), as b4748 keeps.
#pragma once
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/threadpool.h"
#include "model/model.h"
#include "model/projection.h"

namespace lctx {

// True when the model has the head rank pooling needs: cls with its bias, and cls.output's bias if it has
// cls.output.
bool has_cls_head(const ModelWeights &w);

// scores[i] = the head's score of h [n][n_embd] row i. The model must have the head (has_cls_head).
void cls_head_scores(const Model &model, const float *h, int64_t n, float *scores, kernels::ThreadPool &pool,
                     ProjectionScratch &scratch);

}  // namespace lctx
