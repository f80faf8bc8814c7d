#include "tools/lctx/common.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include "gguf/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "model/architectures.h"
#include "sampling/dry.h"
#include "sampling/grammar_sampler.h"
#include "sampling/infill.h"
#include "tools/lctx/read_file.h"
#include "util/error.h"
#include "vocab/vocab.h"

namespace lctx::cli {

namespace {
bool draw_progress(float progress, void *) {
    std::fprintf(stderr, "\rloading model: %3d%%", static_cast<int>(progress * 100.0f));
    if (progress >= 1.0f) std::fprintf(stderr, "\r\033[K");
    return true;
}

// A GGUF that opens but holds no tensors (a vocabulary-only file) cannot run.
bool has_no_weights(const std::string &path) {
    try {
        return gguf::File::open(path)->tensors().empty();
    } catch (const std::exception &) {
        return false;
    }
}
}  // namespace

std::unique_ptr<Model> load_model_or_report(const std::string &path, bool quiet,
                                            const std::vector<gguf::KeyValue> &overrides) {
    ModelLoadOptions opts;
    opts.overrides = overrides;
    const bool progress = !quiet && isatty(STDERR_FILENO);
    if (progress) opts.progress = draw_progress;
    try {
        return Model::load(path, opts);
    } catch (const std::exception &e) {
        if (progress) std::fprintf(stderr, "\r\033[K");
        if (has_no_weights(path))
            std::fprintf(stderr,
                         "lctx: cannot load model '%s': this file has no weights (a vocabulary-only GGUF? "
                         "'lctx tokenize' works with it)\n",
                         path.c_str());
        else
            std::fprintf(stderr, "lctx: cannot load model '%s': %s\n", path.c_str(), e.what());
        return nullptr;
    }
}

std::unique_ptr<Context> make_context_or_report(const Model &model, int32_t n_ctx, uint32_t n_batch_max,
                                                int n_threads, uint32_t n_ubatch, int n_threads_batch,
                                                GgmlType type_k, GgmlType type_v, bool flash_attn,
                                                const RopeOverrides &rope) {
    ContextParams cp;
    cp.n_ctx = n_ctx > 0 ? static_cast<uint32_t>(n_ctx) : model.hparams().n_ctx_train;
    cp.n_batch = std::max<uint32_t>(1, std::min(cp.n_ctx, n_batch_max));
    cp.n_ubatch = std::max<uint32_t>(1, std::min(n_ubatch, cp.n_batch));
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads_batch > 0 ? n_threads_batch : n_threads;
    cp.type_k = type_k;
    cp.type_v = type_v;
    cp.flash_attn = flash_attn;
    cp.rope = rope;
    try {
        return std::make_unique<Context>(model, cp);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx: cannot create the context: %s\n", e.what());
        return nullptr;
    }
}

bool check_generates_text(const Model &model, const std::string &path, const char *cmd) {
    if (model.weights().output.data) return true;
    std::fprintf(stderr,
                 "lctx %s: '%s' is an embedding model (%s, no output layer): it gives vectors, not text; "
                 "'lctx embed -m %s TEXT' prints them\n",
                 cmd, path.c_str(), model.hparams().arch_name.c_str(), path.c_str());
    return false;
}

bool is_encoder_decoder(const Model &model) {
    const ArchitectureInfo *a = find_architecture(model.hparams().arch_name);
    return a && a->has_encoder && a->has_decoder;
}

uint64_t kv_cache_bytes(const Model &model, uint64_t n_ctx, GgmlType type_k, GgmlType type_v) {
    const HParams &hp = model.hparams();
    if (hp.recurrent)  // one f32 state per sequence, whatever the context
        return static_cast<uint64_t>(hp.n_layer) *
               (row_size(GgmlType::F32, hp.n_embd_k_s()) + row_size(GgmlType::F32, hp.n_embd_v_s()));
    return static_cast<uint64_t>(hp.n_layer_cache()) * n_ctx *
           (row_size(type_k, hp.n_embd_k_gqa()) + row_size(type_v, hp.n_embd_v_gqa()));
}

void note_context_size(const Model &model, int32_t n_ctx, GgmlType type_k, GgmlType type_v, const char *cmd,
                       bool quiet) {
    if (quiet) return;
    const uint32_t n_train = model.hparams().n_ctx_train;
    const uint64_t cells = n_ctx > 0 ? static_cast<uint64_t>(n_ctx) : n_train;
    const bool above = n_ctx > 0 && n_train > 0 && static_cast<uint64_t>(n_ctx) > n_train;
    if (above)
        std::fprintf(
            stderr,
            "lctx %s: warning: -c %d is above the model's training context (%u tokens): the text may "
            "degrade past %u tokens\n",
            cmd, n_ctx, n_train, n_train);
    const uint64_t bytes = kv_cache_bytes(model, cells, type_k, type_v);
    if (above || bytes >= (uint64_t{1} << 30))
        std::fprintf(stderr, "lctx %s: the KV cache of %llu cells (%s K, %s V) will take %.1f MiB\n", cmd,
                     static_cast<unsigned long long>(cells), type_name(type_k), type_name(type_v),
                     static_cast<double>(bytes) / 1048576.0);
}

bool grammar_exhausted(SamplerChain &chain, const Vocab &vocab) {
    for (int32_t i = 0; i < chain.size(); ++i) {
        auto *g = dynamic_cast<GrammarSampler *>(chain.get(i));
        if (!g) continue;
        if (!g->complete()) return false;
        // Complete: is there a token other than an end of generation that the grammar still takes?
        const int32_t n_vocab = vocab.n_tokens();
        std::vector<TokenData> cand(static_cast<size_t>(n_vocab));
        for (int32_t id = 0; id < n_vocab; ++id) cand[static_cast<size_t>(id)] = {id, 0.0f, 0.0f};
        TokenDataArray cur{cand.data(), cand.size(), -1, false};
        g->apply(cur);
        for (size_t k = 0; k < cur.size; ++k)
            if (std::isfinite(cur.data[k].logit) && !vocab.is_eog(cur.data[k].id)) return false;
        return true;
    }
    return false;
}

void accept_prompt(SamplerChain &chain, const std::vector<int32_t> &prompt) {
    for (int32_t i = 0; i < chain.size(); ++i) {
        Sampler *s = chain.get(i);
        if (std::string(s->name()) == "grammar") continue;
        for (int32_t id : prompt) s->accept(id);
    }
}

void reset_grammar(SamplerChain &chain) {
    for (int32_t i = 0; i < chain.size(); ++i)
        if (std::string(chain.get(i)->name()) == "grammar") chain.get(i)->reset();
}

std::unique_ptr<SamplerChain> make_sampler_chain(const SamplingOptions &o, const Vocab &vocab,
                                                 int32_t n_ctx) {
    const uint32_t seed = static_cast<uint32_t>(o.seed);
    const int32_t n_vocab = vocab.n_tokens();
    auto chain = std::make_unique<SamplerChain>();
    std::vector<LogitBias> biases;
    for (const std::string &s : o.logit_bias) {
        TokenBias tb{};
        std::string why;
        parse_logit_bias(s, &tb, &why);
        if (tb.token < 0 || tb.token >= n_vocab)
            throw Error("--logit-bias: token " + std::to_string(tb.token) +
                        " is outside the vocabulary (0 to " + std::to_string(n_vocab - 1) + ")");
        biases.push_back({tb.token, tb.bias});
    }
    if (o.ignore_eos)
        for (int32_t id = 0; id < n_vocab; ++id)
            if (vocab.is_eog(id)) biases.push_back({id, -INFINITY});
    if (!biases.empty())
        chain->add(std::make_unique<LogitBiasSampler>(n_vocab, biases.data(), biases.size()));
    // A grammar first: every later sampler sees only the tokens it allows.
    if (!o.grammar.empty() || !o.grammar_file.empty() || !o.json_schema.empty()) {
        std::string gbnf = o.grammar;
        if (!o.grammar_file.empty()) {
            std::string why;
            if (!read_whole_file(o.grammar_file, &gbnf, &why)) throw Error("--grammar-file: " + why);
        }
        if (!o.json_schema.empty()) {
            try {
                gbnf = grammar::json_schema_to_gbnf(o.json_schema);
            } catch (const std::exception &e) {
                throw Error(std::string("--json-schema: ") + e.what());
            }
        }
        auto texts = std::make_shared<TokenTexts>();
        texts->piece.resize(n_vocab);
        texts->is_eog.resize(n_vocab);
        for (int32_t id = 0; id < n_vocab; ++id) {
            texts->piece[id] = vocab.token_to_piece(id, /*special=*/true);
            texts->is_eog[id] = vocab.is_eog(id);
        }
        try {
            chain->add(std::make_unique<GrammarSampler>(
                texts, gbnf, "root", GrammarTriggers{},
                [&vocab](std::string_view text) { return vocab.text_to_token(text); }));
        } catch (const grammar::GrammarError &e) {
            throw Error(std::string("--grammar: ") + e.what());
        }
    }
    std::vector<SamplerKind> order = default_sampler_order();
    std::string why;
    if (!o.samplers.empty()) parse_sampler_names(o.samplers, &order, &why);
    if (!o.sampling_seq.empty()) parse_sampler_letters(o.sampling_seq, &order, &why);
    const int32_t last_n = o.repeat_last_n < 0 ? n_ctx : o.repeat_last_n;
    // Penalties and DRY change logits (a greedy or Mirostat chain keeps them, in their order); the others
    // shape the distribution that dist draws from.
    auto add_logit_changers = [&](SamplerKind k) {
        if (k == SamplerKind::Penalties &&
            (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f || o.presence_penalty != 0.0f))
            chain->add(std::make_unique<PenaltiesSampler>(last_n, o.repeat_penalty, o.frequency_penalty,
                                                          o.presence_penalty));
        if (k == SamplerKind::Dry && o.dry_multiplier > 0.0f) {
            DryParams dp;
            dp.context_size = n_ctx;
            dp.multiplier = o.dry_multiplier;
            dp.base = o.dry_base;
            dp.allowed_length = o.dry_allowed_length;
            dp.penalty_last_n = o.dry_penalty_last_n;
            const std::vector<std::string> strs =
                o.dry_sequence_breakers.empty() ? dry_default_breakers() : o.dry_sequence_breakers;
            chain->add(std::make_unique<DrySampler>(
                dp, dry_breakers(
                        n_vocab, [&](Token id) { return vocab.detokenize({id}, false, true); },
                        [&](const std::string &t) { return vocab.tokenize(t, false, false); }, strs)));
        }
    };
    if (o.temp <= 0.0f || o.mirostat != 0) {
        for (SamplerKind k : order) add_logit_changers(k);
        if (o.temp <= 0.0f) {
            chain->add(std::make_unique<GreedySampler>());
            return chain;
        }
        chain->add(std::make_unique<TempSampler>(o.temp));
        if (o.mirostat == 1)
            chain->add(std::make_unique<MirostatSampler>(n_vocab, seed, o.mirostat_ent, o.mirostat_lr, 100));
        else
            chain->add(std::make_unique<MirostatV2Sampler>(seed, o.mirostat_ent, o.mirostat_lr));
        return chain;
    }
    for (SamplerKind k : order) {
        switch (k) {
            case SamplerKind::Penalties:
            case SamplerKind::Dry:
                add_logit_changers(k);
                break;
            case SamplerKind::TopK:
                chain->add(std::make_unique<TopKSampler>(o.top_k));
                break;
            case SamplerKind::TypicalP:
                chain->add(std::make_unique<TypicalSampler>(o.typical_p, 1));
                break;
            case SamplerKind::TopP:
                chain->add(std::make_unique<TopPSampler>(o.top_p, 1));
                break;
            case SamplerKind::MinP:
                chain->add(std::make_unique<MinPSampler>(o.min_p, 1));
                break;
            case SamplerKind::Xtc:
                if (o.xtc_probability > 0.0f)
                    chain->add(std::make_unique<XtcSampler>(o.xtc_probability, o.xtc_threshold, 1, seed));
                break;
            case SamplerKind::Temperature:
                if (o.dynatemp_range > 0.0f)
                    chain->add(std::make_unique<TempExtSampler>(o.temp, o.dynatemp_range, o.dynatemp_exp));
                else
                    chain->add(std::make_unique<TempSampler>(o.temp));
                break;
            case SamplerKind::TopNSigma:  // only through the generation layer's chain (llama.h)
                break;
            case SamplerKind::Infill: {
                auto iv = std::make_shared<InfillVocab>();
                iv->piece.resize(static_cast<size_t>(n_vocab));
                iv->is_eog.resize(static_cast<size_t>(n_vocab));
                for (int32_t id = 0; id < n_vocab; ++id) {
                    iv->piece[static_cast<size_t>(id)] = vocab.token_to_piece(id, /*special=*/false);
                    iv->is_eog[static_cast<size_t>(id)] = vocab.is_eog(id);
                }
                iv->eot = vocab.eot();
                chain->add(std::make_unique<InfillSampler>(iv));
                break;
            }
        }
    }
    chain->add(std::make_unique<DistSampler>(seed));
    return chain;
}

}  // namespace lctx::cli
