// lctx perplexity: the perplexity of a model on a text, as llama-perplexity computes it (windows of -c
// tokens, the second half of each scored, several windows per batch as parallel sequences), written over
// the public C API (llama.h) alone. Prints the running values as llama-perplexity prints them
// ("[1]4.0138,[2]3.7155,...", one line per batch), then "Final estimate: PPL = X +/- Y"; --json prints one
// object instead, --plot FILE.svg draws the per-window values. A progress bar goes to stderr on a terminal.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "tools/lctx/args.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/perplexity.h"
#include "tools/lctx/perplexity_plot.h"

namespace lctx::cli {

namespace {

// KV cache types by llama.cpp's names (-ctk / -ctv).
bool cache_type_from_name(const std::string &name, ggml_type *out) {
    static const std::pair<const char *, ggml_type> types[] = {
        {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
        {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
        {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}, {"iq4_nl", GGML_TYPE_IQ4_NL},
    };
    for (const auto &[n, t] : types)
        if (name == n) {
            *out = t;
            return true;
        }
    return false;
}

// The text as llama-perplexity reads -f: the file's bytes with ONE trailing newline removed.
bool read_text(const std::string &path, std::string *text) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) return false;
    *text = ss.str();
    if (!text->empty() && text->back() == '\n') text->pop_back();
    return true;
}

std::vector<llama_token> tokenize(const llama_vocab *vocab, const std::string &text) {
    // A first call with no room reports the count as a negative number.
    const int32_t n = -llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), nullptr, 0,
                                      /*add_special=*/true, /*parse_special=*/false);
    std::vector<llama_token> out(static_cast<size_t>(std::max(n, 0)));
    if (n > 0)
        llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), n, true, false);
    return out;
}

// A bar redrawn in place on stderr: done/total windows, the running estimate, the time left.
class ProgressBar {
  public:
    explicit ProgressBar(int32_t total) : total_(total), start_(std::chrono::steady_clock::now()) {}
    void draw(int32_t done, double ppl) {
        const double elapsed = seconds();
        const double eta = done > 0 ? elapsed * (total_ - done) / done : 0.0;
        const int width = 30;
        const int fill = total_ > 0 ? static_cast<int>(static_cast<int64_t>(width) * done / total_) : width;
        std::string bar(static_cast<size_t>(fill), '#');
        bar.append(static_cast<size_t>(width - fill), '.');
        std::fprintf(stderr, "\r\033[K[%s] %d/%d windows  PPL %.4f  %.1f s, %.1f s left", bar.c_str(), done,
                     total_, ppl, elapsed, eta);
        std::fflush(stderr);
        drawn_ = true;
    }
    void clear() {
        if (drawn_) std::fprintf(stderr, "\r\033[K");
        drawn_ = false;
    }
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

  private:
    int32_t total_;
    std::chrono::steady_clock::time_point start_;
    bool drawn_ = false;
};

nlohmann::json to_json(const PerplexityResult &r, const PerplexityPlan &plan, size_t n_tokens,
                       const std::string &model, const std::string &file) {
    nlohmann::json j;
    j["model"] = model;
    j["file"] = file;
    j["n_tokens"] = n_tokens;
    j["n_ctx"] = plan.n_ctx;
    j["n_batch"] = plan.n_batch;
    j["n_seq"] = plan.n_seq;
    j["n_chunk"] = plan.n_chunk;
    j["scored_per_chunk"] = plan.scored;
    nlohmann::json chunks = nlohmann::json::array();
    for (const PerplexityChunk &c : r.chunks)
        chunks.push_back({{"chunk", c.index},
                          {"token_range", {c.token_begin, c.token_begin + plan.n_ctx}},
                          {"n_scored", c.nll.size()},
                          {"nll_sum", c.nll_sum},
                          {"ppl", c.ppl},
                          {"cumulative_ppl", c.cumulative_ppl}});
    j["chunks"] = std::move(chunks);
    j["final"] = {{"ppl", r.ppl}, {"ppl_err", r.ppl_err}, {"mean_nll", r.mean_nll}, {"count", r.count}};
    return j;
}

}  // namespace

