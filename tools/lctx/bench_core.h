// The measurements behind `lctx bench`: prompt processing and generation timings on lctx, the machine's
// memory read bandwidth, statistics, and llama-bench style output (markdown table and JSON objects).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "context/context.h"
#include "model/model.h"

namespace lctx::bench {

struct Settings {
    int n_prompt = 512;
    int n_gen = 128;
    int reps = 5;
    uint32_t n_batch = 2048;
    uint32_t n_ubatch = 512;
    int n_depth = 0;       // tokens already in the cache when a test starts (llama-bench -d)
    uint64_t seed = 1234;  // of the random token ids
    // The attention settings of llama-bench's -fa, -ctk and -ctv.
    bool flash_attn = false;
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    // > 0: embedding mode (an encoder such as bert): n_seq sequences of n_prompt tokens in one llama_encode,
    // which takes the whole batch as one micro-batch (n_batch = n_ubatch = n_ctx = n_seq * n_prompt).
    int n_seq = 0;
    // T5 mode (an encoder-decoder): n_prompt tokens in one llama_encode, then n_gen single-token decoder
    // steps from the decoder start token; the encode takes its batch as one micro-batch, as llama.cpp's must.
    bool t5 = false;
    // n_ctx = n_depth + n_prompt + n_gen; n_batch is clamped to n_ctx and n_ubatch to n_batch, as llama.cpp
    // does.
    uint32_t n_ctx() const {
        if (n_seq > 0) return static_cast<uint32_t>(std::max(1, n_seq * n_prompt));
        return static_cast<uint32_t>(std::max(1, n_depth + n_prompt + n_gen));
    }
    uint32_t eff_batch() const { return n_seq > 0 || t5 ? n_ctx() : std::min(n_batch, n_ctx()); }
    uint32_t eff_ubatch() const { return n_seq > 0 || t5 ? n_ctx() : std::min(n_ubatch, eff_batch()); }
};

// What the output needs to know about a model file.
struct ModelFacts {
    std::string filename;
    std::string type;   // "llama 1.1B q4_0"
    uint64_t size = 0;  // bytes of all tensors
    uint64_t n_params = 0;
    uint64_t bytes_per_token = 0;  // weight bytes one generated token reads
    int32_t n_vocab = 0;
};
ModelFacts model_facts(const Model &model);

// Weight bytes read per generated token from a GGUF's tensor list: every tensor once, except token_embd, of
// which one row is read (unless it doubles as the output matrix, when there is no output.weight).
uint64_t bytes_per_token(const gguf::File &file);

// Runs the timed tests on one lctx context (n_ctx, n_batch, n_ubatch, flash_attn, K/V types from the
// settings).
class LctxRunner {
  public:
    LctxRunner(const Model &model, const Settings &s);
    void set_threads(int n_threads);
    // One prompt of n tokens on an empty cache, in batches of n_batch; wall nanoseconds.
    uint64_t run_pp(int n) { return run_pg(n, 0, 0); }
    // n single-token decodes from an empty cache; wall nanoseconds.
    uint64_t run_tg(int n) { return run_pg(0, n, 0); }
    // After `depth` untimed tokens in the cache: a prompt of n_pp tokens, then n_tg single-token decodes
    // (llama-bench's pp, tg, -pg and -d tests); wall nanoseconds of the timed part. The depth tokens are
    // decoded once and kept: a later call with the same depth only removes the tokens after them (the speed
    // of a test does not depend on which tokens fill the depth, and a 4096-token prefill per repetition
    // would take most of a long-context bench).
    uint64_t run_pg(int n_pp, int n_tg, int depth);
    // Embedding mode: n_seq sequences of n_prompt tokens (the settings') in one encode; wall nanoseconds.
    uint64_t run_embd();
    // T5 mode: n_prompt random tokens in one encode, then n_gen decoder steps of one token each (the decoder
    // start token, then random ones) on an empty decoder cache; wall nanoseconds of the two parts.
    std::pair<uint64_t, uint64_t> run_t5();
    const Context &context() const { return *ctx_; }
    int64_t tokens_decoded() const { return tokens_decoded_; }  // timed or not, since construction

