#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "generate/embd_normalize.h"
#include "server/apis.h"
#include "server/chat_reply.h"
#include "server/generation.h"
#include "server/http_front.h"
#include "server/openai_json.h"
#include "server/web_page.h"

namespace lctx::server {

using json = nlohmann::json;

namespace {
// Per handler thread: what the request log line reports (httplib runs the logger on the same thread,
// after the response, streams included).
struct RequestLog {
    std::chrono::steady_clock::time_point start;
    int64_t tokens = 0;
};
thread_local RequestLog t_log;

std::string base64(const void *data, size_t n) {
    static const char *kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const auto *p = static_cast<const unsigned char *>(data);
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t v = (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) |
                           (i + 2 < n ? uint32_t(p[i + 2]) : 0);
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
        out += i + 2 < n ? kAlphabet[v & 63] : '=';
    }
    return out;
}

void send_error(httplib::Response &res, const ApiError &e) {
    send_json(res, e.status, error_json(e.status, e.what(), e.type, e.param));
}
}  // namespace

struct HttpServer::Impl {
    ServerOptions opts;
    HttpRunner svr;
    std::unique_ptr<HttpFront> front;
    std::atomic<Engine *> engine{nullptr};
    std::atomic<bool> stopping{false};
    std::atomic<bool> draining{false};  // drain(): new requests get 503, accepted ones go on
    std::atomic<int> open_streams{0};   // streams not yet ended; stop() lets them write their end first
    ApiHost host;                       // what the endpoint families (apis.h) reach of this server

    explicit Impl(const ServerOptions &o) : opts(o) {
        host.engine = [this]() -> Engine & { return need_engine(); };
        host.stopping = [this] { return stopping.load(); };
        host.open_streams = &open_streams;
        host.log_tokens = [](int64_t n) { t_log.tokens += n; };
        host.limits = [](Engine &eng) { return generation_limits(eng); };
    }

    // The Access-Control-Allow-Origin for a request's Origin ("" : none, the browser refuses).
    std::string allowed_origin(const std::string &origin) const {
        if (opts.cors_origins.empty()) return origin.empty() ? "*" : origin;
        for (const std::string &o : opts.cors_origins)
            if (o == "*" || o == origin) return origin.empty() ? "*" : origin;
        return "";
    }
    // Asked by the front about each request head, before its body is read.
    EarlyAnswer check_head(const RequestHead &h) const {
        const bool public_path = h.path == "/health" || h.path == "/" || h.method == "OPTIONS";
        if ((opts.api_key.empty() && opts.api_keys.empty()) || public_path) return {};
        auto header = [&](const char *name) {
            auto it = h.headers.find(name);
            return it == h.headers.end() ? std::string() : it->second;
        };
        const std::string auth = header("Authorization");
        const std::string key = h.headers.count("X-Api-Key")    ? header("X-Api-Key")
                                : auth.rfind("Bearer ", 0) == 0 ? auth.substr(7)
                                                                : "";
        if (!key.empty() && (key == opts.api_key || std::find(opts.api_keys.begin(), opts.api_keys.end(),
                                                              key) != opts.api_keys.end()))
            return {};
        return {
            401,
            key.empty() ? "an API key is required (Authorization: Bearer KEY)" : "the API key is not valid",
            "authentication_error"};
    }

    Engine &need_engine() {
        if (stopping || draining) throw ApiError(503, "the server is shutting down", "unavailable_error");
        Engine *e = engine.load();
        if (!e) throw ApiError(503, "the model is loading", "unavailable_error");
        return *e;
    }

    // Runs a handler body, turning ApiError (and anything unexpected) into an error object.
    template <class F>
    void guarded(httplib::Response &res, F &&f) {
        try {
            f();
        } catch (const ApiError &e) {
            send_error(res, e);
        } catch (const std::exception &e) {
            send_json(res, 500, error_json(500, e.what(), "server_error"));
        }
    }

