#include "server/sampling_config.h"

#include <cmath>

namespace lctx::server {

generate::SamplingConfig sampling_config(const SamplingParams &sp, const std::string &grammar,
                                         uint32_t seed) {
    generate::SamplingConfig c = sp.config;
    for (auto [tok, bias] : sp.logit_bias) c.logit_bias.push_back({tok, bias <= -100.0f ? -INFINITY : bias});
    // The request parser keeps only the canonical names, every one a stage.
    for (const std::string &name : sp.samplers) {
        generate::SamplerStage st;
        if (generate::sampler_stage_from_name(name, &st)) c.order.push_back(st);
    }
    c.grammar = grammar;
    c.seed = seed;
    return c;
}

}  // namespace lctx::server
