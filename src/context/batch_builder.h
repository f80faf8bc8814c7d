// A Batch that owns its arrays: tokens added one at a time, each in one sequence, with or without an
// output. For callers that assemble a batch from their own lists (the CLI's embedding passes, tests) and
// would otherwise keep five parallel vectors and the seq_id pointer table in step by hand.
#pragma once
#include <cstdint>
#include <vector>

#include "context/context.h"

namespace lctx {

class BatchBuilder {
  public:
    void add(int32_t token, int32_t pos, int32_t seq, bool output) {
        token_.push_back(token);
        pos_.push_back(pos);
        seq_.push_back(seq);
        output_.push_back(output ? 1 : 0);
    }
    void clear() {
        token_.clear();
        pos_.clear();
        seq_.clear();
        output_.clear();
    }
    int32_t size() const { return static_cast<int32_t>(token_.size()); }
    int32_t seq(int32_t i) const { return seq_[i]; }
    void set_output(int32_t i, bool output) { output_[i] = output ? 1 : 0; }

    // The batch over the tokens added so far; valid until the next add or clear.
    Batch view() {
        n_seq_.assign(token_.size(), 1);
        seq_ptr_.resize(token_.size());
        for (size_t i = 0; i < seq_.size(); ++i) seq_ptr_[i] = &seq_[i];
        Batch b;
        b.n_tokens = size();
        b.token = token_.data();
        b.pos = pos_.data();
        b.n_seq_id = n_seq_.data();
        b.seq_id = seq_ptr_.data();
        b.logits = output_.data();
        return b;
    }

  private:
    std::vector<int32_t> token_, pos_, seq_, n_seq_;
    std::vector<int32_t *> seq_ptr_;
    std::vector<int8_t> output_;
};

}  // namespace lctx
