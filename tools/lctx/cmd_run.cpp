// lctx run: tokenize a prompt, decode it in batches of -b tokens, then sample and decode one token at a
// time, streaming the text; says why it stopped and ends with a timing line (or prints one JSON object
// with --json). -n -1 shifts the context when it is full and goes on until end of text.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "context/context.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "tools/lctx/control_vector_options.h"
#include "tools/lctx/interrupt.h"
#include "tools/lctx/utf8_stream.h"
#include "vocab/vocab.h"

namespace lctx::cli {

namespace {

bool ends_with(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

int cmd_run(int argc, char **argv) {
    CLI::App app{
        "Generate text from a prompt (the prompt: -p, -f, or standard input when it is not a terminal)",
        "lctx run"};
    configure_app(app);
    GenOptions o;
    o.prompt = "Once upon a time";
    add_gen_options(app, o);
    ControlVectorOptions cvec;
    add_control_vector_options(app, cvec);
    app.add_flag("--json", o.json,
                 "print one JSON object {prompt_ids, ids, text, seed, stop} instead of streaming");
    const int st = parse_or_report(app, "run", normalize_args(argc, argv));
    if (st >= 0) return st;
    o.prompt_given = app.count("--prompt") > 0;
    if (const std::string e = check_gen_options(o); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    if (!resolve_prompt(o, "run", /*stdin_allowed=*/true)) return 1;
    note_compat_options(o, "run");
    const uint32_t seed = resolve_seed(o.sampling);

    std::unique_ptr<Model> model = load_model_or_report(o.model_path, o.quiet);
    if (!model) return 1;
    if (!check_generates_text(*model, o.model_path, "run")) return 1;
    std::vector<std::shared_ptr<const LoraAdapter>> adapters;
    if (!load_loras_or_report(*model, o.loras, "run", adapters)) return 1;
    const Vocab &vocab = model->vocab();

    std::vector<int32_t> prompt_ids = vocab.tokenize(o.prompt, /*add_special=*/true, /*parse_special=*/true);
    if (prompt_ids.empty()) {
        std::fprintf(stderr, "lctx run: the prompt is empty and the model adds no BOS token\n");
        return 1;
    }
    note_context_size(*model, o.n_ctx, o.type_k, o.type_v, "run", o.quiet);
    const int n_threads = resolved_threads(o.n_threads);
    std::unique_ptr<Context> ctx = make_context_or_report(
        *model, o.n_ctx, static_cast<uint32_t>(o.n_batch), n_threads, static_cast<uint32_t>(o.n_ubatch),
        resolved_threads(o.n_threads_batch ? o.n_threads_batch : n_threads), o.type_k, o.type_v);
    if (!ctx) return 1;
    if (const std::string e = apply_control_vector_options(cvec, *model, *ctx, o.quiet, "run"); !e.empty()) {
        std::fprintf(stderr, "lctx run: %s\n", e.c_str());
        return 1;
    }
    apply_loras(*ctx, o.loras, adapters);
    if (o.mlock && mlockall(MCL_CURRENT) != 0 && !o.quiet)
        std::fprintf(stderr, "lctx run: note: --mlock failed: %s (see ulimit -l)\n", std::strerror(errno));
    const ContextParams &cp = ctx->params();
    const int32_t n_ctx = static_cast<int32_t>(cp.n_ctx);
    // An encoder-decoder model (t5) encodes the prompt; the decoder then starts from its start token (BOS
    // when the file names none, as llama.cpp does) and generates from there.
    std::vector<int32_t> encoder_ids;
    if (ctx->is_encoder_decoder()) {
        encoder_ids = prompt_ids;
        Batch eb;
        eb.n_tokens = static_cast<int32_t>(encoder_ids.size());
        eb.token = encoder_ids.data();
        if (ctx->encode(eb) != DecodeStatus::Ok) {
            std::fprintf(stderr,
                         "lctx run: encoding the prompt (%zu tokens) failed: the encoder takes it in one "
                         "micro-batch, here %u tokens (raise -ub, and -b and -c, which bound it)\n",
                         encoder_ids.size(), cp.n_ubatch);
            return 1;
        }
        const int32_t start =
            model->hparams().dec_start_token >= 0 ? model->hparams().dec_start_token : vocab.bos();
        if (start < 0) {
            std::fprintf(stderr, "lctx run: the model names no decoder start token and has no BOS token\n");
            return 1;
        }
        prompt_ids = {start};
    }
    if (prompt_ids.size() >= cp.n_ctx) {
        std::fprintf(stderr,
                     "lctx run: the prompt has %zu tokens, which does not fit a context of %u (use -c)\n",
                     prompt_ids.size(), cp.n_ctx);
        return 1;
    }
    const int32_t n_prompt = static_cast<int32_t>(prompt_ids.size());
    const int32_t n_keep = o.n_keep < 0 ? n_prompt : std::min(n_prompt, o.n_keep + (vocab.add_bos() ? 1 : 0));
    // -n -2 stops when the context is full; -n -1 and counts shift it (unless --no-context-shift).
    const bool shift = o.n_predict != -2 && !o.no_context_shift;

    std::unique_ptr<SamplerChain> sampler = make_sampler_chain(o.sampling, vocab, n_ctx);
    accept_prompt(*sampler, prompt_ids);
    if (!o.quiet && !o.json) std::fprintf(stderr, "seed: %u\n", seed);

    const bool color = o.color && isatty(STDOUT_FILENO) && !o.json;
    if (!o.json && !o.no_display_prompt) {
        if (color) std::fputs("\033[33m", stdout);
        std::fputs(o.prompt.c_str(), stdout);
        if (color) std::fputs("\033[0m", stdout);
        std::fflush(stdout);
    }

    // The timing line counts what run decoded: the whole prompt however it was batched (the context's
    // counters call every 1-token decode generation), and one decode per generated token.
    using Clock = std::chrono::steady_clock;
    const Clock::time_point t_prompt = Clock::now();
    for (int32_t i = 0; i < n_prompt; i += static_cast<int32_t>(cp.n_batch)) {
        Batch b;
        b.n_tokens = std::min<int32_t>(static_cast<int32_t>(cp.n_batch), n_prompt - i);
        b.token = prompt_ids.data() + i;
        std::vector<int32_t> pos(static_cast<size_t>(b.n_tokens));
        for (int32_t k = 0; k < b.n_tokens; ++k) pos[static_cast<size_t>(k)] = i + k;
        b.pos = pos.data();
        if (ctx->decode(b) != DecodeStatus::Ok) {
            std::fprintf(stderr, "lctx run: decoding the prompt failed\n");
            return 1;
        }
    }

    const double prompt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_prompt).count();
    double gen_ms = 0;

    interrupt_install();
    interrupt_begin_reply();
    std::vector<int32_t> ids;
    std::string text;
    Utf8Stream out(stdout);
    int32_t pos = n_prompt;
    int32_t n_shifted = 0;
    std::string stop = "-n reached";
    for (int32_t i = 0; o.n_predict < 0 || i < o.n_predict; ++i) {
        if (interrupt_requested()) {
            stop = "interrupted";
            break;
        }
        if (pos >= n_ctx) {
            const int32_t dropped = shift ? ctx->shift_context(0, n_keep) : 0;
            if (dropped == 0) {
                stop = "context full";
                break;
            }
            pos -= dropped;
            n_shifted += dropped;
        }
        // --ignore-eos bans the end a complete grammar leaves as the only choice: the output is done.
        if (o.sampling.ignore_eos && grammar_exhausted(*sampler, vocab)) {
            stop = "grammar complete";
            break;
        }
        const int32_t id = sampler->sample(ctx->logits_ith(-1),
                                           static_cast<int32_t>(model->hparams().n_vocab));  // accepts it
        if (vocab.is_eog(id) && !o.sampling.ignore_eos) {
            stop = "end of text";
            break;
        }
        ids.push_back(id);
        const std::string piece = vocab.token_to_piece(id, /*special=*/false);
        text += piece;
        if (!o.json) out.write(piece);
        Batch one;
        int32_t tok = id;
        one.n_tokens = 1;
        one.token = &tok;
        one.pos = &pos;
        const Clock::time_point t_gen = Clock::now();
        const DecodeStatus ds = ctx->decode(one);
        gen_ms += std::chrono::duration<double, std::milli>(Clock::now() - t_gen).count();
        if (ds != DecodeStatus::Ok) {
            std::fprintf(stderr, "\nlctx run: decode failed (status %d)\n", static_cast<int>(ds));
            return 1;
        }
        ++pos;
        bool reversed = false;
        for (const std::string &r : o.reverse_prompts) reversed = reversed || ends_with(text, r);
        if (reversed) {
            stop = "reverse prompt";
            break;
        }
    }
    interrupt_end_reply();

    // As llama-cli: a reply cut by Ctrl-C ends the program with 128 + SIGINT once its output is out.
    const int status = stop == "interrupted" ? 130 : 0;
    if (o.json) {
        nlohmann::json j;
        j["prompt_ids"] = encoder_ids.empty() ? prompt_ids : encoder_ids;
        j["ids"] = ids;
        j["text"] = text;
        j["seed"] = seed;
        j["stop"] = stop;
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
    const double pp = prompt_ms > 0 ? 1e3 * n_prompt / prompt_ms : 0.0;
    const double tg = gen_ms > 0 ? 1e3 * n_gen / gen_ms : 0.0;
    // Peak resident memory against what a run needs: the mapped model file and the KV cache.
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    const double mib = 1024.0 * 1024.0;
    std::fprintf(
        stderr,
        "prompt: %d tokens, %.1f tokens/s | generation: %d tokens, %.1f tokens/s | peak memory %.1f MiB "
        "(model file %.1f MiB + KV cache %.1f MiB)\n",
        n_prompt, pp, n_gen, tg, static_cast<double>(ru.ru_maxrss) * 1024.0 / mib,
        static_cast<double>(model->file().size()) / mib, static_cast<double>(ctx->kv().memory_bytes()) / mib);
    return status;
}

}  // namespace lctx::cli
