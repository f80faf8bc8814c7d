// lctx run: tokenize a prompt, decode it in batches of -b tokens, then sample and decode one token at a
// time, streaming the text; says why it stopped and ends with a timing line (or prints one JSON object
// with --json). -n -1 shifts the context when it is full and goes on until end of text. Written over llama.h
// and the generation layer (src/generate/: the sampler chain, the context shift, prompt-cache files).
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/context_shift.h"
#include "generate/fim_prompt.h"
#include "generate/sampling_chain.h"
#include "generate/tokens.h"
#include "lctx/lctx_ext.h"
#include "llama.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/capi_model.h"
#include "tools/lctx/cli_sampling.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/control_vector_options.h"
#include "tools/lctx/gen_options.h"
#include "tools/lctx/interrupt.h"
#include "tools/lctx/prompt_cache.h"
#include "tools/lctx/spec_options.h"
#include "tools/lctx/token_probs.h"
#include "tools/lctx/utf8_stream.h"

namespace lctx::cli {

// run, or with infill = true llama-infill: the prompt is the model's fill-in-the-middle tokens around
// --in-prefix and --in-suffix, and the output is the middle.
int run_main(int argc, char **argv, bool infill) {
    const char *cmd = infill ? "infill" : "run";
    CLI::App app{infill
                     ? "Fill in the middle between --in-prefix and --in-suffix (a FIM model: one with the "
                       "tokenizer.ggml.fim_pre/suf/mid_token_id tokens)"
                     : "Generate text from a prompt (the prompt: -p, -f, or standard input when it is not a "
                       "terminal)",
                 infill ? "lctx infill" : "lctx run"};
    configure_app(app);
    GenOptions o;
    o.prompt = infill ? "" : "Once upon a time";
    add_gen_options(app, o);
    std::string in_prefix, in_suffix;
    bool spm_infill = false;
    if (infill) {
        app.add_option("--in-prefix", in_prefix, "the text before the middle");
        app.add_option("--in-suffix", in_suffix, "the text after the middle");
        app.add_flag("--spm-infill", spm_infill,
                     "suffix first, then prefix (the suffix/prefix/middle order some models are trained on)");
    }
    ControlVectorOptions cvec;
    add_control_vector_options(app, cvec);
    app.add_flag("--json", o.json,
                 "print one JSON object {prompt_ids, ids, text, seed, stop} instead of streaming");
    PromptCacheOptions pc_opts;
    add_prompt_cache_options(app, pc_opts);
    int32_t n_probs = 0;
    add_n_probs_option(app, n_probs);
    SpecOptions spec;
    if (!infill) add_spec_options(app, spec);
    const int st = parse_or_report(app, cmd, normalize_args(argc, argv));
    if (st >= 0) return st;
    o.prompt_given = app.count("--prompt") > 0;
    if (infill && (o.prompt_given || !o.prompt_file.empty())) {
        std::fprintf(stderr, "lctx infill: the text comes from --in-prefix and --in-suffix, not -p or -f\n");
        return 1;
    }
    if (infill && o.escape) {
        in_prefix = process_escapes(in_prefix);
        in_suffix = process_escapes(in_suffix);
    }
    if (const std::string e = check_gen_options(o); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    if (const std::string e = check_n_probs(n_probs, o.json); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    PromptCache cache(pc_opts);
    if (const std::string e = cache.check(); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    if (const std::string e = infill ? "" : check_spec_options(app, spec); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    if (spec.enabled()) {
        const std::string e = spec_unsupported_gen_options(o, cvec.any(), n_probs, cache.enabled());
        if (!e.empty()) {
            std::fprintf(stderr, "lctx run: %s\n", e.c_str());
            return 1;
        }
    }
    if (!infill && !resolve_prompt(o, "run", /*stdin_allowed=*/true)) return 1;
    note_compat_options(o, "run");
    const uint32_t seed = resolve_seed(o.sampling);
    // -md or prompt lookup: the generation layer's speculative decoding, over llama.h.
    if (spec.enabled()) return run_speculative(o, spec, seed);

    capture_capi_errors();  // llama.h's log kept for the one-line reports, not printed
    ModelPtr model_owner = load_model_capi(o.model_path, o.quiet, o.overrides);
    if (!model_owner) return 1;
    llama_model *model = model_owner.get();
    if (!check_generates_text(model, o.model_path, "run")) return 1;
    std::vector<LoraPtr> adapters;
    if (!load_loras_capi(model, o.loras, "run", adapters)) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);

    std::vector<llama_token> prompt_ids;
    if (infill) {
        // llama-infill's prompt: [BOS] FIM_PRE prefix FIM_SUF suffix FIM_MID (--spm-infill: FIM_SUF suffix
        // FIM_PRE prefix FIM_MID), the texts tokenized without special tokens.
        generate::FimTokens ft;
        ft.pre = llama_vocab_fim_pre(vocab);
        ft.suf = llama_vocab_fim_suf(vocab);
        ft.mid = llama_vocab_fim_mid(vocab);
        if (ft.pre < 0 || ft.suf < 0 || ft.mid < 0) {
            std::fprintf(stderr,
                         "lctx infill: %s has no fill-in-the-middle tokens (tokenizer.ggml.fim_pre_token_id, "
                         "fim_suf_token_id, fim_mid_token_id): it is not a FIM model\n",
                         o.model_path.c_str());
            return 1;
        }
        ft.bos = llama_vocab_bos(vocab);
        ft.add_bos = llama_vocab_get_add_bos(vocab);
        generate::FimInput fi;
        fi.prefix = in_prefix;
        fi.suffix = in_suffix;
        fi.spm = spm_infill;
        prompt_ids = generate::fim_prompt(ft, fi, [vocab](const std::string &text) {
            return generate::tokenize(vocab, text, false, false);
        });
        o.prompt = in_prefix;  // what is shown before the middle
    } else {
        prompt_ids = generate::tokenize(vocab, o.prompt, /*add_special=*/true, /*parse_special=*/true);
    }
    if (prompt_ids.empty()) {
        std::fprintf(stderr, "lctx run: the prompt is empty and the model adds no BOS token\n");
        return 1;
    }
    note_context_size(model, o.n_ctx, o.type_k, o.type_v, "run", o.quiet);
    // The sizes as given: llama.h may round the cache up (b4748 pads it), and run keeps to -c.
    const ContextShape shape = context_shape(model, o, o.n_batch);
    const ContextPtr ctx_owner = make_context_capi(model, o, shape);
    if (!ctx_owner) return 1;
    llama_context *ctx = ctx_owner.get();
    if (const std::string e = apply_control_vector_options(cvec, model, ctx, o.quiet, "run"); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    apply_loras_capi(ctx, o.loras, adapters);
    if (o.mlock && mlockall(MCL_CURRENT) != 0 && !o.quiet)
        std::fprintf(stderr, "lctx run: note: --mlock failed: %s (see ulimit -l)\n", std::strerror(errno));
    const int32_t n_ctx = shape.n_ctx;
    // One batch of up to n_batch tokens of sequence 0 at explicit positions; the last one gives logits.
    llama_batch batch = llama_batch_init(shape.n_batch, 0, 1);
    struct BatchFree {
        llama_batch *b;
        ~BatchFree() { llama_batch_free(*b); }
    } batch_free{&batch};
    auto fill = [&batch](const llama_token *tokens, int32_t n, int32_t pos0) {
        batch.n_tokens = n;
        for (int32_t k = 0; k < n; ++k) {
            batch.token[k] = tokens[k];
            batch.pos[k] = pos0 + k;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = 0;
            batch.logits[k] = k == n - 1;
        }
    };
    // An encoder-decoder model (t5) encodes the prompt; the decoder then starts from its start token (BOS
    // when the file names none, as llama.cpp does) and generates from there.
    std::vector<llama_token> encoder_ids;
    const bool encoder_decoder = llama_model_has_encoder(model);
    if (encoder_decoder) {
        encoder_ids = prompt_ids;
        llama_batch eb = llama_batch_get_one(encoder_ids.data(), static_cast<int32_t>(encoder_ids.size()));
        if (static_cast<int32_t>(encoder_ids.size()) > shape.n_ubatch || llama_encode(ctx, eb) != 0) {
            std::fprintf(stderr,
                         "lctx run: encoding the prompt (%zu tokens) failed: the encoder takes it in one "
                         "micro-batch, here %d tokens (raise -ub, and -b and -c, which bound it)\n",
                         encoder_ids.size(), shape.n_ubatch);
            return 1;
        }
        const llama_token start = llama_model_decoder_start_token(model) >= 0
                                      ? llama_model_decoder_start_token(model)
                                      : llama_vocab_bos(vocab);
        if (start < 0) {
            std::fprintf(stderr, "lctx run: the model names no decoder start token and has no BOS token\n");
            return 1;
        }
        prompt_ids = {start};
    }
    if (static_cast<int32_t>(prompt_ids.size()) >= n_ctx) {
        std::fprintf(stderr,
                     "lctx run: the prompt has %zu tokens, which does not fit a context of %d (use -c)\n",
                     prompt_ids.size(), n_ctx);
        return 1;
    }
    const int32_t n_prompt = static_cast<int32_t>(prompt_ids.size());
    // --prompt-cache: the saved state's tokens that the prompt starts with stay in the cache; the rest of
    // the cache goes, and only the prompt after them is decoded. A whole-prompt match still decodes the last
    // prompt token, for its logits.
    int32_t n_reused = 0;
    if (cache.enabled()) {
        if (encoder_decoder) {
            std::fprintf(stderr,
                         "lctx run: --prompt-cache: an encoder-decoder model has no prompt to cache\n");
            return 1;
        }
        if (const std::string e = cache.load(ctx); !e.empty()) {
            std::fprintf(stderr, "lctx run: %s\n", e.c_str());
            return 1;
        }
        n_reused = cache.reuse(ctx, prompt_ids);
        if (!o.quiet && !o.json)
            std::fprintf(stderr, "lctx run: %s\n", cache.report(prompt_ids.size()).c_str());
    }
    generate::ContextShift shift;
    shift.n_keep =
        o.n_keep < 0 ? n_prompt : std::min(n_prompt, o.n_keep + (llama_vocab_get_add_bos(vocab) ? 1 : 0));
    // -n -2 stops when the context is full; -n -1 and counts shift it (unless --no-context-shift).
    shift.enabled = o.n_predict != -2 && !o.no_context_shift;

    const SamplerPtr chain_owner = make_cli_sampler_chain(o.sampling, vocab, n_ctx, "run");
    if (!chain_owner) return 1;
    llama_sampler *chain = chain_owner.get();
    generate::accept_prompt(chain, prompt_ids);
    if (!o.quiet && !o.json) std::fprintf(stderr, "seed: %u\n", seed);

    const bool color = o.color && isatty(STDOUT_FILENO) && !o.json;
    if (!o.json && !o.no_display_prompt) {
        if (color) std::fputs("\033[33m", stdout);
        std::fputs(o.prompt.c_str(), stdout);
        if (color) std::fputs("\033[0m", stdout);
        std::fflush(stdout);
    }

    // The timing line counts what run decoded: the whole prompt however it was batched, and one decode per
    // generated token.
    using Clock = std::chrono::steady_clock;
    const Clock::time_point t_prompt = Clock::now();
    for (int32_t i = n_reused; i < n_prompt; i += shape.n_batch) {
        fill(prompt_ids.data() + i, std::min(shape.n_batch, n_prompt - i), i);
        if (llama_decode(ctx, batch) != 0) {
            std::fprintf(stderr, "lctx run: decoding the prompt failed\n");
            return 1;
        }
    }

    const double prompt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_prompt).count();
    std::vector<llama_token> cache_tokens =
        prompt_ids;  // what the cache holds, in order (--prompt-cache-all)
    if (cache.enabled()) {
        if (const std::string e = cache.save_prompt(ctx, prompt_ids); !e.empty()) {
            std::fprintf(stderr, "lctx run: %s\n", e.c_str());
            return 1;
        }
    }
    double gen_ms = 0;

    interrupt_install();
    interrupt_begin_reply();
    std::vector<llama_token> ids;
    nlohmann::json probs = nlohmann::json::array();  // --n-probs: one list per sampled token
    std::string text;
    Utf8Stream out(stdout);
    int32_t pos = n_prompt;
    int32_t n_shifted = 0;
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    std::string stop = "-n reached";
    for (int32_t i = 0; o.n_predict < 0 || i < o.n_predict; ++i) {
        if (interrupt_requested()) {
            stop = "interrupted";
            break;
        }
        if (pos >= n_ctx) {
            const int32_t dropped = generate::shift_context(ctx, 0, shift);
            if (dropped == 0) {
                stop = "context full";
                break;
            }
            pos -= dropped;
            n_shifted += dropped;
            cache_tokens.erase(cache_tokens.begin() + shift.n_keep,
                               cache_tokens.begin() + shift.n_keep + dropped);
        }
        // --ignore-eos bans the end a complete grammar leaves as the only choice: the output is done.
        if (o.sampling.config.ignore_eos && generate::grammar_exhausted(chain, vocab)) {
            stop = "grammar complete";
            break;
        }
        if (n_probs > 0) probs.push_back(top_probs(llama_get_logits_ith(ctx, -1), n_vocab, n_probs, vocab));
        const llama_token id = llama_sampler_sample(chain, ctx, -1);  // accepts it
        if (id == LLAMA_TOKEN_NULL) {
            std::fprintf(stderr, "\nlctx run: sampling failed: %s\n", capi_last_error().c_str());
            return 1;
        }
        if (llama_vocab_is_eog(vocab, id) && !o.sampling.config.ignore_eos) {
            stop = "end of text";
            break;
        }
        ids.push_back(id);
        const std::string piece = generate::token_piece(vocab, id, /*special=*/o.special);
        text += piece;
        if (!o.json) out.write(piece);
        fill(&id, 1, pos);
        const Clock::time_point t_gen = Clock::now();
        const int32_t ds = llama_decode(ctx, batch);
        gen_ms += std::chrono::duration<double, std::milli>(Clock::now() - t_gen).count();
        if (ds != 0) {
            std::fprintf(stderr, "\nlctx run: decode failed (status %d)\n", ds);
            return 1;
        }
        ++pos;
        cache_tokens.push_back(id);
        bool reversed = false;
        for (const std::string &r : o.reverse_prompts) reversed = reversed || text.ends_with(r);
        if (reversed) {
            stop = "reverse prompt";
            break;
        }
    }
    interrupt_end_reply();
    if (cache.save_all()) {
        if (const std::string e = cache.save_tokens(ctx, cache_tokens); !e.empty()) {
            std::fprintf(stderr, "lctx run: %s\n", e.c_str());
            return 1;
        }
    }

    // As llama-cli: a reply cut by Ctrl-C ends the program with 128 + SIGINT once its output is out.
    const int status = stop == "interrupted" ? 130 : 0;
    if (o.json) {
        nlohmann::json j;
        j["prompt_ids"] = encoder_ids.empty() ? prompt_ids : encoder_ids;
        j["ids"] = ids;
        j["text"] = text;
        j["seed"] = seed;
        j["stop"] = stop;
        if (n_probs > 0) j["probs"] = probs;
        if (cache.enabled()) j["prompt_cache"] = {{"file", cache.path()}, {"reused", n_reused}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return status;
    }
    out.flush();
    std::printf("\n");
    std::fflush(stdout);
    if (o.quiet) return status;
    std::fprintf(stderr, "stopped: %s", stop.c_str());
    if (n_shifted > 0) std::fprintf(stderr, " (context shifted, %d tokens dropped)", n_shifted);
    std::fprintf(stderr, "\n");
    const int n_gen = static_cast<int>(ids.size());
    const double pp = prompt_ms > 0 ? 1e3 * (n_prompt - n_reused) / prompt_ms : 0.0;
    const double tg = gen_ms > 0 ? 1e3 * n_gen / gen_ms : 0.0;
    // Peak resident memory against what a run needs: the mapped model file and the KV cache.
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    const double mib = 1024.0 * 1024.0;
    std::error_code ec;
    const uintmax_t file_bytes = std::filesystem::file_size(o.model_path, ec);
    const uint64_t kv_bytes = lctx_model_kv_cache_size(model, llama_n_ctx(ctx), o.type_k, o.type_v);
    std::fprintf(
        stderr,
        "prompt: %d tokens, %.1f tokens/s | generation: %d tokens, %.1f tokens/s | peak memory %.1f MiB "
        "(model file %.1f MiB + KV cache %.1f MiB)\n",
        n_prompt - n_reused, pp, n_gen, tg, static_cast<double>(ru.ru_maxrss) * 1024.0 / mib,
        ec ? 0.0 : static_cast<double>(file_bytes) / mib, static_cast<double>(kv_bytes) / mib);
    return status;
}

int cmd_run(int argc, char **argv) {
    return run_main(argc, argv, false);
}

int cmd_infill(int argc, char **argv) {
    return run_main(argc, argv, true);
}

}  // namespace lctx::cli
