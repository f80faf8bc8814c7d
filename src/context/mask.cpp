#include "context/mask.h"

#include <cstdlib>
#include <limits>

namespace lctx {

void build_masks(const std::vector<KvCell> &cells, uint32_t n_kv, int32_t n_tokens, const int32_t *pos,
                 int32_t *const *seq_id, const MaskRules &rules, float *mask, float *mask_swa) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const bool swa = rules.n_swa > 0 && mask_swa;
    for (int32_t t = 0; t < n_tokens; ++t) {
        const int32_t seq = seq_id[t][0];
        const int64_t p = pos[t];
        float *row = mask + static_cast<size_t>(t) * n_kv;
        float *row_swa = swa ? mask_swa + static_cast<size_t>(t) * n_kv : nullptr;
        for (uint32_t j = 0; j < n_kv; ++j) {
            const KvCell &c = cells[j];
            float f = kNegInf;
            if (c.pos >= 0 && c.seq.test(seq) && !(rules.causal && c.pos > p))
                f = rules.alibi ? -static_cast<float>(std::llabs(p - c.pos)) : 0.0f;
            row[j] = f;
            // positions are 64-bit here: p - c.pos of two int32 positions can overflow int32
            if (swa) row_swa[j] = p - c.pos >= static_cast<int64_t>(rules.n_swa) ? kNegInf : f;
        }
    }
}

}  // namespace lctx
