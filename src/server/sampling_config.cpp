#include "server/sampling_config.h"

#include <cmath>

namespace lctx::server {

generate::SamplingConfig sampling_config(const SamplingParams &sp, const std::string &grammar,
                                         uint32_t seed) {
    generate::SamplingConfig c;
    c.temperature = sp.temperature;
    c.dynatemp_range = sp.dynatemp_range;
    c.dynatemp_exponent = sp.dynatemp_exponent;
    c.top_k = sp.top_k;
    c.top_p = sp.top_p;
    c.min_p = sp.min_p;
    c.typical_p = sp.typical_p;
    c.min_keep = sp.min_keep;
    c.repeat_last_n = sp.repeat_last_n;
    c.repeat_penalty = sp.repeat_penalty;
    c.frequency_penalty = sp.frequency_penalty;
    c.presence_penalty = sp.presence_penalty;
    c.dry_multiplier = sp.dry_multiplier;
    c.dry_base = sp.dry_base;
    c.dry_allowed_length = sp.dry_allowed_length;
    c.dry_penalty_last_n = sp.dry_penalty_last_n;
    c.dry_sequence_breakers = sp.dry_sequence_breakers;
    c.xtc_probability = sp.xtc_probability;
    c.xtc_threshold = sp.xtc_threshold;
    c.mirostat = sp.mirostat;
    c.mirostat_tau = sp.mirostat_tau;
    c.mirostat_eta = sp.mirostat_eta;
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