    void routes();
    void embeddings(const httplib::Request &req, httplib::Response &res);
    void rerank(const httplib::Request &req, httplib::Response &res);
    void generate(const httplib::Request &req, httplib::Response &res, Endpoint ep);
    std::vector<int32_t> prompt_tokens(Engine &eng, const GenRequest &r, const std::string &chat_prompt);
    // A chat request's prompt, grammar and reply parsing (chat_reply.h) under this server's options.
    ChatPlan chat_plan(const Engine &eng, const GenRequest &r) const {
        ChatReplyOptions co;
        chat::reasoning_format_from_name(opts.reasoning_format, co.reasoning);
        co.reasoning_budget = opts.reasoning_budget;
        return plan_chat(eng, r, co);
    }
};

std::vector<int32_t> HttpServer::Impl::prompt_tokens(Engine &eng, const GenRequest &r,
                                                     const std::string &chat_prompt) {
    std::vector<int32_t> toks;
    if (r.endpoint == Endpoint::Chat)
        toks = eng.tokenize_chat(chat_prompt);
    else
        return server::prompt_tokens(eng, r.prompts.at(0));
    if (toks.empty()) throw ApiError(400, "the prompt is empty", "invalid_request_error", "prompt");
    if (static_cast<int64_t>(toks.size()) >= eng.slot_ctx())
        throw ApiError(400,
                       "the prompt has " + std::to_string(toks.size()) + " tokens; a slot's context holds " +
                           std::to_string(eng.slot_ctx()) + " (prompt and reply together)",
                       "invalid_request_error", r.endpoint == Endpoint::Chat ? "messages" : "prompt");
    return toks;
}

