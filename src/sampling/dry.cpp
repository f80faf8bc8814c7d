#include "sampling/dry.h"

#include <algorithm>
#include <cmath>

#include "util/log.h"

namespace lctx {

std::vector<DryBreaker> dry_breakers(int32_t n_vocab, const std::function<std::string(Token)> &detokenize,
                                     const std::function<std::vector<Token>(const std::string &)> &tokenize,
                                     const std::vector<std::string> &breakers) {
    constexpr size_t kMaxBreakerBytes = 40, kMaxTailTokens = 20;
    std::vector<DryBreaker> out;
    std::vector<std::string> words(static_cast<size_t>(std::max(n_vocab, 0)));
    for (Token id = 0; id < n_vocab; ++id) words[id] = detokenize(id);
    for (size_t b = 0; b < breakers.size(); ++b) {
        std::string str = breakers[b];
        if (str.empty()) {
            LCTX_LOG_WARN("dry: skipping empty sequence breaker %zu", b);
            continue;
        }
        if (str.size() > kMaxBreakerBytes) {
            LCTX_LOG_WARN("dry: sequence breaker %zu cut to %zu bytes", b, kMaxBreakerBytes);
            str.resize(kMaxBreakerBytes);
        }
        for (Token id = 0; id < n_vocab; ++id) {
            const std::string &w = words[id];
            if (w.find(str) != std::string::npos) {
                out.push_back({id, {}});
                continue;
            }
            // Each place the breaker's first byte starts a suffix of the word that begins the breaker.
            for (size_t pos = w.find(str[0]); pos != std::string::npos; pos = w.find(str[0], pos + 1)) {
                const size_t len = w.size() - pos;
                if (len >= str.size() || w.compare(pos, len, str, 0, len) != 0) continue;
                std::vector<Token> tail = tokenize(str.substr(len));
                if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
                const bool dup = std::any_of(out.begin(), out.end(), [&](const DryBreaker &d) {
                    return d.first == id && d.second == tail;
                });
                if (!dup) out.push_back({id, std::move(tail)});
            }
        }
    }
    return out;
}

DrySampler::DrySampler(const DryParams &p, std::vector<DryBreaker> breakers) : p_(p) {
    const int32_t last_n = p.penalty_last_n == -1 ? p.context_size : std::max(p.penalty_last_n, 0);
    window_ = enabled() ? static_cast<size_t>(std::max(last_n, 0)) : 0;
    for (auto &b : breakers) breakers_.emplace(b.first, std::move(b.second));
}

void DrySampler::accept(Token token) {
    if (!enabled() || window_ == 0) return;
    history_.push_back(token);
    if (history_.size() > window_) history_.pop_front();
}

int32_t DrySampler::repetition_limit(int32_t n) const {
    // Walk back from the newest token; the first one that heads a breaker whose tail follows it in the
    // history limits the repetition to the tokens after that breaker.
    for (int32_t i = 0; i < n; ++i) {
        const Token head = history_[history_.size() - 1 - i];
        auto [first, last] = breakers_.equal_range(head);
        int32_t longest = -1;
        for (auto it = first; it != last; ++it) {
            const auto tail_len = static_cast<int32_t>(it->second.size());
            if (tail_len <= longest || tail_len > i) continue;
            bool match = true;
            for (int32_t k = 0; k < tail_len && match; ++k)
                match = it->second[k] == history_[history_.size() - 1 - (i - k - 1)];
            if (match) longest = tail_len;
        }
        if (longest >= 0) return i - longest;
    }
    return n;
}

void DrySampler::apply(TokenDataArray &cur) {
    if (!enabled()) return;
    const int32_t last_n = p_.penalty_last_n == -1 ? p_.context_size : std::max(p_.penalty_last_n, 0);
    const int32_t n = std::min({static_cast<int32_t>(history_.size()), last_n, p_.context_size});
    if (n <= p_.allowed_length) return;
    const int32_t limit = repetition_limit(n);
    if (limit < p_.allowed_length) return;

    // suffix_len_[t] (t in time order over the last n tokens) = how many tokens ending at t equal the tokens
    // ending at the newest one, at most `limit`: a Z-array over the reversed window.
    const size_t off = history_.size() - static_cast<size_t>(n);
    auto back = [&](int32_t k) {
        return history_[off + static_cast<size_t>(n - 1 - k)];
    };  // k back from newest
    std::vector<int32_t> z(n, 0);
    for (int32_t k = 1, l = 0, r = 0; k < n; ++k) {
        int32_t len = k < r ? std::min(r - k, z[k - l]) : 0;
        while (k + len < n && back(len) == back(k + len)) ++len;
        z[k] = len;
        if (k + len > r) {
            l = k;
            r = k + len;
        }
    }
    suffix_len_.assign(n, 0);
    for (int32_t k = 1; k < n; ++k) suffix_len_[n - 1 - k] = std::min(z[k], limit);

    // The token after each long enough match would extend it.
    longest_.clear();
    for (int32_t t = 0; t + 1 < n; ++t) {
        if (suffix_len_[t] < p_.allowed_length) continue;
        const Token next = history_[off + static_cast<size_t>(t + 1)];
        int32_t &best = longest_[next];
        best = std::max(best, suffix_len_[t]);
    }

    // base^exponent stays finite: the exponent stops where it would pass FLT_MAX (ln FLT_MAX = 88.72...).
    int32_t max_exponent = 0;
    if (p_.base > 1.000001f) max_exponent = static_cast<int32_t>(88.7228391f / std::log(p_.base));
    for (size_t i = 0; i < cur.size; ++i) {
        auto hit = longest_.find(cur.data[i].id);
        if (hit == longest_.end()) continue;
        // A token that is a whole breaker by itself is never penalized.
        auto [first, last] = breakers_.equal_range(cur.data[i].id);
        if (std::any_of(first, last, [](const auto &b) { return b.second.empty(); })) continue;
        int32_t exponent = hit->second - p_.allowed_length;
        if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
        // In double, rounded once to float (what llama.cpp's float * pow(float, int) gives).
        const auto penalty =
            static_cast<float>(p_.multiplier * std::pow(static_cast<double>(p_.base), exponent));
        cur.data[i].logit -= penalty;
    }
    cur.sorted = false;
}

}  // namespace lctx