int cmd_perplexity(int argc, char **argv) {
    CLI::App app{"Perplexity of a model on a text, as llama-perplexity computes it", "lctx perplexity"};
    configure_app(app);
    std::string model_path = default_model_path(), text_path, plot_path, ctk = "f16", ctv = "f16";
    int32_t n_ctx = 512, n_batch = 2048, n_ubatch = 512, n_threads = 0, n_chunks = -1;
    bool json = false, quiet = false, flash_attn = false;
    app.add_option("-m,--model", model_path, "GGUF model file");
    app.add_option("-f,--file", text_path, "the text (one trailing newline is dropped)")->required();
    app.add_option("-c,--ctx-size", n_ctx, "window length in tokens; the second half of each is scored");
    app.add_option("-b,--batch-size", n_batch,
                   "tokens per decode: b / c windows side by side, or a window in parts when b < c");
    app.add_option("--ubatch-size", n_ubatch, "(-ub) micro-batch size");
    app.add_option("-t,--threads", n_threads, "threads (0: every core)");
    app.add_option("--chunks", n_chunks, "evaluate at most this many windows (-1: every whole window)");
    app.add_option("--cache-type-k", ctk,
                   "KV cache type of K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1");
    app.add_option("--cache-type-v", ctv, "KV cache type of V (-ctv), as -ctk; the block types need -fa");
    app.add_flag("--flash-attn", flash_attn,
                 "(-fa) llama.cpp's flash-attention cache: V stored by rows (a quantized -ctv needs it)");
    app.add_flag("--json", json,
                 "print one JSON object {n_ctx, n_batch, n_seq, n_chunk, chunks: [{chunk, token_range, "
                 "n_scored, nll_sum, ppl, cumulative_ppl}], final: {ppl, ppl_err, mean_nll, count}}");
    app.add_option("--plot", plot_path, "write an SVG chart of the per-window values to this file (*.svg)");
    app.add_flag("-q,--log-disable", quiet, "no notes and no progress on stderr");
    const int st = parse_or_report(app, "perplexity", normalize_args(argc, argv));
    if (st >= 0) return st;
    auto fail = [](const std::string &why) {
        std::fprintf(stderr, "lctx perplexity: %s\n", why.c_str());
        return 1;
    };

    ggml_type type_k, type_v;
    if (!cache_type_from_name(ctk, &type_k)) return fail("--cache-type-k: unknown type '" + ctk + "'");
    if (!cache_type_from_name(ctv, &type_v)) return fail("--cache-type-v: unknown type '" + ctv + "'");
    if (type_v != GGML_TYPE_F32 && type_v != GGML_TYPE_F16 && type_v != GGML_TYPE_BF16 && !flash_attn)
        return fail("--cache-type-v " + ctv + ": V cache quantization requires flash_attn (add -fa)");
    if (n_ubatch < 1) return fail("--ubatch-size " + std::to_string(n_ubatch) + ": must be at least 1");
    if (n_threads < 0) return fail("--threads " + std::to_string(n_threads) + ": must be 0 or more");
    // Everything that can be refused before the (long) run is checked first.
    if (!plot_path.empty())
        if (const std::string why = perplexity_plot_check(plot_path); !why.empty()) return fail(why);
    std::string text;
    if (!read_text(text_path, &text))
        return fail("-f " + text_path + ": cannot read: " + std::strerror(errno));

    capture_capi_errors();
    ModelPtr model(llama_model_load_from_file(model_path.c_str(), llama_model_default_params()));
    if (!model) return fail("cannot load model '" + model_path + "'" + capi_error_suffix());
    if (llama_model_has_encoder(model.get()))
        return fail(model_path + " has an encoder (t5): perplexity needs a decoder-only model");
    const llama_vocab *vocab = llama_model_get_vocab(model.get());
    const std::vector<llama_token> tokens = tokenize(vocab, text);

    std::string why;
    const PerplexityPlan plan =
        perplexity_plan(static_cast<int64_t>(tokens.size()), n_ctx, n_batch, n_chunks, &why);
    if (plan.n_chunk == 0) return fail(why);
    const int32_t n_ctx_train = llama_model_n_ctx_train(model.get());
    if (!quiet && n_ctx_train > 0 && n_ctx > n_ctx_train)
        std::fprintf(stderr,
                     "lctx perplexity: warning: the model was trained on %d tokens of context; -c %d goes "
                     "beyond (its positions there are untrained)\n",
                     n_ctx_train, n_ctx);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(plan.context_size());
    cp.n_batch = static_cast<uint32_t>(plan.n_batch);
    cp.n_ubatch = static_cast<uint32_t>(std::min(n_ubatch, plan.n_batch));
    cp.n_seq_max = static_cast<uint32_t>(plan.n_seq);
    cp.n_threads = resolved_threads(n_threads);
    cp.n_threads_batch = cp.n_threads;
    cp.type_k = type_k;
    cp.type_v = type_v;
    cp.flash_attn = flash_attn;
    ContextPtr ctx(llama_init_from_model(model.get(), cp));
    if (!ctx)
        return fail("cannot create a context of " + std::to_string(plan.context_size()) + " tokens" +
                    capi_error_suffix());
    // An embedding model (bert and its kin) pools its last states and has no language-model head.
    if (llama_pooling_type(ctx.get()) != LLAMA_POOLING_TYPE_NONE)
        return fail(model_path +
                    " is an embedding model (it pools its outputs, no logits): perplexity needs a "
                    "language model");
    if (!quiet)
        std::fprintf(stderr,
                     "lctx perplexity: %zu tokens, %d windows of %d (%d scored each), %d per batch of %d, %d "
                     "threads\n",
                     tokens.size(), plan.n_chunk, plan.n_ctx, plan.scored, plan.n_seq, plan.n_batch,
                     cp.n_threads);

    const bool bar_on = !quiet && isatty(STDERR_FILENO);
    ProgressBar bar(plan.n_chunk);
    if (bar_on) bar.draw(0, 0.0);
    PerplexityResult result;
    const bool ok = perplexity_run(
        ctx.get(), tokens, plan,
        [&](const PerplexityResult &r, int32_t n_new) {
            if (bar_on) bar.clear();
            if (!json) {
                // As llama-perplexity prints them: the cumulative estimate after each window, a line per
                // batch.
                for (size_t i = r.chunks.size() - static_cast<size_t>(n_new); i < r.chunks.size(); ++i)
                    std::printf("[%d]%.4f,", r.chunks[i].index, r.chunks[i].cumulative_ppl);
                std::printf("\n");
                std::fflush(stdout);
            }
            if (bar_on) bar.draw(static_cast<int32_t>(r.chunks.size()), r.chunks.back().cumulative_ppl);
        },
        &result, &why);
    if (bar_on) bar.clear();
    if (!ok) return fail(why + capi_error_suffix());

    if (json) {
        std::printf("%s\n", to_json(result, plan, tokens.size(), model_path, text_path).dump().c_str());
    } else {
        std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result.ppl, result.ppl_err);
    }
    std::fflush(stdout);
    if (!quiet)
        std::fprintf(stderr, "lctx perplexity: %lld tokens scored in %.2f s\n",
                     static_cast<long long>(result.count), bar.seconds());
    if (!plot_path.empty()) {
        const std::string title = "Perplexity of " + std::filesystem::path(model_path).filename().string() +
                                  " on " + std::filesystem::path(text_path).filename().string() + " (-c " +
                                  std::to_string(plan.n_ctx) + ")";
        if (const std::string e = write_file_whole(plot_path, perplexity_plot_svg(result, title)); !e.empty())
            return fail("--plot " + e);
    }
    return 0;
}

}  // namespace lctx::cli
