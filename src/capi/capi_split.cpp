// C API: split models (gguf/gguf_split.h): the file-name helpers and loading from explicit parts.
#include <optional>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "gguf/gguf_split.h"

extern "C" {

// split_no is 0-based; the file number is split_no + 1. Both return the full length of the string, as
// snprintf does, so a truncated result (maxlen too small) is recognisable.
int llama_split_path(char *split_path, size_t maxlen, const char *path_prefix, int split_no,
                     int split_count) {
    if (!path_prefix) return 0;
    const std::string s = lctx::gguf::split_path(path_prefix, split_no, split_count);
    if (split_path && maxlen > 0) lctx::capi::copy_out(s, split_path, maxlen);
    return static_cast<int>(s.size());
}

int llama_split_prefix(char *split_prefix, size_t maxlen, const char *split_path, int split_no,
                       int split_count) {
    if (!split_path) return 0;
    const std::optional<std::string> prefix = lctx::gguf::split_prefix(split_path, split_no, split_count);
    if (!prefix) return 0;
    if (split_prefix && maxlen > 0) lctx::capi::copy_out(*prefix, split_prefix, maxlen);
    return static_cast<int>(prefix->size());
}

struct llama_model *llama_model_load_from_splits(const char **paths, size_t n_paths,
                                                 struct llama_model_params params) {
    if (!paths || n_paths == 0) {
        LCTX_LOG_ERROR("%s: no paths given", __func__);
        return nullptr;
    }
    std::vector<std::string> parts;
    for (size_t i = 0; i < n_paths; ++i) {
        if (!paths[i]) {
            LCTX_LOG_ERROR("%s: paths[%zu] is NULL", __func__, i);
            return nullptr;
        }
        parts.emplace_back(paths[i]);
    }
    return lctx::capi::load_model(__func__, paths[0], &parts, params);
}

}  // extern "C"
