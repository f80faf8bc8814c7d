// The engine-side forms of run's and chat's extra options, for the commands still over the internal
// classes: the sampler order as the CLI spells it (the generation layer's stages) and the RoPE settings as
// the context's overrides.
#pragma once
#include <string>
#include <vector>

#include "generate/sampling_chain.h"
#include "model/forward.h"
#include "tools/lctx/gen_args.h"

namespace lctx::cli {

// The samplers llama.cpp's --samplers orders (common_sampler_type at b4748).
using SamplerKind = generate::SamplerStage;
using generate::default_sampler_order;
using generate::parse_sampler_letters;
using generate::parse_sampler_names;

// The overrides a context takes from them; the first problem as one line, or "".
std::string rope_overrides(const RopeArgs &r, RopeOverrides *out);

}  // namespace lctx::cli
