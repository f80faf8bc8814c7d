// What the CLI subcommands still over the internal classes share (bench): loading with progress, the
// encoder-decoder check, and the internal sampler chain of the generation options (gen_options.h), which
// the option tests check. `run` and `chat` use none of it: they go through llama.h and the generation layer
// (capi_model.h, cli_sampling.h).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/model.h"
#include "sampling/samplers.h"
#include "tools/lctx/gen_extra_options.h"
#include "tools/lctx/gen_options.h"

namespace lctx::cli {

// Loads a model, drawing a progress line on a terminal (unless quiet); prints the error (saying so
// when the file holds no weights, like a vocabulary-only GGUF) and returns null on failure.
// overrides: --override-kv's metadata values.
std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet = false,
                                            const std::vector<gguf::KeyValue> &overrides = {});

// Whether the model is an encoder-decoder (t5): its decoder starts from the encoder's output.
bool is_encoder_decoder(const Model &model);

// temp <= 0: greedy. Otherwise logit bias -> penalties -> top-k -> typical -> top-p -> min-p -> xtc ->
// temperature (dynamic with --dynatemp-range) -> dist (--samplers / --sampling-seq: the samplers between
// the bias and dist, in their order), or temperature -> mirostat. n_ctx resolves
// --repeat-last-n -1; --ignore-eos biases every end-of-generation token to -inf. Throws on a
// --logit-bias token outside the vocabulary. The seed must be resolved.
std::unique_ptr<SamplerChain> make_sampler_chain(const SamplingOptions &o, const Vocab &vocab, int32_t n_ctx);

}  // namespace lctx::cli
