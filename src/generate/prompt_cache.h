// Prompt-cache files (llama-cli's --prompt-cache session files) over llama.h's state files: the state of a
// context together with the tokens its cache holds; a later prompt reuses the longest common token prefix
// and decodes only what follows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::generate {

// Restores the file into ctx and puts the tokens it holds in *tokens (at most the context's size). False
// when it cannot be used (llama.h logs why: another model or context settings, a damaged file); the
// context is unchanged then.
bool prompt_cache_load(llama_context *ctx, const std::string &path, std::vector<llama_token> *tokens);

// The cache holds `cached` (what a load restored); keeps their longest common prefix with `prompt` and
// removes the rest (all of it when the cache cannot be cut, as a recurrent state). Returns how many prompt
// tokens need no decode; a whole-prompt match leaves the last prompt token to decode again, for its logits.
int32_t prompt_cache_reuse(llama_context *ctx, const std::vector<llama_token> &cached,
                           const std::vector<llama_token> &prompt);

// Writes the context's state with the tokens its cache holds, whole or not at all. False when it cannot
// (llama.h logs why).
bool prompt_cache_save(llama_context *ctx, const std::string &path, const std::vector<llama_token> &tokens);

}  // namespace lctx::generate
