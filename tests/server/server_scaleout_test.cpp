// lctx serve as a model server behind llm-d (issue 39): vLLM's metrics (names, labels, vLLM's histogram
// bounds) agree with the requests' own usage, and a drain answers 503 on /health and to new requests at once
// while the running requests finish, or aborts them when its time runs out.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/drain.h"
#include "server/metrics.h"
#include "server_fixture.h"

namespace lctx::testing::server_scaleout_test {
namespace {

using nlohmann::json;

// Every sample line of a /metrics text: full name with labels -> value.
std::map<std::string, double> samples(const std::string &text) {
    std::map<std::string, double> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t sp = line.rfind(' ');
        out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    }
    return out;
}

// vLLM's bucket bounds as its Prometheus logger declares them (vllm/v1/metrics/loggers.py), written as
// prometheus_client writes them in `le`.
const std::vector<std::string> kTtftLe = {"0.001", "0.005", "0.01", "0.02",  "0.04",  "0.06",  "0.08", "0.1",
                                          "0.25",  "0.5",   "0.75", "1.0",   "2.5",   "5.0",   "7.5",  "10.0",
                                          "20.0",  "40.0",  "80.0", "160.0", "640.0", "2560.0"};
const std::vector<std::string> kItlLe = {"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2",
                                         "0.3",  "0.4",   "0.5",  "0.75",  "1.0", "2.5",  "5.0",
                                         "7.5",  "10.0",  "20.0", "40.0",  "80.0"};
const std::vector<std::string> kLatencyLe = {"0.3",  "0.5",   "0.8",   "1.0",   "1.5",   "2.0",    "2.5",
                                             "5.0",  "10.0",  "15.0",  "20.0",  "30.0",  "40.0",   "50.0",
                                             "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0"};

const std::string kModel = "model_name=\"stories260K.gguf\"";

// A histogram's buckets are vLLM's bounds then +Inf, cumulative, and +Inf equals _count; returns _count.
double check_histogram(const std::map<std::string, double> &s, const std::string &name,
                       const std::vector<std::string> &les) {
    double prev = 0;
    size_t n_buckets = 0;
    for (const auto &[k, v] : s)
        if (k.rfind(name + "_bucket{", 0) == 0) ++n_buckets;
    EXPECT_EQ(n_buckets, les.size() + 1) << name;
    std::vector<std::string> all = les;
    all.push_back("+Inf");
    for (const std::string &le : all) {
        const std::string key = name + "_bucket{" + kModel + ",le=\"" + le + "\"}";
        auto it = s.find(key);
        if (it == s.end()) {
            ADD_FAILURE() << "missing " << key;
            return -1;
        }
        EXPECT_GE(it->second, prev) << key << " is below the bucket before it";
        prev = it->second;
    }
    auto count = s.find(name + "_count{" + kModel + "}");
    auto sum = s.find(name + "_sum{" + kModel + "}");
    if (count == s.end() || sum == s.end()) {
        ADD_FAILURE() << name << ": no _count or _sum";
        return -1;
    }
    EXPECT_EQ(count->second, prev) << name << ": _count differs from the +Inf bucket";
    EXPECT_GE(sum->second, 0.0);
    return count->second;
}

TEST(VllmMetrics, HistogramBucketsAreLessOrEqualAndCountMatches) {
    static const double bounds[] = {0.5, 1.0, 2.0};
    server::Histogram h(bounds, 3);
    for (double v : {0.1, 0.5, 0.50001, 1.0, 1.5, 2.0, 3.0, 100.0, -1.0}) h.observe(v);
    // le is inclusive: 0.5 falls in le=0.5; a negative time counts as 0.
    EXPECT_EQ(h.bucket(0), 3u);  // 0.1 0.5 -1
    EXPECT_EQ(h.bucket(1), 2u);  // 0.50001 1.0
    EXPECT_EQ(h.bucket(2), 2u);  // 1.5 2.0
    EXPECT_EQ(h.bucket(3), 2u);  // 3 100
    EXPECT_NEAR(h.sum(), 0.1 + 0.5 + 0.50001 + 1.0 + 1.5 + 2.0 + 3.0 + 100.0, 1e-6);
}

TEST(VllmMetrics, SeriesAgreeWithTheRequests) {
    server::EngineOptions eo;
    eo.n_ctx = 2048;
    eo.n_slots = 2;
    eo.n_threads = 1;
    eo.kv_block_size = 32;
    LocalServer srv(eo);
    // One request ends with length, one with a stop string (its reply's first space).
    auto [st1, a] =
        srv.post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 7}, {"temperature", 0}});
    ASSERT_EQ(st1, 200) << a.dump();
    auto [st2, b] = srv.post("/v1/completions", {{"prompt", "The little dog"},
                                                 {"max_tokens", 50},
                                                 {"temperature", 0},
                                                 {"logit_bias", {{"2", -100}}},
                                                 {"stop", {" "}}});
    ASSERT_EQ(st2, 200) << b.dump();
    ASSERT_EQ(a["choices"][0]["finish_reason"], "length");
    ASSERT_EQ(b["choices"][0]["finish_reason"], "stop");

    auto r = srv.client()->Get("/metrics");
    ASSERT_TRUE(r);
    const auto s = samples(r->body);
    auto value = [&](const std::string &k) {
        auto it = s.find(k);
        EXPECT_NE(it, s.end()) << "missing " << k << "\n" << r->body;
        return it == s.end() ? -1.0 : it->second;
    };
    const int prompt = a["usage"]["prompt_tokens"].get<int>() + b["usage"]["prompt_tokens"].get<int>();
    const int gen_a = a["usage"]["completion_tokens"].get<int>(),
              gen_b = b["usage"]["completion_tokens"].get<int>();
    EXPECT_EQ(value("vllm:prompt_tokens_total{" + kModel + "}"), prompt);
    EXPECT_EQ(value("vllm:generation_tokens_total{" + kModel + "}"), gen_a + gen_b);
    EXPECT_EQ(value("vllm:request_success_total{" + kModel + ",finished_reason=\"stop\"}"), 1);
    EXPECT_EQ(value("vllm:request_success_total{" + kModel + ",finished_reason=\"length\"}"), 1);
    EXPECT_EQ(value("vllm:request_success_total{" + kModel + ",finished_reason=\"abort\"}"), 0);
    // The cache's blocks: --kv-block-size tokens each, n_ctx / block_size of them.
    EXPECT_EQ(value("vllm:cache_config_info{block_size=\"32\",num_gpu_blocks=\"64\"}"), 1);
    EXPECT_EQ(check_histogram(s, "vllm:time_to_first_token_seconds", kTtftLe), 2);
    EXPECT_EQ(check_histogram(s, "vllm:e2e_request_latency_seconds", kLatencyLe), 2);
    EXPECT_EQ(check_histogram(s, "vllm:request_queue_time_seconds", kLatencyLe), 2);
    // One interval between each two tokens of a request (the stop string's token was sampled too).
    const double itl = check_histogram(s, "vllm:inter_token_latency_seconds", kItlLe);
    EXPECT_EQ(itl, gen_a - 1 + gen_b - 1);
    // A request's latency holds its time to first token.
    EXPECT_GE(value("vllm:e2e_request_latency_seconds_sum{" + kModel + "}"),
              value("vllm:time_to_first_token_seconds_sum{" + kModel + "}"));
    // Every series has its HELP and TYPE.
    for (const char *name :
         {"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
          "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
          "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds"})
        EXPECT_NE(r->body.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
}

