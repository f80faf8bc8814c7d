// Pieces shared by the CLI subcommands: locating the default model, loading with progress, and
// the sampler chain built from the usual options.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "context/context.h"
#include "model/model.h"
#include "sampling/samplers.h"

namespace lctx::cli {

// The model shipped in the repo: the build's source tree, then ./models, then next to the binary.
std::string default_model_path();
// Loads a model, drawing a progress line on a terminal; prints the error and returns null on failure.
std::unique_ptr<Model> load_model_or_report(const std::string &path);

// A context of n_ctx cells (0: the model's training context), batches of at most n_batch_max tokens
// (capped by n_ctx), micro-batches of 512; prints the error and returns null on failure.
std::unique_ptr<Context> make_context_or_report(const Model &model, int32_t n_ctx, uint32_t n_batch_max,
                                                int n_threads);

struct SamplingOptions {
    float temp = 0.8f;
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;
    float repeat_penalty = 1.0f;
    int32_t repeat_last_n = 64;
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    uint32_t seed = 0xFFFFFFFFu;  // random
};

// Registers --temp, --top-k, --top-p, --min-p, --typical, the penalties and --seed.
void add_sampling_options(CLI::App &app, SamplingOptions &o);

// temp <= 0: greedy. Otherwise penalties -> top-k -> typical -> top-p -> min-p -> temperature -> dist.
std::unique_ptr<SamplerChain> make_sampler_chain(const SamplingOptions &o);

}  // namespace lctx::cli
