// lctx bench: statistics, bytes per token, a tiny timed run whose JSON has llama-bench's fields, the CLI's
// --json output, and (when llama.cpp's peer is installed) the peer driving a synthesized model.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../tools/lctx/bench_batched.h"
#include "../../tools/lctx/bench_core.h"
#include "../../tools/lctx/bench_peer.h"
#include "../../tools/lctx/synth_model.h"
#include "../cli/cli_run.h"

namespace lctx::bench::bench_test {
namespace {

const std::string kStories = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";

// Every field llama-bench writes in its JSON output.
const char *const kLlamaBenchFields[] = {
    "build_commit", "build_number", "cpu_info",       "gpu_info",   "backends",     "model_filename",
    "model_type",   "model_size",   "model_n_params", "n_batch",    "n_ubatch",     "n_threads",
    "cpu_mask",     "cpu_strict",   "poll",           "type_k",     "type_v",       "n_gpu_layers",
    "split_mode",   "main_gpu",     "no_kv_offload",  "flash_attn", "tensor_split", "use_mmap",
    "embeddings",   "n_prompt",     "n_gen",          "n_depth",    "test_time",    "avg_ns",
    "stddev_ns",    "avg_ts",       "stddev_ts",      "samples_ns", "samples_ts"};

void expect_bench_object(const nlohmann::json &j, const std::string &engine, int n_prompt, int n_gen,
                         int reps) {
    for (const char *f : kLlamaBenchFields) EXPECT_TRUE(j.contains(f)) << "missing " << f;
    EXPECT_EQ(j.value("engine", ""), engine);
    EXPECT_EQ(j.value("n_prompt", -1), n_prompt);
    EXPECT_EQ(j.value("n_gen", -1), n_gen);
    ASSERT_TRUE(j["samples_ns"].is_array());
    EXPECT_EQ(j["samples_ns"].size(), static_cast<size_t>(reps));
    EXPECT_EQ(j["samples_ts"].size(), static_cast<size_t>(reps));
    EXPECT_GT(j.value("avg_ts", 0.0), 0.0);
    EXPECT_GT(j.value("avg_ns", uint64_t{0}), 0u);
    EXPECT_GT(j.value("model_size", uint64_t{0}), 0u);
    EXPECT_EQ(j.value("type_k", ""), "f16");
    EXPECT_EQ(j.value("backends", ""), "CPU");
    if (n_gen > 0) {
        EXPECT_GT(j.value("bytes_per_token", uint64_t{0}), 0u);
        EXPECT_GT(j.value("gbps", 0.0), 0.0);
    } else {
        EXPECT_FALSE(j.contains("gbps"));
    }
}

TEST(BenchStats, MeanAndSampleStddev) {
    // 10 tokens in 1 s and in 2 s: 10 and 5 t/s.
    const Stats st = compute_stats({1000000000u, 2000000000u}, 10);
    EXPECT_DOUBLE_EQ(st.avg_ns, 1.5e9);
    EXPECT_NEAR(st.stddev_ns, std::sqrt(0.5) * 1e9, 1.0);
    EXPECT_DOUBLE_EQ(st.avg_ts, 7.5);
    EXPECT_NEAR(st.stddev_ts, std::sqrt(12.5), 1e-12);
    const Stats one = compute_stats({500000000u}, 4);
    EXPECT_DOUBLE_EQ(one.avg_ts, 8.0);
    EXPECT_EQ(one.stddev_ts, 0.0);
}

TEST(BenchBytes, UntiedReadsOneEmbeddingRow) {
    std::unique_ptr<Model> m = Model::load(kStories);
    // stories260K: all f32, token_embd [64, 512] and a separate output.weight.
    ASSERT_NE(m->file().find_tensor("output.weight"), nullptr);
    uint64_t all = 0;
    for (const gguf::TensorInfo &t : m->file().tensors()) all += t.nbytes;
    EXPECT_EQ(bytes_per_token(m->file()), all - 512u * 64u * 4u + 64u * 4u);
}

TEST(BenchBytes, TiedReadsTheWholeEmbedding) {
    // A tied file (no output.weight): the embedding is the output matrix and is read in full.
    gguf::Writer w;
    std::vector<float> embd(32 * 8, 0.0f), norm(32, 1.0f);
    w.add_tensor("token_embd.weight", GgmlType::F32, {32, 8}, embd.data(), embd.size() * 4);
    w.add_tensor("output_norm.weight", GgmlType::F32, {32}, norm.data(), norm.size() * 4);
    const std::vector<uint8_t> bytes = w.to_bytes();
    std::unique_ptr<gguf::File> f = gguf::File::from_buffer(bytes.data(), bytes.size());
    EXPECT_EQ(bytes_per_token(*f), 32u * 8u * 4u + 32u * 4u);
}

TEST(BenchRun, TinyRunGivesLlamaBenchJson) {
    std::unique_ptr<Model> m = Model::load(kStories);
    Settings s;
    s.n_prompt = 8;
    s.n_gen = 4;
    s.reps = 1;
    EXPECT_EQ(s.n_ctx(), 12u);
    EXPECT_EQ(s.eff_batch(), 12u);
    EXPECT_EQ(s.eff_ubatch(), 12u);
    LctxRunner run(*m, s);
    run.set_threads(1);
    Result pp, tg;
    pp.engine = tg.engine = "lctx";
    pp.model = tg.model = model_facts(*m);
    pp.n_prompt = 8;
    tg.n_gen = 4;
    pp.n_batch = tg.n_batch = s.eff_batch();
    pp.n_ubatch = tg.n_ubatch = s.eff_ubatch();
    pp.test_time = tg.test_time = iso_time_now();
    pp.samples_ns.push_back(run.run_pp(8));
    tg.samples_ns.push_back(run.run_tg(4));
    tg.mem_bw = 1e10;
    EXPECT_EQ(pp.test_name(), "pp8");
    EXPECT_EQ(tg.test_name(), "tg4");

    const nlohmann::json jp = nlohmann::json::parse(to_json(pp, lctx_build_info(), cpu_info()).dump());
    const nlohmann::json jt = nlohmann::json::parse(to_json(tg, lctx_build_info(), cpu_info()).dump());
    expect_bench_object(jp, "lctx", 8, 0, 1);
    expect_bench_object(jt, "lctx", 0, 4, 1);
    EXPECT_EQ(jt.value("n_threads", 0), 1);
    EXPECT_EQ(jt.value("model_n_params", uint64_t{0}), m->n_params());
    EXPECT_NEAR(jt.value("limit_ts", 0.0), 1e10 / static_cast<double>(tg.model.bytes_per_token), 1e-6);
    EXPECT_NEAR(jt.value("frac_of_limit", 0.0), jt.value("avg_ts", 0.0) / jt.value("limit_ts", 1.0), 1e-9);

    Result peer = tg;
    peer.engine = "llama.cpp";
    peer.samples_ns = {tg.samples_ns[0] * 2};
    const std::string md = markdown({pp, tg, peer});
    EXPECT_NE(md.find("| pp8 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| tg4 |"), std::string::npos) << md;
    EXPECT_NE(md.find("tg4 @ 1 threads: lctx/llama.cpp = 2.00"), std::string::npos) << md;
    EXPECT_EQ(md.find("pp8 @"), std::string::npos) << md;  // only one engine ran pp
}

TEST(BenchBandwidth, PlausibleReadBandwidth) {
    const double bw = read_bandwidth(1, size_t{64} << 20, 1);
    EXPECT_GT(bw, 1e8);   // 0.1 GB/s: slower than any machine this runs on
    EXPECT_LT(bw, 1e13);  // 10 TB/s: faster than any
}

// The binaries sit next to this test binary (build/bin) when they are built.
std::string sibling(const std::string &name) {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path p = exe.parent_path() / name;
    return !ec && std::filesystem::exists(p, ec) ? p.string() : "";
}

// `lctx bench ARGS --json` on stories260K, stdout parsed (discarded when the run failed or printed no JSON).
nlohmann::json bench_json(const std::string &lctx, const std::string &args) {
    const std::string out =
        (std::filesystem::temp_directory_path() / ("lctx_bench_" + std::to_string(getpid()) + ".json"))
            .string();
    const std::string cmd = lctx + " bench -m " + kStories + " " + args + " --json > " + out;
    const int status = std::system(cmd.c_str());
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    std::filesystem::remove(out);
    EXPECT_EQ(status, 0) << cmd;
    if (status != 0) return nlohmann::json(nlohmann::json::value_t::discarded);
    return nlohmann::json::parse(ss.str(), nullptr, false);
}

TEST(BenchCli, JsonOnStdoutParses) {
    const std::string lctx = sibling("lctx");
    if (lctx.empty()) GTEST_SKIP() << "the lctx binary is not built next to this test";
    const nlohmann::json j = bench_json(lctx, "-p 8 -n 4 -r 1 -t 1 --bw-mib 16");
    ASSERT_FALSE(j.is_discarded());
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 2u);
    expect_bench_object(j[0], "lctx", 8, 0, 1);
    expect_bench_object(j[1], "lctx", 0, 4, 1);
    EXPECT_GT(j[1].value("mem_bw_gbps", 0.0), 0.0);
}

// The compute peak is probed at every prompt repetition and every prompt row of the run is held against the
// best one: rows of one thread count share one peak, whatever test or repetition probed it.
TEST(BenchCli, PromptRowsShareTheRunsBestPeak) {
    const std::string lctx = sibling("lctx");
    if (lctx.empty()) GTEST_SKIP() << "the lctx binary is not built next to this test";
    const nlohmann::json j = bench_json(lctx, "-p 4,8,12,16,20,24 -n 0 -r 3 -t 1 --bw-mib 0");
    ASSERT_TRUE(j.is_array()) << j.dump();
    ASSERT_EQ(j.size(), 6u) << j.dump();  // 18 probes: the first row's own 3 are seldom the best
    const double peak = j[0].value("peak_ops", 0.0);
    EXPECT_GT(peak, 0.0);
    for (const nlohmann::json &r : j) {
        EXPECT_EQ(r.value("peak_ops", 0.0), peak) << r.dump();  // the same double, not a close one
        const double frac = r.value("avg_ts", 0.0) * r.value("ops_per_token", 0.0) / peak;
        EXPECT_NEAR(r.value("frac_of_peak", 0.0), frac, 1e-9) << r.dump();
    }
}

// llama.cpp loads a synthesized model and the peer answers timed runs. Needs scripts/install-peer.sh and the
// lctx_peer_bench target; skipped without them.
// Embedding mode: n_seq sequences of n_prompt tokens in one encode, one micro-batch of all of them.
TEST(BenchRun, EmbeddingModeEncodesSequences) {
    const std::string path = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";
    std::unique_ptr<Model> m = Model::load(path);
    Settings s;
    s.n_prompt = 16;
    s.n_seq = 3;
    s.n_batch = 8;  // ignored: the encode takes the whole batch at once
    s.reps = 1;
    EXPECT_EQ(s.n_ctx(), 48u);
    EXPECT_EQ(s.eff_batch(), 48u);
    EXPECT_EQ(s.eff_ubatch(), 48u);
    LctxRunner run(*m, s);
    run.set_threads(1);
    Result r;
    r.engine = "lctx";
    r.model = model_facts(*m);
    r.n_prompt = 16;
    r.n_seq = 3;
    r.n_batch = s.eff_batch();
    r.n_ubatch = s.eff_ubatch();
    r.test_time = iso_time_now();
    r.samples_ns.push_back(run.run_embd());
    EXPECT_EQ(r.test_name(), "embd3x16");
    EXPECT_EQ(r.n_tokens(), 48);
    const nlohmann::json j = nlohmann::json::parse(to_json(r, lctx_build_info(), cpu_info()).dump());
    expect_bench_object(j, "lctx", 16, 0, 1);
    EXPECT_EQ(j.value("embeddings", false), true);
    EXPECT_EQ(j.value("n_seq", 0), 3);
    EXPECT_NEAR(j.value("avg_ts", 0.0), 48e9 / static_cast<double>(r.samples_ns[0]), 1e-6);
}

// T5 mode on a synthesized t5-tiny: an encode of n_prompt tokens then n_gen decoder steps per run, the two
// parts timed apart; the decoder's cache starts empty each run (a second run fits the same context).
TEST(BenchRun, T5ModeTimesEncoderAndDecoder) {
    const synth::Shape *shape = synth::find_shape("t5-tiny");
    ASSERT_NE(shape, nullptr);
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("Q8_0", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    opts.n_threads = 1;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_bench_t5_" + std::to_string(getpid()) + ".gguf"))
            .string();
    synth::write_model(*shape, type, path, opts);
    std::unique_ptr<Model> m = Model::load(path);
    std::filesystem::remove(path);
    Settings s;
    s.n_prompt = 24;
    s.n_gen = 6;
    s.n_batch = 8;  // ignored: the encode takes the whole batch at once
    s.n_ubatch = 8;
    s.t5 = true;
    EXPECT_EQ(s.n_ctx(), 30u);
    EXPECT_EQ(s.eff_ubatch(), 30u);
    LctxRunner run(*m, s);
    run.set_threads(1);
    const int64_t before = run.tokens_decoded();
    for (int rep = 0; rep < 2; ++rep) {
        const auto [enc, dec] = run.run_t5();
        EXPECT_GT(enc, 0u);
        EXPECT_GT(dec, 0u);
    }
    EXPECT_EQ(run.tokens_decoded() - before, 12);  // 6 single-token decoder steps per run
    Result r;
    r.engine = "lctx";
    r.model = model_facts(*m);
    r.n_prompt = 24;
    r.n_gen = 6;
    r.t5_part = 2;
    r.samples_ns = {3000000000u};
    EXPECT_EQ(r.test_name(), "dec6 @ e24");
    EXPECT_EQ(r.n_tokens(), 6);
    const nlohmann::json j = nlohmann::json::parse(to_json(r, lctx_build_info(), cpu_info()).dump());
    EXPECT_EQ(j.value("t5_part", ""), "decoder");
    EXPECT_NEAR(j.value("avg_ts", 0.0), 2.0, 1e-9);
    r.t5_part = 1;
    r.n_gen = 0;
    EXPECT_EQ(r.test_name(), "enc24");
    EXPECT_EQ(r.n_tokens(), 24);
}

// The CLI's T5 mode: an encoder row and a decoder row per (-p, -n) pair, in JSON.
TEST(BenchCli, T5ModeGivesEncoderAndDecoderRows) {
    const std::string lctx = sibling("lctx");
    if (lctx.empty()) GTEST_SKIP() << "the lctx binary is not built next to this test";
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_bench_t5cli_" + std::to_string(getpid()) + ".gguf"))
            .string();
    ASSERT_EQ(
        std::system((lctx + " synth --shape t5-tiny --type Q8_0 -t 1 -o " + path + " > /dev/null").c_str()),
        0);
    const std::string out = path + ".json";
    const int status =
        std::system((lctx + " bench -m " + path + " -p 16 -n 4 -r 2 -t 1 --json > " + out).c_str());
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    std::filesystem::remove(path);
    std::filesystem::remove(out);
    ASSERT_EQ(status, 0);
    ASSERT_TRUE(j.is_array()) << j.dump();
    ASSERT_EQ(j.size(), 2u) << j.dump();
    EXPECT_EQ(j[0].value("t5_part", ""), "encoder");
    EXPECT_EQ(j[0].value("n_prompt", 0), 16);
    EXPECT_EQ(j[0].value("n_gen", -1), 0);
    EXPECT_EQ(j[1].value("t5_part", ""), "decoder");
    EXPECT_EQ(j[1].value("n_gen", 0), 4);
    for (const nlohmann::json &r : j) {
        EXPECT_EQ(r["samples_ns"].size(), 2u);
        EXPECT_GT(r.value("avg_ts", 0.0), 0.0);
    }
}

TEST(BenchPeer, LlamaCppRunsASynthesizedModel) {
    const char *home = std::getenv("HOME");
    const std::string lib = resolve_peer_lib_dir(std::string(home ? home : "") + "/.cache/lctx/peer");
    const std::string exe = sibling("lctx-peer-bench");
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    const synth::Shape *shape = synth::find_shape("tiny");
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("Q4_K_M", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_peer_" + std::to_string(getpid()) + ".gguf"))
            .string();
    const synth::Summary sum = synth::write_model(*shape, type, path, opts);
    {
        Settings s;
        s.n_prompt = 8;
        s.n_gen = 4;
        s.n_depth = 4;  // n_ctx 16
        PeerProcess peer(exe, lib, path, s);
        EXPECT_EQ(peer.facts().n_vocab, 32000);
        EXPECT_EQ(peer.facts().n_params, sum.n_params);
        EXPECT_GT(peer.run_pp(8, 1), 0u);
        EXPECT_GT(peer.run_tg(4, 1), 0u);
        EXPECT_GT(peer.run_pg(8, 4, 4, 1), 0u);        // -pg 8,4 -d 4: the whole context
        EXPECT_THROW(peer.run_pg(8, 4, 5, 1), Error);  // one more than n_ctx: the peer reports an error
    }
    std::filesystem::remove(path);
}

// The peer's embedding mode on a bert model: llama_encode of n_seq sequences.
TEST(BenchPeer, LlamaCppEncodesABertModel) {
    const char *home = std::getenv("HOME");
    const std::string lib = resolve_peer_lib_dir(std::string(home ? home : "") + "/.cache/lctx/peer");
    const std::string exe = sibling("lctx-peer-bench");
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    Settings s;
    s.n_prompt = 16;
    s.n_seq = 2;
    PeerProcess peer(exe, lib, std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf", s);
    EXPECT_EQ(peer.facts().n_vocab, 30522);
    EXPECT_GT(peer.run_embd(2, 16, 1), 0u);
    EXPECT_THROW(peer.run_embd(3, 16, 1), Error);  // more sequences than the context was made for
}

// Embeddings against the peer at -fa 0 only get a note: llama.cpp's own default is flash attention, without
// which its attention covers the whole batch. (The note comes before the peer is looked for, so a directory
// without one shows it, then the error.)
TEST(BenchCli, EmbeddingsAgainstThePeerWithoutFlashAttentionGetANote) {
    const std::string bert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";
    const std::string no_peer = (std::filesystem::temp_directory_path() / "lctx_no_peer_here").string();
    auto output_of = [&](const std::string &args) {  // stdout and stderr
        return lctx::testing::run_cli(
                   "bench -m " + bert + " --embd -p 8 --n-seq 2 -t 1 -r 1 --bw-mib 0 " + args, true)
            .out;
    };
    const std::string note = "compare embeddings with -fa 1";
    EXPECT_NE(output_of("--peer " + no_peer).find(note), std::string::npos);
    EXPECT_NE(output_of("-fa 0 --peer " + no_peer).find(note), std::string::npos);
    EXPECT_EQ(output_of("-fa 0,1 --peer " + no_peer).find(note), std::string::npos);
    EXPECT_EQ(output_of("-fa 1 --peer " + no_peer).find(note), std::string::npos);
    EXPECT_EQ(output_of("").find(note), std::string::npos);  // no peer, nothing to compare
}

// The peer's T5 mode on a synthesized t5-tiny: llama.cpp loads it, encodes and runs decoder steps.
TEST(BenchPeer, LlamaCppRunsT5) {
    const std::string dir = default_peer_dir();  // the native build when installed
    const std::string lib = dir.empty() ? "" : resolve_peer_lib_dir(dir);
    const std::string exe = sibling("lctx-peer-bench");
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    const synth::Shape *shape = synth::find_shape("t5-tiny");
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F16", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_peer_t5_" + std::to_string(getpid()) + ".gguf"))
            .string();
    const synth::Summary sum = synth::write_model(*shape, type, path, opts);
    {
        Settings s;
        s.n_prompt = 16;
        s.n_gen = 4;
        s.t5 = true;
        PeerProcess peer(exe, lib, path, s);
        EXPECT_EQ(peer.facts().n_vocab, 32128);
        EXPECT_EQ(peer.facts().n_params, sum.n_params);
        const auto [enc, dec] = peer.run_t5(16, 4, 1);
        EXPECT_GT(enc, 0u);
        EXPECT_GT(dec, 0u);
        EXPECT_THROW(peer.run_t5(16, 5, 1), Error);  // one step more than the context holds
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lctx::bench::bench_test

namespace lctx::bench::bench_test {
namespace {

Result fake(const std::string &engine, int n_prompt, int n_gen, std::vector<uint64_t> samples) {
    Result r;
    r.engine = engine;
    r.n_prompt = n_prompt;
    r.n_gen = n_gen;
    r.n_threads = 2;
    r.n_batch = r.n_ubatch = 512;
    r.samples_ns = std::move(samples);
    return r;
}

TEST(BenchWarnings, ImplausibleResultsAreFlaggedAndPlausibleOnesNot) {
    const Result ok_lctx = fake("lctx", 512, 0, {1000000, 1010000, 990000});
    const Result ok_peer = fake("llama.cpp", 512, 0, {2000000, 2020000, 1980000});
    EXPECT_TRUE(plausibility_warnings({ok_lctx, ok_peer}).empty());

    const Result slow_peer = fake("llama.cpp", 512, 0, {25000000, 25100000, 24900000});  // ratio 25x
    const auto ratio = plausibility_warnings({ok_lctx, slow_peer});
    ASSERT_EQ(ratio.size(), 1u);
    EXPECT_NE(ratio[0].find("implausible"), std::string::npos) << ratio[0];
    const Result fast_peer = fake("llama.cpp", 512, 0, {40000, 40000, 40001});  // ratio 1/25
    EXPECT_EQ(plausibility_warnings({ok_lctx, fast_peer}).size(), 1u);

    const auto same = plausibility_warnings({fake("lctx", 0, 128, {5000, 5000, 5000, 5000})});
    ASSERT_EQ(same.size(), 1u);
    EXPECT_NE(same[0].find("exactly the same"), std::string::npos) << same[0];
    EXPECT_TRUE(plausibility_warnings({fake("lctx", 0, 128, {5000, 5000})}).empty());  // two runs: too few

    const auto outlier = plausibility_warnings({fake("lctx", 0, 128, {1000, 1010, 3500, 990})});
    ASSERT_EQ(outlier.size(), 1u);
    EXPECT_NE(outlier[0].find("3.5x the median"), std::string::npos) << outlier[0];
}

TEST(BenchCsv, HeaderThenOneQuotedLinePerRow) {
    nlohmann::ordered_json a = {{"model", "a \"b\""}, {"n", 1}, {"samples", {1, 2}}};
    nlohmann::ordered_json b = {{"model", "c"}, {"n", 2}, {"samples", {3}}};
    EXPECT_EQ(csv({a, b}), "model,n,samples\n\"a \"\"b\"\"\",\"1\",\"1 2\"\n\"c\",\"2\",\"3\"\n");
    EXPECT_EQ(csv({}), "");
}

TEST(BenchRun, DepthAndPromptThenGeneration) {
    std::unique_ptr<Model> m = Model::load(kStories);
    Settings s;
    s.n_prompt = 8;
    s.n_gen = 4;
    s.n_depth = 16;
    EXPECT_EQ(s.n_ctx(), 28u);
    LctxRunner run(*m, s);
    run.set_threads(1);
    EXPECT_GT(run.run_pg(8, 4, 16), 0u);
    EXPECT_THROW(run.run_pg(8, 4, 17), Error);  // one token more than the context
}

TEST(BenchRun, DepthIsDecodedOnceAndKept) {
    std::unique_ptr<Model> m = Model::load(kStories);
    Settings s;
    s.n_prompt = 8;
    s.n_gen = 4;
    s.n_depth = 16;
    LctxRunner run(*m, s);
    run.set_threads(1);
    auto evaluated = [&] { return run.tokens_decoded(); };
    run.run_pg(8, 4, 16);
    const int32_t first = evaluated();
    EXPECT_EQ(first, 16 + 8 + 4);
    EXPECT_EQ(run.context().kv().seq_pos_max(0), 27);
    run.run_pg(8, 4, 16);  // the depth is kept: only the test's own tokens are decoded
    EXPECT_EQ(evaluated() - first, 8 + 4);
    EXPECT_EQ(run.context().kv().seq_pos_max(0), 27);
    EXPECT_EQ(run.context().kv().n_tokens(), 28);
    run.run_pg(8, 0, 8);  // another depth: decoded from an empty cache
    EXPECT_EQ(evaluated() - first, 8 + 4 + 8 + 8);
    EXPECT_EQ(run.context().kv().seq_pos_max(0), 15);
    run.run_pg(4, 0, 0);  // no depth: an empty cache
    EXPECT_EQ(run.context().kv().seq_pos_max(0), 3);
    Result r;
    r.n_prompt = 8;
    r.n_gen = 4;
    r.n_depth = 16;
    EXPECT_EQ(r.test_name(), "pp8+tg4 @ d16");
}

std::string lctx_out(const std::string &args) {
    std::string out;
    FILE *p = popen(
        (std::string(LCTX_BIN_DIR) + "/lctx bench -m " + kStories + " " + args + " 2>/dev/null").c_str(),
        "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << args;
    return out;
}

TEST(BenchCli, ListsFormatsAndTheBatchThatRan) {
    const std::string jsonl = lctx_out("-p 8,16 -n 4 -t 1 -r 1 --bw-mib 0 -b 12,2048 -ub 4 -o jsonl");
    std::vector<nlohmann::json> rows;
    std::stringstream ss(jsonl);
    for (std::string line; std::getline(ss, line);) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(rows.size(), 6u) << jsonl;  // (pp8, pp16, tg4) x (-b 12, -b 2048)
    EXPECT_EQ(rows[0]["n_prompt"], 8);
    EXPECT_EQ(rows[1]["n_prompt"], 16);
    EXPECT_EQ(rows[2]["n_gen"], 4);
    EXPECT_EQ(rows[0]["n_batch"], 8);   // -b 12 capped by the context of pp8
    EXPECT_EQ(rows[1]["n_batch"], 12);  // as asked
    EXPECT_EQ(rows[4]["n_batch"], 16);  // -b 2048 capped by the context of pp16
    EXPECT_EQ(rows[1]["n_ubatch"], 4);
    const std::string csv_out = lctx_out("-p 8 -n 4 -t 1 -r 1 --bw-mib 0 -o csv");
    EXPECT_EQ(std::count(csv_out.begin(), csv_out.end(), '\n'), 3) << csv_out;
    EXPECT_EQ(csv_out.rfind("build_commit,", 0), 0u) << csv_out;
    const nlohmann::json pg =
        nlohmann::json::parse(lctx_out("-p 0 -n 0 -pg 8,4 -d 0,8 -t 1 -r 1 --bw-mib 0 -o json"));
    ASSERT_EQ(pg.size(), 2u);
    EXPECT_EQ(pg[1]["n_depth"], 8);
    EXPECT_EQ(pg[1]["n_prompt"], 8);
    EXPECT_EQ(pg[1]["n_gen"], 4);
    const std::string md = lctx_out("-p 8 -n 0 -t 1,2 -r 1 --bw-mib 0");
    EXPECT_NE(md.find("| n_batch | n_ubatch |"), std::string::npos) << md;
}

}  // namespace
}  // namespace lctx::bench::bench_test

namespace lctx::bench::bench_test {
namespace {

// `lctx bench --peer` without a folder prefers the native build of install-peer.sh --native over the npm
// library, and says which one it runs against.
TEST(BenchPeerChoice, NativeBuildFirstThenNpmThenNone) {
    namespace fs = std::filesystem;
    const fs::path cache = fs::temp_directory_path() / ("lctx_peer_cache_" + std::to_string(getpid()));
    const char *old = std::getenv("XDG_CACHE_HOME");
    const std::string saved = old ? old : "";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    EXPECT_EQ(default_peer_dir(), "");
    const fs::path npm =
        cache / "lctx" / "peer" / "node_modules" / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64";
    fs::create_directories(npm);
    std::ofstream(npm / "libllama.v0.5.0.so") << "";
    EXPECT_EQ(default_peer_dir(), npm.string());
    EXPECT_NE(describe_peer(npm.string()).find("npm"), std::string::npos);
    const fs::path native = cache / "lctx" / "peer-native" / "build" / "bin";
    fs::create_directories(native);
    std::ofstream(native / "libllama.so") << "";
    std::ofstream(cache / "lctx" / "peer-native" / "lctx-peer-native") << "native build of llama.cpp abc\n";
    EXPECT_EQ(default_peer_dir(), native.string());
    EXPECT_EQ(describe_peer(native.string()), "native build of llama.cpp abc in " + native.string());
    if (old)
        setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else
        unsetenv("XDG_CACHE_HOME");
    fs::remove_all(cache);
}

}  // namespace
}  // namespace lctx::bench::bench_test

namespace lctx::bench::bench_test {
namespace {

TEST(BenchMarkdown, RatioPerBatchSettingNamedOnlyWhenThereAreSeveral) {
    Result a = fake("lctx", 64, 0, {1000, 1000});
    Result b = fake("llama.cpp", 64, 0, {2000, 2000});
    EXPECT_NE(markdown({a, b}).find("pp64 @ 2 threads: lctx/llama.cpp = 2.00\n"), std::string::npos);
    Result c = a, d = b;
    c.n_batch = d.n_batch = 32;
    d.samples_ns = {4000, 4000};
    const std::string md = markdown({a, b, c, d});
    EXPECT_NE(md.find("pp64 @ 2 threads (n_batch 512, n_ubatch 512): lctx/llama.cpp = 2.00"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("pp64 @ 2 threads (n_batch 32, n_ubatch 512): lctx/llama.cpp = 4.00"),
              std::string::npos)
        << md;
}

}  // namespace
}  // namespace lctx::bench::bench_test

namespace lctx::bench::bench_test {
namespace {

// -fa, -ctk and -ctv take lists and every combination runs; the JSON says what ran, and a type that is not a
// KV cache type, or a block-quantized V without -fa 1 (as llama.cpp), is refused before anything runs.
TEST(BenchCli, AttentionSettingsRunEveryCombination) {
    const synth::Shape *shape = synth::find_shape("tiny");  // head size 64: a q8_0 cache fits
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F16", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_bench_fa_" + std::to_string(getpid()) + ".gguf"))
            .string();
    synth::write_model(*shape, type, path, opts);
    auto run = [&](const std::string &args, int *status) {
        std::string out;
        FILE *p = popen((std::string(LCTX_BIN_DIR) + "/lctx bench -m " + path + " -p 8 -n 0 -t 1 -r 1 " +
                         "--bw-mib 0 --no-peak " + args + " 2>&1")
                            .c_str(),
                        "r");
        if (!p) return out;
        char buf[4096];
        for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
        *status = pclose(p);
        return out;
    };
    int status = -1;
    const std::string jsonl = run("-fa 0,1 -ctk f16,q4_0 -ctv f16,bf16 -o jsonl", &status);
    EXPECT_EQ(status, 0) << jsonl;
    std::vector<nlohmann::json> rows;
    std::stringstream ss(jsonl);
    for (std::string line; std::getline(ss, line);)
        rows.push_back(nlohmann::json::parse(line, nullptr, false));
    ASSERT_EQ(rows.size(), 8u) << jsonl;
    for (size_t i = 0; i < rows.size(); ++i) {  // fa outermost, then K, then V, as the lists are given
        EXPECT_EQ(rows[i]["flash_attn"], i >= 4) << i;
        EXPECT_EQ(rows[i]["type_k"], (i / 2) % 2 ? "q4_0" : "f16") << i;
        EXPECT_EQ(rows[i]["type_v"], i % 2 ? "bf16" : "f16") << i;
        EXPECT_GT(rows[i].value("avg_ts", 0.0), 0.0) << i;
    }
    const std::string md = run("--flash-attn 1 --cache-type-k q8_0 --cache-type-v f32", &status);
    EXPECT_EQ(status, 0) << md;
    EXPECT_NE(md.find("| type_k | type_v | fa |"), std::string::npos) << md;
    EXPECT_NE(md.find("| q8_0 | f32 | 1 | pp8 |"), std::string::npos) << md;
    EXPECT_EQ(run("", &status).find("| fa |"), std::string::npos);  // the defaults: no attention columns
    // every block type as V with -fa 1 (and as K)
    const std::string blocks = run("-fa 1 -ctk q5_1,iq4_nl -ctv q4_0,q4_1,q5_0,q8_0", &status);
    EXPECT_EQ(status, 0) << blocks;
    EXPECT_NE(blocks.find("| q5_1 | q4_1 | 1 | pp8 |"), std::string::npos) << blocks;
    EXPECT_NE(blocks.find("| iq4_nl | q5_0 | 1 | pp8 |"), std::string::npos) << blocks;
    const std::string bad = run("-ctk q4_K", &status);
    EXPECT_NE(status, 0);
    EXPECT_NE(bad.find("q4_K is not a KV cache type"), std::string::npos) << bad;
    const std::string no_fa = run("-ctv q4_0", &status);
    EXPECT_NE(status, 0);
    EXPECT_NE(no_fa.find("-fa 0 with -ctv q4_0: V cache quantization requires flash_attn"), std::string::npos)
        << no_fa;
    run("-fa 2", &status);
    EXPECT_NE(status, 0);
    std::filesystem::remove(path);
}

TEST(BenchMarkdown, RatioLinesPairTheSameAttentionSetting) {
    Result a = fake("lctx", 64, 0, {1000, 1000});
    Result b = fake("llama.cpp", 64, 0, {2000, 2000});
    Result c = a, d = b;
    c.flash_attn = d.flash_attn = true;
    c.type_k = c.type_v = d.type_k = d.type_v = "q8_0";
    d.samples_ns = {3000, 3000};
    const std::string md = markdown({a, b, c, d});
    EXPECT_NE(md.find("pp64 @ 2 threads (fa 0, type_k f16, type_v f16): lctx/llama.cpp = 2.00\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("pp64 @ 2 threads (fa 1, type_k q8_0, type_v q8_0): lctx/llama.cpp = 3.00\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| 512 | 512 | q8_0 | q8_0 | 1 | pp64 |"), std::string::npos) << md;
    EXPECT_EQ(markdown({a, b}).find("type_k"), std::string::npos);
}

// As b4748: llama.cpp's cache types (common's kv_cache_types), a block-quantized V only with flash attention.
TEST(BenchAttention, RefusesWhatIsNoCacheTypeAndAQuantizedVWithoutFlashAttention) {
    EXPECT_EQ(check_attention_setting(false, GgmlType::F16, GgmlType::F16), "");
    EXPECT_EQ(check_attention_setting(true, GgmlType::Q8_0, GgmlType::Q8_0), "");
    EXPECT_EQ(check_attention_setting(false, GgmlType::Q4_0, GgmlType::BF16),
              "");  // a quantized K alone is fine
    for (GgmlType t :
         {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL}) {
        EXPECT_EQ(check_attention_setting(true, t, t), "") << type_name(t);
        EXPECT_NE(
            check_attention_setting(false, GgmlType::F16, t).find("V cache quantization requires flash_attn"),
            std::string::npos)
            << type_name(t);
    }
    EXPECT_NE(check_attention_setting(true, GgmlType::Q4_K, GgmlType::F16), "");
    EXPECT_NE(check_attention_setting(true, GgmlType::F16, GgmlType::IQ4_XS), "");
}

// The peer runs llama.cpp with flash attention and a q8_0 cache when asked (skipped without the peer).
TEST(BenchPeer, LlamaCppRunsFlashAttentionWithAQ8Cache) {
    const std::string lib = default_peer_dir();
    const std::string exe = sibling("lctx-peer-bench");
    if (lib.empty() || exe.empty()) GTEST_SKIP() << "peer not installed or not built";
    const synth::Shape *shape = synth::find_shape("tiny");
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F16", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_peer_fa_" + std::to_string(getpid()) + ".gguf"))
            .string();
    synth::write_model(*shape, type, path, opts);
    {
        Settings s;
        s.n_prompt = 8;
        s.n_gen = 0;
        s.flash_attn = true;
        s.type_k = s.type_v = GgmlType::Q8_0;
        PeerProcess peer(exe, lib, path, s);
        EXPECT_GT(peer.run_pp(8, 1), 0u);
    }
    {
        Settings s;  // llama.cpp refuses a quantized V without flash attention: the peer says so
        s.n_prompt = 8;
        s.n_gen = 0;
        s.type_v = GgmlType::Q8_0;
        EXPECT_THROW(PeerProcess(exe, lib, path, s), Error);
    }
    std::filesystem::remove(path);
}

// ---- batched mode (llama-batched-bench) ----

// B sequences of PP prompt tokens, then TG steps of one token each: every sequence ends at PP + TG - 1, and
// the speeds are llama-batched-bench's (S_PP = B x PP / T_PP, S_TG = B x TG / T_TG, S = N_KV / T).
TEST(BenchBatched, SequencesEachGetTheirPromptAndTokens) {
    std::unique_ptr<Model> m = Model::load(kStories);
    for (bool shared : {false, true}) {
        SCOPED_TRACE(shared ? "shared prompt" : "a prompt each");
        BatchedSettings s;
        s.n_seq_max = 4;
        s.n_batch = 8;  // the 4 x 8 prompt tokens in 4 batches
        s.n_ctx = static_cast<uint32_t>(batched_n_kv(8, 5, 4, shared));
        EXPECT_EQ(s.n_ctx, shared ? 8u + 4 * 5 : 4u * (8 + 5));
        BatchedRunner run(*m, s);
        run.set_threads(1);
        run.warm_up();
        const BatchedRow r = run.run(8, 5, 4, shared);
        EXPECT_EQ(r.n_kv, s.n_ctx);
        EXPECT_GT(r.t_pp, 0.0);
        EXPECT_GT(r.t_tg, 0.0);
        EXPECT_GT(r.cpu_tg, 0.0);  // one thread: at most the wall time (with the clocks' granularity)
        EXPECT_LE(r.cpu_tg, r.t_tg + 0.01);
        for (int j = 0; j < 4; ++j) EXPECT_EQ(run.context().kv().seq_pos_max(j), 8 + 5 - 1) << j;
        EXPECT_EQ(run.context().kv().n_tokens(), 4 * (8 + 5));  // shared cells count once per sequence
        EXPECT_DOUBLE_EQ(r.s_pp(shared), (shared ? 8 : 32) / r.t_pp);
        EXPECT_DOUBLE_EQ(r.s_tg(), 20 / r.t_tg);
        EXPECT_DOUBLE_EQ(r.s_total(), static_cast<double>(r.n_kv) / (r.t_pp + r.t_tg));
        // A second run starts from an empty cache.
        run.run(8, 5, 4, shared);
        EXPECT_EQ(run.context().kv().n_tokens(), 4 * (8 + 5));
    }
}

TEST(BenchBatched, RunsBeyondTheContextAreRefused) {
    std::unique_ptr<Model> m = Model::load(kStories);
    BatchedSettings s;
    s.n_seq_max = 2;
    s.n_ctx = 20;
    BatchedRunner run(*m, s);
    run.set_threads(1);
    EXPECT_THROW(run.run(8, 4, 2, false), Error);  // 24 cells
    EXPECT_THROW(run.run(4, 2, 3, false), Error);  // 3 sequences in a context of 2
    const BatchedRow r = run.run(8, 4, 2, true);   // 16 cells
    EXPECT_EQ(r.n_kv, 16);
}

TEST(BenchBatched, TableHasLlamaBatchedBenchColumnsAndPerSequenceSpeeds) {
    const std::string head = batched_table_head();
    size_t at = 0;
    for (const char *col : {"PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s",
                            "S t/s", "S_PP/seq", "S_TG/seq"}) {
        const size_t f = head.find(std::string(" ") + col + " |", at);
        ASSERT_NE(f, std::string::npos) << col << " in " << head;
        at = f + 1;
    }
    BatchedRow r;
    r.pp = 128;
    r.tg = 64;
    r.pl = 8;
    r.n_kv = batched_n_kv(128, 64, 8, false);
    r.t_pp = 2.0;
    r.t_tg = 4.0;
    const std::string row = batched_table_row(r, false);
    // S_PP 8 x 128 / 2, S_TG 8 x 64 / 4, S 1536 / 6; per sequence 128 / 2 and 64 / 4
    for (const char *cell : {"|   128 |", "|     64 |", "|    8 |", "|   1536 |", "|   512.00 |",
                             "|   128.00 |", "|   256.00 |", "|    64.00 |", "|    16.00 |"})
        EXPECT_NE(row.find(cell), std::string::npos) << cell << " in " << row;
    EXPECT_NE(batched_table_row(r, true).find("|    64.00 |    16.00 |\n"), std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(batched_json(r, BatchedSettings{}, 2, false, 2048).dump());
    EXPECT_EQ(j.value("pl", 0), 8);
    EXPECT_EQ(j.value("n_kv", 0), 1536);
    EXPECT_DOUBLE_EQ(j.value("speed_tg", 0.0), 128.0);
    EXPECT_DOUBLE_EQ(j.value("speed_tg_per_seq", 0.0), 16.0);
    EXPECT_EQ(j.value("n_threads", 0), 2);
    EXPECT_EQ(j.value("engine", ""), "lctx");

    // With --peer: an engine column, and a ratio line per row (lctx / llama.cpp of S_PP, S_TG and S).
    EXPECT_NE(batched_table_head(true).find("| S_TG/seq | engine    |\n|"), std::string::npos);
    EXPECT_EQ(batched_table_head(false).find("engine"), std::string::npos);
    EXPECT_NE(batched_table_row(r, false, "llama.cpp").find("|    16.00 | llama.cpp |\n"), std::string::npos);
    BatchedRow slower = r;
    slower.t_pp = 4.0;  // S_PP half of r's
    slower.t_tg = 5.0;  // S_TG 0.8 of r's
    EXPECT_EQ(batched_ratio_line(r, slower, false),
              "PP 128, TG 64, B 8: lctx / llama.cpp S_PP 2.00x, S_TG 1.25x, S 1.50x\n");
    // Beyond 20x either way a row is flagged, each speed on its own.
    EXPECT_EQ(batched_ratio_warning(r, slower, false, 2), "");
    BatchedRow stalled = r;
    stalled.t_tg = 4.0 * 25;  // S_TG 1/25 of r's, S_PP the same
    EXPECT_EQ(batched_ratio_warning(r, stalled, false, 2),
              "PP 128, TG 64, B 8 @ 2 threads: lctx / llama.cpp S_TG = 25.00 is implausible (a broken or "
              "mismatched peer, or a busy machine?)");
    stalled.t_pp = 2.0 / 21;  // S_PP 21x r's
    EXPECT_NE(batched_ratio_warning(r, stalled, false, 2).find("S_PP = 0.05 is implausible"),
              std::string::npos);
    EXPECT_NE(batched_ratio_warning(r, stalled, false, 2).find("\nPP 128"), std::string::npos);
}

// The peer's kernel level, named from the features llama.cpp's CPU backend reports.
TEST(BenchBatched, PeerIsaLevelFromItsCpuFeatures) {
    EXPECT_EQ(peer_isa_level("SSE3 SSSE3 AVX AVX2 F16C FMA BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 "
                             "AMX_INT8 OPENMP REPACK"),
              "amx");
    EXPECT_EQ(peer_isa_level("AVX AVX2 AVX512 AVX512_VNNI AVX512_BF16 LLAMAFILE"), "avx512");
    EXPECT_EQ(peer_isa_level("AVX AVX2 F16C FMA"), "avx2");
    EXPECT_EQ(peer_isa_level("AVX512_VNNI"), "");  // a word of its own, not a prefix
    EXPECT_EQ(peer_isa_level(""), "");
}

// llama.cpp's batched mode (lctx-peer-bench --batched) against lctx's on the same model: every run decodes
// the same tokens (B prompts of PP, or one shared, then B x TG) and leaves every sequence holding positions
// 0 to PP + TG - 1, as lctx's run does; a run beyond a sequence's cells is refused. Skipped without the peer.
TEST(BenchBatchedPeer, LlamaCppRunsTheSameBatchedRowsAsLctx) {
    const std::string lib = default_peer_dir();
    const std::string exe = sibling("lctx-peer-bench");
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    std::unique_ptr<Model> m = Model::load(kStories);
    for (bool shared : {false, true}) {
        SCOPED_TRACE(shared ? "shared prompt" : "a prompt each");
        BatchedSettings s;
        s.n_seq_max = 4;
        s.n_batch = 8;  // the 4 x 8 prompt tokens in 4 calls
        s.n_ctx = static_cast<uint32_t>(batched_n_kv(8, 5, 4, shared));
        BatchedRunner run(*m, s);
        run.set_threads(1);
        run.warm_up();
        BatchedSettings ps = s;
        ps.n_ctx = 4 * (8 + 5);
        PeerProcess peer(exe, lib, kStories, ps);
        EXPECT_NE(peer_isa_level(peer.cpu_features()), "") << peer.cpu_features();
        peer.warm_up_batched(1);
        for (int rep = 0; rep < 2; ++rep) {  // the second run starts from an empty cache too
            const BatchedRow mine = run.run(8, 5, 4, shared);
            const PeerBatchedRun theirs = peer.run_batched(8, 5, 4, shared, 1);
            EXPECT_EQ(theirs.row.n_kv, mine.n_kv);
            EXPECT_EQ(theirs.pp_tokens, shared ? 8 : 32);
            EXPECT_NEAR(theirs.pp_tokens, mine.s_pp(shared) * mine.t_pp, 1e-6);  // lctx's S_PP counts as many
            EXPECT_EQ(theirs.tg_tokens, 4 * 5);
            EXPECT_NEAR(theirs.tg_tokens, mine.s_tg() * mine.t_tg, 1e-6);
            ASSERT_EQ(theirs.pos_min.size(), 4u);
            ASSERT_EQ(theirs.pos_max.size(), 4u);
            for (int j = 0; j < 4; ++j) {
                EXPECT_EQ(theirs.pos_min[j], 0) << j;  // the prompt (or its copy) is there
                EXPECT_EQ(theirs.pos_min[j], run.context().kv().seq_pos_min(j)) << j;
                EXPECT_EQ(theirs.pos_max[j], 8 + 5 - 1) << j;
                EXPECT_EQ(theirs.pos_max[j], run.context().kv().seq_pos_max(j)) << j;
            }
            EXPECT_GT(theirs.row.t_pp, 0.0);
            EXPECT_GT(theirs.row.t_tg, 0.0);
            EXPECT_GT(theirs.row.cpu_tg, 0.0);
        }
        EXPECT_THROW(peer.run_batched(8, 300, 4, shared, 1), Error);  // beyond a sequence's 256 cells
    }
}

// `lctx bench ARGS` on stories260K: exit status, stdout and stderr.
struct CliRun {
    int status;
    std::string out, err;
};
CliRun bench_cli(const std::string &lctx, const std::string &args) {
    const std::string base =
        (std::filesystem::temp_directory_path() / ("lctx_bench_cli_" + std::to_string(getpid()))).string();
    const std::string cmd =
        lctx + " bench -m " + kStories + " " + args + " > " + base + ".out 2> " + base + ".err";
    const int st = std::system(cmd.c_str());
    CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, "", ""};
    for (auto [path, dst] : {std::pair{base + ".out", &r.out}, {base + ".err", &r.err}}) {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        *dst = ss.str();
        std::filesystem::remove(path);
    }
    return r;
}

TEST(BenchBatchedCli, TableAndJsonLines) {
    const std::string lctx = sibling("lctx");
    if (lctx.empty()) GTEST_SKIP() << "the lctx binary is not built next to this test";
    const CliRun md = bench_cli(lctx, "-npp 8,16 -ntg 4 -npl 1,3 -t 1");
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find("is_pp_shared = 0"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("|    PP |     TG |    B |   N_KV |"), std::string::npos) << md.out;
    for (const char *row : {"|     8 |      4 |    1 |     12 |", "|    16 |      4 |    1 |     20 |",
                            "|     8 |      4 |    3 |     36 |", "|    16 |      4 |    3 |     60 |"})
        EXPECT_NE(md.out.find(row), std::string::npos) << row << " in " << md.out;

    const CliRun jl = bench_cli(lctx, "-npp 8 -ntg 4 -npl 1,2,4 -pps -t 1 -o jsonl");
    ASSERT_EQ(jl.status, 0) << jl.err;
    std::stringstream lines(jl.out);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(rows.size(), 3u) << jl.out;
    for (size_t i = 0; i < rows.size(); ++i) {
        const int pl = 1 << i;
        EXPECT_EQ(rows[i].value("pl", 0), pl);
        EXPECT_EQ(rows[i].value("is_pp_shared", -1), 1);
        EXPECT_EQ(rows[i].value("n_kv", 0), 8 + pl * 4);  // one shared prompt
        EXPECT_GT(rows[i].value("speed_tg", 0.0), 0.0);
        EXPECT_GT(rows[i].value("cpu_tg", 0.0), 0.0);
        EXPECT_NEAR(rows[i].value("speed_tg_per_seq", 0.0), rows[i].value("speed_tg", 0.0) / pl, 1e-6);
    }
}

TEST(BenchBatchedCli, RefusesWhatDoesNotApply) {
    const std::string lctx = sibling("lctx");
    if (lctx.empty()) GTEST_SKIP() << "the lctx binary is not built next to this test";
    for (auto [args, why] : {std::pair{"-npl 0", "-npl wants positive numbers"},
                             {"-npp 8,", "-npp wants positive numbers"},
                             {"-npl 1,300", "-npl: 300 sequences, at most 256"},
                             {"-npp 8 -p 16", "-p does not apply to batched mode"},
                             {"-npl 2 -d 64", "-d does not apply to batched mode"},
                             {"-npl 2 --peer /nowhere", "no libllama in '/nowhere'"},
                             {"-npl 2 -o csv", "batched mode writes md, json or jsonl"},
                             {"-npl 2 -ctv q8_0", "flash"}}) {
        const CliRun r = bench_cli(lctx, std::string(args) + " -t 1");
        EXPECT_EQ(r.status, 1) << args;
        EXPECT_NE(r.err.find(why), std::string::npos) << args << ": " << r.err;
        EXPECT_EQ(r.out, "") << args;
    }
    // A run larger than -c is skipped with a note; the others run.
    const CliRun r = bench_cli(lctx, "-npp 8,32 -ntg 4 -npl 2 -c 40 -t 1 -o jsonl");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("skipped PP 32, TG 4, B 2: needs 72 cells, -c is 40"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// `lctx bench -npp .. -ntg .. -npl .. --peer`: both engines' rows, row by row the same (PP, TG, B, N_KV), the
// peer's build and kernel level named, a ratio line per row. Skipped without the peer.
TEST(BenchBatchedCli, PeerRowsBesideLctxRows) {
    const std::string lctx = sibling("lctx");
    const std::string lib = default_peer_dir();
    if (lctx.empty() || lib.empty() || sibling("lctx-peer-bench").empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    const CliRun jl = bench_cli(lctx, "-npp 8,16 -ntg 4 -npl 1,3 -t 1 -r 2 --peer " + lib + " -o jsonl");
    ASSERT_EQ(jl.status, 0) << jl.err;
    std::stringstream lines(jl.out);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(rows.size(), 8u) << jl.out;
    for (size_t i = 0; i < rows.size(); i += 2) {
        const nlohmann::json &a = rows[i], &b = rows[i + 1];
        EXPECT_EQ(a.value("engine", ""), "lctx");
        EXPECT_EQ(b.value("engine", ""), "llama.cpp");
        for (const char *f : {"pp", "tg", "pl", "n_kv", "n_threads", "n_batch", "is_pp_shared"})
            EXPECT_EQ(a.at(f), b.at(f)) << f << ": " << a.dump() << " / " << b.dump();
        EXPECT_EQ(a.value("n_kv", 0), a.value("pl", 0) * (a.value("pp", 0) + 4));
        EXPECT_GT(b.value("speed_tg", 0.0), 0.0);
        EXPECT_GT(b.value("cpu_tg", 0.0), 0.0);
        EXPECT_NE(b.value("isa", ""), "");
        EXPECT_NE(b.value("peer", "").find(lib), std::string::npos) << b.dump();
        // llama.cpp's cache: a stream of the largest PP + TG cells for each of the B sequences
        EXPECT_EQ(b.value("n_kv_max", 0), b.value("pl", 0) * (16 + 4)) << b.dump();
    }
    EXPECT_NE(jl.err.find("lctx bench: llama.cpp: "), std::string::npos) << jl.err;

    const CliRun md = bench_cli(lctx, "-npp 8 -ntg 4 -npl 1,2 -pps -t 1 --peer " + lib);
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find("llama.cpp: " + describe_peer(lib)), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("; isa = "), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| S_TG/seq | engine    |"), std::string::npos) << md.out;
    for (const char *row : {"|     8 |      4 |    1 |     12 |", "|     8 |      4 |    2 |     16 |"}) {
        const size_t at = md.out.find(row);
        ASSERT_NE(at, std::string::npos) << row << " in " << md.out;
        const size_t eol = md.out.find('\n', at);
        EXPECT_NE(md.out.substr(at, eol - at).find("| lctx      |"), std::string::npos) << md.out;
        const size_t next = md.out.find('\n', eol + 1);
        EXPECT_EQ(md.out.substr(eol + 1, next - eol - 1).rfind(row, 0), 0u) << md.out;  // then llama.cpp's
        EXPECT_NE(md.out.substr(eol + 1, next - eol - 1).find("| llama.cpp |"), std::string::npos) << md.out;
    }
    for (const char *ratio :
         {"PP 8, TG 4, B 1: lctx / llama.cpp S_PP ", "PP 8, TG 4, B 2: lctx / llama.cpp S_PP "})
        EXPECT_NE(md.out.find(ratio), std::string::npos) << ratio << " in " << md.out;
}

}  // namespace
}  // namespace lctx::bench::bench_test