void HttpServer::Impl::generate(const httplib::Request &req, httplib::Response &res, Endpoint ep) {
    Engine &eng = need_engine();
    if (eng.embedding_only())
        throw ApiError(400,
                       "this model makes embeddings only (an encoder): use /v1/embeddings (or /v1/rerank)",
                       "invalid_request_error");
    const json body = parse_body(req.body);
    RequestLimits lim;
    lim.n_vocab = eng.n_vocab();
    // Each choice takes a slot or a place in the queue: more than both hold could never be served.
    lim.max_n = std::min(lim.max_n, eng.n_slots() + eng.max_queue());
    lim.n_slots = eng.n_slots();
    GenRequest r = ep == Endpoint::Chat ? parse_chat_request(body, lim) : parse_completion_request(body, lim);
    // Chat: the template (with tools), the grammar of a forced tool call, and how replies are parsed.
    auto plan = std::make_shared<ChatPlan>();
    if (ep == Endpoint::Chat) {
        *plan = chat_plan(eng, r);
        if (!plan->grammar.empty()) r.grammar = plan->grammar;
    }
    std::vector<int32_t> prompt = prompt_tokens(eng, r, plan->prompt);
    if (r.ignore_eos)
        for (int32_t t : eng.eog_tokens()) r.sampling.logit_bias.emplace_back(t, -100.0f);  // -100: banned
    // llama-server's per-request adapter scales: [{id, scale}], the adapters left out at 0.
    const std::vector<float> lora = eng.lora_scales_for(body.contains("lora") ? &body["lora"] : nullptr);

    auto channel = std::make_shared<Channel>(r.n);
    const uint32_t seed = r.sampling.seed ? *r.sampling.seed : std::random_device{}();
    std::vector<Task> tasks;
    for (int32_t i = 0; i < r.n; ++i) {
        Task t;
        t.channel = channel;
        t.index = i;
        t.prompt = prompt;
        t.stop = r.stop;
        t.max_tokens = r.max_tokens;
        t.sampling = r.sampling;
        t.seed = seed + static_cast<uint32_t>(i);
        t.grammar = r.grammar;
        t.top_logprobs = r.logprobs ? r.top_logprobs : -1;
        t.lora = lora;
        t.id_slot = r.id_slot;
        t.cache_prompt = r.cache_prompt;
        t.preserved_tokens = plan->preserved_tokens;
        tasks.push_back(std::move(t));
    }
    eng.submit(std::move(tasks));

    auto meta = std::make_shared<ResponseMeta>();
    meta->endpoint = ep;
    meta->id = random_id(ep == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
    meta->model = eng.model_name();
    meta->created = unix_now();
    meta->logprobs = r.logprobs;
    auto results = std::make_shared<std::vector<ChoiceResult>>(static_cast<size_t>(r.n));

    if (!r.stream) {
        // A client that goes away cancels the request (its cells are freed at the next step): the wait
        // looks at the connection every 100 ms.
        const int fd = current_connection_fd();
        std::vector<Event> evs;
        std::string failure;
        int failure_status = 500;
        while (channel->pop(evs, 100)) {
            if (peer_gone(fd)) {
                channel->cancel();
                res.status = 499;  // nobody reads it: the request log says what happened
                return;
            }
            for (Event &e : evs) {
                ChoiceResult &c = (*results)[static_cast<size_t>(e.index)];
                if (e.kind == Event::Failed && failure.empty()) failure_status = e.status;
                if (e.kind == Event::Token) {
                    c.text += e.text;
                    if (r.logprobs && e.token >= 0) c.tokens.push_back(e);
                } else if (e.kind == Event::Done) {
                    c.finish(e);
                } else if (failure.empty()) {
                    failure = e.error;
                }
            }
            evs.clear();
        }
        if (!failure.empty()) {
            channel->cancel();  // the other choices stop too
            // The engine says which failures are the shutdown's (503): it stops before this layer's flag is
            // set.
            const bool unavailable = failure_status == 503 || stopping;
            throw ApiError(unavailable ? 503 : 500, failure,
                           unavailable ? "unavailable_error" : "server_error");
        }
        for (const ChoiceResult &c : *results) t_log.tokens += c.completion_tokens;
        json reply = response_json(*meta, *results);
        for (size_t i = 0; i < results->size(); ++i)
            chat_choice_json(*plan, (*results)[i].text, reply["choices"][i]);
        send_json(res, 200, reply);
        return;
    }

    // Server-sent events: one chunk per piece of text, the finish reason per choice, the usage chunk
    // when asked for, then [DONE]. A write that fails means the client is gone: the request is cancelled.
    const bool include_usage = r.include_usage;
    auto first = std::make_shared<std::vector<bool>>(static_cast<size_t>(r.n), true);
    // Parsed chat replies (tools, reasoning): each choice's deltas come from its own parser.
    auto parsed = std::make_shared<std::vector<ChatReplyStream>>();
    if (plan->parse)
        for (int32_t i = 0; i < r.n; ++i) parsed->emplace_back(*plan);
    res.set_header("Cache-Control", "no-cache");
    open_streams++;
    res.set_chunked_content_provider(
        "text/event-stream",
        [channel, meta, results, first, parsed, include_usage](size_t, httplib::DataSink &sink) {
            auto write = [&](const json &j) {
                const std::string s = "data: " + dump(j) + "\n\n";
                return sink.write(s.data(), s.size());
            };
            if (!sink.is_writable()) {
                channel->cancel();
                return false;
            }
            std::vector<Event> evs;
            const bool open = channel->pop(evs, 100);
            for (Event &e : evs) {
                const size_t i = static_cast<size_t>(e.index);
                ChoiceResult &c = (*results)[i];
                bool ok = true;
                if (e.kind == Event::Token && !parsed->empty()) {
                    bool f = (*first)[i];
                    for (const json &j : (*parsed)[i].token(*meta, e, f)) ok = ok && write(j);
                    (*first)[i] = f;
                } else if (e.kind == Event::Done && !parsed->empty()) {
                    c.finish(e);
                    t_log.tokens += e.completion_tokens;
                    bool f = (*first)[i];
                    std::vector<json> chunks = (*parsed)[i].done(*meta, e.index, e.finish_reason, f);
                    (*first)[i] = f;
                    chunks.back()["timings"] = timings_json(c);
                    for (const json &j : chunks) ok = ok && write(j);
                } else if (e.kind == Event::Token) {
                    // A token whose text is held back (a possible stop string) still reports its logprobs.
                    if (!e.text.empty() || (meta->logprobs && e.token >= 0)) {
                        ok = write(
                            chunk_json(*meta, e.index, e.text, e.token >= 0 ? &e : nullptr, (*first)[i], ""));
                        (*first)[i] = false;
                    }
                } else if (e.kind == Event::Done) {
                    c.finish(e);
                    t_log.tokens += e.completion_tokens;
                    json fin = chunk_json(*meta, e.index, "", nullptr, (*first)[i], e.finish_reason);
                    fin["timings"] = timings_json(c);  // as llama-server: the choice's last chunk
                    ok = write(fin);
                } else {
                    ok = write(e.status == 503 ? error_json(503, e.error, "unavailable_error")
                                               : error_json(500, e.error, "server_error"));
                }
                if (!ok) {
                    channel->cancel();
                    return false;
                }
            }
            if (!open) {
                if (include_usage) write(usage_chunk_json(*meta, *results));
                const std::string done = "data: [DONE]\n\n";
                sink.write(done.data(), done.size());
                sink.done();
            }
            return true;
        },
        [this, channel](bool) {
            channel->cancel();  // ended for any reason: nothing more is generated
            open_streams--;
        });
}

void HttpServer::Impl::embeddings(const httplib::Request &req, httplib::Response &res) {
    Engine &eng = need_engine();
    const json body = parse_body(req.body);
    if (!eng.embedding_only())
        throw ApiError(400, "this model generates text; /v1/embeddings needs an embedding model (an encoder)",
                       "invalid_request_error");
    if (eng.pooling() == LLAMA_POOLING_TYPE_RANK)
        throw ApiError(400, "this model is a reranker (rank pooling): use /v1/rerank",
                       "invalid_request_error");
    const EmbeddingRequest r = parse_embedding_request(body, eng.n_vocab());
    std::vector<std::vector<int32_t>> inputs;
    int64_t n_tokens = 0;
    for (const EmbeddingInput &in : r.inputs) {
        inputs.push_back(in.is_tokens ? in.tokens : eng.tokenize(in.text, true, false));
        n_tokens += static_cast<int64_t>(inputs.back().size());
    }
    std::vector<std::vector<float>> rows = eng.embed(inputs);
    json data = json::array();
    for (size_t i = 0; i < rows.size(); ++i) {
        // Euclidean, as llama-server's OpenAI embeddings (a zero vector stays zero).
        generate::embd_normalize(rows[i].data(), rows[i].size(), 2);
        json item = {{"object", "embedding"}, {"index", i}};
        if (r.base64)
            item["embedding"] = base64(rows[i].data(), rows[i].size() * sizeof(float));
        else
            item["embedding"] = rows[i];
        data.push_back(std::move(item));
    }
    t_log.tokens += n_tokens;
    send_json(res, 200,
              {{"object", "list"},
               {"data", std::move(data)},
               {"model", eng.model_name()},
               {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}});
}

void HttpServer::Impl::rerank(const httplib::Request &req, httplib::Response &res) {
    Engine &eng = need_engine();
    const json body = parse_body(req.body);
    if (!eng.embedding_only() || eng.pooling() != LLAMA_POOLING_TYPE_RANK)
        throw ApiError(400,
                       "this model is not a reranker: /v1/rerank needs a classification head (rank pooling)",
                       "invalid_request_error");
    const RerankRequest r = parse_rerank_request(body);
    std::vector<std::vector<int32_t>> inputs;
    int64_t n_tokens = 0;
    for (const std::string &d : r.documents) {
        inputs.push_back(eng.rerank_tokens(r.query, d));
        n_tokens += static_cast<int64_t>(inputs.back().size());
    }
    const std::vector<std::vector<float>> rows = eng.embed(inputs);
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a][0] > rows[b][0]; });
    if (r.top_n >= 0 && static_cast<size_t>(r.top_n) < order.size())
        order.resize(static_cast<size_t>(r.top_n));
    json results = json::array();
    for (size_t i : order) results.push_back({{"index", i}, {"relevance_score", rows[i][0]}});
    t_log.tokens += n_tokens;
    send_json(res, 200,
              {{"model", eng.model_name()},
               {"object", "list"},
               {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
               {"results", std::move(results)}});
}

