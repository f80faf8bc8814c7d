// --n-probs with the internal vocabulary, for chat (run: token_probs.cpp, through llama.h).
#include "tools/lctx/token_probs.h"
#include "vocab/vocab.h"

namespace lctx::cli {

nlohmann::json top_probs(const float *logits, int32_t n_vocab, int32_t n, const Vocab &vocab) {
    return top_probs(logits, n_vocab, n,
                     [&vocab](int32_t id) { return vocab.token_to_piece(id, /*special=*/true); });
}

}  // namespace lctx::cli
