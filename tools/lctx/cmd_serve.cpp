// lctx serve: an OpenAI-compatible HTTP server with continuous batching over one context (src/server/).
// The listener starts first (/health answers 503 while the model loads); SIGTERM drains (/health and new
// requests get 503 at once, the running requests finish within --drain-timeout), then SIGTERM's and
// SIGINT's shutdown stops accepting, ends the open requests (streams get an error chunk and [DONE]) and
// leaves with status 0. A second signal during the drain ends it at once.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "chat/jinja_eval.h"
#include "chat/tool_calls.h"
#include "server/drain.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "server/kv_events.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/read_file.h"
#include "tools/lctx/spec_options.h"

namespace lctx::cli {

namespace {
int g_signal_pipe[2] = {-1, -1};
void on_signal(int sig) {
    const int saved = errno;
    [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &sig, sizeof sig);
    errno = saved;
}
}  // namespace

int cmd_serve(int argc, char **argv) {
    CLI::App app{"Serve a model over HTTP with OpenAI's API (continuous batching over one context)",
                 "lctx serve"};
    configure_app(app);
    server::EngineOptions eo;
    eo.model_path = default_model_path();
    server::ServerOptions so;
    bool no_metrics = false;
    app.add_option("-m,--model", eo.model_path, "GGUF model file");
    app.add_option("--host", so.host, "address to listen on");
    app.add_option("--port", so.port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535));
    app.add_option("-c,--ctx-size", eo.n_ctx,
                   "the whole context in cells; each slot gets ctx-size / parallel")
        ->check(CLI::Range(8, 1 << 24));
    app.add_option("--parallel", eo.n_slots, "slots (-np): requests decoded together")
        ->check(CLI::Range(1, 256));
    app.add_option("-b,--batch-size", eo.step_tokens,
                   "tokens in one decode step (the next token of every generating slot, then prompt chunks; "
                   "small steps "
                   "keep every stream moving; a request alone takes steps of up to 128)")
        ->check(CLI::Range(1, 65536));
    app.add_option("-t,--threads", eo.n_threads, "threads (0: every core)")->check(CLI::Range(0, 1024));
    app.add_option("--queue", eo.max_queue, "requests that may wait for a slot; beyond: 503")
        ->check(CLI::Range(0, 100000));
    app.add_flag(
        "--context-shift", eo.context_shift,
        "a full slot drops half its tokens and goes on (requests with max_tokens); else finish 'length'");
    app.add_option("--api-key", so.api_key, "require 'Authorization: Bearer KEY' (all but / and /health)");
    std::string api_key_file;
    app.add_option("--api-key-file", api_key_file, "a file of API keys, one a line (any of them is let in)");
    app.add_option("--alias", eo.alias, "the model's name in answers (default: the file's name)");
    app.add_option("--cors-origin", so.cors_origins,
                   "an origin browser pages may call from (repeatable; default: every origin)");
    app.add_option("--max-conns-per-client", so.max_per_client,
                   "connections of one client address at once; beyond, its oldest waiting one closes")
        ->check(CLI::Range(1, 100000));
    app.add_option("--header-timeout", so.head_timeout_ms,
                   "milliseconds a request head may take to arrive (408)")
        ->check(CLI::Range(100, 3600000));
    app.add_option("--body-timeout", so.body_timeout_ms,
                   "milliseconds a request body may take to arrive (408)")
        ->check(CLI::Range(100, 3600000));
    int timeout_s = 0;
    app.add_option("--timeout", timeout_s,
                   "(-to) llama-server's read/write timeout, seconds: a body may take this long to arrive, a "
                   "write may wait this long for a client (--header-timeout and --body-timeout still win)")
        ->check(CLI::Range(1, 86400));
    app.add_option(
        "--chat-template", eo.chat_template,
        "a built-in chat format instead of the model's template (chatml, llama2, llama3, phi3, gemma, "
        "zephyr, mistral, raw)");
    std::string template_file;
    app.add_option(
        "--chat-template-file", template_file,
        "a Jinja chat template file used instead of the model's own (tools and reasoning follow its "
        "format)");
    bool jinja = false;
    app.add_flag("--jinja", jinja,
                 "accepted as llama-server takes it: the model's template (or --chat-template-file) always "
                 "renders through Jinja");
    app.add_option(
           "--reasoning-format", so.reasoning_format,
           "where a reply's <think> reasoning goes: auto or deepseek (message.reasoning_content), none "
           "(left in the content)")
        ->check(CLI::IsMember({"auto", "deepseek", "none"}));
    app.add_option("--reasoning-budget", so.reasoning_budget,
                   "-1: thinking as the template decides; 0: thinking off (enable_thinking false)")
        ->check(CLI::IsMember({-1, 0}));
    app.add_option("--slot-save-path", so.slot_save_path, "folder for /slots/{id}?action=save|restore files");
    app.add_flag("--metrics", so.metrics, "serve /metrics (on by default)");
    app.add_flag("--no-metrics", no_metrics, "do not serve /metrics");
    app.add_option(
        "--kv-events", eo.kv_events,
        "publish KV-cache events (vLLM's, for llm-d) on a ZMQ PUB socket bound to tcp://HOST:PORT");
    app.add_option("--kv-block-size", eo.kv_block_size,
                   "tokens in one KV-cache block of --kv-events (default 16)")
        ->check(CLI::Range(1, 65536));
    app.add_flag(
        "--log-disable", [&](int64_t) { so.log = false; }, "no request log");
    // Scale-out (docs/SCALE-OUT.md): a rolling update's graceful termination.
    int drain_timeout_s = 30;
    app.add_option("--drain-timeout", drain_timeout_s,
                   "on SIGTERM, seconds the running requests get to finish while /health and new requests "
                   "answer 503; then they are aborted (0: abort at once)")
        ->check(CLI::Range(0, 86400));
    std::string ctk = "f16", ctv = "f16";
    app.add_option("--cache-type-k", ctk,
                   "KV cache type of K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1");
    app.add_option("--cache-type-v", ctv, "KV cache type of V (-ctv), as -ctk; the block types need -fa");
    app.add_flag("--flash-attn", eo.flash_attn,
                 "(-fa) llama.cpp's flash-attention cache: V stored by rows (a quantized -ctv needs it)");
    LoraArgs lora_args;
    add_lora_options(app, lora_args);
    // Speculative decoding in every slot: `lctx run`'s options and checks (-md, --draft-max, --lookup, ...).
    SpecOptions spec;
    add_spec_options(app, spec);
    app.add_option("--draft-batch-max", eo.spec.batch_max,
                   "most draft tokens one step adds, all slots together (0: the step's budget, -b or 128 "
                   "alone, less the generating slots' own tokens)")
        ->check(CLI::Validator(
            [](const std::string &v) {
                return !v.empty() && v[0] == '-' ? std::string("a count of tokens: 0 (automatic) or more")
                                                 : "";
            },
            "N"));
    const int st = parse_or_report(app, "serve", normalize_args(argc, argv));
    if (st >= 0) return st;
    if (const std::string e = check_spec_options(app, spec); !e.empty()) {
        std::fprintf(stderr, "lctx serve: %s\n", e.c_str());
        return 1;
    }
    eo.spec.model_draft = spec.model_draft;
    eo.spec.lookup = spec.lookup;
    eo.spec.ngram_min = spec.ngram_min;
    eo.spec.ngram_max = spec.ngram_max;
    eo.spec.n_max = spec.draft_max;
    eo.spec.n_min = spec.draft_min;
    eo.spec.p_min = spec.draft_p_min;
    eo.spec.ctx_draft = spec.ctx_draft;
    eo.spec.threads_draft = spec.threads_draft;
    eo.spec.threads_batch_draft = spec.threads_batch_draft;
    if (const std::string e = kv_cache_types_from_names(ctk, ctv, eo.flash_attn, &eo.type_k, &eo.type_v);
        !e.empty()) {
        std::fprintf(stderr, "lctx serve: %s\n", e.c_str());
        return 1;
    }
    std::string lora_error;
    for (const LoraOption &l : parse_lora_options(lora_args, lora_error))
        eo.lora.emplace_back(l.path, l.scale);
    if (!lora_error.empty()) {
        std::fprintf(stderr, "lctx serve: %s\n", lora_error.c_str());
        return 1;
    }
    if (no_metrics) so.metrics = false;
    if (!eo.kv_events.empty()) {
        try {
            server::parse_kv_endpoint(eo.kv_events);  // a malformed endpoint fails before anything starts
        } catch (const std::exception &e) {
            std::fprintf(stderr, "lctx serve: %s\n", e.what());
            return 1;
        }
    }
    if (timeout_s > 0) {
        const int head = so.head_timeout_ms, body = so.body_timeout_ms;
        server::apply_timeout(so, timeout_s);
        if (app.count("--header-timeout")) so.head_timeout_ms = head;
        if (app.count("--body-timeout")) so.body_timeout_ms = body;
    }
    if (!template_file.empty()) {
        if (!eo.chat_template.empty()) {
            std::fprintf(stderr, "lctx serve: --chat-template-file and --chat-template: give one of them\n");
            return 1;
        }
        std::string why;
        if (!read_whole_file(template_file, &eo.chat_template_jinja, &why)) {
            std::fprintf(stderr, "lctx serve: --chat-template-file: %s\n", why.c_str());
            return 1;
        }
        if (eo.chat_template_jinja.empty()) {
            std::fprintf(stderr, "lctx serve: --chat-template-file: '%s' is empty\n", template_file.c_str());
            return 1;
        }
        try {
            jinja::Template::parse(eo.chat_template_jinja);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "lctx serve: --chat-template-file: '%s' is not a valid Jinja template: %s\n",
                         template_file.c_str(), e.what());
            return 1;
        }
    }
    if (!api_key_file.empty()) {
        try {
            so.api_keys = server::read_api_key_file(api_key_file);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "lctx serve: %s\n", e.what());
            return 1;
        }
    }
    so.http_threads = std::max(256, 2 * (eo.n_slots + eo.max_queue) + 32);

    // A signal handler only writes to a pipe; a thread reads it and shuts down (whatever thread the
    // kernel picks for the signal).
    if (pipe(g_signal_pipe) != 0) {
        std::fprintf(stderr, "lctx serve: cannot create a pipe\n");
        return 1;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client gone shows up as a failed write

    server::HttpServer http(so);
    const int port = http.bind();
    if (port < 0) {
        std::fprintf(stderr, "lctx serve: cannot listen on %s:%d\n", so.host.c_str(), so.port);
        return 1;
    }
    eo.kv_events_pod = so.host + ":" + std::to_string(port);  // the events' topic names this replica
    std::fprintf(stderr, "lctx serve: listening on http://%s:%d/ (loading %s)\n", so.host.c_str(), port,
                 eo.model_path.c_str());
    std::thread listener([&] { http.listen(); });

    std::unique_ptr<server::Engine> engine;
    std::atomic<server::Engine *> running{nullptr};  // what the signal thread may stop
    std::thread waiter([&] {
        int sig = 0;
        while (read(g_signal_pipe[0], &sig, sizeof sig) < 0 && errno == EINTR) {
        }
        server::Engine *const eng = running.load();
        if (sig == SIGTERM && eng && drain_timeout_s > 0) {
            std::fprintf(stderr, "lctx serve: SIGTERM, draining (up to %d s)\n", drain_timeout_s);
            const bool done = server::drain(http, *eng, drain_timeout_s * 1000, [] {
                pollfd p{g_signal_pipe[0], POLLIN, 0};  // a second signal ends the drain
                return poll(&p, 1, 0) > 0;
            });
            std::fprintf(stderr, "lctx serve: %s\n",
                         done ? "drained" : "drain ended with requests running: they are aborted");
        }
        if (sig != 0)  // 0: the server ends by itself (the model did not load)
            std::fprintf(stderr, "lctx serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        if (server::Engine *e = running.load())
            e->stop();  // open requests end (streams get an error chunk and [DONE])
        http.stop();
    });
    int status = 0;
    try {
        engine = std::make_unique<server::Engine>(eo);
        engine->start();
        running = engine.get();
        http.set_engine(engine.get());
        std::fprintf(stderr, "lctx serve: model %s, %d slots of %d cells; open http://%s:%d/\n",
                     engine->model_name().c_str(), engine->n_slots(), engine->slot_ctx(), so.host.c_str(),
                     port);
        if (eo.spec.enabled()) {
            const std::string drafter = eo.spec.lookup ? "prompt lookup (n-grams of " +
                                                             std::to_string(eo.spec.ngram_min) + " to " +
                                                             std::to_string(eo.spec.ngram_max) + " tokens)"
                                                       : "draft model " + eo.spec.model_draft;
            std::fprintf(stderr,
                         "lctx serve: speculative decoding in every slot: %s, drafts of %d to %d tokens\n",
                         drafter.c_str(), eo.spec.n_min, eo.spec.n_max);
        }
        if (!eo.kv_events.empty())
            std::fprintf(stderr, "lctx serve: KV-cache events on %s (topic %s, blocks of %d tokens)\n",
                         eo.kv_events.c_str(), engine->kv_events_topic().c_str(), engine->kv_block_size());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx serve: %s\n", e.what());
        status = 1;
        on_signal(0);  // wakes the waiter, which stops the listener
    }
    listener.join();
    waiter.join();
    http.set_engine(nullptr);
    running = nullptr;
    engine.reset();
    return status;
}

}  // namespace lctx::cli
