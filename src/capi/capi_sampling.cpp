// C API: samplers. A `struct llama_sampler` is {iface, ctx}. Built-in samplers (a chain included) share one
// iface whose ctx is the lctx::Sampler it owns. A chain is an lctx::SamplerChain whose members are
// CSampler adapters, each owning the llama_sampler that was added, so chain_get / chain_remove hand back
// the very pointer the caller added, and user samplers (llama_sampler_init) mix freely with built-ins.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "sampling/dry.h"
#include "sampling/grammar_sampler.h"
#include "sampling/infill.h"
#include "sampling/samplers.h"
#include "util/error.h"

using lctx::capi::guard;
using lctx::capi::guard_void;

namespace {

lctx::TokenDataArray &as_cpp(llama_token_data_array *a) {
    return *reinterpret_cast<lctx::TokenDataArray *>(a);
}
llama_token_data_array *as_c(lctx::TokenDataArray *a) {
    return reinterpret_cast<llama_token_data_array *>(a);
}

lctx::Sampler *impl(const llama_sampler *s) {
    return static_cast<lctx::Sampler *>(s->ctx);
}

// ---- the iface of built-in samplers (each entry guards: C callers may call iface functions directly) ----

llama_sampler *wrap(std::unique_ptr<lctx::Sampler> s);

const char *builtin_name(const llama_sampler *s) {
    return impl(s)->name();
}
void builtin_accept(llama_sampler *s, llama_token token) {
    guard_void("llama_sampler_accept", [&] { impl(s)->accept(token); });
}
void builtin_apply(llama_sampler *s, llama_token_data_array *cur) {
    guard_void("llama_sampler_apply", [&] { impl(s)->apply(as_cpp(cur)); });
}
void builtin_reset(llama_sampler *s) {
    guard_void("llama_sampler_reset", [&] { impl(s)->reset(); });
}
llama_sampler *builtin_clone(const llama_sampler *s) {
    return guard("llama_sampler_clone", static_cast<llama_sampler *>(nullptr),
                 [&] { return wrap(impl(s)->clone()); });
}
void builtin_free(llama_sampler *s) {
    delete impl(s);
}

const llama_sampler_i kBuiltinIface = {builtin_name,  builtin_accept, builtin_apply,
                                       builtin_reset, builtin_clone,  builtin_free};

llama_sampler *wrap(std::unique_ptr<lctx::Sampler> s) {
    auto *out = new llama_sampler{&kBuiltinIface, s.get()};
    s.release();
    return out;
}

bool is_builtin(const llama_sampler *s) {
    return s && s->iface == &kBuiltinIface;
}

lctx::SamplerChain *as_chain(const llama_sampler *s) {
    return is_builtin(s) ? dynamic_cast<lctx::SamplerChain *>(impl(s)) : nullptr;
}

// A chain member: any llama_sampler, owned, seen through the C++ interface.
class CSampler final : public lctx::Sampler {
  public:
    explicit CSampler(llama_sampler *s) : s_(s) {}
    ~CSampler() override { llama_sampler_free(s_); }

    const char *name() const override { return llama_sampler_name(s_); }
    void accept(lctx::Token token) override { llama_sampler_accept(s_, token); }
    void apply(lctx::TokenDataArray &cur) override { llama_sampler_apply(s_, as_c(&cur)); }
    void reset() override { llama_sampler_reset(s_); }
    std::unique_ptr<lctx::Sampler> clone() const override {
        llama_sampler *c = llama_sampler_clone(s_);
        if (!c) throw lctx::Error(std::string("sampler '") + name() + "' cannot be cloned");
        return std::make_unique<CSampler>(c);
    }
    uint32_t seed() const override { return llama_sampler_get_seed(s_); }

    llama_sampler *get() const { return s_; }
    llama_sampler *release() {
        llama_sampler *s = s_;
        s_ = nullptr;
        return s;
    }

  private:
    llama_sampler *s_;
};

// Stands in for a grammar sampler given no grammar (upstream's pass-through).
class PassThroughGrammar final : public lctx::Sampler {
  public:
    const char *name() const override { return "grammar"; }
    void apply(lctx::TokenDataArray &) override {}
    std::unique_ptr<lctx::Sampler> clone() const override {
        return std::make_unique<PassThroughGrammar>(*this);
    }
};

template <typename T, typename... Args>
llama_sampler *make(const char *fn, Args &&...args) {
    return guard(fn, static_cast<llama_sampler *>(nullptr),
                 [&] { return wrap(std::make_unique<T>(std::forward<Args>(args)...)); });
}

// Each token's text as the grammar sees it (its piece with special tokens rendered, as b4748).
std::shared_ptr<const lctx::TokenTexts> token_texts(const lctx::Vocab &v) {
    auto t = std::make_shared<lctx::TokenTexts>();
    t->piece.resize(v.n_tokens());
    t->is_eog.resize(v.n_tokens());
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        t->piece[id] = v.token_to_piece(id, /*special=*/true);
        t->is_eog[id] = v.is_eog(id);
    }
    return t;
}

