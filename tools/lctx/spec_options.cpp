#include "tools/lctx/spec_options.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "generate/tokens.h"
#include "tools/lctx/cli_sampling.h"
#include "tools/lctx/interrupt.h"
#include "tools/lctx/utf8_stream.h"

namespace lctx::cli {

void add_spec_options(CLI::App &app, SpecOptions &o) {
    app.add_option("--model-draft", o.model_draft,
                   "draft model for speculative decoding (a smaller model with the same vocabulary)");
    app.add_option("--draft-max,--draft,--draft-n", o.draft_max,
                   "most tokens drafted per step for speculative decoding (default: 16)");
    app.add_option("--draft-min,--draft-n-min", o.draft_min,
                   "fewest drafted tokens worth checking; a shorter draft is dropped (default: 5)");
    app.add_option("--draft-p-min", o.draft_p_min,
                   "the draft model stops drafting when its top probability falls below P (default: 0.9)");
    app.add_option("--ctx-size-draft", o.ctx_draft, "the draft model's context size (default: 0, as -c)");
    app.add_option("--threads-draft", o.threads_draft, "threads of the draft model (-md; default: as -t)");
    app.add_option("--threads-batch-draft", o.threads_batch_draft,
                   "threads of the draft model for its prompt (default: as --threads-draft)");
    app.add_option("--n-gpu-layers-draft", o.n_gpu_layers_draft,
                   "accepted for llama.cpp compatibility: lctx runs on the CPU");
    app.add_flag("--lookup", o.lookup,
                 "speculative decoding without a draft model: prompt lookup (n-grams of the text so far)");
    app.add_option("--lookup-ngram-min", o.ngram_min, "shortest n-gram prompt lookup matches (default: 1)");
    app.add_option("--lookup-ngram-max", o.ngram_max, "longest n-gram prompt lookup matches (default: 4)");
}

std::string check_spec_options(const CLI::App &app, SpecOptions &o) {
    if (app.count("--lookup-ngram-min") > 0 || app.count("--lookup-ngram-max") > 0) o.lookup = true;
    if (o.draft_max < 1) return "--draft-max: must be at least 1";
    if (o.draft_min < 0) return "--draft-min: must not be negative";
    if (o.draft_min > o.draft_max) return "--draft-min: must not be above --draft-max";
    if (!(o.draft_p_min >= 0.0f && o.draft_p_min <= 1.0f)) return "--draft-p-min: must lie in [0, 1]";
    if (o.ctx_draft < 0) return "--ctx-size-draft: must not be negative";
    if (o.threads_draft < 0) return "--threads-draft: must not be negative";
    if (o.threads_batch_draft < 0) return "--threads-batch-draft: must not be negative";
    if (o.ngram_min < 1) return "--lookup-ngram-min: must be at least 1";
    if (o.ngram_max < o.ngram_min) return "--lookup-ngram-max: must not be below --lookup-ngram-min";
    if (!o.model_draft.empty() && o.lookup)
        return "--model-draft and prompt lookup (--lookup, --lookup-ngram-*) are two drafters: choose one";
    return "";
}

std::string spec_unsupported_gen_options(const GenOptions &o, bool control_vector, int32_t n_probs,
                                         bool prompt_cache) {
    const SamplingOptions &s = o.sampling;
    auto no = [](const char *opt) {
        return std::string(opt) + ": not with speculative decoding (-md, --lookup) yet";
    };
    if (!s.config.grammar.empty() || !s.grammar_file.empty()) return no("--grammar");
    if (!s.json_schema.empty()) return no("--json-schema");
    if (!s.logit_bias.empty()) return no("--logit-bias");
    if (s.config.mirostat != 0) return no("--mirostat");
    if (s.config.ignore_eos) return no("--ignore-eos");
    if (!s.samplers.empty() || !s.sampling_seq.empty()) return no("--samplers");
    if (!o.loras.empty()) return no("--lora");
    if (!o.override_kv_args.empty()) return no("--override-kv");
    const RopeArgs r;
    const RopeArgs &a = o.rope_args;
    if (a.scaling != r.scaling || a.scale != r.scale || a.freq_base != r.freq_base ||
        a.freq_scale != r.freq_scale || a.yarn_ext_factor != r.yarn_ext_factor ||
        a.yarn_attn_factor != r.yarn_attn_factor || a.yarn_beta_slow != r.yarn_beta_slow ||
        a.yarn_beta_fast != r.yarn_beta_fast || a.yarn_orig_ctx != r.yarn_orig_ctx)
        return no("--rope-*");
    if (control_vector) return no("--control-vector");
    if (n_probs > 0) return no("--n-probs");
    if (prompt_cache) return no("--prompt-cache");
    return "";
}

llama_sampler *make_spec_filters(const SamplingOptions &o, const llama_vocab *vocab, int32_t n_ctx,
                                 uint32_t seed, std::string *error) {
    SamplingOptions so = o;
    so.seed = seed;
    generate::SamplingConfig c;
    if (!cli_sampling_config(so, vocab, &c, error)) return nullptr;
    c.keep_neutral_samplers = false;  // the verifier's filters: only the samplers that change anything
    // Without the last sampler (dist or greedy): the generation layer draws itself.
    return generate::make_filter_chain(c, vocab, n_ctx, error);
}

SpecModels::~SpecModels() {
    drafter.reset();
    if (dctx) llama_free(dctx);
    if (draft) llama_model_free(draft);
    if (!borrowed) {
        if (ctx) llama_free(ctx);
        if (target) llama_model_free(target);
    }
}

namespace {

llama_context *make_ctx(llama_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_ubatch, int n_threads,
                        int n_threads_batch, ggml_type type_k, ggml_type type_v, bool flash_attn) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = static_cast<uint32_t>(n_ctx);
    p.n_batch = static_cast<uint32_t>(n_batch);
    p.n_ubatch = static_cast<uint32_t>(n_ubatch);
    p.n_threads = n_threads;
    p.n_threads_batch = n_threads_batch;
    p.type_k = type_k;
    p.type_v = type_v;
    p.flash_attn = flash_attn;
    p.no_perf = true;
    return llama_init_from_model(m, p);
}

}  // namespace

