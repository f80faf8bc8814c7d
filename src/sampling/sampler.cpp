#include "sampling/sampler.h"

#include <chrono>
#include <cmath>
#include <string>

#include "util/error.h"

namespace lctx {

namespace {

// Adds the elapsed wall time to `acc` on scope exit, unless disabled.
class ScopedTimer {
  public:
    ScopedTimer(int64_t &acc, bool disabled) : acc_(acc), disabled_(disabled) {
        if (!disabled_) start_ = std::chrono::steady_clock::now();
    }
    ~ScopedTimer() {
        if (disabled_) return;
        const auto dt = std::chrono::steady_clock::now() - start_;
        acc_ += std::chrono::duration_cast<std::chrono::microseconds>(dt).count();
    }
    ScopedTimer(const ScopedTimer &) = delete;
    ScopedTimer &operator=(const ScopedTimer &) = delete;

  private:
    int64_t &acc_;
    bool disabled_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace

Token sample(Sampler &smpl, const float *logits, int32_t n_vocab, std::vector<TokenData> *scratch) {
    if (logits == nullptr) throw Error("sample: no logits (was the token marked for output?)");
    if (n_vocab <= 0) throw Error("sample: vocabulary size must be positive, got " + std::to_string(n_vocab));

    std::vector<TokenData> local;
    std::vector<TokenData> &buf = scratch != nullptr ? *scratch : local;
    buf.resize(static_cast<size_t>(n_vocab));
    for (int32_t i = 0; i < n_vocab; ++i) {
        // NaN has no order and no probability: refuse it rather than sample garbage.
        if (std::isnan(logits[i])) {
            throw Error("sample: the logit of token " + std::to_string(i) +
                        " is NaN (the model produced invalid output)");
        }
        buf[static_cast<size_t>(i)] = TokenData{i, logits[i], 0.0f};
    }

    TokenDataArray cur{buf.data(), buf.size(), -1, false};
    smpl.apply(cur);
    if (cur.selected < 0 || static_cast<size_t>(cur.selected) >= cur.size) {
        throw Error(std::string("sample: sampler '") + smpl.name() +
                    "' selected no token (end the chain with greedy, dist, mirostat or mirostat-v2; "
                    "dist selects nothing when every candidate has logit -inf)");
    }
    const Token token = cur.data[cur.selected].id;
    smpl.accept(token);
    return token;
}

void SamplerChain::accept(Token token) {
    ScopedTimer timer(t_sample_us_, params_.no_perf);
    for (auto &s : samplers_) s->accept(token);
    ++n_sample_;
}

void SamplerChain::apply(TokenDataArray &cur) {
    ScopedTimer timer(t_sample_us_, params_.no_perf);
    for (auto &s : samplers_) s->apply(cur);
}

void SamplerChain::reset() {
    for (auto &s : samplers_) s->reset();
    perf_reset();
}

std::unique_ptr<Sampler> SamplerChain::clone() const {
    auto copy = std::make_unique<SamplerChain>(params_);
    for (const auto &s : samplers_) copy->add(s->clone());
    return copy;
}

uint32_t SamplerChain::seed() const {
    for (auto it = samplers_.rbegin(); it != samplers_.rend(); ++it) {
        const uint32_t s = (*it)->seed();
        if (s != kDefaultSeed) return s;
    }
    return kDefaultSeed;
}

void SamplerChain::add(std::unique_ptr<Sampler> smpl) {
    if (!smpl) throw Error("sampler chain: cannot add a null sampler");
    samplers_.push_back(std::move(smpl));
}

Sampler *SamplerChain::get(int32_t i) const {
    if (i < 0 || static_cast<size_t>(i) >= samplers_.size()) return nullptr;
    return samplers_[static_cast<size_t>(i)].get();
}

std::unique_ptr<Sampler> SamplerChain::remove(int32_t i) {
    if (i < 0 || static_cast<size_t>(i) >= samplers_.size()) return nullptr;
    auto it = samplers_.begin() + i;
    std::unique_ptr<Sampler> out = std::move(*it);
    samplers_.erase(it);
    return out;
}

Token SamplerChain::sample(const float *logits, int32_t n_vocab) {
    return lctx::sample(*this, logits, n_vocab, &scratch_);
}

}  // namespace lctx
