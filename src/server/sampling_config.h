// A request's sampling fields as the generation layer's sampler chain parameters (generate/sampling_chain.h):
// llama-server's chain, with a bias of -100 or less banning its token.
#pragma once
#include <cstdint>
#include <string>

#include "generate/sampling_chain.h"
#include "server/request.h"

namespace lctx::server {

generate::SamplingConfig sampling_config(const SamplingParams &sp, const std::string &grammar, uint32_t seed);

}  // namespace lctx::server