void HttpServer::Impl::routes() {
    for (const char *p : {"/v1/embeddings", "/embeddings"})
        svr.Post(p, [this](const httplib::Request &req, httplib::Response &res) {
            guarded(res, [&] { embeddings(req, res); });
        });
    for (const char *p : {"/v1/rerank", "/rerank"})
        svr.Post(p, [this](const httplib::Request &req, httplib::Response &res) {
            guarded(res, [&] { rerank(req, res); });
        });
    svr.Get("/", [](const httplib::Request &, httplib::Response &res) {
        res.set_content(web_page_html(), "text/html; charset=utf-8");
    });
    svr.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
        if (!engine.load() || stopping || draining)
            send_json(
                res, 503,
                error_json(503, stopping || draining ? "the server is shutting down" : "the model is loading",
                           "unavailable_error"));
        else
            send_json(res, 200, {{"status", "ok"}});
    });
    auto models = [this](const httplib::Request &, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            json m = {
                {"id", eng.model_name()},
                {"object", "model"},
                {"created", unix_now()},
                {"owned_by", "lctx"},
                {"meta",
                 {{"n_vocab", eng.n_vocab()}, {"n_ctx_slot", eng.slot_ctx()}, {"slots", eng.n_slots()}}}};
            send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
        });
    };
    // llama-server's /props: what the server runs with (read only here: POST /props is not served).
    svr.Get("/props", [this](const httplib::Request &, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            send_json(
                res, 200,
                {{"default_generation_settings", {{"n_ctx", eng.slot_ctx()}, {"model", eng.model_name()}}},
                 {"total_slots", eng.n_slots()},
                 {"model_alias", eng.model_name()},
                 {"model_path", eng.model_path()},
                 {"chat_template", eng.chat_template_text()},
                 {"n_vocab", eng.n_vocab()},
                 {"build_info", "lctx"}});
        });
    });
    svr.Get("/v1/models", models);
    svr.Get("/models", models);
    register_completions_api(svr, host);
    register_anthropic_api(svr, host);
    register_responses_api(svr, host);
    for (const char *p : {"/v1/chat/completions", "/chat/completions"})
        svr.Post(p, [this](const httplib::Request &req, httplib::Response &res) {
            guarded(res, [&] { generate(req, res, Endpoint::Chat); });
        });
    // llama-server's helpers. None of them waits for the decode loop: they only read the model.
    svr.Post("/tokenize", [this](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            const TokenizeRequest r = parse_tokenize_request(parse_body(req.body));
            const std::vector<int32_t> toks = eng.tokenize(r.content, r.add_special, true);
            json out = json::array();
            for (int32_t t : toks) {
                if (r.with_pieces)
                    out.push_back({{"id", t}, {"piece", eng.token_text_special(t)}});
                else
                    out.push_back(t);
            }
            send_json(res, 200, {{"tokens", out}});
        });
    });
    svr.Post("/detokenize", [this](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            const std::vector<int32_t> toks = parse_detokenize_request(parse_body(req.body), eng.n_vocab());
            send_json(res, 200, {{"content", eng.detokenize(toks)}});
        });
    });
    svr.Post("/apply-template", [this](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            RequestLimits lim;
            lim.n_vocab = eng.n_vocab();
            const GenRequest r = parse_chat_request(parse_body(req.body), lim);
            send_json(res, 200, {{"prompt", chat_plan(eng, r).prompt}});
        });
    });
    // What prefix-aware routers call: the prompt's token ids exactly as a generation would see them.
    for (const bool chat : {false, true})
        svr.Post(chat ? "/v1/chat/completions/render" : "/v1/completions/render",
                 [this, chat](const httplib::Request &req, httplib::Response &res) {
                     guarded(res, [&] {
                         Engine &eng = need_engine();
                         RequestLimits lim;
                         lim.n_vocab = eng.n_vocab();
                         const json body = parse_body(req.body);
                         const GenRequest r =
                             chat ? parse_chat_request(body, lim) : parse_completion_request(body, lim);
                         if (r.prompts.size() > 1)
                             throw ApiError(
                                 400, "'prompt' must be one prompt here (render answers one token list)",
                                 "invalid_request_error", "prompt");
                         const std::string text = chat ? chat_plan(eng, r).prompt : "";
                         json out = {{"token_ids", prompt_tokens(eng, r, text)}};
                         if (chat) out["prompt"] = text;
                         send_json(res, 200, out);
                     });
                 });
    // The LoRA adapters loaded with --lora and their global scales; POST sets them ([{id, scale}]).
    svr.Get("/lora-adapters", [this](const httplib::Request &, httplib::Response &res) {
        guarded(res, [&] { send_json(res, 200, need_engine().lora_adapters()); });
    });
    svr.Post("/lora-adapters", [this](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
            if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
            eng.set_lora_scales(body);
            send_json(res, 200, json{{"success", true}});
        });
    });
    svr.Get("/slots", [this](const httplib::Request &, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            json out = json::array();
            for (const SlotInfo &s : eng.slots_info())
                out.push_back({{"id", s.id},
                               {"is_processing", s.busy},
                               {"n_ctx", eng.slot_ctx()},
                               {"n_cached", s.n_cached}});
            send_json(res, 200, out);
        });
    });
    svr.Post(R"(/slots/(\d{1,6}))", [this](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] {
            Engine &eng = need_engine();
            const int32_t id = std::stoi(req.matches[1].str());
            const std::string action = req.get_param_value("action");
            std::string path;
            if (action == "save" || action == "restore") {
                if (opts.slot_save_path.empty())
                    throw ApiError(400, "slot files need --slot-save-path", "invalid_request_error",
                                   "action");
                // Without a body the file name may come as ?filename=NAME (curl -X POST with no -d).
                json body = json::object();
                if (!req.body.empty())
                    body = parse_body(req.body);
                else if (req.has_param("filename"))
                    body["filename"] = req.get_param_value("filename");
                path = (std::filesystem::path(opts.slot_save_path) / parse_slot_filename(body)).string();
            }
            send_json(res, 200, eng.slot_action(id, action, path));
        });
    });
    if (opts.metrics)
        svr.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
            guarded(res, [&] {
                // A draining server still reports (its running requests, as they end).
                Engine *e = draining && !stopping ? engine.load() : nullptr;
                Engine &eng = e ? *e : need_engine();
                res.set_content(metrics_text(eng.metrics(), eng.model_name()), "text/plain; version=0.0.4");
            });
        });
}

