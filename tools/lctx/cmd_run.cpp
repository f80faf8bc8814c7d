// lctx run: tokenize a prompt, decode it as one batch, then sample and decode one token at a time,
// streaming the text; ends with a timing line (or prints one JSON object with --json).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "context/context.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "vocab/vocab.h"

namespace lctx::cli {

int cmd_run(int argc, char **argv) {
    CLI::App app{"Generate text from a prompt", "lctx run"};
    std::string model_path = default_model_path();
    std::string prompt = "Once upon a time";
    int32_t n_predict = 128;
    int32_t n_ctx = 0;
    int32_t n_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    bool json = false;
    SamplingOptions so;
    app.add_option("-m,--model", model_path, "GGUF model file (default: the model shipped in models/)");
    app.add_option("-p,--prompt", prompt, "prompt text");
    app.add_option("-n,--n-predict", n_predict, "tokens to generate (stops earlier at end of generation)");
    app.add_option("-c,--ctx-size", n_ctx, "context size in tokens (0: the model's training context)");
    app.add_option("-t,--threads", n_threads, "threads")->check(CLI::PositiveNumber);
    add_sampling_options(app, so);
    app.add_flag("--json", json, "print one JSON object {prompt_ids, ids, text} instead of streaming");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    if (n_predict < 0) n_predict = 0;

    std::unique_ptr<Model> model = load_model_or_report(model_path);
    if (!model) return 1;
    const Vocab &vocab = model->vocab();

    std::vector<int32_t> prompt_ids;
    try {
        prompt_ids = vocab.tokenize(prompt, /*add_special=*/true, /*parse_special=*/true);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx: cannot tokenize the prompt: %s\n", e.what());
        return 1;
    }
    if (prompt_ids.empty()) {
        std::fprintf(stderr, "lctx: the prompt is empty and the model adds no BOS token\n");
        return 1;
    }

    // The whole prompt goes in one batch.
    std::unique_ptr<Context> ctx = make_context_or_report(*model, n_ctx, UINT32_MAX, n_threads);
    if (!ctx) return 1;
    const ContextParams &cp = ctx->params();
    if (prompt_ids.size() >= cp.n_ctx) {
        std::fprintf(stderr, "lctx: the prompt has %zu tokens, which does not fit a context of %u (use -c)\n",
                     prompt_ids.size(), cp.n_ctx);
        return 1;
    }

    std::unique_ptr<SamplerChain> sampler = make_sampler_chain(so);
    for (int32_t id : prompt_ids) sampler->accept(id);

    if (!json) {
        std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
    }

    std::vector<int32_t> ids;
    std::string text;
    Batch b;
    b.n_tokens = static_cast<int32_t>(prompt_ids.size());
    b.token = prompt_ids.data();
    if (ctx->decode(b) != DecodeStatus::Ok) {
        std::fprintf(stderr, "lctx: decoding the prompt failed\n");
        return 1;
    }
    int32_t pos = b.n_tokens;
    std::string pending;  // bytes of an incomplete UTF-8 character are held back while streaming
    for (int32_t i = 0; i < n_predict && static_cast<uint32_t>(pos) < cp.n_ctx; ++i) {
        const int32_t id =
            sampler->sample(ctx->logits_ith(-1), static_cast<int32_t>(model->hparams().n_vocab));
        sampler->accept(id);
        if (vocab.is_eog(id)) break;
        ids.push_back(id);
        const std::string piece = vocab.token_to_piece(id, /*special=*/false);
        text += piece;
        if (!json) {
            pending += piece;
            // print whole characters only
            size_t cut = pending.size();
            for (size_t k = 1; k <= std::min<size_t>(3, pending.size()); ++k) {
                const unsigned char c = static_cast<unsigned char>(pending[pending.size() - k]);
                if ((c & 0xC0) == 0x80) continue;
                const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
                if (need > k) cut = pending.size() - k;
                break;
            }
            std::fwrite(pending.data(), 1, cut, stdout);
            std::fflush(stdout);
            pending.erase(0, cut);
        }
        Batch one;
        int32_t tok = id;
        one.n_tokens = 1;
        one.token = &tok;
        one.pos = &pos;
        const DecodeStatus st = ctx->decode(one);
        if (st != DecodeStatus::Ok) {
            std::fprintf(stderr, "\nlctx: decode failed (status %d)\n", static_cast<int>(st));
            return 1;
        }
        ++pos;
    }

    const PerfCounters perf = ctx->perf();
    if (json) {
        nlohmann::json out;
        out["prompt_ids"] = prompt_ids;
        out["ids"] = ids;
        out["text"] = text;
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::fwrite(pending.data(), 1, pending.size(), stdout);
        std::printf("\n");
        std::fflush(stdout);
        const double pp = perf.t_p_eval_ms > 0 ? 1e3 * perf.n_p_eval / perf.t_p_eval_ms : 0.0;
        const double tg = perf.t_eval_ms > 0 ? 1e3 * perf.n_eval / perf.t_eval_ms : 0.0;
        // Peak resident memory against what a run needs: the mapped model file and the KV cache.
        struct rusage ru {};
        getrusage(RUSAGE_SELF, &ru);
        const double mib = 1024.0 * 1024.0;
        std::fprintf(
            stderr,
            "prompt: %d tokens, %.1f tokens/s | generation: %d tokens, %.1f tokens/s | peak memory %.1f MiB "
            "(model file %.1f MiB + KV cache %.1f MiB)\n",
            perf.n_p_eval, pp, perf.n_eval, tg, static_cast<double>(ru.ru_maxrss) * 1024.0 / mib,
            static_cast<double>(model->file().size()) / mib,
            static_cast<double>(ctx->kv().memory_bytes()) / mib);
    }
    return 0;
}

}  // namespace lctx::cli
