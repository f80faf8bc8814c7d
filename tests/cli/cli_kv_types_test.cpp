// -ctk / -ctv take llama.cpp's KV cache types (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1) in run,
// chat, serve and perplexity (bench: tests/tools/bench_test.cpp), and refuse as llama.cpp does a
// block-quantized V without -fa, with one line that says what to do.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"

namespace cli_kv_types_test {
namespace {

using lctx::testing::run_cli;

bool has(const std::string &s, const std::string &what) {
    return s.find(what) != std::string::npos;
}

size_t count_lines(const std::string &s) {
    size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

// head size 32: one block per head
const std::string kModel = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf";

TEST(CliKvTypes, RunGeneratesWithEveryCacheType) {
    for (const char *t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}) {
        // K alone (no -fa: V transposed, f16), then K and V (-fa)
        for (bool both : {false, true}) {
            const std::string args = "run -m " + kModel +
                                     " -p 'Once upon a time' -n 6 --temp 0 --ignore-eos --json -ctk " + t +
                                     (both ? std::string(" -fa -ctv ") + t : std::string());
            const auto r = run_cli(args);
            ASSERT_EQ(r.status, 0) << args << ": " << run_cli(args, true).out;
            const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
            ASSERT_TRUE(j.is_object()) << r.out;
            EXPECT_EQ(j["ids"].size(), 6u) << args << ": " << r.out;
        }
    }
}

TEST(CliKvTypes, AQuantizedVWithoutFlashAttentionIsRefusedAsLlamaCppDoes) {
    for (const char *cmd : {"run", "chat"}) {
        for (const char *t : {"q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}) {
            const auto r = run_cli(std::string(cmd) + " -m " + kModel + " -p hi -n 2 -ctv " + t, true);
            EXPECT_EQ(r.status, 1) << cmd << " " << t << ": " << r.out;
            EXPECT_TRUE(has(r.out, std::string("lctx ") + cmd + ": --cache-type-v " + t +
                                       ": V cache quantization requires flash_attn (add -fa)"))
                << r.out;
            EXPECT_EQ(count_lines(r.out), 1u) << r.out;
        }
    }
    const auto s = run_cli("serve -m " + kModel + " --port 0 -ctv q4_1", true);
    EXPECT_EQ(s.status, 1) << s.out;
    EXPECT_TRUE(
        has(s.out, "lctx serve: --cache-type-v q4_1: V cache quantization requires flash_attn (add -fa)"))
        << s.out;
    const auto p = run_cli("perplexity -m " + kModel + " -f /dev/null -ctv q5_0", true);
    EXPECT_EQ(p.status, 1) << p.out;
    EXPECT_TRUE(has(p.out, "--cache-type-v q5_0: V cache quantization requires flash_attn (add -fa)"))
        << p.out;
}

TEST(CliKvTypes, WhatIsNoCacheTypeOrDoesNotFitTheHeadsIsRefused) {
    for (const char *cmd : {"run", "serve"}) {
        const auto r = run_cli(std::string(cmd) + " -m " + kModel + " -ctk q4_K", true);
        EXPECT_EQ(r.status, 1) << r.out;
        EXPECT_TRUE(has(r.out,
                        "--cache-type-k: q4_K is not a KV cache type (f32, f16, bf16, q8_0, q4_0, q4_1, "
                        "iq4_nl, q5_0, q5_1)"))
            << cmd << ": " << r.out;
        const auto u = run_cli(std::string(cmd) + " -m " + kModel + " -ctk q9", true);
        EXPECT_EQ(u.status, 1) << u.out;
        EXPECT_TRUE(has(u.out, "--cache-type-k: unknown type 'q9'")) << cmd << ": " << u.out;
    }
    // the shipped model's heads are 8 values: no block type fits
    const auto r = run_cli("run -p hi -n 2 -ctk q4_0", true);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(
        has(r.out, "KV cache type q4_0 for K needs a head size that is a multiple of 32 (this model's is 8)"))
        << r.out;
}

// State files (run --prompt-cache, chat /save and /load) keep a quantized cache: a later run reuses it and
// generates what a run without the file does; a file of other types is refused in one line. bench runs with
// the types and says so.
TEST(CliKvTypes, StateFilesAndBenchTakeTheQuantizedTypes) {
    const std::string cache = lctx::testing::temp_file("kv_types.cache");
    std::remove(cache.c_str());
    const std::string types = " -fa -ctk q4_0 -ctv q5_1 -c 128 ";
    const std::string p1 = "run -q --json -m " + kModel + types + "-n 6 --temp 0 -p 'Once upon a time'";
    const std::string p2 =
        "run -q --json -m " + kModel + types + "-n 6 --temp 0 -p 'Once upon a time there was'";
    ASSERT_EQ(run_cli(p1 + " --prompt-cache " + cache).status, 0);
    const auto plain = run_cli(p2), cached = run_cli(p2 + " --prompt-cache " + cache);
    ASSERT_EQ(plain.status, 0);
    ASSERT_EQ(cached.status, 0);
    const nlohmann::json a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(cached.out);
    EXPECT_GT(b["prompt_cache"]["reused"].get<int>(), 1) << cached.out;
    EXPECT_EQ(a["ids"], b["ids"]);
    const auto other = run_cli("run -m " + kModel + " -c 128 -n 2 -p hi --prompt-cache " + cache, true);
    EXPECT_EQ(other.status, 1) << other.out;
    EXPECT_TRUE(has(other.out, "lctx run: --prompt-cache: cannot use")) << other.out;
    EXPECT_EQ(count_lines(other.out), 1u) << other.out;
    // chat: /save, then /load in another chat with the same types.
    const auto saved = run_cli(
        "chat -q --json -m " + kModel + types + "-n 4 --temp 0 <<< $'Hello\\n/save " + cache + "'", true);
    EXPECT_EQ(saved.status, 0) << saved.out;
    EXPECT_TRUE(has(saved.out, "[saved ")) << saved.out;
    const auto loaded = run_cli(
        "chat -q --json -m " + kModel + types + "-n 4 --temp 0 <<< $'/load " + cache + "\\nHello'", true);
    EXPECT_EQ(loaded.status, 0) << loaded.out;
    EXPECT_TRUE(has(loaded.out, "[loaded ")) << loaded.out;
    std::remove(cache.c_str());
    const auto bench =
        run_cli("bench -m " + kModel +
                " -fa 1 -ctk q4_0 -ctv iq4_nl -p 8 -n 0 -r 1 -t 1 --bw-mib 0 --no-peak -o jsonl");
    ASSERT_EQ(bench.status, 0) << bench.out;
    const nlohmann::json row = nlohmann::json::parse(bench.out.substr(0, bench.out.find('\n')));
    EXPECT_EQ(row["type_k"], "q4_0") << bench.out;
    EXPECT_EQ(row["type_v"], "iq4_nl") << bench.out;
}

TEST(CliKvTypes, ServeStartsWithAQuantizedCache) {
    // the server comes up and answers (then the test ends it); a cache it cannot make would end it first
    lctx::testing::CliProcess srv({"serve", "-m", kModel, "--port", "0", "-c", "256", "--parallel", "2",
                                   "-fa", "-ctk", "q4_0", "-ctv", "q5_1", "--log-disable"});
    ASSERT_TRUE(srv.started());
    EXPECT_TRUE(srv.wait_for("slots of 128 cells; open http://", 0, 60)) << srv.output();
    srv.signal(SIGTERM);
    EXPECT_EQ(srv.wait_exit(), 0) << srv.output();
}

}  // namespace
}  // namespace cli_kv_types_test
