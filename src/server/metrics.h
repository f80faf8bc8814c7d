// The server's counters: written by the decode loop and the HTTP handlers as atomics, read by /metrics
// without a lock, so a scrape never waits for a decode.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace lctx::server {

// A Prometheus histogram of seconds with fixed upper bounds: observe() adds to one bucket, the count of
// observations and their sum with relaxed atomic increments (no lock), so the decode loop records while a
// scrape reads. The text derives _count from the buckets it read, so a scrape is always consistent.
class Histogram {
  public:
    static constexpr size_t kMaxBounds = 24;
    Histogram(const double *bounds, size_t n);
    void observe(double seconds);
    size_t n_bounds() const { return n_; }
    double bound(size_t i) const { return bounds_[i]; }
    // Observations at or below bound(i) and above bound(i - 1); i == n_bounds(): above the last bound.
    uint64_t bucket(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
    double sum() const { return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9; }

  private:
    const double *bounds_;
    size_t n_;
    std::array<std::atomic<uint64_t>, kMaxBounds + 1> buckets_{};
    std::atomic<uint64_t> sum_ns_{0};
};

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py, PrometheusStatLogger), in seconds.
extern const double kTtftBounds[22];            // vllm:time_to_first_token_seconds
extern const double kInterTokenBounds[19];      // vllm:inter_token_latency_seconds
extern const double kRequestLatencyBounds[21];  // vllm:e2e_request_latency_seconds, request_queue_time

struct Metrics {
    std::atomic<uint64_t> prompt_tokens{0};     // prompt tokens evaluated (cached ones not counted)
    std::atomic<uint64_t> prompt_us{0};         // time spent in steps that held prompt tokens
    std::atomic<uint64_t> generated_tokens{0};  // tokens sampled (an accepted draft token counts once)
    // Speculative decoding: verifications of a draft, draft tokens verified, and of them accepted.
    std::atomic<uint64_t> spec_drafts{0}, spec_draft_tokens{0}, spec_accepted_tokens{0};
    std::atomic<int64_t> spec_step_draft_max{0};  // the most draft tokens one step has added (all slots)
    std::atomic<uint64_t> generation_us{0};       // time spent in steps that held only generating slots
    std::atomic<uint64_t> requests_total{0};      // generation requests finished (any reason)
    std::atomic<uint64_t> requests_success{0};    // ... that ended with stop or length
    std::atomic<uint64_t> prefix_queries{0};      // prompt tokens looked up in the prompt cache
    std::atomic<uint64_t> prefix_hits{0};         // ... of which were found there
    std::atomic<uint64_t> decode_steps{0};
    std::atomic<uint64_t> busy_slot_steps{0};  // the slots with tokens in each decode step, summed
    std::atomic<int64_t> running{0};           // slots busy with a request
    std::atomic<int64_t> waiting{0};           // requests queued for a slot
    std::atomic<int64_t> kv_used{0};           // KV cells held by running requests, after the last step
    std::atomic<int64_t> kv_cells{0};          // KV cells in use, the idle slots' prompt caches included
    int64_t kv_size = 0;                       // fixed at start
    int32_t slots = 0;
    int32_t block_size = 16;  // vllm:cache_config_info: --kv-block-size tokens a block

    // vLLM's request statistics. Prompt tokens count a request's whole prompt (cached ones too) when its
    // first token is sampled; requests end with stop or length, or abort (client gone, server stopping).
    std::atomic<uint64_t> request_prompt_tokens{0};
    std::atomic<uint64_t> finished_stop{0}, finished_length{0}, finished_abort{0};
    Histogram ttft{kTtftBounds, 22};                  // arrival -> first token
    Histogram inter_token{kInterTokenBounds, 19};     // between two tokens of a request
    Histogram e2e{kRequestLatencyBounds, 21};         // arrival -> finished (stop or length)
    Histogram queue_time{kRequestLatencyBounds, 21};  // arrival -> given a slot (of finished requests)

    // KV-cache events that did not fit the publisher's queue (--kv-events), dropped.
    std::atomic<uint64_t> kv_events_dropped{0};

    // Embedding and rerank requests answered, and the encoder passes that ran them (requests share passes).
    std::atomic<uint64_t> embed_requests{0}, embed_passes{0};
};

// Prometheus text exposition (version 0.0.4): lctx's names and the vllm: names the Gateway API
// Inference Extension's endpoint picker reads.
std::string metrics_text(const Metrics &m, const std::string &model_name);

}  // namespace lctx::server
