// The server's counters: written by the decode loop and the HTTP handlers as atomics, read by /metrics
// without a lock, so a scrape never waits for a decode.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace lctx::server {

struct Metrics {
    std::atomic<uint64_t> prompt_tokens{0};     // prompt tokens evaluated (cached ones not counted)
    std::atomic<uint64_t> prompt_us{0};         // time spent in steps that held prompt tokens
    std::atomic<uint64_t> generated_tokens{0};  // tokens sampled
    std::atomic<uint64_t> generation_us{0};     // time spent in steps that held only generating slots
    std::atomic<uint64_t> requests_total{0};    // generation requests finished (any reason)
    std::atomic<uint64_t> requests_success{0};  // ... that ended with stop or length
    std::atomic<uint64_t> prefix_queries{0};    // prompt tokens looked up in the prompt cache
    std::atomic<uint64_t> prefix_hits{0};       // ... of which were found there
    std::atomic<uint64_t> decode_steps{0};
    std::atomic<uint64_t> busy_slot_steps{0};  // the slots with tokens in each decode step, summed
    std::atomic<int64_t> running{0};           // slots busy with a request
    std::atomic<int64_t> waiting{0};           // requests queued for a slot
    std::atomic<int64_t> kv_used{0};           // KV cells held by running requests, after the last step
    std::atomic<int64_t> kv_cells{0};          // KV cells in use, the idle slots' prompt caches included
    int64_t kv_size = 0;                       // fixed at start
    int32_t slots = 0;

    // KV-cache events that did not fit the publisher's queue (--kv-events), dropped.
    std::atomic<uint64_t> kv_events_dropped{0};
};

// Prometheus text exposition (version 0.0.4): lctx's names and the vllm: names the Gateway API
// Inference Extension's endpoint picker reads.
std::string metrics_text(const Metrics &m, const std::string &model_name);

}  // namespace lctx::server
