#include "generate/prompt_cache.h"

namespace lctx::generate {

bool prompt_cache_load(llama_context *ctx, const std::string &path, std::vector<llama_token> *tokens) {
    std::vector<llama_token> buf(llama_n_ctx(ctx));
    size_t n = 0;
    if (!llama_state_load_file(ctx, path.c_str(), buf.data(), buf.size(), &n)) return false;
    buf.resize(n);
    *tokens = std::move(buf);
    return true;
}

int32_t prompt_cache_reuse(llama_context *ctx, const std::vector<llama_token> &cached,
                           const std::vector<llama_token> &prompt) {
    size_t match = 0;
    while (match < cached.size() && match < prompt.size() && cached[match] == prompt[match]) ++match;
    if (match == prompt.size() && match > 0) --match;
    if (match < cached.size() && !llama_kv_cache_seq_rm(ctx, -1, static_cast<llama_pos>(match), -1)) {
        llama_kv_cache_clear(ctx);  // a recurrent state cannot be cut: start over
        match = 0;
    }
    return static_cast<int32_t>(match);
}

bool prompt_cache_save(llama_context *ctx, const std::string &path, const std::vector<llama_token> &tokens) {
    return llama_state_save_file(ctx, path.c_str(), tokens.data(), tokens.size());
}

}  // namespace lctx::generate
