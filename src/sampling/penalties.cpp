#include "sampling/penalties.h"

#include <algorithm>

namespace lctx {

PenaltiesSampler::PenaltiesSampler(int32_t penalty_last_n, float penalty_repeat, float penalty_freq,
                                   float penalty_present)
    : last_n_(std::max(penalty_last_n, 0)),
      repeat_(penalty_repeat),
      freq_(penalty_freq),
      present_(penalty_present),
      ring_(static_cast<size_t>(last_n_)) {}

void PenaltiesSampler::accept(Token token) {
    if (last_n_ == 0) return;
    const size_t cap = ring_.size();
    if (n_held_ == cap) {  // full: the oldest token leaves the window
        const Token old = ring_[head_];
        auto it = counts_.find(old);
        if (--it->second == 0) counts_.erase(it);
        ring_[head_] = token;
        head_ = (head_ + 1) % cap;
    } else {
        ring_[(head_ + n_held_) % cap] = token;
        ++n_held_;
    }
    ++counts_[token];
}

void PenaltiesSampler::apply(TokenDataArray &cur) {
    if (last_n_ == 0 || (repeat_ == 1.0f && freq_ == 0.0f && present_ == 0.0f)) return;
    if (!counts_.empty()) {
        for (size_t i = 0; i < cur.size; ++i) {
            auto it = counts_.find(cur.data[i].id);
            if (it == counts_.end()) continue;
            float &logit = cur.data[i].logit;
            // Dividing a negative logit would raise it; multiplying pushes it further down instead.
            if (logit <= 0.0f) {
                logit *= repeat_;
            } else {
                logit /= repeat_;
            }
            logit -= static_cast<float>(it->second) * freq_ + present_;
        }
    }
    cur.sorted = false;
}

void PenaltiesSampler::reset() {
    head_ = 0;
    n_held_ = 0;
    counts_.clear();
}

int32_t PenaltiesSampler::count(Token token) const {
    auto it = counts_.find(token);
    return it == counts_.end() ? 0 : it->second;
}

}  // namespace lctx
