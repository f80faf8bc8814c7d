#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace lctx::server {

const double kTtftBounds[22] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const double kInterTokenBounds[19] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                      0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const double kRequestLatencyBounds[21] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                          5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                          60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

Histogram::Histogram(const double *bounds, size_t n) : bounds_(bounds), n_(n) {
    if (n > kMaxBounds) throw std::logic_error("Histogram: too many bounds");
}

void Histogram::observe(double seconds) {
    if (!(seconds >= 0.0)) seconds = 0.0;  // a clock step back (or NaN) counts as no time
    // The first bound at or above the value (Prometheus' buckets are "less than or equal").
    const size_t i = static_cast<size_t>(std::lower_bound(bounds_, bounds_ + n_, seconds) - bounds_);
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e9)), std::memory_order_relaxed);
}

namespace {
void line(std::string &out, const char *type, const char *name, const char *help, double v,
          const std::string &labels = "") {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name +
           labels + " " + buf + "\n";
}
std::string escape_label(const std::string &s) {
    std::string o;
    for (char c : s) {
        if (c == '\\' || c == '"') o += '\\';
        if (c == '\n') {
            o += "\\n";
            continue;
        }
        o += c;
    }
    return o;
}
// A bound as Python's float repr writes it (vLLM's le labels come from prometheus_client): "1.0", "0.025".
std::string le_text(double v) {
    char buf[32];
    if (v == std::floor(v))
        std::snprintf(buf, sizeof buf, "%.1f", v);
    else
        std::snprintf(buf, sizeof buf, "%g", v);  // the bounds have at most 3 significant digits
    return buf;
}
std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}
// One histogram: cumulative buckets, +Inf, _sum and _count (the +Inf bucket's value, so they agree).
void histogram(std::string &out, const char *name, const char *help, const Histogram &h,
               const std::string &model_label) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    for (size_t i = 0; i <= h.n_bounds(); ++i) {
        cum += h.bucket(i);
        const std::string le = i < h.n_bounds() ? le_text(h.bound(i)) : "+Inf";
        out += std::string(name) + "_bucket{" + model_label + ",le=\"" + le + "\"} " + std::to_string(cum) +
               "\n";
    }
    out += std::string(name) + "_sum{" + model_label + "} " + num(h.sum()) + "\n";
    out += std::string(name) + "_count{" + model_label + "} " + std::to_string(cum) + "\n";
}
}  // namespace