// No grammar text: a sampler that lets everything through (as b4748). A grammar that cannot be used: NULL
// with the reason logged.
llama_sampler *init_grammar(const char *fn, const llama_vocab *vocab, const char *grammar_str,
                            const char *grammar_root, lctx::GrammarTriggers triggers) {
    if (!grammar_str || !*grammar_str) return make<PassThroughGrammar>(fn);
    LCTX_CAPI_REQUIRE(vocab, nullptr);
    const std::string root = grammar_root && *grammar_root ? grammar_root : "root";
    return guard(fn, static_cast<llama_sampler *>(nullptr), [&] {
        const lctx::Vocab &v = lctx::capi::vocab_of(vocab);
        // `<TEXT>` token references name the token whose text is exactly TEXT.
        const auto by_text = [&v](std::string_view text) { return v.text_to_token(text); };
        return wrap(std::make_unique<lctx::GrammarSampler>(token_texts(v), grammar_str, root,
                                                           std::move(triggers), by_text));
    });
}

}  // namespace

extern "C" {

// ---- core ----

struct llama_sampler *llama_sampler_init(const struct llama_sampler_i *iface, llama_sampler_context_t ctx) {
    return new llama_sampler{iface, ctx};
}

const char *llama_sampler_name(const struct llama_sampler *smpl) {
    if (!smpl || !smpl->iface || !smpl->iface->name) return "(null)";
    return smpl->iface->name(smpl);
}

void llama_sampler_accept(struct llama_sampler *smpl, llama_token token) {
    if (smpl && smpl->iface && smpl->iface->accept) smpl->iface->accept(smpl, token);
}

void llama_sampler_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    LCTX_CAPI_REQUIRE(smpl, );
    LCTX_CAPI_REQUIRE(cur_p, );
    if (!smpl->iface || !smpl->iface->apply) {
        LCTX_LOG_ERROR("%s: sampler '%s' has no apply function", __func__, llama_sampler_name(smpl));
        return;
    }
    smpl->iface->apply(smpl, cur_p);
}

void llama_sampler_reset(struct llama_sampler *smpl) {
    if (smpl && smpl->iface && smpl->iface->reset) smpl->iface->reset(smpl);
}

struct llama_sampler *llama_sampler_clone(const struct llama_sampler *smpl) {
    LCTX_CAPI_REQUIRE(smpl, nullptr);
    if (smpl->iface && smpl->iface->clone) return smpl->iface->clone(smpl);
    if (!smpl->ctx) return llama_sampler_init(smpl->iface, nullptr);  // stateless: share the iface
    LCTX_LOG_ERROR("%s: sampler '%s' has state but no clone function", __func__, llama_sampler_name(smpl));
    return nullptr;
}

void llama_sampler_free(struct llama_sampler *smpl) {
    if (!smpl) return;
    if (smpl->iface && smpl->iface->free) smpl->iface->free(smpl);
    delete smpl;
}

// ---- chain ----

struct llama_sampler_chain_params llama_sampler_chain_default_params(void) {
    llama_sampler_chain_params p{};
    p.no_perf = true;
    return p;
}

struct llama_sampler *llama_sampler_chain_init(struct llama_sampler_chain_params params) {
    lctx::SamplerChainParams p;
    p.no_perf = params.no_perf;
    return make<lctx::SamplerChain>(__func__, p);
}

void llama_sampler_chain_add(struct llama_sampler *chain, struct llama_sampler *smpl) {
    lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: the first argument is not a sampler chain", __func__);
        return;
    }
    if (!smpl) {
        LCTX_LOG_ERROR("%s: the sampler to add is NULL (was it refused at creation?)", __func__);
        return;
    }
    guard_void(__func__, [&] {
        auto member = std::make_unique<CSampler>(smpl);
        c->add(std::move(member));
    });
}

struct llama_sampler *llama_sampler_chain_get(const struct llama_sampler *chain, int32_t i) {
    lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return nullptr;
    }
    auto *m = dynamic_cast<CSampler *>(c->get(i));
    return m ? m->get() : nullptr;
}

int llama_sampler_chain_n(const struct llama_sampler *chain) {
    lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return 0;
    }
    return c->size();
}

struct llama_sampler *llama_sampler_chain_remove(struct llama_sampler *chain, int32_t i) {
    lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return nullptr;
    }
    std::unique_ptr<lctx::Sampler> m = c->remove(i);
    auto *cs = dynamic_cast<CSampler *>(m.get());
    return cs ? cs->release() : nullptr;
}

