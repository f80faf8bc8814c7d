// llama-server's own surface in lctx serve: /completion (alias /completions) with its native fields and
// reply shape, streamed as llama-server streams it; /infill with the model's FIM tokens; prompts as lists of
// strings or token lists (one choice each) and echo on /v1/completions; --timeout; the llamacpp: metric
// names beside the vllm: and lctx: ones. Expected texts come from the server itself through another route
// (a greedy /v1/completions of the same tokens), never from numbers written here.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "gguf_rewrite.h"
#include "server/server_fixture.h"

namespace lctx::testing::server_native_test {
namespace {
using json = nlohmann::json;

server::EngineOptions small_engine() {
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 2;
    eo.n_threads = 1;
    return eo;
}

// The greedy text /v1/completions gives for a prompt (a string or token ids).
std::string greedy_text(const LocalServer &s, const json &prompt, int n) {
    auto [st, j] = s.post("/v1/completions", {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}});
    EXPECT_EQ(st, 200) << j.dump();
    return st == 200 ? j["choices"][0]["text"].get<std::string>() : "";
}

std::vector<int32_t> tokenize(const LocalServer &s, const std::string &text, bool add_special) {
    auto [st, j] = s.post("/tokenize", {{"content", text}, {"add_special", add_special}});
    EXPECT_EQ(st, 200) << j.dump();
    return j["tokens"].get<std::vector<int32_t>>();
}

TEST(ServerNative, CompletionHasLlamaServersShape) {
    LocalServer s(small_engine());
    const std::string greedy = greedy_text(s, "Once upon a time", 12);
    for (const char *path : {"/completion", "/completions"}) {
        auto [st, j] = s.post(path, {{"prompt", "Once upon a time"}, {"n_predict", 12}, {"temperature", 0}});
        ASSERT_EQ(st, 200) << path << " " << j.dump();
        ASSERT_TRUE(j.is_object()) << j.dump();
        EXPECT_EQ(j["content"], greedy) << j.dump();
        EXPECT_EQ(j["stop"], true);
        EXPECT_EQ(j["index"], 0);
        EXPECT_EQ(j["tokens_predicted"], 12);
        EXPECT_EQ(j["stop_type"], "limit");
        EXPECT_EQ(j["stopping_word"], "");
        EXPECT_EQ(j["truncated"], false);
        EXPECT_EQ(j["tokens_evaluated"], static_cast<int>(tokenize(s, "Once upon a time", true).size()));
        EXPECT_GE(j["id_slot"].get<int>(), 0);
        EXPECT_LT(j["id_slot"].get<int>(), 2);
        EXPECT_EQ(j["model"], "stories260K.gguf");
        EXPECT_EQ(j["generation_settings"]["n_predict"], 12);
        EXPECT_EQ(j["generation_settings"]["n_ctx"], 256);
        EXPECT_EQ(j["timings"]["predicted_n"], 12);
        EXPECT_NE(j["prompt"].get<std::string>().find("Once upon a time"), std::string::npos) << j.dump();
        EXPECT_FALSE(j.contains("completion_probabilities"));
        EXPECT_FALSE(j.contains("choices"));  // not the OpenAI shape
    }
    // A stop string: stop_type word, the word named, the text before it.
    ASSERT_GT(greedy.size(), 4u);
    const std::string word = greedy.substr(greedy.size() / 2, 3);
    auto [st, w] = s.post("/completion", {{"prompt", "Once upon a time"},
                                          {"n_predict", 12},
                                          {"temperature", 0},
                                          {"stop", json::array({word})}});
    ASSERT_EQ(st, 200) << w.dump();
    EXPECT_EQ(w["stop_type"], "word") << w.dump();
    EXPECT_EQ(w["stopping_word"], word);
    EXPECT_EQ(w["content"], greedy.substr(0, greedy.find(word)));
    // The end of text: stop_type eos (the end-of-text token, 2 here, pushed up).
    auto [st2, e] = s.post("/completion", {{"prompt", "Once"}, {"n_predict", 8}, {"logit_bias", {{2, 100}}}});
    ASSERT_EQ(st2, 200) << e.dump();
    EXPECT_EQ(e["stop_type"], "eos") << e.dump();
}

TEST(ServerNative, ProbabilitiesAndTokens) {
    LocalServer s(small_engine());
    auto [st, j] = s.post("/completion", {{"prompt", "Once upon a time"},
                                          {"n_predict", 6},
                                          {"temperature", 0},
                                          {"n_probs", 3},
                                          {"return_tokens", true}});
    ASSERT_EQ(st, 200) << j.dump();
    ASSERT_TRUE(j.contains("completion_probabilities")) << j.dump();
    const json &cp = j["completion_probabilities"];
    ASSERT_EQ(cp.size(), 6u) << j.dump();
    ASSERT_EQ(j["tokens"].size(), 6u);
    std::string text;
    for (size_t i = 0; i < cp.size(); ++i) {
        EXPECT_EQ(cp[i]["id"], j["tokens"][i]);
        ASSERT_EQ(cp[i]["top_logprobs"].size(), 3u);
        // Greedy: the token is the most likely one, and the alternatives come in order.
        EXPECT_EQ(cp[i]["top_logprobs"][0]["id"], cp[i]["id"]);
        EXPECT_FLOAT_EQ(cp[i]["top_logprobs"][0]["logprob"].get<float>(), cp[i]["logprob"].get<float>());
        EXPECT_GE(cp[i]["top_logprobs"][0]["logprob"].get<float>(),
                  cp[i]["top_logprobs"][1]["logprob"].get<float>());
        EXPECT_LE(cp[i]["logprob"].get<float>(), 0.0f);
        EXPECT_EQ(cp[i]["bytes"].size(), cp[i]["token"].get<std::string>().size());
        text += cp[i]["token"].get<std::string>();
    }
    EXPECT_EQ(text, j["content"]);
    // The OpenAI endpoints keep their own field: n_probs there is a 400 naming it.
    auto [st2, e] = s.post("/v1/completions", {{"prompt", "Once"}, {"n_probs", 2}});
    EXPECT_EQ(st2, 400);
    EXPECT_EQ(e["error"]["param"], "n_probs");
}

TEST(ServerNative, StreamIsLlamaServersEvents) {
    LocalServer s(small_engine());
    auto [st, whole] =
        s.post("/completion", {{"prompt", "Once upon a time"}, {"n_predict", 10}, {"temperature", 0}});
    ASSERT_EQ(st, 200);
    auto r = s.client()->Post("/completion",
                              json({{"prompt", "Once upon a time"},
                                    {"n_predict", 10},
                                    {"temperature", 0},
                                    {"stream", true},
                                    {"n_probs", 2}})
                                  .dump(),
                              "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->body.find("[DONE]"), std::string::npos) << r->body;  // llama-server's native stream has none
    const std::vector<json> evs = sse_events(r->body);
    ASSERT_GE(evs.size(), 2u);
    std::string text;
    for (size_t i = 0; i + 1 < evs.size(); ++i) {
        ASSERT_TRUE(evs[i].is_object()) << r->body;
        EXPECT_EQ(evs[i]["stop"], false);
        EXPECT_EQ(evs[i]["tokens"].size(), 1u);
        EXPECT_EQ(evs[i]["completion_probabilities"].size(), 1u);
        text += evs[i]["content"].get<std::string>();
    }
    const json &last = evs.back();
    EXPECT_EQ(last["stop"], true) << last.dump();
    EXPECT_EQ(last["content"], "");
    EXPECT_EQ(last["tokens_predicted"], 10);
    EXPECT_EQ(last["stop_type"], "limit");
    EXPECT_TRUE(last.contains("timings"));
    EXPECT_EQ(text, whole["content"]);
}

TEST(ServerNative, SamplerFieldsAreHonoured) {
    LocalServer s(small_engine());
    const std::string greedy = greedy_text(s, "Once upon a time", 16);
    auto text = [&](json extra, uint32_t seed) {
        // The truncating samplers off (llama-server's defaults would apply them), unless `extra` says.
        json b = {{"prompt", "Once upon a time"},
                  {"n_predict", 16},
                  {"temperature", 1.5},
                  {"seed", seed},
                  {"top_k", 0},
                  {"top_p", 1.0},
                  {"min_p", 0.0}};
        for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
        auto [st, j] = s.post("/completion", b);
        EXPECT_EQ(st, 200) << j.dump();
        return j["content"].get<std::string>();
    };
    // Sampling at a high temperature wanders off the greedy text for some seed.
    bool differs = false;
    for (uint32_t seed = 1; seed <= 4 && !differs; ++seed) differs = text(json::object(), seed) != greedy;
    ASSERT_TRUE(differs);
    // top_k 1 in the sampler order: greedy whatever the seed; left out of the order, top_k does nothing.
    for (uint32_t seed = 1; seed <= 4; ++seed)
        EXPECT_EQ(text({{"top_k", 1}, {"samplers", json::array({"top_k", "temperature"})}}, seed), greedy)
            << seed;
    EXPECT_EQ(text({{"top_k", 1}, {"samplers", "kt"}}, 1), greedy);  // the letters' form
    differs = false;
    for (uint32_t seed = 1; seed <= 4 && !differs; ++seed)
        differs = text({{"top_k", 1}, {"samplers", json::array({"temperature"})}}, seed) != greedy;
    EXPECT_TRUE(differs);
    // Mirostat 2.0 with a target surprise of 0 keeps only the most likely token: greedy.
    for (uint32_t seed = 1; seed <= 3; ++seed)
        EXPECT_EQ(text({{"mirostat", 2}, {"mirostat_tau", 0.0}}, seed), greedy) << seed;
    // typical_p close to 0 keeps one token (min_keep 1): the same text whatever the seed.
    EXPECT_EQ(text({{"typical_p", 0.001}}, 1), text({{"typical_p", 0.001}}, 2));
    // XTC at probability 1 and threshold 0 drops every likely token but the least likely: seed-independent,
    // and not the greedy text.
    const std::string x1 = text({{"xtc_probability", 1.0}, {"xtc_threshold", 0.0}}, 1);
    EXPECT_EQ(x1, text({{"xtc_probability", 1.0}, {"xtc_threshold", 0.0}}, 2));
    EXPECT_NE(x1, greedy);
    // Dynamic temperature: 1.5 within a range of 1.5 and a steep exponent follows the distribution's entropy
    // (far below the uniform one here) down to almost 0: greedy whatever the seed.
    for (uint32_t seed = 1; seed <= 3; ++seed)
        EXPECT_EQ(text({{"dynatemp_range", 1.5}, {"dynatemp_exponent", 100.0}}, seed), greedy) << seed;
    // DRY is accepted and reported back.
    auto [st, d] = s.post("/completion", {{"prompt", "Once"},
                                          {"n_predict", 4},
                                          {"dry_multiplier", 0.8},
                                          {"dry_base", 2.0},
                                          {"dry_allowed_length", 3},
                                          {"dry_sequence_breakers", json::array({"\n", "."})}});
    ASSERT_EQ(st, 200) << d.dump();
    EXPECT_FLOAT_EQ(d["generation_settings"]["dry_multiplier"].get<float>(), 0.8f);
    EXPECT_EQ(d["generation_settings"]["dry_sequence_breakers"], json::array({"\n", "."}));
    // What is wrong is a 400 naming the field.
    for (const auto &[name, value] :
         std::vector<std::pair<std::string, json>>{{"samplers", json::array({"top_k", "warp"})},
                                                   {"samplers", "kz"},
                                                   {"mirostat", 3},
                                                   {"typical_p", 2},
                                                   {"dry_sequence_breakers", json::array({""})},
                                                   {"post_sampling_probs", true},
                                                   {"id_slot", 2},
                                                   {"n_probs", 101},
                                                   {"n_keep", 4},
                                                   {"n_indent", 2},
                                                   {"t_max_predict_ms", 100},
                                                   {"timings_per_token", true},
                                                   {"response_fields", json::array({"content"})},
                                                   {"image_data", json::array({{{"id", 1}}})},
                                                   {"dynatemp_range", -1}}) {
        auto [st4, e] = s.post("/completion", {{"prompt", "Once"}, {"n_predict", 2}, {name, value}});
        EXPECT_EQ(st4, 400) << name << " " << e.dump();
        EXPECT_EQ(e["error"]["param"], name) << e.dump();
    }
}

TEST(ServerNative, SlotAndPromptCache) {
    LocalServer s(small_engine());
    const json base = {
        {"prompt", "Once upon a time there was a little girl"}, {"n_predict", 2}, {"temperature", 0}};
    for (int slot : {1, 0, 1}) {
        json b = base;
        b["id_slot"] = slot;
        auto [st, j] = s.post("/completion", b);
        ASSERT_EQ(st, 200) << j.dump();
        EXPECT_EQ(j["id_slot"], slot);
    }
    // Slot 1 holds the prompt: it is reused, unless cache_prompt is false.
    json again = base;
    again["id_slot"] = 1;
    auto [st1, cached] = s.post("/completion", again);
    ASSERT_EQ(st1, 200);
    EXPECT_GT(cached["tokens_cached"].get<int>(), 0) << cached.dump();
    again["cache_prompt"] = false;
    auto [st2, fresh] = s.post("/completion", again);
    ASSERT_EQ(st2, 200);
    EXPECT_EQ(fresh["tokens_cached"], 0) << fresh.dump();
    EXPECT_EQ(fresh["timings"]["prompt_n"], fresh["tokens_evaluated"]);
    EXPECT_EQ(fresh["content"], cached["content"]);
}

TEST(ServerNative, SeveralPromptsGiveOneChoiceEach) {
    LocalServer s(small_engine());
    const std::vector<int32_t> toks = tokenize(s, "The cat", true);
    const std::string a = greedy_text(s, "Once upon a time", 6), b = greedy_text(s, toks, 6);
    auto [st, j] = s.post("/v1/completions", {{"prompt", json::array({"Once upon a time", toks})},
                                              {"max_tokens", 6},
                                              {"temperature", 0},
                                              {"n", 2}});
    ASSERT_EQ(st, 200) << j.dump();
    ASSERT_EQ(j["choices"].size(), 4u) << j.dump();
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(j["choices"][i]["index"], i);
        EXPECT_EQ(j["choices"][i]["text"], i < 2 ? a : b) << i;
    }
    auto [sa, ja] =
        s.post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}});
    auto [sb, jb] = s.post("/v1/completions", {{"prompt", toks}, {"max_tokens", 6}, {"temperature", 0}});
    EXPECT_EQ(j["usage"]["prompt_tokens"].get<int>(),
              ja["usage"]["prompt_tokens"].get<int>() + jb["usage"]["prompt_tokens"].get<int>());
    EXPECT_EQ(j["usage"]["completion_tokens"], 24);
    // Tokens and text mixed in one prompt: the text's tokens (no BOS after the first piece) in place.
    const std::vector<int32_t> cat = tokenize(s, " cat", false);
    json mixed = json::array({toks[0]});
    mixed.push_back("The");
    auto [sm, jm] = s.post("/v1/completions", {{"prompt", mixed}, {"max_tokens", 1}});
    ASSERT_EQ(sm, 200) << jm.dump();
    EXPECT_EQ(jm["usage"]["prompt_tokens"].get<size_t>(), 1 + tokenize(s, "The", false).size());
    // render answers one token list: one prompt only.
    auto [sr, jr] = s.post("/v1/completions/render", {{"prompt", json::array({"a", "b"})}});
    EXPECT_EQ(sr, 400) << jr.dump();
    auto [sr1, jr1] = s.post("/v1/completions/render", {{"prompt", json::array({"a"})}});
    EXPECT_EQ(sr1, 200) << jr1.dump();
    // Native: several prompts answer with a list.
    auto [sn, jn] =
        s.post("/completion",
               {{"prompt", json::array({"Once upon a time", toks})}, {"n_predict", 6}, {"temperature", 0}});
    ASSERT_EQ(sn, 200) << jn.dump();
    ASSERT_TRUE(jn.is_array()) << jn.dump();
    ASSERT_EQ(jn.size(), 2u);
    EXPECT_EQ(jn[0]["content"], a);
    EXPECT_EQ(jn[1]["content"], b);
    EXPECT_EQ(jn[1]["index"], 1);
    // Too many choices for the slots and the queue, or a bad element: 400.
    json many = json::array();
    for (int i = 0; i < 9; ++i) many.push_back("x");
    server::EngineOptions eo = small_engine();
    eo.max_queue = 2;
    LocalServer tight(eo);
    auto [st3, e3] = tight.post("/v1/completions", {{"prompt", many}, {"max_tokens", 1}});
    EXPECT_EQ(st3, 400) << e3.dump();
    auto [st4, e4] = s.post("/v1/completions", {{"prompt", json::array({"a", 3})}, {"max_tokens", 1}});
    EXPECT_EQ(st4, 200) << e4.dump();  // a number among strings: one mixed prompt
    auto [st5, e5] =
        s.post("/v1/completions", {{"prompt", json::array({"a", {{"x", 1}}})}, {"max_tokens", 1}});
    EXPECT_EQ(st5, 400) << e5.dump();
    EXPECT_EQ(e5["error"]["param"], "prompt");
}

