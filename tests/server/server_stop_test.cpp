// Stopping the server takes milliseconds, also while a client keeps an idle connection open (httplib would
// wait out its keep-alive timeout, seconds, before it noticed the stop).
#include <gtest/gtest.h>

#include <chrono>

#include "server/server_fixture.h"

namespace lctx::testing::server_stop_test {
namespace {

double stop_ms(std::unique_ptr<LocalServer> &srv) {
    const auto t0 = std::chrono::steady_clock::now();
    srv.reset();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

server::EngineOptions small() {
    server::EngineOptions eo;
    eo.n_ctx = 256;
    eo.n_slots = 1;
    eo.n_threads = 1;
    return eo;
}

// A generous bound for a loaded machine: the keep-alive timeout is 2 s.
constexpr double kStopBudgetMs = 500;

TEST(ServerStop, StopsInMillisecondsWithAnIdleKeptAliveConnection) {
    auto srv = std::make_unique<LocalServer>(small());
    httplib::Client c("127.0.0.1", srv->port);
    c.set_keep_alive(true);
    auto r = c.Get("/health");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    // The connection stays open and idle while the server stops.
    EXPECT_LT(stop_ms(srv), kStopBudgetMs);
}

TEST(ServerStop, StopsInMillisecondsAfterAGeneration) {
    auto srv = std::make_unique<LocalServer>(small());
    auto [st, j] = srv->post("/v1/completions", {{"prompt", "Lily"}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_LT(stop_ms(srv), kStopBudgetMs);
}

}  // namespace
}  // namespace lctx::testing::server_stop_test
