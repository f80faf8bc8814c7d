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

std::string default_model_path() {
    namespace fs = std::filesystem;
    const char *name = "stories260K.gguf";
    std::vector<fs::path> candidates = {LCTX_DEFAULT_MODEL, fs::path("models") / name};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / "models" / name);
    for (const fs::path &p : candidates)
        if (fs::exists(p, ec)) return p.string();
    return LCTX_DEFAULT_MODEL;
}

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

std::string kv_cache_type_from_name(const std::string &name, const char *option, GgmlType *out) {
    GgmlType t;
    if (!type_from_name(name.c_str(), &t)) return std::string(option) + ": unknown type '" + name + "'";
    if (!is_kv_cache_type(t))
        return std::string(option) + ": " + name + " is not a KV cache type (" + kKvCacheTypeNames + ")";
    *out = t;
    return "";
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

void add_sampling_options(CLI::App &app, SamplingOptions &o) {
    app.add_option("--temp", o.temp, "temperature (0: greedy)");
    app.add_option("--top-k", o.top_k, "keep the k most likely tokens (<= 0: all)");
    app.add_option("--top-p", o.top_p, "keep the most likely tokens up to this probability mass (1: off)");
    app.add_option("--min-p", o.min_p, "drop tokens below this fraction of the top probability (0: off)");
    app.add_option("--typical", o.typical_p, "locally typical sampling mass (1: off)");
    app.add_option("--repeat-penalty", o.repeat_penalty, "penalty for repeated tokens (1: off)");
    app.add_option("--repeat-last-n", o.repeat_last_n,
                   "window of the penalties (0: off, -1: the whole context)");
    app.add_option("--frequency-penalty", o.frequency_penalty, "frequency penalty (0: off)");
    app.add_option("--presence-penalty", o.presence_penalty, "presence penalty (0: off)");
    app.add_option("-s,--seed", o.seed, "random seed (-1: a random one, printed)");
    app.add_option("--dynatemp-range", o.dynatemp_range, "dynamic temperature range (0: off)");
    app.add_option("--dynatemp-exp", o.dynatemp_exp, "dynamic temperature exponent");
    app.add_option("--mirostat", o.mirostat, "Mirostat sampling (0: off, 1: Mirostat, 2: Mirostat 2.0)");
    app.add_option("--mirostat-lr", o.mirostat_lr, "Mirostat learning rate, eta");
    app.add_option("--mirostat-ent", o.mirostat_ent, "Mirostat target entropy, tau");
    app.add_option("--xtc-probability", o.xtc_probability, "XTC probability (0: off)");
    app.add_option("--xtc-threshold", o.xtc_threshold, "XTC threshold (> 0.5: off)");
    app.add_option("--dry-multiplier", o.dry_multiplier, "DRY multiplier (0: off)");
    app.add_option("--dry-base", o.dry_base, "DRY base");
    app.add_option("--dry-allowed-length", o.dry_allowed_length, "DRY allowed length");
    app.add_option("--dry-penalty-last-n", o.dry_penalty_last_n,
                   "DRY window (0: off, -1: the whole context)");
    app.add_option("--dry-sequence-breaker", o.dry_sequence_breakers, "DRY sequence breaker (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("-l,--logit-bias", o.logit_bias,
                   "TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1 or 2-inf (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("--ignore-eos", o.ignore_eos, "never stop at an end-of-generation token");
    app.add_option("--grammar", o.grammar, "GBNF grammar the output must follow (start rule: root)");
    app.add_option("--grammar-file", o.grammar_file, "file with a GBNF grammar the output must follow");
    app.add_option("--samplers", o.samplers,
                   "the samplers in their order, separated by ';' (llama.cpp's names; default: "
                   "penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature)")
        ->check(non_empty_value());
    app.add_option("--sampling-seq,--sampler-seq", o.sampling_seq,
                   "the samplers in their order, one letter each (default: edkypmxt; i: infill)")
        ->check(non_empty_value());
    app.add_option("-j,--json-schema", o.json_schema,
                   "JSON schema (the text itself) the output must follow, e.g. '{}' for any JSON object; "
                   "`lctx grammar from-schema` prints its grammar");
}

namespace {

// "--name: value V is not finite" and the like, or "".
std::string check_float(const char *name, float v, float lo, float hi, const char *range) {
    if (!std::isfinite(v)) return std::string(name) + ": " + std::to_string(v) + " is not a finite number";
    if (v < lo || v > hi) {
        std::ostringstream s;
        s << name << ": " << v << " is out of range (" << range << ")";
        return s.str();
    }
    return "";
}

std::string check_int(const char *name, int64_t v, int64_t lo, int64_t hi, const char *range) {
    if (v < lo || v > hi)
        return std::string(name) + ": " + std::to_string(v) + " is out of range (" + range + ")";
    return "";
}

}  // namespace

std::string check_sampling_options(const SamplingOptions &o) {
    const float big = 1e6f;
    for (const std::string &e : {
             check_float("--temp", o.temp, -big, big, "a finite number; <= 0 is greedy"),
             check_float("--top-p", o.top_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--min-p", o.min_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--typical", o.typical_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--repeat-penalty", o.repeat_penalty, 0.0f, big, "0 or more; 1 is off"),
             check_int("--repeat-last-n", o.repeat_last_n, -1, INT32_MAX, "-1 or more"),
             check_float("--frequency-penalty", o.frequency_penalty, -big, big, "a finite number"),
             check_float("--presence-penalty", o.presence_penalty, -big, big, "a finite number"),
             check_int("--seed", o.seed, -1, 0xFFFFFFFEll, "-1 for a random seed, or 0 to 4294967294"),
             check_float("--dynatemp-range", o.dynatemp_range, 0.0f, big, "0 or more"),
             check_float("--dynatemp-exp", o.dynatemp_exp, 0.0f, big, "0 or more"),
             check_int("--mirostat", o.mirostat, 0, 2, "0, 1 or 2"),
             check_float("--mirostat-lr", o.mirostat_lr, 0.0f, big, "0 or more"),
             check_float("--mirostat-ent", o.mirostat_ent, 0.0f, big, "0 or more"),
             check_float("--xtc-probability", o.xtc_probability, 0.0f, 1.0f, "0 to 1"),
             check_float("--xtc-threshold", o.xtc_threshold, 0.0f, 1.0f, "0 to 1"),
             check_float("--dry-multiplier", o.dry_multiplier, 0.0f, big, "0 or more"),
             check_float("--dry-base", o.dry_base, 1.0f, big, "1 or more"),
             check_int("--dry-allowed-length", o.dry_allowed_length, 0, INT32_MAX, "0 or more"),
             check_int("--dry-penalty-last-n", o.dry_penalty_last_n, -1, INT32_MAX, "-1 or more"),
         })
        if (!e.empty()) return e;
    TokenBias tb;
    std::string why;
    for (const std::string &b : o.logit_bias)
        if (!parse_logit_bias(b, &tb, &why)) return "--logit-bias: " + why;
    if (!o.grammar.empty() && !o.grammar_file.empty())
        return "--grammar and --grammar-file: give one of them";
    std::vector<SamplerKind> order;
    if (!o.samplers.empty() && !o.sampling_seq.empty())
        return "--samplers and --sampling-seq: give one of them";
    if (!o.samplers.empty() && !parse_sampler_names(o.samplers, &order, &why)) return "--samplers: " + why;
    if (!o.sampling_seq.empty() && !parse_sampler_letters(o.sampling_seq, &order, &why))
        return "--sampling-seq: " + why;
    if (!o.grammar_file.empty()) {  // read here too, to fail before the model loads
        std::string text;
        if (!read_whole_file(o.grammar_file, &text, &why)) return "--grammar-file: " + why;
    }
    if (!o.json_schema.empty()) {
        if (!o.grammar.empty() || !o.grammar_file.empty())
            return "--json-schema and --grammar / --grammar-file: give one of them";
        // Converted here too, so that a schema that cannot be used is reported before the model loads.
        try {
            grammar::json_schema_to_gbnf(o.json_schema);
        } catch (const std::exception &e) {
            return std::string("--json-schema: ") + e.what();
        }
    }
    return "";
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

uint32_t resolve_seed(SamplingOptions &o) {
    if (o.seed < 0) {
        std::random_device rd;
        o.seed = static_cast<int64_t>(rd() % 0xFFFFFFFFu);  // never 0xFFFFFFFF, which means "random"
    }
    return static_cast<uint32_t>(o.seed);
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

int resolved_threads(int32_t n) {
    return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void add_gen_options(CLI::App &app, GenOptions &o) {
    app.add_option("-m,--model", o.model_path, "GGUF model file");
    app.add_option("-p,--prompt", o.prompt, "prompt text ('-': read it from standard input)");
    app.add_option("-f,--file", o.prompt_file, "read the prompt from this file");
    app.add_flag(
        "-e,--escape", o.escape,
        "process escapes (\\n, \\t, \\\\, \\xHH, ...) in a prompt from standard input too (-p, -f and "
        "-r always, as llama-cli)");
    app.add_flag("--no-escape", o.no_escape, "do not process escapes in -p, -f or -r");
    app.add_flag("--no-display-prompt", o.no_display_prompt, "do not print the prompt before the output");
    app.add_option("-n,--n-predict", o.n_predict,
                   "tokens to generate (-1: until end of text, shifting the context when full; -2: until the "
                   "context is full)");
    app.add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (0: the model's training context)");
    app.add_option("-b,--batch-size", o.n_batch, "logical batch size (most tokens per decode call)");
    app.add_option("--ubatch-size", o.n_ubatch, "physical batch size (-ub)");
    app.add_option("-t,--threads", o.n_threads, "threads for generation (0: every core)");
    app.add_option("--threads-batch", o.n_threads_batch, "threads for the prompt (-tb; 0: as --threads)");
    app.add_option("--cache-type-k", o.cache_type_k,
                   "KV cache type of K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1");
    app.add_option("--cache-type-v", o.cache_type_v,
                   "KV cache type of V (-ctv), as -ctk; the block types (q8_0 ... q5_1) need -fa");
    app.add_option("--keep", o.n_keep, "prompt tokens kept when the context shifts (-1: the whole prompt)");
    app.add_flag("--no-context-shift", o.no_context_shift,
                 "stop when the context is full instead of shifting");
    app.add_option("-r,--reverse-prompt", o.reverse_prompts,
                   "stop when the output ends with this text (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("--flash-attn", o.flash_attn,
                 "(-fa) llama.cpp's flash-attention cache: V stored by rows (a quantized -ctv needs it)");
    app.add_flag("--no-mmap", o.no_mmap, "accepted: lctx maps the file and copies the weights it repacks");
    app.add_flag("--mlock", o.mlock, "lock the model and buffers in memory");
    app.add_option("--n-gpu-layers", o.n_gpu_layers, "(-ngl) accepted: lctx runs on the CPU");
    app.add_flag("--color", o.color, "color the prompt and the user input on a terminal");
    app.add_flag("-q,--log-disable", o.quiet, "no notes, progress or timings on stderr");
    add_lora_options(app, o.lora_args);
    add_sampling_options(app, o.sampling);
    app.add_option("--override-kv", o.override_kv_args,
                   "replace a metadata value of the model: KEY=TYPE:VALUE, TYPE int, float, bool or str "
                   "(repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    add_rope_options(app, o.rope_args);
    app.add_flag("--special", o.special, "(-sp) print special tokens (their text) in the output");
}

std::string check_gen_options(GenOptions &o) {
    if (o.n_predict < -2)
        return "--n-predict: " + std::to_string(o.n_predict) +
               " is out of range (a count, -1: until end of text, -2: until the context is full)";
    for (const std::string &e : {
             check_int("--ctx-size", o.n_ctx, 0, 1 << 24, "0 for the model's, or up to 16777216"),
             check_int("--batch-size", o.n_batch, 1, INT32_MAX, "1 or more"),
             check_int("--ubatch-size", o.n_ubatch, 1, INT32_MAX, "1 or more"),
             check_int("--threads", o.n_threads, 0, 1024, "0 for every core, or up to 1024"),
             check_int("--threads-batch", o.n_threads_batch, 0, 1024, "0 for --threads, or up to 1024"),
             check_int("--keep", o.n_keep, -1, INT32_MAX, "-1 or more"),
         })
        if (!e.empty()) return e;
    for (const std::string &e : {kv_cache_type_from_name(o.cache_type_k, "--cache-type-k", &o.type_k),
                                 kv_cache_type_from_name(o.cache_type_v, "--cache-type-v", &o.type_v)})
        if (!e.empty()) return e;
    // as b4748's llama_init_from_model, before anything loads
    if (type_traits(o.type_v).is_quantized && !o.flash_attn)
        return "--cache-type-v " + o.cache_type_v + ": V cache quantization requires flash_attn (add -fa)";
    for (const std::string &r : o.reverse_prompts)
        if (r.empty()) return "--reverse-prompt: the text is empty";
    o.overrides.clear();
    for (const std::string &a : o.override_kv_args) {
        gguf::KeyValue kv;
        std::string why;
        if (!parse_override_kv(a, &kv, &why)) return "--override-kv '" + a + "': " + why;
        o.overrides.push_back(std::move(kv));
    }
    if (const std::string e = rope_overrides(o.rope_args, &o.rope); !e.empty()) return e;
    std::string lora_error;
    o.loras = parse_lora_options(o.lora_args, lora_error);
    if (!lora_error.empty()) return lora_error;
    return check_sampling_options(o.sampling);
}

void note_compat_options(const GenOptions &o, const char *cmd) {
    if (o.quiet) return;
    if (o.n_gpu_layers >= 0) std::fprintf(stderr, "lctx %s: note: -ngl ignored, lctx runs on the CPU\n", cmd);
    if (o.no_mmap)
        std::fprintf(stderr,
                     "lctx %s: note: --no-mmap ignored, lctx maps the file (weights it repacks are copied)\n",
                     cmd);
}

bool resolve_prompt(GenOptions &o, const char *cmd, bool stdin_allowed) {
    bool from_stdin = false;
    if (!o.prompt_file.empty()) {
        if (o.prompt_given) {
            std::fprintf(stderr, "lctx %s: -f and -p both give the prompt; pass only one\n", cmd);
            return false;
        }
        std::string why;
        if (!read_whole_file(o.prompt_file, &o.prompt, &why)) {
            std::fprintf(stderr, "lctx %s: -f: %s\n", cmd, why.c_str());
            return false;
        }
        o.prompt_given = true;
    } else if (o.prompt_given && o.prompt == "-") {
        if (!stdin_allowed) {
            std::fprintf(stderr, "lctx %s: -p -: standard input carries the conversation here\n", cmd);
            return false;
        }
        o.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        from_stdin = true;
    } else if (!o.prompt_given && stdin_allowed && !isatty(STDIN_FILENO)) {
        std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (!in.empty()) {
            o.prompt = std::move(in);
            o.prompt_given = true;
            from_stdin = true;
        }
    }
    if (!o.no_escape && (o.escape || !from_stdin)) o.prompt = process_escapes(o.prompt);
    if (!o.no_escape)
        for (std::string &r : o.reverse_prompts) r = process_escapes(r);
    return true;
}

}  // namespace lctx::cli
