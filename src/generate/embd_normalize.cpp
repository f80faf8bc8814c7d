#include "generate/embd_normalize.h"

#include <algorithm>
#include <cmath>

namespace lctx::generate {

void embd_normalize(float *v, size_t n, int kind) {
    if (kind < 0) return;
    double norm = 0.0;
    if (kind == 0) {
        for (size_t i = 0; i < n; ++i) norm = std::max(norm, std::fabs(static_cast<double>(v[i])));
        norm /= 32760.0;
    } else if (kind == 2) {
        for (size_t i = 0; i < n; ++i) norm += static_cast<double>(v[i]) * v[i];
        norm = std::sqrt(norm);
    } else {
        for (size_t i = 0; i < n; ++i) norm += std::pow(std::fabs(static_cast<double>(v[i])), kind);
        norm = std::pow(norm, 1.0 / kind);
    }
    if (norm <= 0.0) return;
    const double inv = 1.0 / norm;
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(v[i] * inv);
}

double embd_cosine(const float *a, const float *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
        ab += static_cast<double>(a[i]) * b[i];
        aa += static_cast<double>(a[i]) * a[i];
        bb += static_cast<double>(b[i]) * b[i];
    }
    if (aa == 0.0 || bb == 0.0) return aa == 0.0 && bb == 0.0 ? 1.0 : 0.0;
    return ab / (std::sqrt(aa) * std::sqrt(bb));
}

}  // namespace lctx::generate
