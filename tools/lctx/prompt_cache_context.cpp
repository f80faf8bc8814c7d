// PromptCache's steps on the internal context, for chat (run goes through llama.h: prompt_cache.cpp).
#include "context/context.h"
#include "context/state.h"
#include "tools/lctx/prompt_cache.h"

namespace lctx::cli {

std::string PromptCache::load(Context &ctx) {
    saved_.clear();
    if (!existed_) return "";
    try {
        saved_ = ContextState::load_file(ctx, o_.path, ctx.params().n_ctx);
    } catch (const std::exception &e) {
        return "--prompt-cache: cannot use '" + o_.path + "': " + e.what() +
               " (a file of another model or context settings? remove it or name another file)";
    }
    return "";
}

int32_t PromptCache::reuse(Context &ctx, const std::vector<int32_t> &prompt) {
    size_t match = 0;
    while (match < saved_.size() && match < prompt.size() && saved_[match] == prompt[match]) ++match;
    save_ = !o_.ro && match < prompt.size();
    if (match == prompt.size() && match > 0) --match;
    if (match < saved_.size() && !ctx.kv().seq_rm(-1, static_cast<int32_t>(match), -1)) {
        ctx.kv().clear();  // a recurrent state cannot be cut: start over
        match = 0;
    }
    saved_.clear();  // the cache now holds the prompt's first `match` tokens, nothing else of the file
    reused_ = static_cast<int32_t>(match);
    return reused_;
}

std::string PromptCache::save_prompt(Context &ctx, const std::vector<int32_t> &prompt) {
    if (!save_) return "";
    try {
        ContextState::save_file(ctx, o_.path, prompt.data(), prompt.size());
    } catch (const std::exception &e) {
        return std::string("--prompt-cache: ") + e.what();
    }
    return "";
}

std::string PromptCache::save_tokens(Context &ctx, const std::vector<int32_t> &tokens) {
    try {
        ContextState::save_file(ctx, o_.path, tokens.data(), tokens.size());
    } catch (const std::exception &e) {
        return std::string("--prompt-cache-all: ") + e.what();
    }
    return "";
}

}  // namespace lctx::cli
