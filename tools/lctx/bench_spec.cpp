#include "tools/lctx/bench_spec.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "generate/speculative.h"
#include "generate/tokens.h"

namespace lctx::bench {

std::vector<SpecBenchRow> run_spec_bench(const SpecBenchInputs &in, const cli::SpecOptions &s,
                                         std::string *error) {
    struct Mode {
        std::string name;
        cli::SpecOptions opts;
        bool self = false;
    };
    std::vector<Mode> modes;
    cli::SpecOptions plain = s;
    plain.model_draft.clear();
    plain.lookup = false;
    modes.push_back({"plain", plain, false});
    cli::SpecOptions self = plain;
    self.model_draft = in.model;
    modes.push_back({"self-draft", self, true});
    cli::SpecOptions lookup = plain;
    lookup.lookup = true;
    modes.push_back({"lookup", lookup, false});
    if (!s.model_draft.empty()) {
        cli::SpecOptions d = plain;
        d.model_draft = s.model_draft;
        modes.push_back({"draft " + s.model_draft.substr(s.model_draft.find_last_of('/') + 1), d, false});
    }
    std::vector<SpecBenchRow> rows;
    std::vector<llama_token> plain_out;
    for (const Mode &mode : modes) {
        cli::SpecModels m;
        // The context holds the prompt, the output and one more draft.
        const int32_t n_ctx = in.n_ctx > 0 ? in.n_ctx
                                           : static_cast<int32_t>(in.prompt.size()) + in.n_gen + s.draft_max +
                                                 64;  // bytes >= tokens
        *error = cli::spec_load(in.model, mode.opts, n_ctx, 512, 512, in.threads, in.threads, in.type_k,
                                in.type_v, false, &m);
        if (!error->empty()) return {};
        const std::vector<llama_token> prompt =
            generate::tokenize(llama_model_get_vocab(m.target), in.prompt, true, true);
        if (prompt.empty()) {
            *error = "the prompt is empty";
            return {};
        }
        SpecBenchRow row;
        row.mode = mode.name;
        row.n_gen = in.n_gen;
        std::vector<double> tps;
        for (int r = 0; r < std::max(1, in.reps); ++r) {
            llama_kv_cache_clear(m.ctx);
            std::unique_ptr<generate::Drafter> drafter;
            if (mode.opts.lookup)
                drafter = std::make_unique<generate::NgramDrafter>(s.ngram_min, s.ngram_max);
            else if (m.dctx)
                drafter = std::make_unique<generate::ModelDrafter>(m.dctx, s.draft_p_min);
            generate::SpecParams sp;
            sp.n_max = s.draft_max;
            sp.n_min = s.draft_min;
            generate::Speculator spec(m.ctx, drafter.get(), sp, generate::SpecSampling{});
            std::vector<llama_token> history = prompt, out;
            if (std::string e = spec.prefill(history); !e.empty()) {
                *error = e;
                return {};
            }
            const auto t0 = std::chrono::steady_clock::now();
            while (static_cast<int>(out.size()) < in.n_gen) {
                if (std::string e = spec.step(history, &out); !e.empty()) {
                    *error = e;
                    return {};
                }
            }
            const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            out.resize(static_cast<size_t>(in.n_gen));
            tps.push_back(sec > 0 ? in.n_gen / sec : 0.0);
            row.steps = spec.stats().n_steps;
            row.drafted = spec.stats().n_drafted;
            row.accepted = spec.stats().n_accepted;
            if (mode.name == "plain")
                plain_out = out;
            else
                row.same_as_plain = row.same_as_plain && out == plain_out;
        }
        double mean = 0, var = 0;
        for (double t : tps) mean += t / static_cast<double>(tps.size());
        for (double t : tps) var += (t - mean) * (t - mean) / static_cast<double>(tps.size());
        row.tokens_per_s = mean;
        row.tokens_per_s_sd = std::sqrt(var);
        rows.push_back(row);
    }
    return rows;
}

std::string spec_bench_table(const std::vector<SpecBenchRow> &rows) {
    std::string out =
        "| mode | tokens | target decodes | drafted | accepted | acceptance | t/s | speedup | same output |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    const double base = rows.empty() ? 0.0 : rows.front().tokens_per_s;
    char buf[512];
    for (const SpecBenchRow &r : rows) {
        std::snprintf(
            buf, sizeof buf, "| %s | %d | %lld | %lld | %lld | %.1f%% | %.2f ± %.2f | %.2fx | %s |\n",
            r.mode.c_str(), r.n_gen, static_cast<long long>(r.steps), static_cast<long long>(r.drafted),
            static_cast<long long>(r.accepted),
            r.drafted > 0 ? 100.0 * static_cast<double>(r.accepted) / static_cast<double>(r.drafted) : 0.0,
            r.tokens_per_s, r.tokens_per_s_sd, base > 0 ? r.tokens_per_s / base : 0.0,
            r.same_as_plain ? "yes" : "NO");
        out += buf;
    }
    return out;
}

}  // namespace lctx::bench
