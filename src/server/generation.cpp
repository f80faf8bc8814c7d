#include "server/generation.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "server/http_front.h"

namespace lctx::server {

using json = nlohmann::json;

void send_json(httplib::Response &res, int status, const json &j) {
    res.status = status;
    res.set_content(dump(j), "application/json; charset=utf-8");
    if (status == 503) res.set_header("Retry-After", "1");  // every 503 says when to come back
}

bool peer_gone(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

std::string random_id(const char *prefix) {
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 rng(std::random_device{}());
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%016llx%llu", prefix, static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(counter++));
    return buf;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

RequestLimits generation_limits(Engine &eng) {
    RequestLimits lim;
    lim.n_vocab = eng.n_vocab();
    lim.n_slots = eng.n_slots();
    // Each choice takes a slot or a place in the queue: more than both hold could never be served.
    lim.max_choices = eng.n_slots() + eng.max_queue();
    lim.max_n = std::min(lim.max_n, lim.max_choices);
    return lim;
}

void need_generator(Engine &eng) {
    if (eng.embedding_only())
        throw ApiError(400,
                       "this model makes embeddings only (an encoder): use /v1/embeddings (or /v1/rerank)",
                       "invalid_request_error");
}

std::vector<int32_t> checked_prompt(Engine &eng, std::vector<int32_t> toks, const char *field) {
    if (toks.empty()) throw ApiError(400, "the prompt is empty", "invalid_request_error", field);
    if (static_cast<int64_t>(toks.size()) >= eng.slot_ctx())
        throw ApiError(400,
                       "the prompt has " + std::to_string(toks.size()) + " tokens; a slot's context holds " +
                           std::to_string(eng.slot_ctx()) + " (prompt and reply together)",
                       "invalid_request_error", field);
    return toks;
}

std::vector<int32_t> prompt_tokens(Engine &eng, const PromptInput &p, const char *field) {
    std::vector<int32_t> toks;
    for (size_t i = 0; i < p.size(); ++i) {
        if (p[i].is_token) {
            toks.push_back(p[i].token);
        } else {
            const std::vector<int32_t> t = eng.tokenize(p[i].text, /*add_special=*/i == 0, true);
            toks.insert(toks.end(), t.begin(), t.end());
        }
    }
    return checked_prompt(eng, std::move(toks), field);
}

Generation start_generation(Engine &eng, const GenRequest &r,
                            const std::vector<std::vector<int32_t>> &prompts, const json &body,
                            int32_t top_logprobs, bool keep_tokens) {
    const int32_t total = static_cast<int32_t>(prompts.size()) * r.n;
    SamplingParams sampling = r.sampling;
    if (r.ignore_eos)
        for (int32_t t : eng.eog_tokens()) sampling.logit_bias.emplace_back(t, -100.0f);  // -100: banned
    // llama-server's per-request adapter scales: [{id, scale}], the adapters left out at 0.
    const std::vector<float> lora = eng.lora_scales_for(body.contains("lora") ? &body["lora"] : nullptr);
    Generation g;
    g.channel = std::make_shared<Channel>(total);
    g.keep_tokens = keep_tokens;
    g.results.resize(static_cast<size_t>(total));
    const uint32_t seed = r.sampling.seed ? *r.sampling.seed : std::random_device{}();
    std::vector<Task> tasks;
    for (size_t p = 0; p < prompts.size(); ++p)
        for (int32_t i = 0; i < r.n; ++i) {
            Task t;
            t.channel = g.channel;
            t.index = static_cast<int32_t>(p) * r.n + i;
            t.prompt = prompts[p];
            t.stop = r.stop;
            t.max_tokens = r.max_tokens;
            t.sampling = sampling;
            t.seed = seed + static_cast<uint32_t>(t.index);
            t.grammar = r.grammar;
            t.top_logprobs = top_logprobs;
            t.lora = lora;
            t.id_slot = r.id_slot;
            t.cache_prompt = r.cache_prompt;
            g.results[static_cast<size_t>(t.index)].prompt_index = static_cast<int32_t>(p);
            tasks.push_back(std::move(t));
        }
    eng.submit(std::move(tasks));
    return g;
}

namespace {
// Adds an event to its choice's result.
void take(Generation &g, Event &e) {
    ChoiceResult &c = g.results[static_cast<size_t>(e.index)];
    if (e.kind == Event::Token) {
        c.text += e.text;
        if (g.keep_tokens && e.token >= 0) c.tokens.push_back(e);
    } else if (e.kind == Event::Done) {
        c.finish(e);
    }
}
}  // namespace

bool collect(Generation &g, ApiHost &host) {
    // A client that goes away cancels the request (its cells are freed at the next step): the wait looks at
    // the connection every 100 ms.
    const int fd = current_connection_fd();
    std::vector<Event> evs;
    std::string failure;
    int failure_status = 500;
    while (g.channel->pop(evs, 100)) {
        if (peer_gone(fd)) {
            g.channel->cancel();
            return false;
        }
        for (Event &e : evs) {
            if (e.kind == Event::Failed) {
                if (failure.empty()) {
                    failure = e.error;
                    failure_status = e.status;
                }
                continue;
            }
            take(g, e);
        }
        evs.clear();
    }
    if (!failure.empty()) {
        g.channel->cancel();  // the other choices stop too
        // The engine says which failures are the shutdown's (503): it stops before the HTTP layer's flag is
        // set.
        const bool unavailable = failure_status == 503 || host.stopping();
        throw ApiError(unavailable ? 503 : 500, failure, unavailable ? "unavailable_error" : "server_error");
    }
    for (const ChoiceResult &c : g.results) host.log_tokens(c.completion_tokens);
    return true;
}

std::string sse(const json &j, const char *event) {
    std::string s;
    if (event) s = std::string("event: ") + event + "\n";
    return s + "data: " + dump(j) + "\n\n";
}

void stream_generation(httplib::Response &res, Generation g, ApiHost &host, StreamFormat fmt) {
    auto state = std::make_shared<Generation>(std::move(g));
    auto format = std::make_shared<StreamFormat>(std::move(fmt));
    auto started = std::make_shared<bool>(false);
    std::shared_ptr<Channel> channel = state->channel;
    std::function<void(int64_t)> log = host.log_tokens;
    res.set_header("Cache-Control", "no-cache");
    std::atomic<int> *open_streams = host.open_streams;
    (*open_streams)++;
    res.set_chunked_content_provider(
        "text/event-stream",
        [state, format, started, log](size_t, httplib::DataSink &sink) {
            auto write = [&](const std::string &s) { return s.empty() || sink.write(s.data(), s.size()); };
            if (!sink.is_writable()) {
                state->channel->cancel();
                return false;
            }
            if (!*started) {
                *started = true;
                if (!write(format->start)) {
                    state->channel->cancel();
                    return false;
                }
            }
            std::vector<Event> evs;
            const bool open = state->channel->pop(evs, 100);
            for (Event &e : evs) {
                std::string out;
                if (e.kind == Event::Failed) {
                    out = format->on_failure(e);
                } else {
                    take(*state, e);
                    if (e.kind == Event::Done) log(e.completion_tokens);
                    out = format->on_event(e, state->results[static_cast<size_t>(e.index)]);
                }
                if (!write(out)) {
                    state->channel->cancel();
                    return false;
                }
            }
            if (!open) {
                write(format->on_end(state->results));
                sink.done();
            }
            return true;
        },
        [channel, open_streams](bool) {
            channel->cancel();  // ended for any reason: nothing more is generated
            (*open_streams)--;
        });
}

}  // namespace lctx::server
