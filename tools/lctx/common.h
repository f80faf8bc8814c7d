// What the CLI subcommands still over the internal classes share (bench, tokenize, serve): loading with
// progress and the encoder-decoder check. `run` and `chat` use none of it: they go through llama.h and the
// generation layer (capi_model.h, cli_sampling.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace lctx::cli {

// Loads a model, drawing a progress line on a terminal (unless quiet); prints the error (saying so
// when the file holds no weights, like a vocabulary-only GGUF) and returns null on failure.
// overrides: --override-kv's metadata values.
std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet = false,
                                            const std::vector<gguf::KeyValue> &overrides = {});

// Whether the model is an encoder-decoder (t5): its decoder starts from the encoder's output.
bool is_encoder_decoder(const Model &model);

}  // namespace lctx::cli
