#include "tools/lctx/load_report.h"

#include <cstdio>
#include <exception>

#include "gguf/gguf.h"

namespace lctx::cli {

namespace {
// A GGUF that opens but holds no tensors (a vocabulary-only file) cannot run.
bool has_no_weights(const std::string &path) {
    try {
        return gguf::File::open(path)->tensors().empty();
    } catch (const std::exception &) {
        return false;
    }
}
}  // namespace

bool draw_load_progress(float progress, void *) {
    std::fprintf(stderr, "\rloading model: %3d%%", static_cast<int>(progress * 100.0f));
    if (progress >= 1.0f) std::fprintf(stderr, "\r\033[K");
    return true;
}

void report_load_failure(const std::string &path, bool progress_drawn, const std::string &detail) {
    if (progress_drawn) std::fprintf(stderr, "\r\033[K");
    if (has_no_weights(path))
        std::fprintf(stderr,
                     "lctx: cannot load model '%s': this file has no weights (a vocabulary-only GGUF? "
                     "'lctx tokenize' works with it)\n",
                     path.c_str());
    else
        std::fprintf(stderr, "lctx: cannot load model '%s': %s\n", path.c_str(), detail.c_str());
}

}  // namespace lctx::cli
