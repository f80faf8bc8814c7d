// The grammar sampler's cost per generated token (Google Benchmark): one apply() over every candidate of a
// 32000-token vocabulary (llama's SPM vocabulary), with the output at points of a JSON document where few
// or many tokens fit:
//   GrammarApply/<grammar>/<state>
//   grammar "schema": the GBNF of fixtures/grammar/schema-cases.json's object-required-optional case
//           (what --json-schema gives for {"name": string, "age": integer}, name required);
//           "json": llama.cpp's generic grammars/json.gbnf
//   state   the output so far: "start" (nothing), "key" ({), "string" (inside a string value, where
//           almost every token fits), "number" (inside a number)
//   GrammarGenerate/<grammar>/<cold|warm>: a whole JSON document, token by token (apply, then accept the
//   document's next token), per token; "cold" starts each document with a new sampler (nothing cached),
//   "warm" resets the same sampler (the parse states it met stay cached, as in a server's next request).
// Issue 16 asks that this cost stay under 20% of a tinyllama-1.1b Q4_0 generated token.
// Built by CMake as build/bin/grammar_bench when Google Benchmark is installed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "sampling/grammar_sampler.h"
#include "vocab/vocab.h"

namespace {

using namespace lctx;

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

const Vocab &llama_vocab() {
    static std::unique_ptr<Vocab> v = [] {
        auto f = gguf::File::open(std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-llama-spm.gguf");
        return Vocab::load(*f);
    }();
    return *v;
}

std::shared_ptr<const TokenTexts> llama_texts() {
    static std::shared_ptr<const TokenTexts> texts = [] {
        const Vocab *v = &llama_vocab();
        auto t = std::make_shared<TokenTexts>();
        t->piece.resize(v->n_tokens());
        t->is_eog.resize(v->n_tokens());
        for (int32_t id = 0; id < v->n_tokens(); ++id) {
            t->piece[id] = v->token_to_piece(id, true);
            t->is_eog[id] = v->is_eog(id);
        }
        return t;
    }();
    return texts;
}

std::string grammar_text(const std::string &which) {
    const std::string dir = std::string(LCTX_FIXTURES_DIR) + "/grammar/";
    if (which == "json") return read_file(dir + "grammars/json.gbnf");
    for (const auto &c : nlohmann::json::parse(read_file(dir + "schema-cases.json")))
        if (c["name"] == "object-required-optional") return c["gbnf"];
    return {};
}

void BM_GrammarApply(benchmark::State &st, const std::string &grammar, const std::string &prefix) {
    std::shared_ptr<const TokenTexts> texts = llama_texts();
    GrammarSampler g(texts, grammar_text(grammar), "root");
    if (!g.accept_bytes(prefix)) {
        st.SkipWithError("the prefix does not fit the grammar");
        return;
    }
    const size_t n = texts->piece.size();
    std::vector<TokenData> base(n);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (size_t i = 0; i < n; ++i) base[i] = {static_cast<Token>(i), normal(rng), 0.0f};
    std::vector<TokenData> cur(n);
    size_t allowed = 0;
    for (auto _ : st) {
        st.PauseTiming();
        cur = base;
        st.ResumeTiming();
        TokenDataArray arr{cur.data(), n, -1, false};
        g.apply(arr);
        benchmark::DoNotOptimize(cur.data());
        allowed = 0;
        for (const TokenData &d : cur) allowed += d.logit != -std::numeric_limits<float>::infinity();
    }
    st.counters["allowed"] = static_cast<double>(allowed);
}

// A document the grammar accepts, as the model would write it in tokens of the vocabulary.
void BM_GrammarGenerate(benchmark::State &st, const std::string &grammar, const std::string &doc, bool warm) {
    std::shared_ptr<const TokenTexts> texts = llama_texts();
    std::vector<int32_t> toks = llama_vocab().tokenize(doc, false, false);
    // SPM puts a space in front of the text: the first token without it is the piece's own token.
    if (!toks.empty() && texts->piece[toks[0]].size() > 1 && texts->piece[toks[0]][0] == ' ') {
        const std::string first = texts->piece[toks[0]].substr(1);
        const auto it = std::find(texts->piece.begin(), texts->piece.end(), first);
        if (it == texts->piece.end()) {
            st.SkipWithError("no token for the document's first piece");
            return;
        }
        toks[0] = static_cast<int32_t>(it - texts->piece.begin());
    }
    const size_t n = texts->piece.size();
    std::vector<TokenData> base(n), cur(n);
    for (size_t i = 0; i < n; ++i) base[i] = {static_cast<Token>(i), 0.0f, 0.0f};
    auto keep = std::make_unique<GrammarSampler>(texts, grammar_text(grammar), "root");
    for (auto _ : st) {
        if (warm) {
            keep->reset();
        } else {
            st.PauseTiming();
            keep = std::make_unique<GrammarSampler>(texts, grammar_text(grammar), "root");
            st.ResumeTiming();
        }
        for (int32_t t : toks) {
            cur = base;
            TokenDataArray arr{cur.data(), n, -1, false};
            keep->apply(arr);
            if (cur[t].logit == -std::numeric_limits<float>::infinity()) {
                st.SkipWithError("the document's token was refused");
                return;
            }
            keep->accept(t);
        }
    }
    st.counters["tokens"] = static_cast<double>(toks.size());
    st.counters["per_token"] =
        benchmark::Counter(static_cast<double>(toks.size()),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void register_all() {
    const std::pair<const char *, const char *> schema_states[] = {
        {"start", ""},
        {"key", "{"},
        {"string", "{\"name\": \"Bo"},
        {"number", "{\"name\": \"Bob\", \"age\": 3"}};
    const std::pair<const char *, const char *> json_states[] = {
        {"start", ""}, {"key", "{"}, {"string", "{\"a\": [1, \"xy"}, {"number", "{\"a\": [12"}};
    for (const auto &[name, prefix] : schema_states)
        benchmark::RegisterBenchmark((std::string("GrammarApply/schema/") + name).c_str(), BM_GrammarApply,
                                     std::string("schema"), std::string(prefix))
            ->Unit(benchmark::kMicrosecond);
    for (const auto &[name, prefix] : json_states)
        benchmark::RegisterBenchmark((std::string("GrammarApply/json/") + name).c_str(), BM_GrammarApply,
                                     std::string("json"), std::string(prefix))
            ->Unit(benchmark::kMicrosecond);
    const std::string schema_doc =
        "{\"name\": \"Bob Smith, the third of his name, from the village\", \"age\": 42}";
    const std::string json_doc =
        "{\"title\": \"A walk in the park\", \"tags\": [\"sun\", \"trees\"], \"stars\": 4.5, \"ok\": true}";
    for (bool warm : {false, true}) {
        benchmark::RegisterBenchmark(warm ? "GrammarGenerate/schema/warm" : "GrammarGenerate/schema/cold",
                                     BM_GrammarGenerate, std::string("schema"), schema_doc, warm)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(warm ? "GrammarGenerate/json/warm" : "GrammarGenerate/json/cold",
                                     BM_GrammarGenerate, std::string("json"), json_doc, warm)
            ->Unit(benchmark::kMillisecond);
    }
}

}  // namespace

int main(int argc, char **argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
