// lctx bench --spec: speculative decoding against plain decoding on the same prompt, greedy, through the
// generation layer (src/generate/speculative.h): plain (one token per target decode), self draft (the
// target drafts for itself: the acceptance upper bound), prompt lookup, and a draft model (-md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tools/lctx/spec_options.h"

namespace lctx::bench {

struct SpecBenchRow {
    std::string mode;  // plain, self-draft, lookup, draft FILE
    int n_gen = 0;
    int64_t steps = 0, drafted = 0, accepted = 0;  // per repetition
    double tokens_per_s = 0;                       // mean over repetitions, generation only
    double tokens_per_s_sd = 0;
    bool same_as_plain = true;  // the greedy tokens equal plain decoding's
};

struct SpecBenchInputs {
    std::string model, prompt;
    int n_gen = 128, threads = 1, reps = 3;
    int32_t n_ctx = 0;                                         // 0: prompt + n_gen + the draft, rounded up
    ggml_type type_k = GGML_TYPE_F16, type_v = GGML_TYPE_F16;  // -ctk / -ctv (one value each)
};

// Every mode that applies (the draft model only with -md); "" or the error in *error.
std::vector<SpecBenchRow> run_spec_bench(const SpecBenchInputs &in, const cli::SpecOptions &s,
                                         std::string *error);
// A markdown table, one row per mode, with the speedup over plain.
std::string spec_bench_table(const std::vector<SpecBenchRow> &rows);

}  // namespace lctx::bench
