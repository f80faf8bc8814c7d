#include "generate/sampling_chain.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace lctx::generate {

namespace {

struct StageName {
    const char *name;
    SamplerStage stage;
};

// The canonical names first (one per stage), then the other spellings llama.cpp's --samplers accepts.
constexpr StageName kStageNames[] = {
    {"penalties", SamplerStage::Penalties},
    {"dry", SamplerStage::Dry},
    {"top_k", SamplerStage::TopK},
    {"typ_p", SamplerStage::TypicalP},
    {"top_p", SamplerStage::TopP},
    {"min_p", SamplerStage::MinP},
    {"xtc", SamplerStage::Xtc},
    {"temperature", SamplerStage::Temperature},
    {"infill", SamplerStage::Infill},
    {"top_n_sigma", SamplerStage::TopNSigma},
    {"top-k", SamplerStage::TopK},
    {"top-p", SamplerStage::TopP},
    {"nucleus", SamplerStage::TopP},
    {"typical-p", SamplerStage::TypicalP},
    {"typical", SamplerStage::TypicalP},
    {"typ-p", SamplerStage::TypicalP},
    {"typ", SamplerStage::TypicalP},
    {"min-p", SamplerStage::MinP},
    {"temp", SamplerStage::Temperature},
    {"top-n-sigma", SamplerStage::TopNSigma},
};

constexpr std::pair<char, SamplerStage> kStageLetters[] = {
    {'e', SamplerStage::Penalties}, {'d', SamplerStage::Dry},         {'k', SamplerStage::TopK},
    {'y', SamplerStage::TypicalP},  {'p', SamplerStage::TopP},        {'m', SamplerStage::MinP},
    {'x', SamplerStage::Xtc},       {'t', SamplerStage::Temperature}, {'i', SamplerStage::Infill},
};

// Builds one chain; each helper adds its sampler only when its setting changes anything.
class ChainBuilder {
  public:
    ChainBuilder(const SamplingConfig &c, const llama_vocab *vocab, int32_t n_ctx)
        : c_(c),
          vocab_(vocab),
          n_ctx_(n_ctx),
          n_vocab_(llama_vocab_n_tokens(vocab)),
          min_keep_(std::max<size_t>(1, static_cast<size_t>(std::max(0, c.min_keep)))) {
        llama_sampler_chain_params p = llama_sampler_chain_default_params();
        p.no_perf = true;
        chain_ = llama_sampler_chain_init(p);
    }

    llama_sampler *build(std::string *error) {
        if (!add_grammar(error)) {
            llama_sampler_free(chain_);
            return nullptr;
        }
        add_logit_bias();
        const std::vector<SamplerStage> order = c_.order.empty() ? default_sampler_order() : c_.order;
        if (c_.temperature <= 0.0f || c_.mirostat != 0) {
            // Only the samplers that change logits keep their place before greedy or Mirostat.
            for (SamplerStage s : order)
                if (s == SamplerStage::Penalties || s == SamplerStage::Dry) add_stage(s);
            if (c_.temperature <= 0.0f) {
                add(llama_sampler_init_greedy());
            } else {
                add(llama_sampler_init_temp(c_.temperature));
                if (c_.mirostat == 1)
                    add(llama_sampler_init_mirostat(n_vocab_, c_.seed, c_.mirostat_tau, c_.mirostat_eta,
                                                    100));
                else
                    add(llama_sampler_init_mirostat_v2(c_.seed, c_.mirostat_tau, c_.mirostat_eta));
            }
            return chain_;
        }
        for (SamplerStage s : order) add_stage(s);
        add(llama_sampler_init_dist(c_.seed));
        return chain_;
    }

  private:
    void add(llama_sampler *s) { llama_sampler_chain_add(chain_, s); }

    bool add_grammar(std::string *error) {
        if (c_.grammar.empty()) return true;
        llama_sampler *g = nullptr;
        if (c_.grammar_lazy) {
            std::vector<const char *> words;
            for (const std::string &w : c_.grammar_trigger_words) words.push_back(w.c_str());
            g = llama_sampler_init_grammar_lazy(vocab_, c_.grammar.c_str(), "root", words.data(),
                                                words.size(), c_.grammar_trigger_tokens.data(),
                                                c_.grammar_trigger_tokens.size());
        } else {
            g = llama_sampler_init_grammar(vocab_, c_.grammar.c_str(), "root");
        }
        if (!g) {
            *error = "the grammar cannot be used with this model's vocabulary";
            return false;
        }
        add(g);
        return true;
    }

