// A real Prometheus (Debian's `prometheus`, /usr/bin/prometheus: scripts/setup.sh installs it) scrapes an
// in-process lctx serve every second during a small load; every vllm: series of issue 39 is then queried back
// through Prometheus' HTTP API, and the counters Prometheus stored equal the server's own values once the
// load is over. A missing binary is a failure (CI installs it), never a skip.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.h"

extern char **environ;

namespace lctx::testing::server_prometheus_test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string prometheus_binary() {
    if (const char *p = std::getenv("LCTX_PROMETHEUS")) return p;
    return "/usr/bin/prometheus";
}

// A port nobody listens on now (the kernel's pick for a socket bound to port 0).
int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

// Prometheus as a child in a fresh folder under the build folder; killed and its folder removed at the end.
class PrometheusProcess {
  public:
    PrometheusProcess(int target_port) {
        std::string tmpl = std::string(LCTX_BIN_DIR) + "/../prometheus-test-XXXXXX";
        if (!mkdtemp(tmpl.data())) return;
        dir_ = tmpl;
        port_ = free_port();
        {
            std::ofstream cfg(dir_ + "/prometheus.yml");
            cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                << "scrape_configs:\n  - job_name: lctx\n    metrics_path: /metrics\n    static_configs:\n"
                << "      - targets: ['127.0.0.1:" << target_port << "']\n";
        }
        std::vector<std::string> args = {prometheus_binary(), "--config.file=" + dir_ + "/prometheus.yml",
                                         "--storage.tsdb.path=" + dir_ + "/data",
                                         "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                         "--log.level=warn"};
        std::vector<char *> argv;
        for (std::string &a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, (dir_ + "/log.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&fa);
    }
    ~PrometheusProcess() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int st = 0;
            for (int i = 0; i < 500 && waitpid(pid_, &st, WNOHANG) == 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (waitpid(pid_, &st, WNOHANG) == 0) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &st, 0);
            }
        }
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }
    bool started() const { return pid_ > 0; }
    std::string log() const {
        std::ifstream f(dir_ + "/log.txt");
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
    // Waits for /-/ready, at most timeout_s.
    bool ready(double timeout_s) const {
        httplib::Client c("127.0.0.1", port_);
        c.set_connection_timeout(0, 200000);
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            auto r = c.Get("/-/ready");
            if (r && r->status == 200) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }
    // An instant query's result vector (data.result), or null when the query failed.
    json query(const std::string &q) const {
        httplib::Client c("127.0.0.1", port_);
        c.set_read_timeout(5, 0);
        auto r = c.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
        if (!r || r->status != 200) return nullptr;
        json j = json::parse(r->body, nullptr, false);
        if (!j.is_object() || j.value("status", "") != "success") return nullptr;
        return j["data"]["result"];
    }
    // The value of a query's first sample, or -1 when it has none.
    double value(const std::string &q) const {
        json r = query(q);
        if (!r.is_array() || r.empty()) return -1;
        return std::stod(r[0]["value"][1].get<std::string>());
    }

  private:
    std::string dir_;
    int port_ = -1;
    pid_t pid_ = -1;
};

TEST(Prometheus, ScrapesEveryVllmSeriesDuringALoad) {
    const auto t_begin = std::chrono::steady_clock::now();
    ASSERT_EQ(access(prometheus_binary().c_str(), X_OK), 0)
        << prometheus_binary() << " is missing: install Debian's prometheus package (scripts/setup.sh does)";
    server::EngineOptions eo;
    eo.n_ctx = 4096;
    eo.n_slots = 2;
    eo.n_threads = 1;
    LocalServer srv(eo);
    ASSERT_GT(srv.port, 0);
    PrometheusProcess prom(srv.port);
    ASSERT_TRUE(prom.started());
    ASSERT_TRUE(prom.ready(15)) << prom.log();

    // The load: three clients asking one after the other (a shared system-like prefix, so the prefix
    // cache is hit too). Each request generates 160 tokens whatever the model says, so that the two slots
    // are busy nearly all the time and a 1 s scrape catches a running request.
    std::atomic<bool> stop{false};
    std::atomic<int> done{0}, failed{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 3; ++c)
        clients.emplace_back([&, c] {
            for (int i = 0; !stop; ++i) {
                auto [st, body] = srv.post(
                    "/v1/completions",
                    {{"prompt", "Once upon a time, a little girl named " + std::to_string(c * 100 + i)},
                     {"max_tokens", 160},
                     {"ignore_eos", true},
                     {"temperature", 0.7},
                     {"seed", i}});
                (st == 200 ? done : failed)++;
            }
        });
    const std::vector<std::string> series = {"vllm:num_requests_running",
                                             "vllm:num_requests_waiting",
                                             "vllm:kv_cache_usage_perc",
                                             "vllm:cache_config_info",
                                             "vllm:prefix_cache_queries_total",
                                             "vllm:prefix_cache_hits_total",
                                             "vllm:prompt_tokens_total",
                                             "vllm:generation_tokens_total",
                                             "vllm:request_success_total",
                                             "vllm:time_to_first_token_seconds_bucket",
                                             "vllm:inter_token_latency_seconds_bucket",
                                             "vllm:e2e_request_latency_seconds_bucket",
                                             "vllm:request_queue_time_seconds_bucket"};
    // During the load (at least 3 s): Prometheus holds every series (the scrape parsed: up is 1) and one
    // scrape saw a request running. A scrape samples the gauge at one instant, so on a loaded machine the
    // load goes on until one did, for 12 s at most.
    std::vector<std::string> missing = series;
    double running_peak = -1;
    const auto load_begin = std::chrono::steady_clock::now();
    for (;;) {
        const auto elapsed = std::chrono::steady_clock::now() - load_begin;
        if (elapsed > std::chrono::seconds(12)) break;
        std::vector<std::string> still;
        for (const std::string &s : missing) {
            json r = prom.query(s);
            if (!r.is_array() || r.empty()) still.push_back(s);
        }
        missing.swap(still);
        running_peak = prom.value("max_over_time(vllm:num_requests_running[1m])");
        if (elapsed >= std::chrono::seconds(3) && missing.empty() && running_peak >= 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    stop = true;
    for (auto &t : clients) t.join();
    EXPECT_TRUE(missing.empty()) << "not in Prometheus: " << json(missing).dump() << "\n" << prom.log();
    EXPECT_EQ(prom.value("up{job=\"lctx\"}"), 1) << prom.log();
    EXPECT_GT(done.load(), 3);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_GE(running_peak, 1) << "no scrape saw a running request";

    // After the load: the next scrapes bring the server's final counters; Prometheus must hold them.
    const std::string ml = "{model_name=\"stories260K.gguf\"}";
    const double gen = srv.metric("vllm:generation_tokens_total" + ml);
    ASSERT_GT(gen, 0);
    for (int i = 0; i < 100 && prom.value("vllm:generation_tokens_total") != gen; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(prom.value("vllm:generation_tokens_total"), gen);
    EXPECT_EQ(prom.value("vllm:prompt_tokens_total"), srv.metric("vllm:prompt_tokens_total" + ml));
    EXPECT_EQ(prom.value("vllm:prefix_cache_queries_total"),
              srv.metric("vllm:prefix_cache_queries_total" + ml));
    EXPECT_EQ(prom.value("vllm:prefix_cache_hits_total"), srv.metric("vllm:prefix_cache_hits_total" + ml));
    EXPECT_EQ(prom.value("sum(vllm:request_success_total)"), done.load());
    EXPECT_EQ(prom.value("vllm:request_success_total{finished_reason=\"length\"}") +
                  prom.value("vllm:request_success_total{finished_reason=\"stop\"}"),
              done.load());
    EXPECT_EQ(prom.value("vllm:request_success_total{finished_reason=\"abort\"}"), 0);
    EXPECT_EQ(prom.value("vllm:num_requests_running"), 0);
    EXPECT_EQ(prom.value("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"256\"}"), 1);
    // The histograms are histograms to Prometheus: one count per finished request, and quantiles.
    for (const char *h : {"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
                          "vllm:request_queue_time_seconds"}) {
        EXPECT_EQ(prom.value(std::string(h) + "_count"), done.load()) << h;
        const double q = prom.value("histogram_quantile(0.5, " + std::string(h) + "_bucket)");
        EXPECT_GE(q, 0) << h;
    }
    EXPECT_GT(prom.value("vllm:inter_token_latency_seconds_count"), 0);
    EXPECT_GT(prom.value("histogram_quantile(0.9, vllm:inter_token_latency_seconds_bucket)"), 0);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count(), 30.0);
}

}  // namespace
}  // namespace lctx::testing::server_prometheus_test
