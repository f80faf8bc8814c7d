#include "sampling/candidates.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace lctx {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// NaN behaves as -inf for ordering, so the comparator stays a strict weak order.
inline float order_key(float logit) {
    return std::isnan(logit) ? kNegInf : logit;
}

// Below this k a heap-based partial sort (about n comparisons) wins; above it, nth_element then a
// sort of the k survivors is O(n + k log k).
constexpr int64_t kHeapTopKLimit = 128;

// Full sorts of more candidates than this use the radix sort (a 150k vocabulary: ~10x std::sort).
constexpr size_t kRadixSortMin = 2048;

// An unsigned key whose ascending order is candidate_before's logit order: descending logit, NaN
// last (as -inf), -0 equal to +0.
inline uint32_t descending_key(float logit) {
    float x = order_key(logit) + 0.0f;  // + 0.0f turns -0 into +0
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending float order as unsigned
    return ~u;                                       // flipped: largest logit first
}

// Stable LSD radix sort on descending_key (4 passes of 8 bits, skipping passes where every key shares
// the digit), then equal-logit runs are put in ascending id order, which yields candidate_before.
void radix_sort(TokenData *data, size_t n) {
    thread_local std::vector<TokenData> tmp;  // [n] ping-pong buffer, kept between calls
    tmp.resize(n);
    size_t hist[4][256] = {};
    for (size_t i = 0; i < n; ++i) {
        const uint32_t k = descending_key(data[i].logit);
        for (int d = 0; d < 4; ++d) ++hist[d][(k >> (8 * d)) & 0xFF];
    }
    TokenData *src = data;
    TokenData *dst = tmp.data();
    for (int d = 0; d < 4; ++d) {
        const int shift = 8 * d;
        if (hist[d][(descending_key(src[0].logit) >> shift) & 0xFF] == n) continue;  // all in one bucket
        size_t offset[256];
        size_t sum = 0;
        for (int b = 0; b < 256; ++b) {
            offset[b] = sum;
            sum += hist[d][b];
        }
        for (size_t i = 0; i < n; ++i) dst[offset[(descending_key(src[i].logit) >> shift) & 0xFF]++] = src[i];
        std::swap(src, dst);
    }
    if (src != data) std::memcpy(data, src, n * sizeof(TokenData));

    // Ties: runs of equal keys, usually of length 1.
    size_t run = 0;
    for (size_t i = 1; i <= n; ++i) {
        if (i == n || descending_key(data[i].logit) != descending_key(data[run].logit)) {
            if (i - run > 1) {
                std::sort(data + run, data + i,
                          [](const TokenData &a, const TokenData &b) { return a.id < b.id; });
            }
            run = i;
        }
    }
}

}  // namespace

bool candidate_before(const TokenData &a, const TokenData &b) {
    const float ka = order_key(a.logit);
    const float kb = order_key(b.logit);
    if (ka != kb) return ka > kb;
    return a.id < b.id;
}

void candidates_sort(TokenDataArray &cur) {
    if (!cur.sorted) {
        if (cur.size >= kRadixSortMin) {
            radix_sort(cur.data, cur.size);
        } else {
            std::sort(cur.data, cur.data + cur.size, candidate_before);
        }
        cur.sorted = true;
    }
}

void candidates_top_k(TokenDataArray &cur, int64_t k) {
    const int64_t n = static_cast<int64_t>(cur.size);
    if (k <= 0 || k > n) k = n;
    if (!cur.sorted) {
        TokenData *first = cur.data;
        TokenData *mid = cur.data + k;
        TokenData *last = cur.data + n;
        if (k == n) {
            candidates_sort(cur);
        } else if (k <= kHeapTopKLimit) {
            std::partial_sort(first, mid, last, candidate_before);
        } else {
            std::nth_element(first, mid - 1, last, candidate_before);
            std::sort(first, mid, candidate_before);
        }
        cur.sorted = true;
    }
    cur.size = static_cast<size_t>(k);
}

void candidates_softmax(TokenDataArray &cur) {
    if (cur.size == 0) return;
    candidates_sort(cur);
    TokenData *d = cur.data;
    const float max_l = order_key(d[0].logit);  // sorted: the first is the largest
    if (max_l == kNegInf) {
        for (size_t i = 0; i < cur.size; ++i) d[i].p = 0.0f;
        return;
    }
    if (std::isinf(max_l)) {  // +inf: exp(inf - inf) is NaN, so split the mass by hand
        size_t n_inf = 0;
        while (n_inf < cur.size && d[n_inf].logit == max_l) ++n_inf;
        for (size_t i = 0; i < cur.size; ++i) d[i].p = i < n_inf ? 1.0f / static_cast<float>(n_inf) : 0.0f;
        return;
    }
    float sum = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
        const float l = d[i].logit;
        d[i].p = std::isnan(l) ? 0.0f : std::exp(l - max_l);
        sum += d[i].p;
    }
    for (size_t i = 0; i < cur.size; ++i) d[i].p /= sum;  // sum >= 1: the maximum contributes exp(0)
}

void candidates_temperature(TokenDataArray &cur, float temp) {
    if (cur.size == 0) return;
    if (temp <= 0.0f) {
        size_t max_i = 0;
        for (size_t i = 1; i < cur.size; ++i) {
            if (logit_greater(cur.data[i].logit, cur.data[max_i].logit)) max_i = i;
        }
        for (size_t i = 0; i < cur.size; ++i) {
            if (i != max_i) cur.data[i].logit = kNegInf;
        }
        return;
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].logit /= temp;
}

int64_t candidates_draw(const TokenDataArray &cur, std::mt19937 &rng) {
    if (cur.size == 0) return -1;
    std::vector<double> weights(cur.size);
    double total = 0.0;
    for (size_t i = 0; i < cur.size; ++i) {
        const float p = cur.data[i].p;
        weights[i] = (p > 0.0f) ? p : 0.0;  // NaN and negatives carry no mass
        total += weights[i];
    }
    if (!(total > 0.0) || !std::isfinite(total)) return -1;
    std::discrete_distribution<int64_t> dist(weights.begin(), weights.end());
    return dist(rng);
}

uint32_t resolve_seed(uint32_t seed) {
    if (seed != kDefaultSeed) return seed;
    try {
        std::random_device rd;
        if (rd.entropy() > 0) return rd();
    } catch (...) {
        // no usable entropy source: fall through to the clock
    }
    return static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

}  // namespace lctx
