// lctx serve on embedding models: /v1/embeddings on a bert (the golden fixture, CLS pooling) and
// /v1/rerank on a synthesized reranker (bert-rerank-tiny), compared with direct llama_encode results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "server/server_fixture.h"

namespace lctx::testing::server_embed_test {
namespace {

using json = nlohmann::json;

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";

// Pooled rows of each token list through the C API (one pass per input, no normalization).
std::vector<std::vector<float>> direct_rows(const std::string &path,
                                            const std::vector<std::vector<int32_t>> &inputs) {
    llama_model *m = llama_model_load_from_file(path.c_str(), llama_model_default_params());
    EXPECT_NE(m, nullptr);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512;
    cp.embeddings = true;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context *ctx = llama_init_from_model(m, cp);
    EXPECT_NE(ctx, nullptr);
    const int width = llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_RANK ? 1 : llama_model_n_embd(m);
    std::vector<std::vector<float>> out;
    for (const auto &toks : inputs) {
        llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
        for (size_t k = 0; k < toks.size(); ++k) {
            b.token[k] = toks[k];
            b.pos[k] = static_cast<int32_t>(k);
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = 0;
            b.logits[k] = 1;
        }
        b.n_tokens = static_cast<int32_t>(toks.size());
        EXPECT_EQ(llama_encode(ctx, b), 0);
        const float *e = llama_get_embeddings_seq(ctx, 0);
        EXPECT_NE(e, nullptr);
        out.emplace_back(e, e + width);
        llama_batch_free(b);
    }
    llama_free(ctx);
    llama_model_free(m);
    return out;
}

server::EngineOptions embed_options(const std::string &path) {
    server::EngineOptions eo;
    eo.model_path = path;
    eo.n_ctx = 2048;
    eo.n_slots = 2;  // two inputs per pass: three inputs take two passes
    eo.n_threads = 2;
    return eo;
}

class EmbedServerTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        rerank_path = (std::filesystem::temp_directory_path() /
                       ("lctx_serve_rerank_" + std::to_string(::getpid()) + ".gguf"))
                          .string();
        const std::string cmd = std::string(LCTX_BIN_DIR) +
                                "/lctx synth --shape bert-rerank-tiny --type F32 -o " + rerank_path +
                                " >/dev/null 2>&1";
        ASSERT_EQ(std::system(cmd.c_str()), 0);
        bert = new LocalServer(embed_options(kBert));
        rerank = new LocalServer(embed_options(rerank_path));
    }
    static void TearDownTestSuite() {
        delete bert;
        delete rerank;
        std::filesystem::remove(rerank_path);
    }
    static LocalServer *bert, *rerank;
    static std::string rerank_path;
};
LocalServer *EmbedServerTest::bert = nullptr;
LocalServer *EmbedServerTest::rerank = nullptr;
std::string EmbedServerTest::rerank_path;

double norm(const json &v) {
    double s = 0;
    for (const json &x : v) s += x.get<double>() * x.get<double>();
    return std::sqrt(s);
}

