#include "tools/lctx/prompt_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "generate/prompt_cache.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/gen_args.h"

namespace lctx::cli {

void add_prompt_cache_options(CLI::App &app, PromptCacheOptions &o) {
    app.add_option("--prompt-cache", o.path,
                   "state file of the prompt (llama-cli's session file; in chat the system prompt and first "
                   "message): a later prompt that starts the same way decodes only what follows; created "
                   "when missing")
        ->check(non_empty_value());
    app.add_flag("--prompt-cache-all", o.all, "save the generated tokens in the --prompt-cache file too");
    app.add_flag("--prompt-cache-ro", o.ro, "use the --prompt-cache file but never update it");
}

std::string PromptCache::check() {
    if (o_.path.empty() && (o_.all || o_.ro))
        return "--prompt-cache-all and --prompt-cache-ro need --prompt-cache FILE";
    if (o_.all && o_.ro) return "--prompt-cache-all and --prompt-cache-ro: give one of them";
    if (o_.path.empty()) return "";
    std::error_code ec;
    const std::filesystem::file_status fs = std::filesystem::status(o_.path, ec);
    existed_ = std::filesystem::exists(fs);
    if (existed_ && !std::filesystem::is_regular_file(fs))
        return "--prompt-cache: '" + o_.path + "' is not a regular file";
    // A file that could not be written is reported now, not after the prompt is decoded.
    const std::filesystem::path dir = std::filesystem::path(o_.path).parent_path();
    const std::string d = dir.empty() ? "." : dir.string();
    if (!o_.ro && access(d.c_str(), W_OK) != 0)
        return "--prompt-cache: cannot write in '" + d + "': " + std::strerror(errno);
    return "";
}

std::string PromptCache::load(llama_context *ctx) {
    saved_.clear();
    if (!existed_) return "";
    if (!generate::prompt_cache_load(ctx, o_.path, &saved_))
        return "--prompt-cache: cannot use '" + o_.path + "': " + capi_last_error() +
               " (a file of another model or context settings? remove it or name another file)";
    return "";
}

int32_t PromptCache::reuse(llama_context *ctx, const std::vector<int32_t> &prompt) {
    size_t match = 0;
    while (match < saved_.size() && match < prompt.size() && saved_[match] == prompt[match]) ++match;
    save_ = !o_.ro && match < prompt.size();
    reused_ = generate::prompt_cache_reuse(ctx, saved_, prompt);
    saved_.clear();  // the cache now holds the prompt's first reused_ tokens, nothing else of the file
    return reused_;
}

std::string PromptCache::save_prompt(llama_context *ctx, const std::vector<int32_t> &prompt) {
    if (!save_) return "";
    if (!generate::prompt_cache_save(ctx, o_.path, prompt)) return "--prompt-cache: " + capi_last_error();
    return "";
}

std::string PromptCache::save_tokens(llama_context *ctx, const std::vector<int32_t> &tokens) {
    if (!generate::prompt_cache_save(ctx, o_.path, tokens)) return "--prompt-cache-all: " + capi_last_error();
    return "";
}

std::string PromptCache::report(size_t n_prompt) const {
    if (!existed_) return "prompt cache '" + o_.path + "' does not exist yet: it will be created";
    return "prompt cache '" + o_.path + "': " + std::to_string(reused_) + " of " + std::to_string(n_prompt) +
           " prompt tokens reused";
}

}  // namespace lctx::cli