// ---- built-in samplers ----

struct llama_sampler *llama_sampler_init_greedy(void) {
    return make<lctx::GreedySampler>(__func__);
}
struct llama_sampler *llama_sampler_init_dist(uint32_t seed) {
    return make<lctx::DistSampler>(__func__, seed);
}
struct llama_sampler *llama_sampler_init_softmax(void) {
    return make<lctx::SoftmaxSampler>(__func__);
}
struct llama_sampler *llama_sampler_init_top_k(int32_t k) {
    return make<lctx::TopKSampler>(__func__, k);
}
struct llama_sampler *llama_sampler_init_top_p(float p, size_t min_keep) {
    return make<lctx::TopPSampler>(__func__, p, min_keep);
}
struct llama_sampler *llama_sampler_init_min_p(float p, size_t min_keep) {
    return make<lctx::MinPSampler>(__func__, p, min_keep);
}
struct llama_sampler *llama_sampler_init_typical(float p, size_t min_keep) {
    return make<lctx::TypicalSampler>(__func__, p, min_keep);
}
struct llama_sampler *llama_sampler_init_temp(float t) {
    return make<lctx::TempSampler>(__func__, t);
}
struct llama_sampler *llama_sampler_init_temp_ext(float t, float delta, float exponent) {
    return make<lctx::TempExtSampler>(__func__, t, delta, exponent);
}
struct llama_sampler *llama_sampler_init_xtc(float p, float t, size_t min_keep, uint32_t seed) {
    return make<lctx::XtcSampler>(__func__, p, t, min_keep, seed);
}
struct llama_sampler *llama_sampler_init_top_n_sigma(float n) {
    return make<lctx::TopNSigmaSampler>(__func__, n);
}
struct llama_sampler *llama_sampler_init_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta,
                                                  int32_t m) {
    return make<lctx::MirostatSampler>(__func__, n_vocab, seed, tau, eta, m);
}
struct llama_sampler *llama_sampler_init_mirostat_v2(uint32_t seed, float tau, float eta) {
    return make<lctx::MirostatV2Sampler>(__func__, seed, tau, eta);
}
struct llama_sampler *llama_sampler_init_penalties(int32_t penalty_last_n, float penalty_repeat,
                                                   float penalty_freq, float penalty_present) {
    return make<lctx::PenaltiesSampler>(__func__, penalty_last_n, penalty_repeat, penalty_freq,
                                        penalty_present);
}
struct llama_sampler *llama_sampler_init_logit_bias(int32_t n_vocab, int32_t n_logit_bias,
                                                    const llama_logit_bias *logit_bias) {
    const size_t n = n_logit_bias > 0 && logit_bias ? static_cast<size_t>(n_logit_bias) : 0;
    // llama_logit_bias and lctx::LogitBias share their layout (pinned in sampling/logit_bias.h).
    return make<lctx::LogitBiasSampler>(__func__, n_vocab,
                                        reinterpret_cast<const lctx::LogitBias *>(logit_bias), n);
}

struct llama_sampler *llama_sampler_init_grammar(const struct llama_vocab *vocab, const char *grammar_str,
                                                 const char *grammar_root) {
    return init_grammar(__func__, vocab, grammar_str, grammar_root, {});
}

struct llama_sampler *llama_sampler_init_grammar_lazy(const struct llama_vocab *vocab,
                                                      const char *grammar_str, const char *grammar_root,
                                                      const char **trigger_words, size_t num_trigger_words,
                                                      const llama_token *trigger_tokens,
                                                      size_t num_trigger_tokens) {
    lctx::GrammarTriggers t;
    t.lazy = true;
    for (size_t i = 0; trigger_words && i < num_trigger_words; ++i)
        if (trigger_words[i]) t.words.emplace_back(trigger_words[i]);
    if (trigger_tokens) t.tokens.assign(trigger_tokens, trigger_tokens + num_trigger_tokens);
    return init_grammar(__func__, vocab, grammar_str, grammar_root, std::move(t));
}

