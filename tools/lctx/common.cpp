#include "tools/lctx/common.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "util/error.h"

namespace lctx::cli {

std::string default_model_path() {
    namespace fs = std::filesystem;
    const char *name = "stories260K.gguf";
    std::vector<fs::path> candidates = {LCTX_DEFAULT_MODEL, fs::path("models") / name};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / "models" / name);
    for (const fs::path &p : candidates)
        if (fs::exists(p, ec)) return p.string();
    return LCTX_DEFAULT_MODEL;
}

namespace {
bool draw_progress(float progress, void *) {
    std::fprintf(stderr, "\rloading model: %3d%%", static_cast<int>(progress * 100.0f));
    if (progress >= 1.0f) std::fprintf(stderr, "\r\033[K");
    return true;
}
}  // namespace

std::unique_ptr<Model> load_model_or_report(const std::string &path) {
    ModelLoadOptions opts;
    if (isatty(STDERR_FILENO)) opts.progress = draw_progress;
    try {
        return Model::load(path, opts);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "\nlctx: cannot load model '%s': %s\n", path.c_str(), e.what());
        return nullptr;
    }
}

std::unique_ptr<Context> make_context_or_report(const Model &model, int32_t n_ctx, uint32_t n_batch_max,
                                                int n_threads) {
    ContextParams cp;
    cp.n_ctx = n_ctx > 0 ? static_cast<uint32_t>(n_ctx) : model.hparams().n_ctx_train;
    cp.n_batch = std::max<uint32_t>(1, std::min(cp.n_ctx, n_batch_max));
    cp.n_ubatch = std::min<uint32_t>(512, cp.n_batch);
    cp.n_threads = cp.n_threads_batch = n_threads;
    try {
        return std::make_unique<Context>(model, cp);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx: cannot create the context: %s\n", e.what());
        return nullptr;
    }
}

void add_sampling_options(CLI::App &app, SamplingOptions &o) {
    app.add_option("--temp", o.temp, "temperature (0: greedy)");
    app.add_option("--top-k", o.top_k, "keep the k most likely tokens (<= 0: all)");
    app.add_option("--top-p", o.top_p, "keep the most likely tokens up to this probability mass");
    app.add_option("--min-p", o.min_p, "drop tokens below this fraction of the top probability");
    app.add_option("--typical", o.typical_p, "locally typical sampling mass (1: off)");
    app.add_option("--repeat-penalty", o.repeat_penalty, "penalty for repeated tokens (1: off)");
    app.add_option("--repeat-last-n", o.repeat_last_n, "window of the penalties");
    app.add_option("--frequency-penalty", o.frequency_penalty, "frequency penalty (0: off)");
    app.add_option("--presence-penalty", o.presence_penalty, "presence penalty (0: off)");
    app.add_option("-s,--seed", o.seed, "random seed (default: random)");
}

std::unique_ptr<SamplerChain> make_sampler_chain(const SamplingOptions &o) {
    auto chain = std::make_unique<SamplerChain>();
    if (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f || o.presence_penalty != 0.0f)
        chain->add(std::make_unique<PenaltiesSampler>(o.repeat_last_n, o.repeat_penalty, o.frequency_penalty,
                                                      o.presence_penalty));
    if (o.temp <= 0.0f) {
        chain->add(std::make_unique<GreedySampler>());
        return chain;
    }
    chain->add(std::make_unique<TopKSampler>(o.top_k));
    chain->add(std::make_unique<TypicalSampler>(o.typical_p, 1));
    chain->add(std::make_unique<TopPSampler>(o.top_p, 1));
    chain->add(std::make_unique<MinPSampler>(o.min_p, 1));
    chain->add(std::make_unique<TempSampler>(o.temp));
    chain->add(std::make_unique<DistSampler>(o.seed));
    return chain;
}

}  // namespace lctx::cli
