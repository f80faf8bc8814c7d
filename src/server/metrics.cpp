#include "server/metrics.h"

#include <cstdio>

namespace lctx::server {

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
    line(o, "gauge", "vllm:cache_config_info", "KV cache configuration: one block is one cell.", 1.0,
         "{block_size=\"1\",num_gpu_blocks=\"" + std::to_string(m.kv_size) + "\"}");
    line(o, "counter", "vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prompt cache.",
         double(m.prefix_queries.load()), ml);
    line(o, "counter", "vllm:prefix_cache_hits_total", "Prompt tokens found in the prompt cache.",
         double(m.prefix_hits.load()), ml);
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
