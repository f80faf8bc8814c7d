// lctx serve with LoRA adapters (--lora): /lora-adapters lists and sets the global scales, a request's `lora`
// field overrides them for that request, requests with different scales decoded at the same time each get
// the text they get alone (one decode applies one set of scales), and the prompt cache never hands a request
// K/V computed with other scales.
#include <gtest/gtest.h>

#include <future>

#include "server/server_fixture.h"

namespace lctx::testing::server_lora_test {
namespace {

using json = nlohmann::json;

std::string golden_model() {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf";
}
std::string adapter_path() {
    return std::string(LCTX_FIXTURES_DIR) + "/golden-lora/models/lora-llama-F16.gguf";
}

class ServerLoraTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server::EngineOptions eo;
        eo.model_path = golden_model();
        eo.n_ctx = 1024;
        eo.n_slots = 4;
        eo.step_tokens = 16;
        eo.n_threads = 2;
        eo.lora = {{adapter_path(), 1.0f}};
        srv = new LocalServer(eo);
    }
    static void TearDownTestSuite() {
        delete srv;
        srv = nullptr;
    }
    // A greedy completion of a token prompt; lora: the request's field, or null for none.
    static json complete(const std::vector<int32_t> &prompt, const json &lora = nullptr) {
        json body = {{"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}};
        if (!lora.is_null()) body["lora"] = lora;
        auto [st, j] = srv->post("/v1/completions", body);
        EXPECT_EQ(st, 200) << j.dump();
        return j;
    }
    static std::string text(const json &j) { return j["choices"][0]["text"].get<std::string>(); }
    static int64_t cached(const json &j) { return j["usage"]["prompt_tokens_details"]["cached_tokens"]; }
    static LocalServer *srv;
};
LocalServer *ServerLoraTest::srv = nullptr;

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 120, 6, 22, 327, 61, 433, 285, 131}, {1, 464, 208, 359, 423, 36, 376}, {1, 76, 393, 239, 413, 28}};

TEST_F(ServerLoraTest, ListsAndSetsAdapters) {
    auto c = srv->client();
    auto r = c->Get("/lora-adapters");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    json list = json::parse(r->body);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0]["id"], 0);
    EXPECT_EQ(list[0]["path"], adapter_path());
    EXPECT_EQ(list[0]["scale"], 1.0);
    // Bad bodies change nothing.
    for (const char *bad : {"[{\"id\": 1, \"scale\": 1}]", "[{\"scale\": 1}]", "{\"id\": 0}", "not json",
                            "[{\"id\": 0, \"scale\": \"big\"}]"}) {
        auto p = c->Post("/lora-adapters", bad, "application/json");
        ASSERT_TRUE(p);
        EXPECT_EQ(p->status, 400) << bad;
    }
    EXPECT_EQ(json::parse(c->Get("/lora-adapters")->body)[0]["scale"], 1.0);
    auto p = c->Post("/lora-adapters", R"([{"id": 0, "scale": 0.5}])", "application/json");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, 200);
    EXPECT_EQ(json::parse(c->Get("/lora-adapters")->body)[0]["scale"], 0.5);
    // An empty list sets every adapter to 0 (llama-server's rule for the adapters left out).
    c->Post("/lora-adapters", "[]", "application/json");
    EXPECT_EQ(json::parse(c->Get("/lora-adapters")->body)[0]["scale"], 0.0);
    c->Post("/lora-adapters", R"([{"id": 0, "scale": 1}])", "application/json");
}

TEST_F(ServerLoraTest, GlobalAndPerRequestScales) {
    const std::string with = text(complete(kPrompts[0], json::array({{{"id", 0}, {"scale", 1.0}}})));
    const std::string without = text(complete(kPrompts[0], json::array({{{"id", 0}, {"scale", 0.0}}})));
    ASSERT_NE(with, without) << "the adapter must change this greedy text for the test to mean anything";
    EXPECT_EQ(text(complete(kPrompts[0])), with);  // the global scale (1)
    auto c = srv->client();
    c->Post("/lora-adapters", R"([{"id": 0, "scale": 0}])", "application/json");
    EXPECT_EQ(text(complete(kPrompts[0])), without);
    EXPECT_EQ(text(complete(kPrompts[0], json::array())), without);  // every adapter left out: 0
    c->Post("/lora-adapters", R"([{"id": 0, "scale": 1}])", "application/json");
    // A bad field is a 400 naming it.
    auto [st, j] =
        srv->post("/v1/completions", {{"prompt", kPrompts[0]}, {"lora", {{{"id", 3}, {"scale", 1}}}}});
    EXPECT_EQ(st, 400);
    EXPECT_EQ(j["error"]["param"], "lora");
}

TEST_F(ServerLoraTest, PromptCacheIsKeyedByScales) {
    const std::vector<int32_t> p = {1, 44, 46, 466, 288, 349, 493, 49, 69, 116, 163, 465};
    const json on = json::array({{{"id", 0}, {"scale", 1.0}}}),
               off = json::array({{{"id", 0}, {"scale", 0.0}}});
    const json first = complete(p, on);
    const json again = complete(p, on);
    EXPECT_GT(cached(again), 0);  // the same scales reuse the cache
    EXPECT_EQ(text(again), text(first));
    const json other = complete(p, off);
    EXPECT_EQ(cached(other), 0);  // K/V computed with the adapter are never reused without it
    EXPECT_NE(text(other), text(first));
}

TEST_F(ServerLoraTest, MixedScalesAtOnceEqualAlone) {
    const std::vector<json> scales = {json::array({{{"id", 0}, {"scale", 1.0}}}),
                                      json::array({{{"id", 0}, {"scale", 0.0}}}),
                                      json::array({{{"id", 0}, {"scale", 0.5}}})};
    std::vector<std::string> alone;
    for (size_t i = 0; i < 6; ++i) alone.push_back(text(complete(kPrompts[i % 3], scales[i / 2 % 3])));
    for (int round = 0; round < 2; ++round) {
        std::vector<std::future<std::string>> fs;
        for (size_t i = 0; i < 6; ++i)
            fs.push_back(std::async(std::launch::async, [&, i] {
                json body = {{"prompt", kPrompts[i % 3]},
                             {"max_tokens", 16},
                             {"temperature", 0},
                             {"lora", scales[i / 2 % 3]}};
                auto r = srv->client()->Post("/v1/completions", body.dump(), "application/json");
                if (!r || r->status != 200) return std::string("<failed>");
                return json::parse(r->body)["choices"][0]["text"].get<std::string>();
            }));
        for (size_t i = 0; i < 6; ++i)
            EXPECT_EQ(fs[i].get(), alone[i]) << "request " << i << " round " << round;
    }
}

TEST(ServerLora, BadAdapterStopsTheEngine) {
    server::EngineOptions eo;
    eo.model_path = stories_model();  // n_embd 64: the adapter's shapes do not fit
    eo.n_ctx = 256;
    eo.n_slots = 1;
    eo.lora = {{adapter_path(), 1.0f}};
    try {
        server::Engine e(eo);
        ADD_FAILURE() << "the engine accepted a mismatched adapter";
    } catch (const std::exception &ex) {
        EXPECT_NE(std::string(ex.what()).find("LoRA adapter"), std::string::npos) << ex.what();
    }
}

}  // namespace
}  // namespace lctx::testing::server_lora_test