    void add_logit_bias() {
        std::vector<llama_logit_bias> lb = c_.logit_bias;
        if (c_.ignore_eos)
            for (llama_token t = 0; t < n_vocab_; ++t)
                if (llama_vocab_is_eog(vocab_, t)) lb.push_back({t, -INFINITY});
        if (!lb.empty())
            add(llama_sampler_init_logit_bias(n_vocab_, static_cast<int32_t>(lb.size()), lb.data()));
    }

    void add_stage(SamplerStage s) {
        const bool all = c_.keep_neutral_samplers;
        switch (s) {
            case SamplerStage::Penalties:
                if (c_.presence_penalty == 0.0f && c_.frequency_penalty == 0.0f && c_.repeat_penalty == 1.0f)
                    return;
                add(llama_sampler_init_penalties(c_.repeat_last_n < 0 ? n_ctx_ : c_.repeat_last_n,
                                                 c_.repeat_penalty, c_.frequency_penalty,
                                                 c_.presence_penalty));
                return;
            case SamplerStage::Dry: {
                if (c_.dry_multiplier <= 0.0f) return;
                std::vector<const char *> br;
                for (const std::string &b : c_.dry_sequence_breakers) br.push_back(b.c_str());
                add(llama_sampler_init_dry(
                    vocab_, n_ctx_, c_.dry_multiplier, c_.dry_base, c_.dry_allowed_length,
                    c_.dry_penalty_last_n < 0 ? n_ctx_ : c_.dry_penalty_last_n, br.data(), br.size()));
                return;
            }
            case SamplerStage::TopK:
                if (all || c_.top_k > 0) add(llama_sampler_init_top_k(c_.top_k));
                return;
            case SamplerStage::TypicalP:
                if (all || c_.typical_p < 1.0f) add(llama_sampler_init_typical(c_.typical_p, min_keep_));
                return;
            case SamplerStage::TopP:
                if (all || c_.top_p < 1.0f) add(llama_sampler_init_top_p(c_.top_p, min_keep_));
                return;
            case SamplerStage::MinP:
                if (all || c_.min_p > 0.0f) add(llama_sampler_init_min_p(c_.min_p, min_keep_));
                return;
            case SamplerStage::Xtc:
                if (c_.xtc_probability > 0.0f)
                    add(llama_sampler_init_xtc(c_.xtc_probability, c_.xtc_threshold, min_keep_, c_.seed));
                return;
            case SamplerStage::Temperature:
                if (c_.dynatemp_range > 0.0f)
                    add(llama_sampler_init_temp_ext(c_.temperature, c_.dynatemp_range, c_.dynatemp_exponent));
                else
                    add(llama_sampler_init_temp(c_.temperature));
                return;
            case SamplerStage::Infill:
                add(llama_sampler_init_infill(vocab_));
                return;
            case SamplerStage::TopNSigma:
                if (c_.top_n_sigma > 0.0f) add(llama_sampler_init_top_n_sigma(c_.top_n_sigma));
                return;
        }
    }

    const SamplingConfig &c_;
    const llama_vocab *vocab_;
    int32_t n_ctx_;
    int32_t n_vocab_;
    size_t min_keep_;
    llama_sampler *chain_ = nullptr;
};

bool is_grammar(const llama_sampler *s) {
    return std::string(llama_sampler_name(s)) == "grammar";
}

}  // namespace

std::vector<SamplerStage> default_sampler_order() {
    return {SamplerStage::Penalties, SamplerStage::Dry,  SamplerStage::TopK, SamplerStage::TypicalP,
            SamplerStage::TopP,      SamplerStage::MinP, SamplerStage::Xtc,  SamplerStage::Temperature};
}

