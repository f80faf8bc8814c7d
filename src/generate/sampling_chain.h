// One sampler chain for every front end, built over llama.h from plain parameters: the grammar (or a lazy
// one with its triggers) and the logit biases first, then the samplers in `order` (llama.cpp's default:
// penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature) and a draw. Mirostat replaces the
// distribution samplers with temperature and itself; temperature <= 0 is greedy after the samplers that only
// change logits (penalties, DRY). The server's requests and the CLI's options write into SamplingConfig.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace lctx::generate {

// The samplers an order arranges (llama.cpp's common_sampler_type).
enum class SamplerStage { Penalties, Dry, TopK, TypicalP, TopP, MinP, Xtc, Temperature, Infill, TopNSigma };

// llama.cpp's default order: penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature (letters edkypmxt).
std::vector<SamplerStage> default_sampler_order();
// One name: penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature, infill, top_n_sigma, and
// llama.cpp's other spellings (top-k, top-p, nucleus, typical-p, typical, typ-p, typ, min-p, temp,
// top-n-sigma). False when unknown.
bool sampler_stage_from_name(const std::string &name, SamplerStage *out);
// The canonical name of a stage ("top_k").
const char *sampler_stage_name(SamplerStage s);
// Names separated by ';'; false with *why set at the first unknown or empty one.
bool parse_sampler_names(const std::string &s, std::vector<SamplerStage> *out, std::string *why);
// One letter each: e penalties, d dry, k top_k, y typ_p, p top_p, m min_p, x xtc, t temperature, i infill.
bool parse_sampler_letters(const std::string &s, std::vector<SamplerStage> *out, std::string *why);

// Every sampler llama.h has, each off at its default here; a front end sets what it uses. (Every member has
// an initializer, so that a designated initializer can name only some.)
struct SamplingConfig {
    float temperature = 1.0f;  // <= 0: greedy
    float dynatemp_range = 0.0f, dynatemp_exponent = 1.0f;
    int32_t top_k = 0;  // <= 0: off
    float top_p = 1.0f, min_p = 0.0f, typical_p = 1.0f;
    float top_n_sigma = -1.0f;  // only where `order` names it
    int32_t min_keep = 0;       // of top_p, min_p, typical and xtc (at least 1)
    // Penalties: look-back window (-1: the context, 0: none), repeat, frequency, presence.
    int32_t repeat_last_n = -1;
    float repeat_penalty = 1.0f, frequency_penalty = 0.0f, presence_penalty = 0.0f;
    float dry_multiplier = 0.0f, dry_base = 1.75f;
    int32_t dry_allowed_length = 2, dry_penalty_last_n = -1;  // -1: the context
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
    float xtc_probability = 0.0f, xtc_threshold = 0.1f;
    int32_t mirostat = 0;  // 1: Mirostat, 2: Mirostat 2.0
    float mirostat_tau = 5.0f, mirostat_eta = 0.1f;
    std::vector<llama_logit_bias> logit_bias{};  // added as given (-INFINITY bans)
    bool ignore_eos = false;                     // every end-of-generation token biased to -INFINITY
    std::string grammar{};                       // GBNF (start rule: root); "" none
    bool grammar_lazy = false;                   // the grammar starts at a trigger word or token
    std::vector<std::string> grammar_trigger_words{};
    std::vector<llama_token> grammar_trigger_tokens{};
    uint32_t seed = LLAMA_DEFAULT_SEED;
    std::vector<SamplerStage> order{};  // empty: default_sampler_order()
    // Adds top_k, typ_p, top_p and min_p even at their neutral values, as llama.cpp's CLI chain does (a
    // top_k of 0 then still sorts the candidates, which decides what a seeded draw picks).
    bool keep_neutral_samplers = false;
};

// llama.cpp's defaults (common_params_sampling at b4748, which llama-server's /completion keeps too):
// temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, a penalty window of 64; the rest as SamplingConfig's.
SamplingConfig llama_cpp_sampling_defaults();

// The chain for a context of n_ctx cells (what -1 means for the look-back windows), or nullptr with *error
// set (a grammar the vocabulary cannot use).
llama_sampler *make_sampler_chain(const SamplingConfig &c, const llama_vocab *vocab, int32_t n_ctx,
                                  std::string *error);
// The same chain without its final draw (greedy or dist): the filters speculative decoding's verifier
// (generate/speculative.h) applies before it chooses and draws itself. Not for Mirostat, which draws.
llama_sampler *make_filter_chain(const SamplingConfig &c, const llama_vocab *vocab, int32_t n_ctx,
                                 std::string *error);

// Feeds prompt tokens to the samplers of the chain that keep a history (penalties, DRY), but not to a
// grammar, which constrains only the generated text. Sampled tokens need no call: sampling accepts them.
void accept_prompt(llama_sampler *chain, const std::vector<llama_token> &prompt);
// Starts the chain's grammar over, leaving the other samplers' history and random state as they are.
void reset_grammar(llama_sampler *chain);
// With a grammar in the chain that is complete and allows no token but an end-of-generation one (which
// ignore_eos bans), nothing is left to sample: the output is finished.
bool grammar_exhausted(llama_sampler *chain, const llama_vocab *vocab);

}  // namespace lctx::generate