struct llama_sampler *llama_sampler_init_dry(const struct llama_vocab *vocab, int32_t context_size,
                                             float dry_multiplier, float dry_base, int32_t dry_allowed_length,
                                             int32_t dry_penalty_last_n, const char **seq_breakers,
                                             size_t num_breakers) {
    lctx::DryParams p;
    p.context_size = context_size;
    p.multiplier = dry_multiplier;
    p.base = dry_base;
    p.allowed_length = dry_allowed_length;
    p.penalty_last_n = dry_penalty_last_n;
    const bool enabled = dry_multiplier != 0.0f && dry_base >= 1.0f && dry_penalty_last_n != 0;
    return guard(__func__, static_cast<llama_sampler *>(nullptr), [&]() -> llama_sampler * {
        std::vector<lctx::DryBreaker> breakers;
        if (enabled && seq_breakers && num_breakers > 0) {
            if (!vocab) {
                LCTX_LOG_ERROR(
                    "llama_sampler_init_dry: sequence breakers need the vocabulary; vocab is NULL");
                return nullptr;
            }
            const lctx::Vocab &v = lctx::capi::vocab_of(vocab);
            std::vector<std::string> strs;
            for (size_t i = 0; i < num_breakers; ++i)
                strs.emplace_back(seq_breakers[i] ? seq_breakers[i] : "");
            breakers = lctx::dry_breakers(
                v.n_tokens(), [&](lctx::Token id) { return v.detokenize({id}, false, true); },
                [&](const std::string &text) { return v.tokenize(text, false, false); }, strs);
        }
        return wrap(std::make_unique<lctx::DrySampler>(p, std::move(breakers)));
    });
}

struct llama_sampler *llama_sampler_init_infill(const struct llama_vocab *vocab) {
    LCTX_CAPI_REQUIRE(vocab, nullptr);
    return guard(__func__, static_cast<llama_sampler *>(nullptr), [&] {
        const lctx::Vocab &v = lctx::capi::vocab_of(vocab);
        auto iv = std::make_shared<lctx::InfillVocab>();
        iv->piece.resize(v.n_tokens());
        iv->is_eog.resize(v.n_tokens());
        for (int32_t id = 0; id < v.n_tokens(); ++id) {
            iv->piece[id] = v.token_to_piece(id, /*special=*/false);
            iv->is_eog[id] = v.is_eog(id);
        }
        iv->eot = llama_vocab_eot(vocab);
        return wrap(std::make_unique<lctx::InfillSampler>(std::move(iv)));
    });
}

uint32_t llama_sampler_get_seed(const struct llama_sampler *smpl) {
    if (!is_builtin(smpl)) return LLAMA_DEFAULT_SEED;
    return impl(smpl)->seed();
}

llama_token llama_sampler_sample(struct llama_sampler *smpl, struct llama_context *ctx, int32_t idx) {
    LCTX_CAPI_REQUIRE(smpl, LLAMA_TOKEN_NULL);
    LCTX_CAPI_REQUIRE(ctx, LLAMA_TOKEN_NULL);
    const float *logits = llama_get_logits_ith(ctx, idx);
    if (!logits) {
        LCTX_LOG_ERROR("%s: no logits at index %d", __func__, idx);
        return LLAMA_TOKEN_NULL;
    }
    const int32_t n_vocab = static_cast<int32_t>(ctx->model->impl->hparams().n_vocab);
    return guard(__func__, LLAMA_TOKEN_NULL, [&]() -> llama_token {
        if (lctx::SamplerChain *c = as_chain(smpl)) return c->sample(logits, n_vocab);
        if (is_builtin(smpl)) return lctx::sample(*impl(smpl), logits, n_vocab);
        // A user sampler: the same steps through its iface.
        std::vector<llama_token_data> cand(static_cast<size_t>(n_vocab));
        for (int32_t i = 0; i < n_vocab; ++i) cand[i] = {i, logits[i], 0.0f};
        llama_token_data_array cur{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(smpl, &cur);
        if (cur.selected < 0 || static_cast<size_t>(cur.selected) >= cur.size)
            throw lctx::Error(std::string("sampler '") + llama_sampler_name(smpl) + "' selected no token");
        const llama_token token = cur.data[cur.selected].id;
        llama_sampler_accept(smpl, token);
        return token;
    });
}

// ---- perf (chains only) ----

struct llama_perf_sampler_data llama_perf_sampler(const struct llama_sampler *chain) {
    llama_perf_sampler_data d{};
    const lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return d;
    }
    d.t_sample_ms = c->t_sample_ms();
    d.n_sample = c->n_sample();
    return d;
}

void llama_perf_sampler_print(const struct llama_sampler *chain) {
    if (!as_chain(chain)) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return;
    }
    const llama_perf_sampler_data d = llama_perf_sampler(chain);
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "%s:    sampling time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)\n",
        __func__, d.t_sample_ms, d.n_sample, d.t_sample_ms / d.n_sample, 1e3 / d.t_sample_ms * d.n_sample);
    lctx::capi::print_info(buf);
}

void llama_perf_sampler_reset(struct llama_sampler *chain) {
    lctx::SamplerChain *c = as_chain(chain);
    if (!c) {
        LCTX_LOG_ERROR("%s: not a sampler chain", __func__);
        return;
    }
    c->perf_reset();
}

}  // extern "C"
