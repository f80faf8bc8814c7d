// A request's sampler chain through the public C API, as llama-server builds it: the grammar and the logit
// biases first, then the samplers in `samplers` order (llama.cpp's default: penalties, dry, top_k, typ_p,
// top_p, min_p, xtc, temperature) and a draw; Mirostat replaces the distribution samplers with temperature
// and itself; temperature <= 0 is greedy after the samplers that only change logits (penalties, DRY).
#pragma once
#include <cstdint>
#include <string>

#include "llama.h"
#include "server/request.h"

namespace lctx::server {

struct ChainInputs {
    const llama_vocab *vocab = nullptr;
    int32_t n_vocab = 0;
    int32_t n_ctx = 0;  // the slot's context: what -1 means for the look-back windows
    std::string grammar;
    uint32_t seed = 0;
};

// The chain, or nullptr with *error set (a grammar the vocabulary cannot use).
llama_sampler *make_sampler_chain(const SamplingParams &sp, const ChainInputs &in, std::string *error);

// The same chain without its final draw (greedy or dist): the filters speculative decoding's verifier
// (generate/speculative.h) applies before it chooses and draws itself. Not for Mirostat, which draws.
llama_sampler *make_filter_chain(const SamplingParams &sp, const ChainInputs &in, std::string *error);

}  // namespace lctx::server
