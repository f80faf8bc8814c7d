// What the CLI subcommands still over the internal classes share (chat, bench, serve): loading with
// progress, the context, the model checks and the internal sampler chain of the generation options
// (gen_options.h). `run` uses none of it: it goes through llama.h and the generation layer.
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
#include "tools/lctx/lora_options.h"

namespace lctx::cli {

// Loads a model, drawing a progress line on a terminal (unless quiet); prints the error (saying so
// when the file holds no weights, like a vocabulary-only GGUF) and returns null on failure.
// overrides: --override-kv's metadata values.
std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet = false,
                                            const std::vector<gguf::KeyValue> &overrides = {});

// A context of n_ctx cells (0: the model's training context), batches of at most n_batch_max tokens
// (capped by n_ctx), micro-batches of n_ubatch (capped by the batch); prints the error and returns
// null on failure.
std::unique_ptr<Context> make_context_or_report(const Model &model, int32_t n_ctx, uint32_t n_batch_max,
                                                int n_threads, uint32_t n_ubatch = 512,
                                                int n_threads_batch = 0, GgmlType type_k = GgmlType::F16,
                                                GgmlType type_v = GgmlType::F16, bool flash_attn = false,
                                                const RopeOverrides &rope = {});

// An embedding model (no output layer: bert, a reranker) gives vectors, not text: false, with one line on
// stderr saying so and what to run instead, for the text-generating commands (run, chat, bench).
bool check_generates_text(const Model &model, const std::string &path, const char *cmd);
// Whether the model is an encoder-decoder (t5): its decoder starts from the encoder's output.
bool is_encoder_decoder(const Model &model);

// Before the context is made: warns when -c is above the model's training context (as llama.cpp does), and
// then, or when the KV cache would take 1 GiB or more, says what the KV cache of n_ctx cells will take.
// Nothing when quiet.
void note_context_size(const Model &model, int32_t n_ctx, GgmlType type_k, GgmlType type_v, const char *cmd,
                       bool quiet);
// The bytes of a KV cache of n_ctx cells for this model (every layer's K and V rows; a recurrent model's
// state per sequence instead).
uint64_t kv_cache_bytes(const Model &model, uint64_t n_ctx, GgmlType type_k, GgmlType type_v);

// With a grammar in the chain that is complete and allows no token but an end-of-generation one (which
// --ignore-eos bans), nothing is left to sample: the output is finished.
bool grammar_exhausted(SamplerChain &chain, const Vocab &vocab);

// temp <= 0: greedy. Otherwise logit bias -> penalties -> top-k -> typical -> top-p -> min-p -> xtc ->
// temperature (dynamic with --dynatemp-range) -> dist (--samplers / --sampling-seq: the samplers between
// the bias and dist, in their order), or temperature -> mirostat. n_ctx resolves
// --repeat-last-n -1; --ignore-eos biases every end-of-generation token to -inf. Throws on a
// --logit-bias token outside the vocabulary. The seed must be resolved.
std::unique_ptr<SamplerChain> make_sampler_chain(const SamplingOptions &o, const Vocab &vocab, int32_t n_ctx);
// Feeds prompt tokens to the samplers that keep a history (penalties, DRY), but not to a grammar: it
// constrains only the generated text (llama.cpp's accept_grammar = false). Generated tokens need no call:
// sampling accepts them.
void accept_prompt(SamplerChain &chain, const std::vector<int32_t> &prompt);
// Starts a grammar in the chain over (a chat reply after the previous one completed it), leaving the
// other samplers' history and random state as they are.
void reset_grammar(SamplerChain &chain);

}  // namespace lctx::cli
