// Speculative decoding in the server's continuous batch (issue 41): with prompt lookup and with a draft
// model (the stories model drafting for itself), greedy output is token for token the output without
// speculation, for one request and for three prompts that generate together (one request's prompt list:
// queued together, evaluated in the same steps, so their slots verify their drafts in the same decodes); a
// sampled request keeps working; the timings, usage and metrics add up (an accepted draft token counts once);
// requests the verifier cannot serve decode plainly; the draft tokens of a step keep within
// --draft-batch-max; a draft model of another vocabulary is refused at start.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "server_fixture.h"

namespace lctx::testing::server_spec_test {
namespace {

using lctx::testing::LocalServer;
using lctx::testing::stories_model;
using nlohmann::json;

enum class Mode { Plain, Lookup, SelfDraft };

// An F32 KV cache: a row of a batch then gets the bits a one-token decode gives it on every kernel level
// (README, speculative decoding), which token-for-token equality needs.
lctx::server::EngineOptions options(Mode mode) {
    lctx::server::EngineOptions eo;
    eo.n_ctx = 1024;
    eo.n_slots = 4;
    eo.n_threads = 1;
    eo.type_k = eo.type_v = GGML_TYPE_F32;
    if (mode == Mode::Lookup) eo.spec.lookup = true;
    if (mode == Mode::SelfDraft) {
        eo.spec.model_draft = stories_model();
        eo.spec.p_min = 0.0f;  // always draft: the stories model agrees with itself
    }
    return eo;
}

const std::vector<std::string> kPrompts = {"Once upon a time", "Lily and Tom", "The little dog"};

// /completion with a list of prompts: one result per prompt (with the token ids).
std::vector<json> complete(const LocalServer &srv, const std::vector<std::string> &prompts, json extra = {}) {
    json body = {{"prompt", prompts}, {"n_predict", 64}, {"temperature", 0}, {"return_tokens", true}};
    for (auto &[k, v] : extra.items()) body[k] = v;
    auto [status, j] = srv.post("/completion", body);
    EXPECT_EQ(status, 200) << j.dump();
    std::vector<json> out;
    if (prompts.size() == 1 && j.is_object()) {
        out.push_back(j);
    } else if (j.is_array()) {
        for (const json &r : j) out.push_back(r);
    }
    EXPECT_EQ(out.size(), prompts.size()) << j.dump();
    return out;
}

std::vector<int> tokens(const json &r) {
    return r.at("tokens").get<std::vector<int>>();
}

int64_t draft_n(const std::vector<json> &rs, const char *field) {
    int64_t n = 0;
    for (const json &r : rs) n += r["timings"].value(field, 0);
    return n;
}

// Each prompt's greedy tokens without speculation: alone, then the three together.
struct Reference {
    std::vector<std::vector<int>> alone, together;
};
const Reference &plain_reference() {
    static const Reference ref = [] {
        Reference r;
        LocalServer srv(options(Mode::Plain));
        for (const std::string &p : kPrompts) r.alone.push_back(tokens(complete(srv, {p})[0]));
        for (const json &res : complete(srv, kPrompts)) r.together.push_back(tokens(res));
        return r;
    }();
    return ref;
}

void expect_plain_output(Mode mode) {
    const Reference &ref = plain_reference();
    ASSERT_EQ(ref.alone.size(), kPrompts.size());
    for (const auto &t : ref.alone) ASSERT_EQ(t.size(), 64u);  // the comparison covers 64 tokens each
    LocalServer srv(options(mode));
    // One request alone in the server.
    const std::vector<json> one = complete(srv, {kPrompts[0]});
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(tokens(one[0]), ref.alone[0]);
    EXPECT_TRUE(one[0]["timings"].contains("draft_n"));
    // Three prompts generating together, each slot verifying its draft in the same decodes. The prompt cache
    // of the first request is in a slot now; the comparison also covers a slot reused.
    const std::vector<json> three = complete(srv, kPrompts);
    ASSERT_EQ(three.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(tokens(three[i]), ref.together[i]) << "prompt " << i;
        EXPECT_EQ(tokens(three[i]), ref.alone[i]) << "prompt " << i;
    }
    // Speculation did run: drafts were verified and some accepted (a test that compared plain with plain
    // would pass too).
    EXPECT_GT(draft_n(three, "draft_n"), 0);
    EXPECT_GT(draft_n(three, "draft_n_accepted"), 0);
    EXPECT_GT(srv.metric("vllm:spec_decode_num_drafts_total{model_name=\"stories260K.gguf\"}"), 0);
}

TEST(ServerSpec, GreedyLookupIsThePlainOutput) {
    expect_plain_output(Mode::Lookup);
}

TEST(ServerSpec, GreedySelfDraftIsThePlainOutput) {
    expect_plain_output(Mode::SelfDraft);
    // The stories model drafting for itself greedily agrees with itself: every draft token is accepted.
    LocalServer srv(options(Mode::SelfDraft));
    const std::vector<json> rs = complete(srv, kPrompts);
    EXPECT_GT(draft_n(rs, "draft_n"), 0);
    EXPECT_EQ(draft_n(rs, "draft_n_accepted"), draft_n(rs, "draft_n"));
    // Far fewer decodes than tokens: three slots verify up to 16 tokens each per decode.
    EXPECT_LT(srv.metric("lctx:decode_steps_total"), 192 / 4);
}

// --draft-batch-max: three slots whose drafter always drafts (16 tokens each, 48 a step uncapped) add at most
// the cap in one step, given (12) or by default the step's budget less the generating slots' own tokens
// (-b 24: 23 at most), and the greedy output is still the plain output.
TEST(ServerSpec, DraftTokensOfAStepKeepWithinTheCap) {
    const Reference &ref = plain_reference();
    ASSERT_EQ(ref.together.size(), kPrompts.size());
    for (const int32_t cap : {12, 0}) {
        lctx::server::EngineOptions eo = options(Mode::SelfDraft);
        eo.spec.batch_max = cap;
        eo.step_tokens = 24;
        const int32_t bound = cap > 0 ? cap : eo.step_tokens - 1;
        LocalServer srv(eo);
        const std::vector<json> three = complete(srv, kPrompts);
        ASSERT_EQ(three.size(), 3u) << "cap " << cap;
        for (size_t i = 0; i < 3; ++i)
            EXPECT_EQ(tokens(three[i]), ref.together[i]) << "cap " << cap << ", prompt " << i;
        EXPECT_GT(draft_n(three, "draft_n"), 0) << "cap " << cap;
        const double most = srv.metric("lctx:spec_step_draft_tokens_max");
        EXPECT_GT(most, 0) << "cap " << cap;
        EXPECT_LE(most, bound) << "cap " << cap;
    }
}

TEST(ServerSpec, SampledRequestsKeepWorking) {
    for (Mode mode : {Mode::Lookup, Mode::SelfDraft}) {
        LocalServer srv(options(mode));
        const json sampled = {{"temperature", 0.9},   {"top_k", 40},     {"top_p", 0.95},
                              {"seed", 42},           {"n_predict", 48}, {"ignore_eos", true},
                              {"repeat_penalty", 1.1}};
        const std::vector<json> a = complete(srv, kPrompts, sampled);
        const std::vector<json> b = complete(srv, {kPrompts[1]}, sampled);
        ASSERT_EQ(a.size(), 3u);
        for (const json &r : a) {
            EXPECT_EQ(r["tokens_predicted"], 48);
            EXPECT_EQ(tokens(r).size(), 48u);
            EXPECT_FALSE(r["content"].get<std::string>().empty());
            EXPECT_TRUE(r["timings"].contains("draft_n"));
        }
        // The verifier's generator is seeded by the request: the same request repeats its output.
        const std::vector<json> c = complete(srv, {kPrompts[1]}, sampled);
        ASSERT_EQ(b.size(), 1u);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(tokens(b[0]), tokens(c[0]));
    }
}

TEST(ServerSpec, TimingsUsageAndMetricsAddUp) {
    LocalServer srv(options(Mode::SelfDraft));
    const std::string ml = "{model_name=\"stories260K.gguf\"}";
    auto metric = [&](const char *name) { return srv.metric(std::string(name) + ml); };
    // OpenAI's usage: stopped by max_tokens or a stop string, each choice's tokens once.
    double gen0 = metric("vllm:generation_tokens_total");
    auto [st, j] = srv.post(
        "/v1/completions", {{"prompt", kPrompts}, {"max_tokens", 40}, {"temperature", 0}, {"stop", {"Tom"}}});
    ASSERT_EQ(st, 200) << j.dump();
    const json &u = j["usage"];
    EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
    EXPECT_EQ(metric("vllm:generation_tokens_total") - gen0, u["completion_tokens"].get<double>());
    // llama-server's timings, per choice, and the metrics over them.
    gen0 = metric("vllm:generation_tokens_total");
    const double drafted0 = metric("vllm:spec_decode_num_draft_tokens_total"),
                 accepted0 = metric("vllm:spec_decode_num_accepted_tokens_total");
    const std::vector<json> rs = complete(srv, kPrompts, {{"n_predict", 200}});
    int64_t predicted = 0;
    for (const json &r : rs) {
        const json &t = r["timings"];
        const int n = r["tokens_predicted"].get<int>();
        EXPECT_EQ(t["predicted_n"], n);
        EXPECT_NEAR(t["predicted_per_token_ms"].get<double>() * n, t["predicted_ms"].get<double>(), 1e-6);
        EXPECT_LE(t["draft_n_accepted"].get<int>(), t["draft_n"].get<int>());
        EXPECT_LT(t["draft_n_accepted"].get<int>(), n);  // the target chooses at least one token per decode
        // Every token once: the ids and the count agree (an end of text is counted but has no id).
        const size_t ids = tokens(r).size();
        EXPECT_TRUE(ids == static_cast<size_t>(n) ||
                    (r["stop_type"] == "eos" && ids + 1 == static_cast<size_t>(n)))
            << r.dump();
        predicted += n;
    }
    EXPECT_EQ(metric("vllm:generation_tokens_total") - gen0, static_cast<double>(predicted));
    EXPECT_EQ(metric("vllm:spec_decode_num_draft_tokens_total") - drafted0,
              static_cast<double>(draft_n(rs, "draft_n")));
    EXPECT_EQ(metric("vllm:spec_decode_num_accepted_tokens_total") - accepted0,
              static_cast<double>(draft_n(rs, "draft_n_accepted")));
    EXPECT_GT(draft_n(rs, "draft_n_accepted"), 0);
}

TEST(ServerSpec, RequestsTheVerifierCannotServeDecodePlainly) {
    const Reference &ref = plain_reference();
    LocalServer srv(options(Mode::SelfDraft));
    const std::string ml = "{model_name=\"stories260K.gguf\"}";
    const double drafts0 = srv.metric("vllm:spec_decode_num_drafts_total" + ml);
    // n_probs (log-probabilities), a grammar, Mirostat: no draft, the plain path's output.
    const std::vector<json> probs = complete(srv, {kPrompts[0]}, {{"n_probs", 2}});
    ASSERT_EQ(probs.size(), 1u);
    EXPECT_EQ(tokens(probs[0]), ref.alone[0]);
    EXPECT_EQ(probs[0]["completion_probabilities"].size(), 64u);
    const std::vector<json> gram =
        complete(srv, {kPrompts[1]}, {{"grammar", "root ::= [a-z ]+"}, {"n_predict", 16}});
    ASSERT_EQ(gram.size(), 1u);
    for (char ch : gram[0]["content"].get<std::string>()) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == ' ');
    const std::vector<json> miro =
        complete(srv, {kPrompts[2]}, {{"mirostat", 2}, {"temperature", 0.8}, {"seed", 1}});
    ASSERT_EQ(miro.size(), 1u);
    for (const json &r : {probs[0], gram[0], miro[0]})
        EXPECT_FALSE(r["timings"].contains("draft_n")) << r.dump();
    EXPECT_EQ(srv.metric("vllm:spec_decode_num_drafts_total" + ml), drafts0);
}

TEST(ServerSpec, ADraftModelOfAnotherVocabularyIsAnErrorAtStart) {
    // The stories model with one token's text changed: the same sizes and special tokens, another vocabulary.
    auto f = lctx::gguf::File::open(stories_model());
    std::vector<std::string> texts = *f->get_string_array("tokenizer.ggml.tokens");
    texts[300] = "changed";
    lctx::testing::Rewrite rw;
    rw.add = [&](lctx::gguf::Writer &w) { w.set_string_array("tokenizer.ggml.tokens", texts); };
    lctx::server::EngineOptions eo = options(Mode::Plain);
    eo.model_path = stories_model();
    eo.spec.model_draft = lctx::testing::rewrite_gguf(stories_model(), rw, "serve-spec-vocab");
    struct Remove {
        std::string path;
        ~Remove() { std::remove(path.c_str()); }
    } remove{eo.spec.model_draft};
    try {
        lctx::server::Engine e(eo);
        FAIL() << "a draft model of another vocabulary was taken";
    } catch (const std::runtime_error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(eo.spec.model_draft + " cannot draft for"), std::string::npos) << what;
        EXPECT_NE(what.find("token 300"), std::string::npos) << what;
    }
    // The command line says so in one line and stops with status 1; its option checks are `lctx run`'s.
    auto run = [](const std::string &args, std::string *out) {
        const std::string cmd =
            std::string(LCTX_BIN_DIR) + "/lctx serve --port 0 -m " + stories_model() + " " + args + " 2>&1";
        FILE *p = popen(cmd.c_str(), "r");
        char buf[4096];
        size_t n;
        while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
        return p ? pclose(p) : -1;
    };
    std::string out;
    int rc = run("-md " + eo.spec.model_draft, &out);
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << out;
    EXPECT_NE(out.find("lctx serve: " + eo.spec.model_draft + " cannot draft for"), std::string::npos) << out;
    out.clear();
    rc = run("-md " + stories_model() + " --lookup", &out);
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << out;
    EXPECT_NE(out.find("two drafters: choose one"), std::string::npos) << out;
    out.clear();
    rc = run("--lookup --draft-min 20 --draft-max 8", &out);
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << out;
    EXPECT_NE(out.find("--draft-min: must not be above --draft-max"), std::string::npos) << out;
}

}  // namespace
}  // namespace lctx::testing::server_spec_test