bool sampler_stage_from_name(const std::string &name, SamplerStage *out) {
    for (const StageName &n : kStageNames)
        if (name == n.name) {
            *out = n.stage;
            return true;
        }
    return false;
}

const char *sampler_stage_name(SamplerStage s) {
    for (const StageName &n : kStageNames)
        if (n.stage == s) return n.name;
    return "?";
}

bool parse_sampler_names(const std::string &s, std::vector<SamplerStage> *out, std::string *why) {
    out->clear();
    std::stringstream in(s);
    std::string name;
    while (std::getline(in, name, ';')) {
        if (name.empty()) continue;  // "top_k;;temp" or a trailing ';'
        SamplerStage st;
        if (!sampler_stage_from_name(name, &st)) {
            *why =
                "unknown sampler '" + name +
                "' (penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature, infill; separated by ';')";
            return false;
        }
        out->push_back(st);
    }
    if (out->empty()) {
        *why = "no sampler named (e.g. 'top_k;top_p;temperature')";
        return false;
    }
    return true;
}

bool parse_sampler_letters(const std::string &s, std::vector<SamplerStage> *out, std::string *why) {
    out->clear();
    for (char c : s) {
        bool found = false;
        for (const auto &[letter, stage] : kStageLetters)
            if (c == letter) {
                out->push_back(stage);
                found = true;
                break;
            }
        if (!found) {
            *why =
                std::string("unknown sampler letter '") + c +
                "' (e penalties, d dry, k top_k, y typ_p, p top_p, m min_p, x xtc, t temperature, i infill)";
            return false;
        }
    }
    if (out->empty()) {
        *why = "no sampler given (e.g. 'kpt')";
        return false;
    }
    return true;
}

SamplingConfig llama_cpp_sampling_defaults() {
    return {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_last_n = 64};
}

llama_sampler *make_sampler_chain(const SamplingConfig &c, const llama_vocab *vocab, int32_t n_ctx,
                                  std::string *error) {
    return ChainBuilder(c, vocab, n_ctx).build(error);
}

llama_sampler *make_filter_chain(const SamplingConfig &c, const llama_vocab *vocab, int32_t n_ctx,
                                 std::string *error) {
    llama_sampler *chain = make_sampler_chain(c, vocab, n_ctx, error);
    if (!chain) return nullptr;
    const int32_t n = llama_sampler_chain_n(chain);
    if (n > 0) llama_sampler_free(llama_sampler_chain_remove(chain, n - 1));
    return chain;
}

void accept_prompt(llama_sampler *chain, const std::vector<llama_token> &prompt) {
    for (int32_t i = 0; i < llama_sampler_chain_n(chain); ++i) {
        llama_sampler *s = llama_sampler_chain_get(chain, i);
        if (is_grammar(s)) continue;
        for (llama_token t : prompt) llama_sampler_accept(s, t);
    }
}

void reset_grammar(llama_sampler *chain) {
    for (int32_t i = 0; i < llama_sampler_chain_n(chain); ++i) {
        llama_sampler *s = llama_sampler_chain_get(chain, i);
        if (is_grammar(s)) llama_sampler_reset(s);
    }
}

bool grammar_exhausted(llama_sampler *chain, const llama_vocab *vocab) {
    for (int32_t i = 0; i < llama_sampler_chain_n(chain); ++i) {
        llama_sampler *g = llama_sampler_chain_get(chain, i);
        if (!is_grammar(g)) continue;
        // The grammar alone over every token: complete means it lets an end of generation through.
        const int32_t n_vocab = llama_vocab_n_tokens(vocab);
        std::vector<llama_token_data> cand(static_cast<size_t>(n_vocab));
        for (llama_token t = 0; t < n_vocab; ++t) cand[static_cast<size_t>(t)] = {t, 0.0f, 0.0f};
        llama_token_data_array cur{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(g, &cur);
        bool eog_allowed = false;
        for (size_t k = 0; k < cur.size; ++k) {
            if (!std::isfinite(cur.data[k].logit)) continue;
            if (!llama_vocab_is_eog(vocab, cur.data[k].id)) return false;
            eog_allowed = true;
        }
        return eog_allowed;
    }
    return false;
}

}  // namespace lctx::generate
