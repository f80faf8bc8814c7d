#include "server/sampler_chain.h"

#include <cmath>
#include <vector>

namespace lctx::server {

llama_sampler *make_sampler_chain(const SamplingParams &sp, const ChainInputs &in, std::string *error) {
    llama_sampler_chain_params chp = llama_sampler_chain_default_params();
    chp.no_perf = true;
    llama_sampler *chain = llama_sampler_chain_init(chp);
    if (!in.grammar.empty()) {
        llama_sampler *g = llama_sampler_init_grammar(in.vocab, in.grammar.c_str(), "root");
        if (!g) {
            llama_sampler_free(chain);
            *error = "the grammar cannot be used with this model's vocabulary";
            return nullptr;
        }
        llama_sampler_chain_add(chain, g);
    }
    if (!sp.logit_bias.empty()) {
        std::vector<llama_logit_bias> lb;
        for (auto [tok, bias] : sp.logit_bias) lb.push_back({tok, bias <= -100.0f ? -INFINITY : bias});
        llama_sampler_chain_add(
            chain, llama_sampler_init_logit_bias(in.n_vocab, static_cast<int32_t>(lb.size()), lb.data()));
    }
    const size_t min_keep = static_cast<size_t>(sp.min_keep);
    auto penalties = [&] {
        if (sp.presence_penalty == 0.0f && sp.frequency_penalty == 0.0f && sp.repeat_penalty == 1.0f) return;
        const int32_t last_n = sp.repeat_last_n < 0 ? in.n_ctx : sp.repeat_last_n;
        llama_sampler_chain_add(chain,
                                llama_sampler_init_penalties(last_n, sp.repeat_penalty, sp.frequency_penalty,
                                                             sp.presence_penalty));
    };
    auto dry = [&] {
        if (sp.dry_multiplier <= 0.0f) return;
        std::vector<const char *> br;
        for (const std::string &b : sp.dry_sequence_breakers) br.push_back(b.c_str());
        const int32_t last_n = sp.dry_penalty_last_n < 0 ? in.n_ctx : sp.dry_penalty_last_n;
        llama_sampler_chain_add(chain,
                                llama_sampler_init_dry(in.vocab, in.n_ctx, sp.dry_multiplier, sp.dry_base,
                                                       sp.dry_allowed_length, last_n, br.data(), br.size()));
    };
    std::vector<std::string> order = sp.samplers;
    if (order.empty()) order = {"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"};
    if (sp.temperature <= 0.0f || sp.mirostat != 0) {
        // Only the samplers that change logits keep their place before greedy or Mirostat.
        for (const std::string &k : order) {
            if (k == "penalties") penalties();
            if (k == "dry") dry();
        }
        if (sp.temperature <= 0.0f) {
            llama_sampler_chain_add(chain, llama_sampler_init_greedy());
        } else {
            llama_sampler_chain_add(chain, llama_sampler_init_temp(sp.temperature));
            if (sp.mirostat == 1)
                llama_sampler_chain_add(
                    chain,
                    llama_sampler_init_mirostat(in.n_vocab, in.seed, sp.mirostat_tau, sp.mirostat_eta, 100));
            else
                llama_sampler_chain_add(
                    chain, llama_sampler_init_mirostat_v2(in.seed, sp.mirostat_tau, sp.mirostat_eta));
        }
        return chain;
    }
    for (const std::string &k : order) {
        if (k == "penalties") {
            penalties();
        } else if (k == "dry") {
            dry();
        } else if (k == "top_k") {
            if (sp.top_k > 0) llama_sampler_chain_add(chain, llama_sampler_init_top_k(sp.top_k));
        } else if (k == "typ_p") {
            if (sp.typical_p < 1.0f)
                llama_sampler_chain_add(
                    chain, llama_sampler_init_typical(sp.typical_p, std::max<size_t>(1, min_keep)));
        } else if (k == "top_p") {
            if (sp.top_p < 1.0f)
                llama_sampler_chain_add(chain,
                                        llama_sampler_init_top_p(sp.top_p, std::max<size_t>(1, min_keep)));
        } else if (k == "min_p") {
            if (sp.min_p > 0.0f)
                llama_sampler_chain_add(chain,
                                        llama_sampler_init_min_p(sp.min_p, std::max<size_t>(1, min_keep)));
        } else if (k == "xtc") {
            if (sp.xtc_probability > 0.0f)
                llama_sampler_chain_add(chain,
                                        llama_sampler_init_xtc(sp.xtc_probability, sp.xtc_threshold,
                                                               std::max<size_t>(1, min_keep), in.seed));
        } else if (k == "temperature") {
            if (sp.dynatemp_range > 0.0f)
                llama_sampler_chain_add(chain, llama_sampler_init_temp_ext(sp.temperature, sp.dynatemp_range,
                                                                           sp.dynatemp_exponent));
            else
                llama_sampler_chain_add(chain, llama_sampler_init_temp(sp.temperature));
        }
    }
    llama_sampler_chain_add(chain, llama_sampler_init_dist(in.seed));
    return chain;
}

llama_sampler *make_filter_chain(const SamplingParams &sp, const ChainInputs &in, std::string *error) {
    llama_sampler *chain = make_sampler_chain(sp, in, error);
    if (!chain) return nullptr;
    const int32_t n = llama_sampler_chain_n(chain);
    if (n > 0) llama_sampler_free(llama_sampler_chain_remove(chain, n - 1));
    return chain;
}

}  // namespace lctx::server
