// `lctx serve` as a child process: SIGTERM while a stream is open ends the stream (an error chunk and
// [DONE]) and the process within 10 s, with status 0; /health answers once the model is loaded.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "cli/cli_run.h"

namespace lctx::testing {
namespace {

TEST(ServeProcess, SigtermWithAnOpenStreamExitsCleanly) {
    CliProcess p({"serve", "--port", "0", "-c", "8192", "-np", "2", "-t", "1", "--log-disable"});
    ASSERT_TRUE(p.started());
    ASSERT_TRUE(p.wait_for("open http://", 0, 30)) << p.output();
    std::smatch m;
    const std::string out = p.output();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("127\\.0\\.0\\.1:([0-9]+)/"))) << out;
    const int port = std::stoi(m[1]);
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    auto h = c.Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);

    // A stream that would run for thousands of tokens (end of text banned).
    std::atomic<int> chunks{0};
    std::string body;
    std::thread client([&] {
        httplib::Client sc("127.0.0.1", port);
        sc.set_read_timeout(30, 0);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body = R"({"prompt":"Once upon a time","stream":true,"temperature":0.8,"logit_bias":{"2":-100}})";
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char *d, size_t n, uint64_t, uint64_t) {
            body.append(d, n);
            ++chunks;
            return true;
        };
        sc.send(req);
    });
    for (int i = 0; i < 1000 && chunks < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_GE(chunks.load(), 3) << "the stream did not start";
    const auto t0 = std::chrono::steady_clock::now();
    p.signal(SIGTERM);
    const int status = p.wait_exit(15);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    client.join();
    EXPECT_EQ(status, 0) << p.output();
    EXPECT_LT(secs, 10.0);
    // The stream ended in order: its last event is [DONE] (after an error chunk saying why).
    const size_t done = body.rfind("data: [DONE]");
    ASSERT_NE(done, std::string::npos) << body.substr(body.size() > 400 ? body.size() - 400 : 0);
    EXPECT_NE(body.find("shutting down"), std::string::npos);
}

TEST(ServeProcess, BadModelFailsWithAMessage) {
    const CliResult r = run_cli("serve --port 0 -m /nonexistent.gguf", true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("cannot load"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lctx::testing
