// Shared candidate-array helpers: the one ordering every sampler sorts by, the partial sort that keeps
// top-k cheap on 150k-entry vocabularies, softmax, temperature, the seeded draw, and seed resolution.
// They are the building blocks of the samplers in this folder (llama.cpp's *_impl helpers, rebuilt).
#pragma once
#include <cstdint>
#include <random>

#include "sampling/token_data.h"

namespace lctx {

// The sort order used everywhere: descending logit; equal logits by ascending id, so a result never
// depends on which sort algorithm ran. NaN orders as if it were -inf (it never breaks the sort).
bool candidate_before(const TokenData &a, const TokenData &b);

// Sorts the whole array by candidate_before unless cur.sorted already says so; sets cur.sorted.
void candidates_sort(TokenDataArray &cur);

// top-k: keeps the k first candidates in sort order, sorted. k <= 0 means k = size (keeps everything,
// but still sorts, as llama.cpp does). k > size keeps everything.
void candidates_top_k(TokenDataArray &cur, int64_t k);

// Sorts (if needed) and fills p with the softmax of the logits. -inf (and NaN) logits get p = 0; when
// every logit is -inf, every p is 0 (no candidate has mass); +inf logits share the mass equally.
// Empty arrays are left alone.
void candidates_softmax(TokenDataArray &cur);

// Divides the logits by temp. temp <= 0 keeps only the first maximal logit and sets every other one
// to -inf (greedy-like; the order of the array is unchanged).
void candidates_temperature(TokenDataArray &cur, float temp);

// Draws an index into cur.data with probability proportional to p (std::discrete_distribution over
// the p values in array order, as llama.cpp does). Returns -1 when the array is empty or has no mass.
int64_t candidates_draw(const TokenDataArray &cur, std::mt19937 &rng);

// True when `a` is a larger logit than `b`, NaN counting as -inf (greedy and temp(0) use it).
inline bool logit_greater(float a, float b) {
    return a > b || (b != b && a == a);
}

// A seed argument of kDefaultSeed becomes a fresh random seed; any other value is returned unchanged.
uint32_t resolve_seed(uint32_t seed);

}  // namespace lctx
