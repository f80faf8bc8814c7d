// The sampling options of run and chat (gen_options.h) as the generation layer's sampler chain parameters
// (generate/sampling_chain.h): llama.cpp's CLI chain, over llama.h.
#pragma once
#include <string>

#include "generate/sampling_chain.h"
#include "llama.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/gen_options.h"

namespace lctx::cli {

// The parameters for the model's vocabulary: o.config with the seed (resolved: resolve_seed), the logit
// biases (a token outside the vocabulary is an error), the grammar of --grammar-file or --json-schema, the
// order of --samplers / --sampling-seq. False with
// *error set ("--logit-bias: ...").
bool cli_sampling_config(const SamplingOptions &o, const llama_vocab *vocab, generate::SamplingConfig *out,
                         std::string *error);

// The chain itself; null with *error set, naming the option (a grammar that cannot be used).
SamplerPtr make_cli_sampler_chain(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                  std::string *error);
// The same, the error printed as one line of command `cmd` ("lctx run: --grammar: ...").
SamplerPtr make_cli_sampler_chain(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                  const char *cmd);

}  // namespace lctx::cli