  private:
    void fill_prompt(int n, int pos0);  // random tokens_ at positions pos0.. in batches
    void decode_prompt(int n);
    void decode_or_throw(const Batch &b);
    const Model &model_;
    Settings s_;
    std::unique_ptr<Context> ctx_;
    uint64_t rng_;
    std::vector<int32_t> tokens_, pos_;
    int64_t tokens_decoded_ = 0;
    int kept_depth_ =
        0;  // the cache holds exactly positions [0, kept_depth_) of sequence 0 plus the last test's
};

// Streaming read bandwidth in bytes/s with n_threads readers over a `bytes` buffer (much larger than the L3);
// the best of `passes` passes. The buffer is allocated and touched on the first call with that size.
double read_bandwidth(int n_threads, size_t bytes = size_t{1} << 30, int passes = 3);

struct Stats {
    double avg_ns = 0, stddev_ns = 0, avg_ts = 0, stddev_ts = 0;
};
// Sample standard deviation (n - 1), zero for one sample; t/s per sample = n_tokens / seconds.
Stats compute_stats(const std::vector<uint64_t> &samples_ns, int n_tokens);

struct Result {
    std::string engine;  // "lctx" or "llama.cpp"
    ModelFacts model;
    int n_threads = 1;
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    int n_seq = 0;  // embedding mode: sequences of n_prompt tokens per encode
    // T5 mode: 1 the encoder (n_prompt tokens per encode), 2 the decoder (n_gen steps after an encode of
    // n_prompt tokens)
    int t5_part = 0;
    uint32_t n_batch = 0, n_ubatch = 0;  // as used: n_batch capped by the context, n_ubatch by n_batch
    std::string type_k = "f16", type_v = "f16";  // K/V cache types, as llama-bench names them
    bool flash_attn = false;
    std::string test_time;  // ISO 8601, UTC
    std::vector<uint64_t> samples_ns;
    double mem_bw = 0;  // bytes/s for n_threads, the mean of one probe per repetition (0: none)
    // Prompt tests: operations per prompt token (bench_roofline.h) and the machine's peak operations/s of
    // the kind the weights use, for n_threads (0: not probed).
    double ops_per_token = 0, peak_ops = 0;
    std::string peak_kind;
    // "pp512" / "tg128" / "pp512+tg128", " @ d1024" after a depth; "embd8x128" (8 sequences of 128 tokens);
    // T5's "enc128" and "dec32 @ e128" (32 decoder steps after an encode of 128 tokens)
    std::string test_name() const;
    int n_tokens() const {
        if (t5_part) return t5_part == 1 ? n_prompt : n_gen;
        return n_seq > 0 ? n_seq * n_prompt : n_prompt + n_gen;
    }
};

struct BuildInfo {
    std::string commit = "unknown";
    int number = 0;
};
BuildInfo lctx_build_info();
std::string cpu_info();  // the first "model name" of /proc/cpuinfo
std::string iso_time_now();

// One llama-bench style JSON object (its field names), plus "engine" and, for generation tests, the
// bandwidth figures: bytes_per_token, gbps, mem_bw_gbps, limit_ts, frac_of_limit.
nlohmann::ordered_json to_json(const Result &r, const BuildInfo &build, const std::string &cpu);

// The markdown table: one row per result, then a ratio line per test when both engines ran it. The type_k,
// type_v and fa columns appear when a result differs from the defaults (f16, f16, 0), as llama-bench's do.
std::string markdown(const std::vector<Result> &results);
// llama-bench's other outputs: csv (a header line, then one line per result), json (a list), jsonl (one
// object per line); the fields of to_json.
std::string csv(const std::vector<nlohmann::ordered_json> &rows);
// llama-bench's -o sql: CREATE TABLE IF NOT EXISTS test (one column per field of any row: TEXT, INTEGER for
// whole numbers and booleans, REAL), then one INSERT INTO test per row, strings quoted as SQL ('' inside),
// arrays as text like csv, a field a row lacks NULL.
std::string sql(const std::vector<nlohmann::ordered_json> &rows);

// Results that do not look like a measurement: an lctx/llama.cpp ratio beyond 20x either way, a standard
// deviation of zero over three or more runs, a run more than twice the median of the others. One line each.
std::vector<std::string> plausibility_warnings(const std::vector<Result> &results);

// Why lctx bench cannot run this attention setting (-fa, -ctk, -ctv), or empty when it can: a type that is
// not a KV cache type, or a block-quantized V without flash attention (which llama.cpp refuses too).
std::string check_attention_setting(bool flash_attn, GgmlType type_k, GgmlType type_v);

}  // namespace lctx::bench
