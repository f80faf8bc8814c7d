// lctx chat: a conversation on standard input. Each user line is rendered in the model's chat format,
// the new part of the conversation is decoded on top of the cached one, and the reply is streamed.
// When the KV cache is full, the context shifts: the first n_keep tokens (the system prompt) stay,
// half of the rest is dropped, and the conversation goes on.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_format.h"
#include "context/context.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "vocab/vocab.h"

namespace lctx::cli {

namespace {

struct ChatSession {
    const Model &model;
    Context &ctx;
    int32_t n_keep = 0;     // tokens never dropped by a shift (BOS and the system prompt)
    int32_t n_past = 0;     // next position
    bool verbose = false;

    // Makes room for n more tokens, shifting as often as needed. False if even a shift cannot help.
    bool make_room(int32_t n) {
        const int32_t n_ctx = static_cast<int32_t>(ctx.kv().size());
        if (n > n_ctx - n_keep - 1) return false;
        while (n_past + n > n_ctx) {
            const int32_t dropped = ctx.shift_context(0, n_keep);
            if (dropped == 0) return false;
            n_past -= dropped;
            if (verbose) std::fprintf(stderr, "[context shift: dropped %d tokens, kept %d]\n", dropped, n_keep);
        }
        return true;
    }

    bool feed(const std::vector<int32_t> &tokens) {
        const int32_t n_batch = static_cast<int32_t>(ctx.params().n_batch);
        for (size_t i = 0; i < tokens.size(); i += n_batch) {
            const int32_t n = std::min<int32_t>(n_batch, static_cast<int32_t>(tokens.size() - i));
            if (!make_room(n)) return false;
            std::vector<int32_t> pos(n);
            for (int32_t k = 0; k < n; ++k) pos[k] = n_past + k;
            Batch b;
            b.n_tokens = n;
            b.token = tokens.data() + i;
            b.pos = pos.data();
            if (ctx.decode(b) != DecodeStatus::Ok) return false;
            n_past += n;
        }
        return true;
    }
};

}  // namespace

int cmd_chat(int argc, char **argv) {
    CLI::App app{"Talk with a model: one user turn per line of standard input", "lctx chat"};
    std::string model_path = default_model_path();
    std::string system;
    std::string format_name;
    int32_t n_predict = 256;
    int32_t n_ctx = 0;
    int32_t n_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    bool verbose = false;
    SamplingOptions so;
    app.add_option("-m,--model", model_path, "GGUF model file (default: the model shipped in models/)");
    app.add_option("--system", system, "system prompt (kept through context shifts)");
    app.add_option("--format", format_name, "chat format: chatml, llama2, llama3, phi3, gemma, zephyr, mistral, raw "
                                            "(default: recognized from the model's template)");
    app.add_option("-n,--n-predict", n_predict, "most tokens per reply");
    app.add_option("-c,--ctx-size", n_ctx, "context size in tokens (0: the model's training context)");
    app.add_option("-t,--threads", n_threads, "threads")->check(CLI::PositiveNumber);
    add_sampling_options(app, so);
    app.add_flag("-v,--verbose", verbose, "report context shifts on stderr");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }

    std::unique_ptr<Model> model = load_model_or_report(model_path);
    if (!model) return 1;
    const Vocab &vocab = model->vocab();
    std::string tmpl = format_name;
    if (tmpl.empty()) tmpl = model->file().get_string("tokenizer.chat_template").value_or("");
    const ChatFormat format = chat_format_detect(tmpl);

    std::unique_ptr<Context> ctx = make_context_or_report(*model, n_ctx, 2048, n_threads);
    if (!ctx) return 1;
    ChatSession session{*model, *ctx};
    session.verbose = verbose;
    std::unique_ptr<SamplerChain> sampler = make_sampler_chain(so);

    std::vector<ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    // The system prompt (and BOS) is decoded first and kept through every shift.
    std::string rendered = chat_format_apply(format, messages, false);
    {
        std::vector<int32_t> head = vocab.tokenize(rendered, true, true);
        if (!session.feed(head)) {
            std::fprintf(stderr, "lctx: the system prompt does not fit the context\n");
            return 1;
        }
        session.n_keep = session.n_past;
    }

    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        messages.push_back({"user", line});
        const std::string full = chat_format_apply(format, messages, true);
        const std::string delta = full.substr(std::min(rendered.size(), full.size()));
        const std::vector<int32_t> toks = vocab.tokenize(delta, false, true);
        if (!session.feed(toks)) {
            std::fprintf(stderr, "lctx: this message (%zu tokens) does not fit the context\n", toks.size());
            messages.pop_back();
            continue;
        }
        std::string reply;
        for (int32_t i = 0; i < n_predict; ++i) {
            const int32_t id = sampler->sample(ctx->logits_ith(-1), static_cast<int32_t>(model->hparams().n_vocab));
            if (vocab.is_eog(id)) break;
            const std::string piece = vocab.token_to_piece(id, false);
            reply += piece;
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            if (!session.feed({id})) {
                std::fprintf(stderr, "\nlctx: decode failed\n");
                return 1;
            }
        }
        std::printf("\n");
        std::fflush(stdout);
        messages.push_back({"assistant", reply});
        rendered = chat_format_apply(format, messages, false);
    }
    return 0;
}

}  // namespace lctx::cli
