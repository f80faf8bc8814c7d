// The edges of the helper endpoints' checks: the last token id of the vocabulary is one, the next is not;
// a flag of /tokenize must be a boolean.
#include <gtest/gtest.h>

#include "server/server_fixture.h"

namespace lctx::testing::server_bounds_test {
namespace {

using json = nlohmann::json;

TEST(ServerBounds, TokenIdsUpToTheVocabularyEnd) {
    server::EngineOptions eo;
    eo.n_ctx = 256;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    const int32_t n_vocab = srv.engine->n_vocab();
    auto [ok, j] = srv.post("/detokenize", {{"tokens", {n_vocab - 1}}});
    EXPECT_EQ(ok, 200) << j.dump();
    auto [past, e] = srv.post("/detokenize", {{"tokens", {1, n_vocab}}});
    EXPECT_EQ(past, 400) << e.dump();
    EXPECT_EQ(e["error"]["param"], "tokens") << e.dump();
    EXPECT_EQ(srv.post("/detokenize", {{"tokens", {-1}}}).first, 400);
    EXPECT_EQ(srv.post("/detokenize", {{"tokens", {1.5}}}).first, 400);

    EXPECT_EQ(srv.post("/tokenize", {{"content", "Lily"}, {"add_special", nullptr}}).first, 200);
    auto [bad, b] = srv.post("/tokenize", {{"content", "Lily"}, {"with_pieces", "yes"}});
    EXPECT_EQ(bad, 400) << b.dump();
    EXPECT_EQ(b["error"]["param"], "with_pieces") << b.dump();
}

}  // namespace
}  // namespace lctx::testing::server_bounds_test
