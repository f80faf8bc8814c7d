// Speculative decoding on the command line (lctx run, lctx chat, lctx bench, lctx serve): llama.cpp's
// draft-model options (-md, --draft-max, --draft-min, --draft-p-min, -cd, -td) and prompt lookup (--lookup,
// --lookup-ngram-min/max), one set with one check for every command; `run` generating through
// src/generate/speculative.h over llama.h, `chat` each reply (`serve` passes them to the engine:
// server/engine.h).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "generate/speculative.h"
#include "llama.h"
#include "tools/lctx/gen_options.h"

namespace lctx::cli {

// llama.cpp's defaults at b4748 (common_params_speculative: n_max 16, n_min 5, p_min 0.9).
struct SpecOptions {
    std::string model_draft;          // -md
    int32_t draft_max = 16;           // --draft-max
    int32_t draft_min = 5;            // --draft-min
    float draft_p_min = 0.9f;         // --draft-p-min
    int32_t ctx_draft = 0;            // -cd: 0 = the target's context size
    int32_t threads_draft = 0;        // -td: 0 = as -t
    int32_t threads_batch_draft = 0;  // -tbd: 0 = as -td
    int32_t n_gpu_layers_draft = -1;  // -ngld: accepted, unused (CPU)
    bool lookup = false;              // --lookup (set too by either n-gram option)
    int32_t ngram_min = 1, ngram_max = 4;

    bool enabled() const { return !model_draft.empty() || lookup; }
};

void add_spec_options(CLI::App &app, SpecOptions &o);
// After parsing: the n-gram options switch lookup on; ranges; a draft model and lookup together are
// refused. The first problem as one line, or "".
std::string check_spec_options(const CLI::App &app, SpecOptions &o);

// What speculative generation cannot combine with yet, among the generation options and the command's own
// (a control vector where the command refuses it, --n-probs above 0, a prompt cache): the first one as one
// line ("--grammar: not with speculative decoding"), or "".
std::string spec_unsupported_gen_options(const GenOptions &o, bool control_vector, int32_t n_probs,
                                         bool prompt_cache);

// The sampler chain of the sampling options through llama.h without its final draw, for
// generate::SpecSampling (null with *error set).
llama_sampler *make_spec_filters(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                 uint32_t seed, std::string *error);

// Models and contexts through llama.h, freed in order (the target's only when spec_load made them).
struct SpecModels {
    llama_model *target = nullptr, *draft = nullptr;
    llama_context *ctx = nullptr, *dctx = nullptr;
    bool borrowed = false;  // target and ctx are the caller's (spec_add_drafter)
    std::unique_ptr<generate::Drafter> drafter;
    SpecModels() = default;
    SpecModels(const SpecModels &) = delete;
    SpecModels &operator=(const SpecModels &) = delete;
    ~SpecModels();
};
// Loads the target (path) and, with -md, the draft model, makes their contexts and the drafter (none when
// neither -md nor lookup), checking that speculation can run. n_ctx 0: the model's training context. "" or
// the error.
std::string spec_load(const std::string &path, const SpecOptions &s, int32_t n_ctx, int32_t n_batch,
                      int32_t n_ubatch, int n_threads, int n_threads_batch, ggml_type type_k,
                      ggml_type type_v, bool flash_attn, SpecModels *out);

// The drafter for a target model and context already made (out->target, out->ctx; set borrowed unless
// out owns them): the checks of spec_load, then -md's model and context or prompt lookup. path names the
// target in errors. "" or the error.
std::string spec_add_drafter(const std::string &path, const SpecOptions &s, int32_t n_batch, int32_t n_ubatch,
                             int n_threads, ggml_type type_k, ggml_type type_v, bool flash_attn,
                             SpecModels *out);

// lctx run with -md or lookup: the whole run over llama.h and the generation layer. seed: resolved.
int run_speculative(GenOptions &o, const SpecOptions &s, uint32_t seed);

}  // namespace lctx::cli
