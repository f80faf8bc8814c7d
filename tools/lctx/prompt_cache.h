// --prompt-cache FILE (llama-cli's session file), shared by run and chat: the options, the checks made before
// the model loads, the reuse of the saved state's longest common token prefix with a prompt, and the saves
// (through llama.h's state files, written whole or not at all: generate/prompt_cache.h).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::cli {

struct PromptCacheOptions {
    std::string path;  // --prompt-cache FILE; "" for none
    bool all = false;  // --prompt-cache-all: save the generated tokens too
    bool ro = false;   // --prompt-cache-ro: use the file, never write it
};

void add_prompt_cache_options(CLI::App &app, PromptCacheOptions &o);

// Every message below is one line that starts with the option it is about ("--prompt-cache: ..."); the caller
// puts "lctx CMD: " before it.
class PromptCache {
  public:
    explicit PromptCache(const PromptCacheOptions &o) : o_(o) {}

    bool enabled() const { return !o_.path.empty(); }
    bool save_all() const { return o_.all; }
    const std::string &path() const { return o_.path; }

    // Before the model loads: the options together, a FILE that exists but is not a regular file, a folder
    // the file could not be written in (unless read-only). "" or the problem.
    std::string check();
    // Loads FILE into the context when it exists. "" or the problem (a file of another model or context
    // settings, or a damaged one); the context is unchanged then.
    std::string load(llama_context *ctx);
    // Keeps the longest common prefix of the loaded tokens and `prompt` in the cache and removes the rest
    // (all of it when the cache cannot be cut, as a recurrent state); returns how many prompt tokens need no
    // decode. A whole-prompt match leaves the last prompt token to decode again, for its logits.
    int32_t reuse(llama_context *ctx, const std::vector<int32_t> &prompt);
    // After the prompt is decoded: saves the context with the prompt's tokens, unless read-only or the file
    // already held the whole prompt. "" or the problem.
    std::string save_prompt(llama_context *ctx, const std::vector<int32_t> &prompt);
    // --prompt-cache-all: saves the context with `tokens` (prompt and generated, as the cache holds them).
    std::string save_tokens(llama_context *ctx, const std::vector<int32_t> &tokens);

    bool existed() const { return existed_; }
    int32_t reused() const { return reused_; }
    // What reuse() found, for the user: "prompt cache 'FILE': R of N prompt tokens reused", or that the file
    // will be created.
    std::string report(size_t n_prompt) const;

  private:
    PromptCacheOptions o_;
    bool existed_ = false;        // FILE existed when check() ran
    std::vector<int32_t> saved_;  // the tokens load() read
    int32_t reused_ = 0;
    bool save_ = false;  // reuse() found prompt tokens the file lacks
};

}  // namespace lctx::cli