TEST(ServerNative, EchoPrependsThePrompt) {
    LocalServer s(small_engine());
    const std::string g = greedy_text(s, "Once upon a time", 5);
    auto [st, j] =
        s.post("/v1/completions",
               {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}, {"echo", true}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"][0]["text"], "Once upon a time" + g);
    auto r = s.client()->Post("/v1/completions",
                              json({{"prompt", "Once upon a time"},
                                    {"max_tokens", 5},
                                    {"temperature", 0},
                                    {"echo", true},
                                    {"stream", true}})
                                  .dump(),
                              "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(sse_text(sse_events(r->body)), "Once upon a time" + g) << r->body;
    // The first token held back (it starts a stop string that then does not match): the prompt still goes
    // out once.
    const std::string first = greedy_text(s, "Once upon a time", 1);
    auto held = s.client()->Post("/v1/completions",
                                 json({{"prompt", "Once upon a time"},
                                       {"max_tokens", 5},
                                       {"temperature", 0},
                                       {"echo", true},
                                       {"stop", json::array({first + "\x01"})},
                                       {"stream", true}})
                                     .dump(),
                                 "application/json");
    ASSERT_TRUE(held);
    EXPECT_EQ(sse_text(sse_events(held->body)), "Once upon a time" + g) << held->body;
    auto [st2, e] = s.post("/v1/completions", {{"prompt", "Once"}, {"echo", true}, {"logprobs", 1}});
    EXPECT_EQ(st2, 400) << e.dump();
    EXPECT_EQ(e["error"]["param"], "echo");
}

// stories260K with FIM tokens (ids 3, 4, 5 as in the CLI's infill test), written to a temporary file.
std::string fim_model() {
    Rewrite r;
    r.add = [](gguf::Writer &w) {
        w.set("tokenizer.ggml.fim_pre_token_id", gguf::Value::from_uint(gguf::ValueType::UINT32, 3));
        w.set("tokenizer.ggml.fim_suf_token_id", gguf::Value::from_uint(gguf::ValueType::UINT32, 4));
        w.set("tokenizer.ggml.fim_mid_token_id", gguf::Value::from_uint(gguf::ValueType::UINT32, 5));
    };
    return rewrite_gguf(stories_model(), r, "server-fim");
}

TEST(ServerNative, InfillBuildsTheFimPrompt) {
    const std::string path = fim_model();
    server::EngineOptions eo = small_engine();
    eo.model_path = path;
    {
        LocalServer s(eo);
        const std::vector<int32_t> bos = tokenize(s, "", true);  // the BOS the model adds (or none)
        const std::vector<int32_t> pre = tokenize(s, "Once upon", false), suf = tokenize(s, " lived", false),
                                   mid = tokenize(s, " a", false), extra = tokenize(s, "The cat.", false);
        std::vector<int32_t> want = bos;
        want.insert(want.end(), extra.begin(), extra.end());  // no repo tokens: the files' texts first
        want.push_back(3);
        want.insert(want.end(), pre.begin(), pre.end());
        want.push_back(4);
        want.insert(want.end(), suf.begin(), suf.end());
        want.push_back(5);
        want.insert(want.end(), mid.begin(), mid.end());
        const std::string expected = greedy_text(s, want, 8);
        auto [st, j] = s.post("/infill", {{"input_prefix", "Once upon"},
                                          {"input_suffix", " lived"},
                                          {"input_extra", {{{"filename", "a.txt"}, {"text", "The cat."}}}},
                                          {"prompt", " a"},
                                          {"n_predict", 8},
                                          {"temperature", 0}});
        ASSERT_EQ(st, 200) << j.dump();
        EXPECT_EQ(j["tokens_evaluated"], static_cast<int>(want.size())) << j.dump();
        EXPECT_EQ(j["content"], expected);
        EXPECT_EQ(j["tokens_predicted"], 8);
        for (const json &bad : {json{{"input_prefix", 1}}, json{{"input_extra", "x"}},
                                json{{"input_extra", {{{"filename", "a"}}}}}, json{{"prompt", {1, 2}}}}) {
            auto [st2, e] = s.post("/infill", bad);
            EXPECT_EQ(st2, 400) << bad.dump() << " " << e.dump();
        }
    }
    std::filesystem::remove(path);
    // A model without FIM tokens: 400 saying so.
    LocalServer plain(small_engine());
    auto [st, e] = plain.post("/infill", {{"input_prefix", "a"}, {"input_suffix", "b"}});
    EXPECT_EQ(st, 400) << e.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find("fill-in-the-middle"), std::string::npos)
        << e.dump();
}

TEST(ServerNative, LlamacppMetricsMatchTheOthers) {
    LocalServer s(small_engine());
    int predicted = 0;
    for (const char *p : {"Once upon a time", "The cat", "Once upon a time there"}) {
        auto [st, j] = s.post("/completion", {{"prompt", p}, {"n_predict", 5}});
        ASSERT_EQ(st, 200);
        predicted += j["tokens_predicted"].get<int>();
    }
    const std::string ml = "{model_name=\"stories260K.gguf\"}";
    EXPECT_EQ(s.metric("llamacpp:tokens_predicted_total"), predicted);
    EXPECT_EQ(s.metric("llamacpp:tokens_predicted_total"), s.metric("lctx:tokens_predicted_total"));
    EXPECT_EQ(s.metric("llamacpp:prompt_tokens_total"), s.metric("lctx:prompt_tokens_total"));
    EXPECT_GT(s.metric("llamacpp:prompt_tokens_total"), 0);
    EXPECT_EQ(s.metric("llamacpp:prompt_seconds_total"), s.metric("lctx:prompt_seconds_total"));
    EXPECT_EQ(s.metric("llamacpp:n_decode_total"), s.metric("lctx:decode_steps_total"));
    EXPECT_GT(s.metric("llamacpp:n_decode_total"), 0);
    const double busy = s.metric("llamacpp:n_busy_slots_per_decode");
    EXPECT_GE(busy, 1.0);
    EXPECT_LE(busy, 2.0);
    EXPECT_NEAR(
        s.metric("llamacpp:predicted_tokens_seconds"),
        s.metric("llamacpp:tokens_predicted_total") / s.metric("llamacpp:tokens_predicted_seconds_total"),
        1e-6 * s.metric("llamacpp:predicted_tokens_seconds"));
    EXPECT_GT(s.metric("llamacpp:prompt_tokens_seconds"), 0);
    EXPECT_EQ(s.metric("llamacpp:requests_processing"), s.metric("vllm:num_requests_running" + ml));
    EXPECT_EQ(s.metric("llamacpp:requests_deferred"), s.metric("vllm:num_requests_waiting" + ml));
    EXPECT_EQ(s.metric("llamacpp:kv_cache_usage_ratio"), s.metric("vllm:kv_cache_usage_perc" + ml));
    EXPECT_EQ(s.metric("llamacpp:kv_cache_tokens"), s.metric("lctx:kv_cache_tokens"));
}

TEST(ServerNative, TimeoutBoundsTheBody) {
    server::ServerOptions so;
    server::apply_timeout(so, 1);
    EXPECT_EQ(so.body_timeout_ms, 1000);
    EXPECT_EQ(so.write_timeout_ms, 1000);
    EXPECT_EQ(so.head_timeout_ms, 1000);
    server::ServerOptions wide;
    server::apply_timeout(wide, 600);  // llama-server's default: the head keeps its own, shorter bound
    EXPECT_EQ(wide.body_timeout_ms, 600000);
    EXPECT_EQ(wide.head_timeout_ms, server::ServerOptions{}.head_timeout_ms);
    LocalServer s(small_engine(), so);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(s.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    const std::string req =
        "POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        "40\r\n\r\n{\"pro";
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    const auto t0 = std::chrono::steady_clock::now();
    std::string got;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 8000) <= 0) break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
    EXPECT_LT(secs, 5.0);  // the default body deadline is 60 s
}

}  // namespace
}  // namespace lctx::testing::server_native_test