// /metrics is rendered from the counters alone (issue 39: a 50 ms scrape costs nothing): it never waits for
// the decode loop. Here the loop has ended for good (Engine::stop), so anything that needed it would hang or
// get a 503; every scrape still answers at once with the counters as the requests left them.
TEST(VllmMetrics, AScrapeNeverWaitsForTheDecodeLoop) {
    server::EngineOptions eo;
    eo.n_ctx = 1024;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    auto [st, a] =
        srv.post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}});
    ASSERT_EQ(st, 200) << a.dump();
    const int gen = a["usage"]["completion_tokens"].get<int>();
    srv.engine->stop();  // the decode loop is gone: nothing runs on it again
    auto c = srv.client();
    c->set_read_timeout(5, 0);
    for (int i = 0; i < 50; ++i) {
        auto r = c->Get("/metrics");
        ASSERT_TRUE(r) << "scrape " << i << " got no answer";
        ASSERT_EQ(r->status, 200) << r->body;
        const auto s = samples(r->body);
        ASSERT_EQ(s.at("vllm:generation_tokens_total{" + kModel + "}"), gen);
        ASSERT_EQ(s.at("vllm:num_requests_running{" + kModel + "}"), 0);
    }
}

// A request that would run for thousands of tokens (end of text banned, a slot of 16k cells).
json endless() {
    return {{"prompt", "Once upon a time"},
            {"max_tokens", 15000},
            {"temperature", 0.8},
            {"logit_bias", {{"2", -100}}}};
}