std::string spec_load(const std::string &path, const SpecOptions &s, int32_t n_ctx, int32_t n_batch,
                      int32_t n_ubatch, int n_threads, int n_threads_batch, ggml_type type_k,
                      ggml_type type_v, bool flash_attn, SpecModels *out) {
    const llama_model_params mp = llama_model_default_params();
    out->target = llama_model_load_from_file(path.c_str(), mp);
    if (!out->target) return "cannot load the model " + path;
    if (llama_model_has_encoder(out->target))
        return path + " is an encoder-decoder model: speculative decoding drafts for decoder-only models";
    out->ctx = make_ctx(out->target, n_ctx, n_batch, n_ubatch, n_threads, n_threads_batch, type_k, type_v,
                        flash_attn);
    if (!out->ctx) return "cannot make a context for " + path;
    return spec_add_drafter(path, s, n_batch, n_ubatch, n_threads, type_k, type_v, flash_attn, out);
}

std::string spec_add_drafter(const std::string &path, const SpecOptions &s, int32_t n_batch, int32_t n_ubatch,
                             int n_threads, ggml_type type_k, ggml_type type_v, bool flash_attn,
                             SpecModels *out) {
    if (std::string e = generate::spec_context_check(out->ctx, "target"); !e.empty()) return e;
    if (s.lookup) {
        out->drafter = std::make_unique<generate::NgramDrafter>(s.ngram_min, s.ngram_max);
    } else if (!s.model_draft.empty()) {
        out->draft = llama_model_load_from_file(s.model_draft.c_str(), llama_model_default_params());
        if (!out->draft) return "cannot load the draft model " + s.model_draft;
        const std::string e =
            generate::spec_vocab_check(llama_model_get_vocab(out->target), llama_model_get_vocab(out->draft));
        if (!e.empty()) return s.model_draft + " cannot draft for " + path + ": " + e;
        const int td = s.threads_draft > 0 ? s.threads_draft : n_threads;
        const int tbd = s.threads_batch_draft > 0 ? s.threads_batch_draft : td;
        out->dctx =
            make_ctx(out->draft, s.ctx_draft > 0 ? s.ctx_draft : static_cast<int32_t>(llama_n_ctx(out->ctx)),
                     n_batch, n_ubatch, td, tbd, type_k, type_v, flash_attn);
        if (!out->dctx) return "cannot make a context for the draft model " + s.model_draft;
        if (std::string e2 = generate::spec_context_check(out->dctx, "draft"); !e2.empty()) return e2;
        out->drafter = std::make_unique<generate::ModelDrafter>(out->dctx, s.draft_p_min);
    }
    return "";
}

