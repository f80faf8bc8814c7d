#include "tools/lctx/common.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include "gguf/gguf.h"
#include "model/architectures.h"

namespace lctx::cli {

namespace {
bool draw_progress(float progress, void *) {
    std::fprintf(stderr, "\rloading model: %3d%%", static_cast<int>(progress * 100.0f));
    if (progress >= 1.0f) std::fprintf(stderr, "\r\033[K");
    return true;
}

// A GGUF that opens but holds no tensors (a vocabulary-only file) cannot run.
bool has_no_weights(const std::string &path) {
    try {
        return gguf::File::open(path)->tensors().empty();
    } catch (const std::exception &) {
        return false;
    }
}
}  // namespace

std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet,
                                            const std::vector<gguf::KeyValue> &overrides) {
    ModelLoadOptions opts;
    opts.overrides = overrides;
    const bool progress = !quiet && isatty(STDERR_FILENO);
    if (progress) opts.progress = draw_progress;
    try {
        return Model::load(path, opts);
    } catch (const std::exception &e) {
        if (progress) std::fprintf(stderr, "\r\033[K");
        if (has_no_weights(path))
            std::fprintf(stderr,
                         "lctx: cannot load model '%s': this file has no weights (a vocabulary-only GGUF? "
                         "'lctx tokenize' works with it)\n",
                         path.c_str());
        else
            std::fprintf(stderr, "lctx: cannot load model '%s': %s\n", path.c_str(), e.what());
        return nullptr;
    }
}

bool is_encoder_decoder(const Model &model) {
    const ArchitectureInfo *a = find_architecture(model.hparams().arch_name);
    return a && a->has_encoder && a->has_decoder;
}

}  // namespace lctx::cli