std::string metrics_text(const Metrics &m, const std::string &model_name) {
    std::string o;
    const double used = static_cast<double>(m.kv_used.load());
    const double frac = m.kv_size > 0 ? used / static_cast<double>(m.kv_size) : 0.0;
    const double running = static_cast<double>(m.running.load()),
                 waiting = static_cast<double>(m.waiting.load());
    line(o, "counter", "lctx:prompt_tokens_total", "Prompt tokens evaluated.",
         double(m.prompt_tokens.load()));
    line(o, "counter", "lctx:prompt_seconds_total", "Time spent on steps holding prompt tokens.",
         double(m.prompt_us.load()) / 1e6);
    line(o, "counter", "lctx:tokens_predicted_total", "Tokens generated.", double(m.generated_tokens.load()));
    line(o, "counter", "lctx:tokens_predicted_seconds_total", "Time spent on generation-only steps.",
         double(m.generation_us.load()) / 1e6);
    line(o, "counter", "lctx:requests_total", "Generation requests finished.",
         double(m.requests_total.load()));
    line(o, "counter", "lctx:requests_success_total", "Generation requests that ended with stop or length.",
         double(m.requests_success.load()));
    line(o, "counter", "lctx:decode_steps_total", "llama_decode calls of the scheduler.",
         double(m.decode_steps.load()));
    line(o, "counter", "lctx:embedding_requests_total", "Embedding and rerank requests answered.",
         double(m.embed_requests.load()));
    line(o, "counter", "lctx:embedding_passes_total", "Encoder passes that ran them (requests share passes).",
         double(m.embed_passes.load()));
    line(o, "gauge", "lctx:spec_step_draft_tokens_max",
         "The most draft tokens one decode step has added, all slots together (--draft-batch-max).",
         static_cast<double>(m.spec_step_draft_max.load()));
    line(o, "gauge", "lctx:requests_processing", "Requests holding a slot.", running);
    line(o, "gauge", "lctx:requests_deferred", "Requests waiting for a slot.", waiting);
    line(
        o, "gauge", "lctx:kv_cache_usage_ratio",
        "KV cache cells held by running requests, as a fraction (idle slots' prompt caches are reclaimable).",
        frac);
    line(o, "gauge", "lctx:kv_cache_used_cells", "KV cache cells held by running requests.", used);
    line(o, "gauge", "lctx:kv_cache_tokens", "KV cache cells in use, prompt caches of idle slots included.",
         static_cast<double>(m.kv_cells.load()));
    line(o, "counter", "lctx_kv_events_dropped_total", "KV-cache events dropped (the queue was full).",
         double(m.kv_events_dropped.load()));
    const std::string ml = "{model_name=\"" + escape_label(model_name) + "\"}";
    line(o, "gauge", "vllm:num_requests_running", "Requests holding a slot.", running, ml);
    line(o, "gauge", "vllm:num_requests_waiting", "Requests waiting for a slot.", waiting, ml);
    line(o, "gauge", "vllm:kv_cache_usage_perc", "KV cache usage (0..1).", frac, ml);
    const int64_t block = m.block_size > 0 ? m.block_size : 1;
    line(o, "gauge", "vllm:cache_config_info",
         "KV cache configuration: a block is --kv-block-size tokens; the context holds num_gpu_blocks.", 1.0,
         "{block_size=\"" + std::to_string(block) + "\",num_gpu_blocks=\"" +
             std::to_string(m.kv_size / block) + "\"}");
    line(o, "counter", "vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prompt cache.",
         double(m.prefix_queries.load()), ml);
    line(o, "counter", "vllm:prefix_cache_hits_total", "Prompt tokens found in the prompt cache.",
         double(m.prefix_hits.load()), ml);
    line(o, "counter", "vllm:prompt_tokens_total",
         "Prompt tokens of the requests that started generating (cached ones included).",
         double(m.request_prompt_tokens.load()), ml);
    line(o, "counter", "vllm:generation_tokens_total", "Tokens generated.", double(m.generated_tokens.load()),
         ml);
    // Speculative decoding (-md, --lookup), as vLLM names it; 0 without it.
    line(o, "counter", "vllm:spec_decode_num_drafts_total", "Drafts verified.", double(m.spec_drafts.load()),
         ml);
    line(o, "counter", "vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified.",
         double(m.spec_draft_tokens.load()), ml);
    line(o, "counter", "vllm:spec_decode_num_accepted_tokens_total",
         "Draft tokens accepted (each also counts once in vllm:generation_tokens_total).",
         double(m.spec_accepted_tokens.load()), ml);
    {
        const std::string name = "vllm:request_success_total";
        o += "# HELP " + name + " Requests finished, by reason (stop, length, abort).\n# TYPE " + name +
             " counter\n";
        const std::string base = name + "{model_name=\"" + escape_label(model_name) + "\",finished_reason=\"";
        o += base + "stop\"} " + num(double(m.finished_stop.load())) + "\n";
        o += base + "length\"} " + num(double(m.finished_length.load())) + "\n";
        o += base + "abort\"} " + num(double(m.finished_abort.load())) + "\n";
    }
    const std::string hl = "model_name=\"" + escape_label(model_name) + "\"";
    histogram(o, "vllm:time_to_first_token_seconds", "Time to first token, from the request's arrival.",
              m.ttft, hl);
    histogram(o, "vllm:inter_token_latency_seconds", "Time between two tokens of a request.", m.inter_token,
              hl);
    histogram(o, "vllm:e2e_request_latency_seconds",
              "Request latency, from arrival to its end (stop or length).", m.e2e, hl);
    histogram(o, "vllm:request_queue_time_seconds", "Time a finished request waited for a slot.",
              m.queue_time, hl);
    // llama-server's names (its /metrics), so that dashboards made for it work: the same counters as above.
    const double prompt_s = double(m.prompt_us.load()) / 1e6, gen_s = double(m.generation_us.load()) / 1e6;
    const double prompt_n = double(m.prompt_tokens.load()), gen_n = double(m.generated_tokens.load());
    const double steps = double(m.decode_steps.load());
    line(o, "counter", "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", prompt_n);
    line(o, "counter", "llamacpp:prompt_seconds_total", "Prompt process time.", prompt_s);
    line(o, "counter", "llamacpp:tokens_predicted_total", "Number of generation tokens processed.", gen_n);
    line(o, "counter", "llamacpp:tokens_predicted_seconds_total", "Predict process time.", gen_s);
    line(o, "counter", "llamacpp:n_decode_total", "Total number of llama_decode() calls.", steps);
    line(o, "counter", "llamacpp:n_busy_slots_per_decode",
         "Average number of busy slots per llama_decode() call.",
         steps > 0 ? double(m.busy_slot_steps.load()) / steps : 0.0);
    line(o, "gauge", "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.",
         prompt_s > 0 ? prompt_n / prompt_s : 0.0);
    line(o, "gauge", "llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.",
         gen_s > 0 ? gen_n / gen_s : 0.0);
    line(o, "gauge", "llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", frac);
    line(o, "gauge", "llamacpp:kv_cache_tokens", "KV-cache tokens.", static_cast<double>(m.kv_cells.load()));
    line(o, "gauge", "llamacpp:requests_processing", "Number of requests processing.", running);
    line(o, "gauge", "llamacpp:requests_deferred", "Number of requests deferred.", waiting);
    return o;
}

}  // namespace lctx::server
