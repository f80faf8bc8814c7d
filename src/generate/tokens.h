// Text to tokens and back through llama.h, with the buffer sizing its calls need (a first call that says how
// much room the answer takes, then the real one).
#pragma once
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::generate {

// llama_tokenize of the whole text; empty when the vocabulary gives nothing (or refuses).
std::vector<llama_token> tokenize(const llama_vocab *vocab, const std::string &text, bool add_special,
                                  bool parse_special);
// llama_token_to_piece of one token (special: control tokens' texts too), whatever its length.
std::string token_piece(const llama_vocab *vocab, llama_token token, bool special);

}  // namespace lctx::generate
