#include "tools/lctx/cli_sampling.h"

#include <cstdio>

#include "tools/lctx/capi_handles.h"
#include "tools/lctx/read_file.h"

namespace lctx::cli {

bool cli_sampling_config(const SamplingOptions &o, const llama_vocab *vocab, generate::SamplingConfig *out,
                         std::string *error) {
    generate::SamplingConfig c = o.config;
    c.seed = static_cast<uint32_t>(o.seed);
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

SamplerPtr make_cli_sampler_chain(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                  const char *cmd) {
    std::string error;
    SamplerPtr chain = make_cli_sampler_chain(o, vocab, n_ctx, &error);
    if (!chain) std::fprintf(stderr, "lctx %s: %s\n", cmd, error.c_str());
    return chain;
}

}  // namespace lctx::cli
