#include "tools/lctx/cli_sampling.h"

#include "tools/lctx/capi_handles.h"
#include "tools/lctx/read_file.h"

namespace lctx::cli {

bool cli_sampling_config(const SamplingOptions &o, const llama_vocab *vocab, generate::SamplingConfig *out,
                         std::string *error) {
    generate::SamplingConfig c;
    c.temperature = o.temp;
    c.dynatemp_range = o.dynatemp_range;
    c.dynatemp_exponent = o.dynatemp_exp;
    c.top_k = o.top_k;
    c.top_p = o.top_p;
    c.min_p = o.min_p;
    c.typical_p = o.typical_p;
    c.repeat_last_n = o.repeat_last_n;
    c.repeat_penalty = o.repeat_penalty;
    c.frequency_penalty = o.frequency_penalty;
    c.presence_penalty = o.presence_penalty;
    c.dry_multiplier = o.dry_multiplier;
    c.dry_base = o.dry_base;
    c.dry_allowed_length = o.dry_allowed_length;
    c.dry_penalty_last_n = o.dry_penalty_last_n;
    if (!o.dry_sequence_breakers.empty()) c.dry_sequence_breakers = o.dry_sequence_breakers;
    c.xtc_probability = o.xtc_probability;
    c.xtc_threshold = o.xtc_threshold;
    c.mirostat = o.mirostat;
    c.mirostat_tau = o.mirostat_ent;
    c.mirostat_eta = o.mirostat_lr;
    c.seed = static_cast<uint32_t>(o.seed);
    c.ignore_eos = o.ignore_eos;
    c.keep_neutral_samplers = true;  // llama.cpp's CLI chain: top_k 0 still sorts
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    for (const std::string &s : o.logit_bias) {
        TokenBias tb{};
        std::string why;
        parse_logit_bias(s, &tb, &why);  // checked with the options
        if (tb.token < 0 || tb.token >= n_vocab) {
            *error = "--logit-bias: token " + std::to_string(tb.token) + " is outside the vocabulary (0 to " +
                     std::to_string(n_vocab - 1) + ")";
            return false;
        }
        c.logit_bias.push_back({tb.token, tb.bias});
    }
    std::string why;
    if (!o.samplers.empty()) generate::parse_sampler_names(o.samplers, &c.order, &why);
    if (!o.sampling_seq.empty()) generate::parse_sampler_letters(o.sampling_seq, &c.order, &why);
    c.grammar = o.grammar;
    if (!o.grammar_file.empty() && !read_whole_file(o.grammar_file, &c.grammar, &why)) {
        *error = "--grammar-file: " + why;
        return false;
    }
    if (!o.json_schema.empty() && !json_schema_grammar(o.json_schema, &c.grammar, &why)) {
        *error = "--json-schema: " + why;
        return false;
    }
    *out = std::move(c);
    return true;
}

SamplerPtr make_cli_sampler_chain(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                  std::string *error) {
    generate::SamplingConfig c;
    if (!cli_sampling_config(o, vocab, &c, error)) return nullptr;
    std::string why;
    SamplerPtr chain(generate::make_sampler_chain(c, vocab, n_ctx, &why));
    if (!chain) *error = "--grammar: " + capi_last_error();
    return chain;
}

}  // namespace lctx::cli
