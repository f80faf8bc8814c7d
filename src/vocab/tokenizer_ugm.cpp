// Unigram (T5): not implemented yet. The vocabulary loads (pieces, specials and detokenization work);
// tokenizing text throws.
#include "util/error.h"
#include "vocab/vocab.h"

namespace lctx {

void Vocab::tokenize_ugm(std::string_view, std::vector<int32_t> &) const {
    throw Error("tokenizing with a T5 (Unigram) vocabulary is not supported yet");
}

}  // namespace lctx
