// Embedding normalization and similarity, as llama.cpp's common library defines them for llama-embedding
// (--embd-normalize) and its json+ output (the cosine similarity matrix).
#pragma once
#include <cstddef>

namespace lctx::generate {

// Scales v in place by the kind of norm: -1 none, 0 max absolute scaled to the int16 range (the largest |x|
// becomes 32760), 1 taxicab, 2 Euclidean, N > 2 the p-norm of order N. A zero vector stays zero.
void embd_normalize(float *v, size_t n, int kind);

// The cosine similarity of a and b; 1 for two zero vectors, 0 for a zero and a non-zero one.
double embd_cosine(const float *a, const float *b, size_t n);

}  // namespace lctx::generate
