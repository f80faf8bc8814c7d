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

bool is_encoder_decoder(const Model &model) {
    const ArchitectureInfo *a = find_architecture(model.hparams().arch_name);
    return a && a->has_encoder && a->has_decoder;
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