void apply_timeout(ServerOptions &opts, int seconds) {
    const int ms = std::clamp(seconds, 1, 86400) * 1000;
    opts.body_timeout_ms = ms;
    opts.write_timeout_ms = ms;
    opts.head_timeout_ms = std::min(opts.head_timeout_ms, ms);
}

std::vector<std::string> read_api_key_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the API key file '" + path + "'");
    std::vector<std::string> keys;
    for (std::string line; std::getline(in, line);) {
        const size_t b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        const size_t e = line.find_last_not_of(" \t\r");
        keys.push_back(line.substr(b, e - b + 1));
    }
    if (keys.empty()) throw std::runtime_error("the API key file '" + path + "' holds no key");
    return keys;
}

HttpServer::HttpServer(const ServerOptions &opts) : impl_(std::make_unique<Impl>(opts)) {
    Impl &I = *impl_;
    httplib::Server &svr = I.svr;
    FrontOptions fo;
    fo.host = opts.host;
    fo.port = opts.port;
    fo.max_head = opts.max_head;
    fo.max_headers = opts.max_headers;
    fo.max_body = opts.max_body;
    fo.head_timeout_ms = opts.head_timeout_ms;
    fo.body_timeout_ms = opts.body_timeout_ms;
    fo.idle_timeout_ms = opts.idle_timeout_ms;
    fo.write_timeout_ms = opts.write_timeout_ms;
    fo.max_per_client = opts.max_per_client;
    // Each running request holds a worker while it waits for its tokens (a stream until its end).
    fo.workers = opts.http_threads > 0 ? opts.http_threads : 256;
    I.front = std::make_unique<HttpFront>(
        fo, I.svr, [this](const RequestHead &h) { return impl_->check_head(h); }, opts.log);
    svr.set_keep_alive_timeout(std::max(1, opts.idle_timeout_ms / 1000));  // what the Keep-Alive header says
    svr.set_keep_alive_max_count(static_cast<size_t>(fo.keep_alive_max));
    svr.set_payload_max_length(opts.max_body);
    // Before the handler: the request log's clock, and CORS preflights (any path, as llama-server).
    svr.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
        t_log = RequestLog{std::chrono::steady_clock::now(), 0};
        if (req.method == "OPTIONS") {
            res.status = 204;
            const std::string origin = impl_->allowed_origin(req.get_header_value("Origin"));
            if (!origin.empty()) {
                res.set_header("Access-Control-Allow-Credentials", "true");
                res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
                const std::string asked = req.get_header_value("Access-Control-Request-Headers");
                res.set_header("Access-Control-Allow-Headers", asked.empty() ? "*" : asked);
                res.set_header("Access-Control-Max-Age", "86400");
            }
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Every answer, errors and preflights included: the origin a browser page may read it from.
    svr.set_post_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
        const std::string origin = impl_->allowed_origin(req.get_header_value("Origin"));
        if (!origin.empty()) {
            res.set_header("Access-Control-Allow-Origin", origin);
            if (origin != "*") res.set_header("Vary", "Origin");
        }
        if (res.status == 503 && !res.has_header("Retry-After")) res.set_header("Retry-After", "1");
    });
    svr.set_error_handler([](const httplib::Request &req, httplib::Response &res) {
        // Only statuses no handler set a body for (404, httplib's own 400/413 ...).
        if (!res.body.empty() || res.content_length_ > 0) return;
        const std::string msg = res.status == 404 ? "no endpoint " + req.method + " " + req.path
                                                  : "the request could not be handled";
        res.set_content(dump(error_json(res.status, msg,
                                        res.status == 404 ? "not_found_error" : "invalid_request_error")),
                        "application/json; charset=utf-8");
    });
    svr.set_exception_handler([](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception &e) {
            what = e.what();
        } catch (...) {
        }
        send_json(res, 500, error_json(500, what, "server_error"));
    });
    if (opts.log)
        svr.set_logger([](const httplib::Request &req, const httplib::Response &res) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - t_log.start)
                                .count();
            std::fprintf(stderr, "lctx serve: %s %s %d %lld tokens %lld ms\n", req.method.c_str(),
                         req.path.c_str(), res.status, static_cast<long long>(t_log.tokens),
                         static_cast<long long>(ms));
        });
    I.routes();
}

HttpServer::~HttpServer() {
    stop();
}

void HttpServer::set_engine(Engine *engine) {
    impl_->engine = engine;
}

int HttpServer::bind() {
    return impl_->front->bind();
}

bool HttpServer::listen() {
    if (impl_->stopping) return false;  // stop() came first (a model that failed to load at once)
    return impl_->front->run();
}

void HttpServer::stop() {
    impl_->stopping = true;
    // Streams whose requests ended (Engine::stop) get a moment to write their last chunks and [DONE].
    for (int i = 0; i < 300 && impl_->open_streams > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // The front stops accepting, closes the connections that wait, and lets running requests finish.
    impl_->front->stop();
}

bool HttpServer::stopping() const {
    return impl_->stopping;
}

void HttpServer::drain() {
    impl_->draining = true;
}

bool HttpServer::draining() const {
    return impl_->draining;
}

}  // namespace lctx::server