TEST_F(EmbedServerTest, EmbeddingsShapeNormAndValues) {
    const std::vector<std::string> texts = {"hello world", "the quick brown fox", "a"};
    auto [st, j] = bert->post("/v1/embeddings", {{"input", texts}, {"model", "anything"}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["model"], "bert.gguf");
    ASSERT_EQ(j["data"].size(), 3u);
    std::vector<std::vector<int32_t>> toks;
    int64_t n_tok = 0;
    for (const auto &t : texts) {
        toks.push_back(bert->engine->tokenize(t, true, false));
        n_tok += static_cast<int64_t>(toks.back().size());
    }
    EXPECT_EQ(j["usage"]["prompt_tokens"], n_tok);
    EXPECT_EQ(j["usage"]["total_tokens"], n_tok);
    const auto want = direct_rows(kBert, toks);
    for (size_t i = 0; i < 3; ++i) {
        const json &d = j["data"][i];
        EXPECT_EQ(d["object"], "embedding");
        EXPECT_EQ(d["index"], i);
        ASSERT_EQ(d["embedding"].size(), want[i].size());
        EXPECT_NEAR(norm(d["embedding"]), 1.0, 1e-5);
        double n = 0;
        for (float x : want[i]) n += double(x) * x;
        n = std::sqrt(n);
        for (size_t k = 0; k < want[i].size(); ++k)
            EXPECT_NEAR(d["embedding"][k].get<double>(), want[i][k] / n, 2e-5) << i << " " << k;
    }
    // One string, token ids, arrays of ids: the same vectors.
    auto [s1, one] = bert->post("/v1/embeddings", {{"input", texts[1]}});
    ASSERT_EQ(s1, 200);
    ASSERT_EQ(one["data"].size(), 1u);
    auto [s2, ids] = bert->post("/v1/embeddings", {{"input", toks[1]}});
    ASSERT_EQ(s2, 200);
    auto [s3, idss] = bert->post("/v1/embeddings", {{"input", {toks[0], toks[1]}}});
    ASSERT_EQ(s3, 200);
    ASSERT_EQ(idss["data"].size(), 2u);
    for (size_t k = 0; k < want[1].size(); ++k) {
        EXPECT_NEAR(one["data"][0]["embedding"][k].get<double>(), j["data"][1]["embedding"][k].get<double>(),
                    1e-6);
        EXPECT_NEAR(ids["data"][0]["embedding"][k].get<double>(), j["data"][1]["embedding"][k].get<double>(),
                    1e-6);
        EXPECT_NEAR(idss["data"][1]["embedding"][k].get<double>(), j["data"][1]["embedding"][k].get<double>(),
                    1e-6);
    }
}

TEST_F(EmbedServerTest, Base64IsTheFloatBytes) {
    auto [sf, f] = bert->post("/v1/embeddings", {{"input", "hello"}});
    auto [sb, b] = bert->post("/v1/embeddings", {{"input", "hello"}, {"encoding_format", "base64"}});
    ASSERT_EQ(sf, 200);
    ASSERT_EQ(sb, 200);
    const std::string s = b["data"][0]["embedding"].get<std::string>();
    static const std::string kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : s) {
        if (c == '=') break;
        acc = (acc << 6) | static_cast<uint32_t>(kAlpha.find(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            bytes += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    const json &v = f["data"][0]["embedding"];
    ASSERT_EQ(bytes.size(), v.size() * sizeof(float));
    for (size_t k = 0; k < v.size(); ++k) {
        float x;
        std::memcpy(&x, bytes.data() + k * sizeof(float), sizeof x);
        EXPECT_EQ(x, v[k].get<float>());
    }
}

TEST_F(EmbedServerTest, RerankOrderAndScores) {
    const std::string q = "what is a cat?";
    const std::vector<std::string> docs = {"A cat is a small pet.", "Paris is in France.", "dogs bark",
                                           "the stock market"};
    auto [st, j] = rerank->post("/v1/rerank", {{"query", q}, {"documents", docs}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["model"], std::filesystem::path(rerank_path).filename().string());
    ASSERT_EQ(j["results"].size(), docs.size());
    std::vector<std::vector<int32_t>> toks;
    int64_t n_tok = 0;
    for (const auto &d : docs) {
        toks.push_back(rerank->engine->rerank_tokens(q, d));
        n_tok += static_cast<int64_t>(toks.back().size());
    }
    EXPECT_EQ(j["usage"]["prompt_tokens"], n_tok);
    const auto want = direct_rows(rerank_path, toks);
    for (size_t r = 0; r < docs.size(); ++r) {
        const size_t i = j["results"][r]["index"];
        EXPECT_NEAR(j["results"][r]["relevance_score"].get<double>(), want[i][0], 1e-5);
        if (r > 0) {
            EXPECT_GE(j["results"][r - 1]["relevance_score"].get<double>(),
                      j["results"][r]["relevance_score"].get<double>());
        }
    }
    auto [s2, top] = rerank->post("/rerank", {{"query", q}, {"documents", docs}, {"top_n", 2}});
    ASSERT_EQ(s2, 200);
    ASSERT_EQ(top["results"].size(), 2u);
    EXPECT_EQ(top["results"][0], j["results"][0]);
    EXPECT_EQ(top["results"][1], j["results"][1]);
}

TEST_F(EmbedServerTest, BadInput) {
    auto expect_400 = [](LocalServer *s, const std::string &path, const json &body,
                         const std::string &words) {
        auto [st, j] = s->post(path, body);
        EXPECT_EQ(st, 400) << body.dump() << " " << j.dump();
        ASSERT_TRUE(j.contains("error")) << j.dump();
        EXPECT_EQ(j["error"]["code"], 400);
        EXPECT_EQ(j["error"]["type"], "invalid_request_error");
        EXPECT_NE(j["error"]["message"].get<std::string>().find(words), std::string::npos) << j.dump();
    };
    expect_400(bert, "/v1/embeddings", json::object(), "'input'");
    expect_400(bert, "/v1/embeddings", {{"input", 3}}, "'input'");
    expect_400(bert, "/v1/embeddings", {{"input", json::array()}}, "'input'");
    expect_400(bert, "/v1/embeddings", {{"input", {"a", 3}}}, "'input'");
    expect_400(bert, "/v1/embeddings", {{"input", {1, 99999999}}}, "token id");
    expect_400(bert, "/v1/embeddings", {{"input", {json::array()}}}, "empty");
    expect_400(bert, "/v1/embeddings", {{"input", "a"}, {"encoding_format", "int8"}}, "encoding_format");
    std::string long_text;
    for (int i = 0; i < 2000; ++i) long_text += "word ";
    expect_400(bert, "/v1/embeddings", {{"input", {"ok", long_text}}}, "at most");
    // Generation on an embedding model, embeddings on a reranker, rerank on an embedding model.
    expect_400(bert, "/v1/completions", {{"prompt", "hi"}}, "embeddings only");
    expect_400(bert, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}},
               "embeddings only");
    expect_400(bert, "/v1/rerank", {{"query", "a"}, {"documents", {"b"}}}, "classification head");
    expect_400(rerank, "/v1/embeddings", {{"input", "a"}}, "reranker");
    expect_400(rerank, "/v1/rerank", {{"documents", {"b"}}}, "'query'");
    expect_400(rerank, "/v1/rerank", {{"query", "a"}, {"documents", json::array()}}, "'documents'");
    expect_400(rerank, "/v1/rerank", {{"query", "a"}, {"documents", {1}}}, "'documents'");
    expect_400(rerank, "/v1/rerank", {{"query", "a"}, {"documents", {"b"}}, {"top_n", 0}}, "'top_n'");
    // Nothing else is affected.
    EXPECT_EQ(bert->post("/v1/embeddings", {{"input", "still fine"}}).first, 200);
    EXPECT_EQ(rerank->post("/v1/rerank", {{"query", "a"}, {"documents", {"b"}}}).first, 200);
}

// Sends each body to path from its own thread while the decode loop is paused, resumes the loop once all
// have queued (n_queued, by default all: so the loop takes them together, deterministically), and returns
// the responses.
std::vector<std::pair<int, json>> post_together(LocalServer *s, const std::string &path,
                                                const std::vector<json> &bodies, size_t n_queued = 0) {
    if (n_queued == 0) n_queued = bodies.size();
    std::vector<std::pair<int, json>> out(bodies.size());
    s->engine->pause_loop(true);
    std::vector<std::thread> ts;
    for (size_t i = 0; i < bodies.size(); ++i) ts.emplace_back([&, i] { out[i] = s->post(path, bodies[i]); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (s->engine->embed_requests_queued() < n_queued && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(s->engine->embed_requests_queued(), n_queued);
    s->engine->pause_loop(false);
    for (auto &t : ts) t.join();
    return out;
}

// 16 single-input requests at once share passes (8 sequences a pass: 2 passes, not 16), and each gets what
// it gets alone. The texts have one length, so any arrival order makes the same passes, each sequence at a
// multiple of that length (the kernels' token tiles then meet it alike; other offsets can move the last
// bits, as in any multi-input request).
TEST(EmbedServerOwn, ConcurrentRequestsSharePasses) {
    server::EngineOptions eo = embed_options(kBert);
    eo.n_slots = 8;
    LocalServer s(eo);
    std::vector<std::string> texts;
    std::vector<json> bodies, alone;
    for (int i = 0; i < 16; ++i) {
        texts.push_back("request " + std::to_string(i) + " is here now");
        ASSERT_EQ(s.engine->tokenize(texts.back(), true, false).size(),
                  s.engine->tokenize(texts[0], true, false).size());
        bodies.push_back({{"input", texts.back()}});
        auto [st, j] = s.post("/v1/embeddings", bodies.back());
        ASSERT_EQ(st, 200) << j.dump();
        alone.push_back(j["data"][0]["embedding"]);
    }
    const uint64_t passes0 = s.engine->metrics().embed_passes, requests0 = s.engine->metrics().embed_requests;
    EXPECT_EQ(passes0, 16u);  // one pass each
    const auto got = post_together(&s, "/v1/embeddings", bodies);
    EXPECT_EQ(s.engine->metrics().embed_requests - requests0, 16u);
    EXPECT_EQ(s.engine->metrics().embed_passes - passes0, 2u);
    EXPECT_EQ(s.metric("lctx:embedding_passes_total"), 18);
    auto expect_alone = [&](const json &v, size_t i) {
        ASSERT_EQ(v.size(), alone[i].size());
        for (size_t k = 0; k < v.size(); ++k)
            EXPECT_NEAR(v[k].get<double>(), alone[i][k].get<double>(), 1e-6) << i << " " << k;
    };
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].first, 200) << got[i].second.dump();
        expect_alone(got[i].second["data"][0]["embedding"], i);
    }
    // A request of many inputs, a bad one and a single one sent together: the bad one alone is refused
    // (before it queues), the others share a pass.
    const std::vector<json> mixed = {
        {{"input", {texts[0], texts[1], texts[2]}}}, {{"input", {1, 99999999}}}, {{"input", texts[3]}}};
    const uint64_t passes1 = s.engine->metrics().embed_passes;
    const auto out = post_together(&s, "/v1/embeddings", mixed, 2);
    EXPECT_EQ(s.engine->metrics().embed_passes - passes1, 1u);
    ASSERT_EQ(out[0].first, 200);
    ASSERT_EQ(out[0].second["data"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) expect_alone(out[0].second["data"][i]["embedding"], i);
    EXPECT_EQ(out[1].first, 400);
    ASSERT_EQ(out[2].first, 200);
    expect_alone(out[2].second["data"][0]["embedding"], 3);
}

// Rerank requests at once share passes too (two sequences a pass: 4 requests of 3 documents take 6 passes
// together, 8 alone), each with the scores it gets alone (pairs of one length, as above).
TEST_F(EmbedServerTest, ConcurrentRerankSharesPasses) {
    std::vector<json> bodies, alone;
    for (int i = 0; i < 4; ++i) {
        const std::string q = "what is thing " + std::to_string(i) + "?";
        const std::vector<std::string> docs = {"a thing " + std::to_string(i), "the stock market",
                                               "dogs bark loudly"};
        for (const auto &d : docs)
            ASSERT_EQ(rerank->engine->rerank_tokens(q, d).size(),
                      rerank->engine->rerank_tokens("what is thing 0?", "a thing 0").size());
        bodies.push_back({{"query", q}, {"documents", docs}});
        auto [st, j] = rerank->post("/v1/rerank", bodies.back());
        ASSERT_EQ(st, 200) << j.dump();
        alone.push_back(j["results"]);
    }
    const uint64_t passes0 = rerank->engine->metrics().embed_passes;
    const auto got = post_together(rerank, "/v1/rerank", bodies);
    EXPECT_EQ(rerank->engine->metrics().embed_passes - passes0, 6u);
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].first, 200) << got[i].second.dump();
        const json &r = got[i].second["results"];
        ASSERT_EQ(r.size(), alone[i].size());
        for (size_t k = 0; k < r.size(); ++k) {
            EXPECT_EQ(r[k]["index"], alone[i][k]["index"]);
            EXPECT_NEAR(r[k]["relevance_score"].get<double>(), alone[i][k]["relevance_score"].get<double>(),
                        1e-5);
        }
    }
}

TEST(EmbedServerOwn, GenerationModelRefusesEmbeddings) {
    server::EngineOptions eo;
    eo.n_ctx = 256;
    eo.n_slots = 1;
    eo.n_threads = 2;
    LocalServer s(eo);
    auto [st, j] = s.post("/v1/embeddings", {{"input", "hello"}});
    EXPECT_EQ(st, 400);
    EXPECT_NE(j["error"]["message"].get<std::string>().find("embedding model"), std::string::npos)
        << j.dump();
    auto [s2, r] = s.post("/v1/rerank", {{"query", "a"}, {"documents", {"b"}}});
    EXPECT_EQ(s2, 400);
    EXPECT_EQ(s.post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}).first, 200);
}

}  // namespace
}  // namespace lctx::testing::server_embed_test
