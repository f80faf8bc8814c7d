// lctx bench: llama-bench style speed tests (pp: one prompt batch on an empty cache; tg: single-token decodes
// from an empty cache), with the memory-bandwidth limit of generation, optionally against llama.cpp itself
// (--peer) with the runs of the two engines alternating.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/lctx/bench_core.h"
#include "tools/lctx/bench_peer.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"

namespace lctx::cli {

namespace {

bool parse_int_list(const std::string &s, std::vector<int> *out) {
    std::stringstream ss(s);
    std::string item;
    out->clear();
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            const int v = std::stoi(item, &used);
            if (used != item.size() || v < 1) return false;
            out->push_back(v);
        } catch (const std::exception &) {
            return false;
        }
    }
    return !out->empty();
}

}  // namespace

int cmd_bench(int argc, char **argv) {
    CLI::App app{"Measure prompt processing and generation speed (like llama-bench)", "lctx bench"};
    configure_app(app);
    std::string model_path = default_model_path();
    std::string threads_arg = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
    std::string peer_dir;
    bench::Settings s;
    bool json = false;
    double bw_mib = 1024;
    app.add_option("-m,--model", model_path, "GGUF model file");
    app.add_option("-p,--n-prompt", s.n_prompt, "prompt tokens of the pp test (0: skip it)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("-n,--n-gen", s.n_gen, "generated tokens of the tg test (0: skip it)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("-t,--threads", threads_arg, "comma-separated thread counts, e.g. 1,2");
    app.add_option("-r,--repetitions", s.reps, "timed repetitions of each test")->check(CLI::PositiveNumber);
    app.add_option("-b,--batch-size", s.n_batch, "logical batch size")->check(CLI::PositiveNumber);
    app.add_option("-u,--ubatch-size", s.n_ubatch, "physical batch size")->check(CLI::PositiveNumber);
    app.add_option("--bw-mib", bw_mib, "buffer of the bandwidth measurement in MiB (0: skip it)");
    app.add_option("--peer", peer_dir,
                   "also run llama.cpp from this folder (scripts/install-peer.sh prints it)");
    app.add_flag("--json", json, "print a JSON list of results (llama-bench field names) instead of a table");
    const int st = parse_or_report(app, "bench", normalize_args(argc, argv));
    if (st >= 0) return st;
    std::vector<int> threads;
    if (!parse_int_list(threads_arg, &threads)) {
        std::fprintf(stderr, "lctx bench: -t wants positive thread counts separated by commas, not '%s'\n",
                     threads_arg.c_str());
        return 1;
    }
    if (s.n_prompt == 0 && s.n_gen == 0) {
        std::fprintf(stderr, "lctx bench: nothing to do (-p 0 and -n 0)\n");
        return 1;
    }

    std::unique_ptr<Model> model = load_model_or_report(model_path);
    if (!model) return 1;
    const bench::ModelFacts facts = bench::model_facts(*model);
    const bool tty = isatty(STDERR_FILENO);
    auto progress = [&](const char *engine, const std::string &test, int t, int rep) {
        if (!tty) return;
        if (rep == 0)
            std::fprintf(stderr, "\r\033[Kbench: %s %s t=%d warm-up", engine, test.c_str(), t);
        else
            std::fprintf(stderr, "\r\033[Kbench: %s %s t=%d rep %d/%d", engine, test.c_str(), t, rep, s.reps);
    };

    std::unique_ptr<bench::PeerProcess> peer;
    bench::ModelFacts peer_facts;
    bench::BuildInfo peer_build;
    std::vector<bench::Result> results;
    try {
        if (!peer_dir.empty()) {
            const std::string lib = bench::resolve_peer_lib_dir(peer_dir);
            if (lib.empty()) {
                std::fprintf(
                    stderr,
                    "lctx bench: no libllama in '%s' (run scripts/install-peer.sh and pass the folder it "
                    "prints)\n",
                    peer_dir.c_str());
                return 1;
            }
            const std::string exe = bench::find_peer_binary();
            if (exe.empty()) {
                std::fprintf(stderr,
                             "lctx bench: lctx-peer-bench is not next to lctx (build the lctx_peer_bench "
                             "target)\n");
                return 1;
            }
            peer = std::make_unique<bench::PeerProcess>(exe, lib, model_path, s);
            peer_facts = peer->facts();
            peer_build = peer->build();
        }
        bench::LctxRunner lctx_run(*model, s);
        for (int t : threads) {
            lctx_run.set_threads(t);
            for (const bool is_pp : {true, false}) {
                const int n = is_pp ? s.n_prompt : s.n_gen;
                if (n == 0) continue;
                bench::Result base;
                base.n_threads = t;
                base.n_prompt = is_pp ? n : 0;
                base.n_gen = is_pp ? 0 : n;
                base.n_batch = s.eff_batch();
                base.n_ubatch = s.eff_ubatch();
                base.test_time = bench::iso_time_now();
                bench::Result mine = base, theirs = base;
                mine.engine = "lctx";
                mine.model = facts;
                theirs.engine = "llama.cpp";
                theirs.model = peer_facts;
                theirs.model.bytes_per_token = facts.bytes_per_token;  // same file
                const std::string test = mine.test_name();
                auto run_lctx = [&] { return is_pp ? lctx_run.run_pp(n) : lctx_run.run_tg(n); };
                auto run_peer = [&] { return is_pp ? peer->run_pp(n, t) : peer->run_tg(n, t); };
                // One uncounted warm-up each, then the repetitions alternate engine by engine.
                progress("lctx", test, t, 0);
                run_lctx();
                if (peer) {
                    progress("llama.cpp", test, t, 0);
                    run_peer();
                }
                // The bandwidth of a shared machine drifts over minutes: generation tests measure it next to
                // every repetition and keep the mean, so that the limit belongs to the same minutes.
                std::vector<double> bw;
                for (int rep = 1; rep <= s.reps; ++rep) {
                    if (!is_pp && bw_mib > 0) {
                        if (tty)
                            std::fprintf(stderr, "\r\033[Kbench: memory bandwidth t=%d, %d/%d", t, rep,
                                         s.reps);
                        bw.push_back(bench::read_bandwidth(t, static_cast<size_t>(bw_mib * 1048576.0), 2));
                    }
                    progress("lctx", test, t, rep);
                    mine.samples_ns.push_back(run_lctx());
                    if (peer) {
                        progress("llama.cpp", test, t, rep);
                        theirs.samples_ns.push_back(run_peer());
                    }
                }
                if (!bw.empty()) {
                    double sum = 0;
                    for (double b : bw) sum += b;
                    mine.mem_bw = theirs.mem_bw = sum / static_cast<double>(bw.size());
                }
                results.push_back(mine);
                if (peer) results.push_back(theirs);
            }
        }
    } catch (const std::exception &e) {
        if (tty) std::fprintf(stderr, "\n");
        std::fprintf(stderr, "lctx bench: %s\n", e.what());
        return 1;
    }
    if (tty) std::fprintf(stderr, "\r\033[K");

    if (json) {
        const std::string cpu = bench::cpu_info();
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const bench::Result &r : results)
            list.push_back(
                bench::to_json(r, r.engine == "lctx" ? bench::lctx_build_info() : peer_build, cpu));
        std::printf("%s\n", list.dump(2).c_str());
        return 0;
    }
    std::printf("%s", bench::markdown(results).c_str());
    std::printf("\nbytes read per generated token: %.2f MiB", facts.bytes_per_token / 1048576.0);
    for (const bench::Result &r : results)
        if (r.engine == "lctx" && r.n_gen > 0 && r.mem_bw > 0)
            std::printf("; t=%d: read bandwidth %.1f GB/s, limit %.1f t/s", r.n_threads, r.mem_bw / 1e9,
                        r.mem_bw / static_cast<double>(facts.bytes_per_token));
    std::printf("\n");
    return 0;
}

}  // namespace lctx::cli