TEST(VllmMetrics, ClientGoneCountsAsAbort) {
    server::EngineOptions eo;
    eo.n_ctx = 16384;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    auto c = srv.client();
    c->set_read_timeout(0, 300000);  // gives up after 0.3 s: the server sees the client gone
    auto r = c->Post("/v1/completions", endless().dump(), "application/json");
    EXPECT_FALSE(r);
    const std::string abort = "vllm:request_success_total{" + kModel + ",finished_reason=\"abort\"}";
    for (int i = 0; i < 500 && srv.metric(abort) < 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(srv.metric(abort), 1);
    EXPECT_EQ(srv.metric("vllm:e2e_request_latency_seconds_count{" + kModel + "}"), 0);
}

// Waits until the server runs one request (vllm:num_requests_running), at most 10 s.
bool wait_running(const LocalServer &srv) {
    for (int i = 0; i < 1000; ++i) {
        if (srv.metric("vllm:num_requests_running{" + kModel + "}") >= 1) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// During a drain: /health says 503 with Retry-After, a new request gets 503, /metrics still answers.
void expect_draining(const LocalServer &srv) {
    auto h = srv.client()->Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 503);
    EXPECT_TRUE(h->has_header("Retry-After"));
    auto [st, body] = srv.post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
    EXPECT_EQ(st, 503) << body.dump();
    auto m = srv.client()->Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200);
}

TEST(Drain, RunningRequestsFinish) {
    server::EngineOptions eo;
    eo.n_ctx = 16384;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    std::pair<int, json> result{0, nullptr};
    json req = endless();
    req["max_tokens"] = 1500;
    std::thread client([&] { result = srv.post("/v1/completions", req); });
    ASSERT_TRUE(wait_running(srv));
    std::atomic<bool> drained{false}, done{false};
    std::thread drainer([&] {
        drained = server::drain(*srv.http, *srv.engine, 30000);
        done = true;
    });
    while (!srv.http->draining()) std::this_thread::yield();
    const bool was_running = srv.metric("vllm:num_requests_running{" + kModel + "}") >= 1;
    expect_draining(srv);
    drainer.join();
    client.join();
    EXPECT_TRUE(drained);
    // The request ran to its end while the server drained.
    ASSERT_EQ(result.first, 200) << result.second.dump();
    EXPECT_EQ(result.second["usage"]["completion_tokens"], 1500);
    EXPECT_EQ(result.second["choices"][0]["finish_reason"], "length");
    EXPECT_TRUE(was_running) << "the request ended before the drain's checks: make it longer";
}

TEST(Drain, TimeoutAbortsTheRest) {
    server::EngineOptions eo;
    eo.n_ctx = 16384;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    std::pair<int, json> result{0, nullptr};
    std::thread client([&] { result = srv.post("/v1/completions", endless()); });
    ASSERT_TRUE(wait_running(srv));
    const auto t0 = std::chrono::steady_clock::now();
    const bool drained = server::drain(*srv.http, *srv.engine, 300);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(drained);
    EXPECT_GE(secs, 0.3);
    EXPECT_LT(secs, 5.0);
    expect_draining(srv);
    srv.engine->stop();  // what `lctx serve` does next: the rest is aborted
    client.join();
    EXPECT_EQ(result.first, 503) << result.second.dump();
    EXPECT_EQ(srv.engine->metrics().finished_abort.load(), 1u);
}

TEST(Drain, InterruptEndsTheWait) {
    server::EngineOptions eo;
    eo.n_ctx = 16384;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    std::pair<int, json> result{0, nullptr};
    std::thread client([&] { result = srv.post("/v1/completions", endless()); });
    ASSERT_TRUE(wait_running(srv));
    const auto t0 = std::chrono::steady_clock::now();
    int asked = 0;
    EXPECT_FALSE(server::drain(*srv.http, *srv.engine, 30000, [&] { return ++asked == 3; }));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    srv.engine->stop();
    client.join();
    EXPECT_EQ(result.first, 503);
}

}  // namespace
}  // namespace lctx::testing::server_scaleout_test
