// The n choices of one sampled request: each gets a seed of its own (derived from the request's seed), so
// they differ, and each is exactly what a single request with that derived seed gives.
#include <gtest/gtest.h>

#include <set>

#include "server/server_fixture.h"

namespace lctx::testing::server_seed_test {
namespace {

using json = nlohmann::json;

TEST(ServerSeeds, NChoicesDifferAndEachIsItsDerivedSeedsText) {
    server::EngineOptions eo;
    eo.n_ctx = 1024;
    eo.n_slots = 4;
    eo.n_threads = 2;
    LocalServer srv(eo);

    const uint32_t seed = 1234;
    const int n = 3;
    const json body = {
        {"prompt", "Lily"}, {"max_tokens", 16}, {"temperature", 1.0}, {"seed", seed}, {"n", n}};
    auto [st, all] = srv.post("/v1/completions", body);
    ASSERT_EQ(st, 200) << all.dump();
    ASSERT_EQ(all["choices"].size(), static_cast<size_t>(n));

    std::set<std::string> distinct;
    for (const json &c : all["choices"]) distinct.insert(c["text"].get<std::string>());
    EXPECT_GT(distinct.size(), 1u) << "all " << n << " choices are the same text: they share one seed\n"
                                   << all.dump(1);

    // Choice i is sampled with seed + i (src/server/http_server.cpp): a request with n = 1 and that seed
    // gives the same text.
    for (int i = 0; i < n; ++i) {
        const json &c = all["choices"][i];
        ASSERT_EQ(c["index"], i);
        json one = body;
        one["n"] = 1;
        one["seed"] = seed + static_cast<uint32_t>(i);
        auto [s1, single] = srv.post("/v1/completions", one);
        ASSERT_EQ(s1, 200) << single.dump();
        EXPECT_EQ(single["choices"][0]["text"], c["text"]) << "choice " << i;
    }
}

}  // namespace
}  // namespace lctx::testing::server_seed_test