int run_speculative(GenOptions &o, const SpecOptions &s, uint32_t seed) {
    const int n_threads = resolved_threads(o.n_threads);
    SpecModels m;
    if (const std::string e = spec_load(o.model_path, s, o.n_ctx, o.n_batch, o.n_ubatch, n_threads,
                                        resolved_threads(o.n_threads_batch ? o.n_threads_batch : n_threads),
                                        o.type_k, o.type_v, o.flash_attn, &m);
        !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(m.target);
    const std::vector<llama_token> prompt = generate::tokenize(vocab, o.prompt, true, true);
    if (prompt.empty()) {
        std::fprintf(stderr, "lctx run: the prompt is empty and the model adds no BOS token\n");
        return 1;
    }
    const int32_t n_ctx = static_cast<int32_t>(llama_n_ctx(m.ctx));
    if (static_cast<int32_t>(prompt.size()) >= n_ctx) {
        std::fprintf(stderr,
                     "lctx run: the prompt has %zu tokens, which does not fit a context of %d (use -c)\n",
                     prompt.size(), n_ctx);
        return 1;
    }
    std::string err;
    llama_sampler *filters = make_spec_filters(o.sampling, vocab, n_ctx, seed, &err);
    if (!filters) {
        std::fprintf(stderr, "lctx run: %s\n", err.c_str());
        return 1;
    }
    for (llama_token t : prompt) llama_sampler_accept(filters, t);  // penalties and DRY see the prompt
    generate::SpecParams sp;
    sp.n_max = s.draft_max;
    sp.n_min = s.draft_min;
    generate::SpecSampling ss;
    ss.filters = filters;
    ss.greedy = o.sampling.config.temperature <= 0.0f;
    ss.seed = seed;
    generate::Speculator spec(m.ctx, m.drafter.get(), sp, ss);
    if (!o.quiet && !o.json) std::fprintf(stderr, "seed: %u\n", seed);
    const bool color = o.color && isatty(STDOUT_FILENO) && !o.json;
    if (!o.json && !o.no_display_prompt) {
        if (color) std::fputs("\033[33m", stdout);
        std::fputs(o.prompt.c_str(), stdout);
        if (color) std::fputs("\033[0m", stdout);
        std::fflush(stdout);
    }
    using Clock = std::chrono::steady_clock;
    const Clock::time_point t_prompt = Clock::now();
    std::vector<llama_token> history = prompt;
    if (const std::string e = spec.prefill(history); !e.empty()) {
        llama_sampler_free(filters);
        std::fprintf(stderr, "lctx run: decoding the prompt failed: %s\n", e.c_str());
        return 1;
    }
    const double prompt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_prompt).count();
    interrupt_install();
    interrupt_begin_reply();
    std::vector<llama_token> ids, fresh;
    std::string text;
    Utf8Stream out(stdout);
    std::string stop = "-n reached";
    const Clock::time_point t_gen = Clock::now();
    bool done = o.n_predict == 0;
    int rc = 0;
    while (!done) {
        if (interrupt_requested()) {
            stop = "interrupted";
            break;
        }
        // No context shift with speculation: the output ends where the context does.
        if (static_cast<int32_t>(history.size()) >= n_ctx) {
            stop = "context full";
            break;
        }
        fresh.clear();
        if (const std::string e = spec.step(history, &fresh); !e.empty()) {
            std::fprintf(stderr, "\nlctx run: %s\n", e.c_str());
            rc = 1;
            break;
        }
        for (llama_token id : fresh) {
            if (llama_vocab_is_eog(vocab, id)) {
                stop = "end of text";
                done = true;
                break;
            }
            ids.push_back(id);
            const std::string piece = generate::token_piece(vocab, id, o.special);
            text += piece;
            if (!o.json) out.write(piece);
            bool reversed = false;
            for (const std::string &r : o.reverse_prompts) reversed = reversed || text.ends_with(r);
            if (reversed) {
                stop = "reverse prompt";
                done = true;
                break;
            }
            if (o.n_predict >= 0 && static_cast<int32_t>(ids.size()) >= o.n_predict) {
                done = true;
                break;
            }
        }
    }
    const double gen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_gen).count();
    interrupt_end_reply();
    llama_sampler_free(filters);
    if (rc != 0) return rc;
    const generate::SpecStats &st = spec.stats();
    const int status = stop == "interrupted" ? 130 : 0;
    if (o.json) {
        nlohmann::json j;
        j["prompt_ids"] = prompt;
        j["ids"] = ids;
        j["text"] = text;
        j["seed"] = seed;
        j["stop"] = stop;
        j["speculative"] = {{"steps", st.n_steps}, {"drafted", st.n_drafted}, {"accepted", st.n_accepted}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return status;
    }
    out.flush();
    std::printf("\n");
    std::fflush(stdout);
    if (o.quiet) return status;
    std::fprintf(stderr, "stopped: %s\n", stop.c_str());
    const int n_gen = static_cast<int>(ids.size());
    std::fprintf(
        stderr,
        "prompt: %zu tokens, %.1f tokens/s | generation: %d tokens, %.1f tokens/s | speculative: %lld "
        "drafted, %lld accepted (%.1f%%), %lld target decodes\n",
        prompt.size(), prompt_ms > 0 ? 1e3 * static_cast<double>(prompt.size()) / prompt_ms : 0.0, n_gen,
        gen_ms > 0 ? 1e3 * n_gen / gen_ms : 0.0, static_cast<long long>(st.n_drafted),
        static_cast<long long>(st.n_accepted), 100.0 * st.acceptance(), static_cast<long long>(st.n_steps));
    return status;
}

}  // namespace lctx::cli
