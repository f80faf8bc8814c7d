// `lctx bench` batched mode, like llama.cpp's llama-batched-bench: for each prompt length PP (-npp),
// generated length TG (-ntg) and number of parallel sequences B (-npl), B prompts of PP tokens (or, with
// -pps, one prompt shared by all B sequences) in batches of n_batch, then TG steps that each decode one token
// of every sequence. Output: the table llama-batched-bench prints (PP, TG, B, N_KV, T_PP s, S_PP t/s, T_TG s,
// S_TG t/s, T s, S t/s) with the per-sequence speeds beside the totals.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/model.h"

namespace lctx::bench {

struct BatchedSettings {
    uint32_t n_ctx = 0;  // 0: the largest N_KV of the runs
    uint32_t n_batch = 2048;
    uint32_t n_ubatch = 512;
    uint32_t n_seq_max = 1;  // the largest B
    bool flash_attn = false;
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    uint64_t seed = 1234;
};

// Cache cells one run needs: with a shared prompt PP + B x TG, else B x (PP + TG).
int64_t batched_n_kv(int pp, int tg, int pl, bool shared_prompt);

struct BatchedRow {
    int pp = 0, tg = 0, pl = 0;
    int64_t n_kv = 0;
    double t_pp = 0, t_tg = 0;  // seconds
    // The process's CPU seconds over the same spans (all its threads): on a machine shared with other work,
    // a 1-thread run's CPU time is its wall time without the time other processes held the core.
    double cpu_pp = 0, cpu_tg = 0;
    // llama-batched-bench's speeds: S_PP = (shared ? PP : B x PP) / T_PP, S_TG = B x TG / T_TG, S = N_KV / T.
    double s_pp(bool shared) const { return t_pp > 0 ? (shared ? pp : double(pl) * pp) / t_pp : 0; }
    double s_tg() const { return t_tg > 0 ? double(pl) * tg / t_tg : 0; }
    double s_total() const { return t_pp + t_tg > 0 ? double(n_kv) / (t_pp + t_tg) : 0; }
};

// One context for a whole table; each run starts from an empty cache. The cache places each sequence's
// cells in a region of its own, as lctx serve does (lctx_kv_cache_place_by_sequence), so that a step's
// tokens attend over their own sequence's cells.
class BatchedRunner {
  public:
    BatchedRunner(const Model &model, const BatchedSettings &s);
    void set_threads(int n_threads);
    // One untimed decode of a few tokens (llama-batched-bench warms up the same way).
    void warm_up();
    // Throws lctx::Error when the run needs more cells than the context has, or a decode fails.
    BatchedRow run(int pp, int tg, int pl, bool shared_prompt);
    const Context &context() const { return *ctx_; }

  private:
    void decode_or_throw(const Batch &b);
    const Model &model_;
    BatchedSettings s_;
    std::unique_ptr<Context> ctx_;
    uint64_t rng_;
};

// The header line and table rows, as llama-batched-bench prints them, plus S_PP and S_TG per sequence; with
// `engine` (lctx bench --peer) a last column names the engine of each row.
std::string batched_header(const BatchedSettings &s, int n_threads, bool shared_prompt, uint32_t n_ctx);
std::string batched_table_head(bool engine_column = false);
std::string batched_table_row(const BatchedRow &r, bool shared_prompt, const char *engine = nullptr);
// One line of the ratios lctx / llama.cpp of a row's S_PP, S_TG and S (printed under a --peer table).
std::string batched_ratio_line(const BatchedRow &mine, const BatchedRow &theirs, bool shared_prompt);
// A warning when a row's S_PP or S_TG ratio lctx / llama.cpp is beyond 20x either way (a broken or mismatched
// peer, or a machine so busy that one engine's run stalled), as the other tests warn; empty otherwise.
std::string batched_ratio_warning(const BatchedRow &mine, const BatchedRow &theirs, bool shared_prompt,
                                  int n_threads);
// One JSON line per row (llama-batched-bench's jsonl fields, plus the per-sequence speeds, the threads, the
// CPU seconds cpu_pp and cpu_tg, and "engine": "lctx"; the caller changes it, and "isa" and "n_kv_max", for a
// llama.cpp row).
nlohmann::ordered_json batched_json(const BatchedRow &r, const BatchedSettings &s, int n_threads,
                                    bool shared_prompt, uint32_t n_ctx);

}  // namespace lctx::bench
