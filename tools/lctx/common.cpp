#include "tools/lctx/common.h"

#include <unistd.h>

#include <exception>

#include "model/architectures.h"
#include "tools/lctx/load_report.h"

namespace lctx::cli {

std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet,
                                            const std::vector<gguf::KeyValue> &overrides) {
    ModelLoadOptions opts;
    opts.overrides = overrides;
    const bool progress = !quiet && isatty(STDERR_FILENO);
    if (progress) opts.progress = draw_load_progress;
    try {
        return Model::load(path, opts);
    } catch (const std::exception &e) {
        report_load_failure(path, progress, e.what());
        return nullptr;
    }
}

bool is_encoder_decoder(const Model &model) {
    const ArchitectureInfo *a = find_architecture(model.hparams().arch_name);
    return a && a->has_encoder && a->has_decoder;
}

}  // namespace lctx::cli
