// lctx bench: llama-bench style speed tests (pp: one prompt batch; tg: single-token decodes; -pg: a prompt
// then generation; -d: after that many tokens already in the cache), over lists of sizes, thread counts and
// batch sizes, with the memory-bandwidth limit of generation, optionally against llama.cpp itself (--peer)
// with the runs of the two engines alternating, for each model given (-m A -m B or -m A,B). Output as
// llama-bench's: md, csv, json, jsonl or sql. An encoder
// without an output matrix (bert), or with --embd any model with an encoder pass, is measured in embedding
// mode instead: --n-seq sequences of -p tokens in one llama_encode, tokens/s over all of them. An
// encoder-decoder (T5) is measured in T5 mode: an encode of -p tokens (encP), then -n single-token decoder
// steps (decG @ eP), timed apart.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "context/kv_cache.h"
#include "kernels/dot.h"
#include "model/families.h"
#include "tools/lctx/args.h"
#include "tools/lctx/bench_batched.h"
#include "tools/lctx/bench_core.h"
#include "tools/lctx/bench_peer.h"
#include "tools/lctx/bench_roofline.h"
#include "tools/lctx/bench_spec.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "util/error.h"

namespace lctx::cli {

namespace {

// "1,2,4" -> {1, 2, 4}; every value at least `min`. False when malformed.
bool parse_int_list(const std::string &s, int min, std::vector<int> *out) {
    std::stringstream ss(s);
    std::string item;
    out->clear();
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            const int v = std::stoi(item, &used);
            if (used != item.size() || v < min) return false;
            out->push_back(v);
        } catch (const std::exception &) {
            return false;
        }
    }
    return !out->empty() && s.back() != ',';
}

// -ctk / -ctv: comma-separated cache type names. False (after saying why) when malformed.
bool parse_cache_types(const std::string &ctk_arg, const std::string &ctv_arg, std::vector<GgmlType> *types_k,
                       std::vector<GgmlType> *types_v) {
    for (auto [name, arg, out] :
         {std::tuple{"-ctk", &ctk_arg, types_k}, std::tuple{"-ctv", &ctv_arg, types_v}}) {
        std::stringstream ss(*arg);
        for (std::string item; std::getline(ss, item, ',');) {
            GgmlType t;
            if (!type_from_name(item.c_str(), &t)) {
                std::fprintf(stderr, "lctx bench: %s: unknown type '%s'\n", name, item.c_str());
                return false;
            }
            out->push_back(t);
        }
        if (out->empty() || arg->back() == ',') {
            std::fprintf(stderr, "lctx bench: %s wants type names separated by commas, not '%s'\n", name,
                         arg->c_str());
            return false;
        }
    }
    return true;
}

// Every combination of -fa and -ctk/-ctv can run (a quantized V cache needs flash attention, ...); false,
// after saying why, when one cannot.
bool attention_settings_ok(const std::vector<int> &fas, const std::vector<GgmlType> &types_k,
                           const std::vector<GgmlType> &types_v) {
    for (int fa : fas)
        for (GgmlType k : types_k)
            for (GgmlType v : types_v)
                if (const std::string why = bench::check_attention_setting(fa != 0, k, v); !why.empty()) {
                    std::fprintf(stderr, "lctx bench: %s\n", why.c_str());
                    return false;
                }
    return true;
}

// --peer DIR: llama.cpp's library folder and the lctx-peer-bench program that loads it. Nothing to find
// for an empty DIR; false (the reason printed) when either is missing.
bool resolve_peer(const std::string &peer_dir, std::string *peer_lib, std::string *peer_exe) {
    if (peer_dir.empty()) return true;
    *peer_lib = bench::resolve_peer_lib_dir(peer_dir);
    if (peer_lib->empty()) {
        std::fprintf(
            stderr,
            "lctx bench: no libllama in '%s' (run scripts/install-peer.sh and pass the folder it prints)\n",
            peer_dir.c_str());
        return false;
    }
    *peer_exe = bench::find_peer_binary();
    if (peer_exe->empty()) {
        std::fprintf(stderr,
                     "lctx bench: lctx-peer-bench is not next to lctx (build the lctx_peer_bench target)\n");
        return false;
    }
    return true;
}

// llama-bench's models: -m A -m B, or -m A,B; none means the default model. False (after saying why) when
// malformed.
bool parse_model_list(const std::vector<std::string> &model_args, std::vector<std::string> *model_paths) {
    for (const std::string &m : model_args) {
        std::stringstream ss(m);
        for (std::string item; std::getline(ss, item, ',');) model_paths->push_back(item);
        if (m.empty() || m.back() == ',' ||
            std::find(model_paths->begin(), model_paths->end(), "") != model_paths->end()) {
            std::fprintf(stderr, "lctx bench: -m wants model files separated by commas, not '%s'\n",
                         m.c_str());
            return false;
        }
    }
    if (model_paths->empty()) model_paths->push_back(default_model_path());
    return true;
}

// printf onto the end of *out.
[[gnu::format(printf, 2, 3)]] void appendf(std::string *out, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        const size_t at = out->size();
        out->resize(at + static_cast<size_t>(n) + 1);
        std::vsnprintf(out->data() + at, static_cast<size_t>(n) + 1, fmt, ap2);
        out->resize(at + static_cast<size_t>(n));
    }
    va_end(ap2);
}

const char *const kInstalledPeer = "<installed>";

struct Test {
    int n_prompt, n_gen;
    int n_seq = 0;    // embedding mode: sequences of n_prompt tokens per encode
    bool t5 = false;  // T5 mode: an encode of n_prompt tokens, then n_gen decoder steps
};

// Batched mode: every (-t, -b, -ub, -fa, -ctk, -ctv) setting gets a header line and a table of the
// (PP, TG, B) runs, each the median by total time of `reps` runs. One context per B, sized for that B's
// largest run (or -c), with B sequences. With a peer (`peer_dir`), llama.cpp runs every row too, in a process
// and context of its own per B (a cache stream per sequence, as llama-batched-bench's), the engines
// alternating run by run; each table has both engines' rows and a ratio line per row under it.
int run_batched(const std::vector<std::string> &model_args, const std::string &npp_arg,
                const std::string &ntg_arg, const std::string &npl_arg, bool pps, uint32_t ctx_size,
                const std::string &threads_arg, const std::string &batch_arg, const std::string &ubatch_arg,
                const std::string &fa_arg, const std::string &ctk_arg, const std::string &ctv_arg, int reps,
                const std::string &output, const std::string &peer_dir) {
    std::vector<int> npp, ntg, npl, threads, batches, ubatches, fas;
    for (auto [name, arg, min, out] :
         {std::tuple{"-npp", &npp_arg, 1, &npp}, std::tuple{"-ntg", &ntg_arg, 0, &ntg},
          std::tuple{"-npl", &npl_arg, 1, &npl}, std::tuple{"-t", &threads_arg, 1, &threads},
          std::tuple{"-b", &batch_arg, 1, &batches}, std::tuple{"-ub", &ubatch_arg, 1, &ubatches},
          std::tuple{"-fa", &fa_arg, 0, &fas}}) {
        if (!parse_int_list(*arg, min, out)) {
            std::fprintf(stderr, "lctx bench: %s wants %s numbers separated by commas, not '%s'\n", name,
                         min > 0 ? "positive" : "non-negative", arg->c_str());
            return 1;
        }
    }
    if (std::any_of(fas.begin(), fas.end(), [](int v) { return v > 1; })) {
        std::fprintf(stderr, "lctx bench: -fa wants 0 or 1 separated by commas, not '%s'\n", fa_arg.c_str());
        return 1;
    }
    const int max_seqs = kMaxSeqs;
    for (int pl : npl)
        if (pl > max_seqs) {
            std::fprintf(stderr, "lctx bench: -npl: %d sequences, at most %d\n", pl, max_seqs);
            return 1;
        }
    std::vector<GgmlType> types_k, types_v;
    if (!parse_cache_types(ctk_arg, ctv_arg, &types_k, &types_v) ||
        !attention_settings_ok(fas, types_k, types_v))
        return 1;
    // Every combination of the settings, in the order the tables come.
    std::vector<std::pair<bench::BatchedSettings, int>> settings;  // (settings, threads)
    for (int n_batch : batches)
        for (int n_ubatch : ubatches)
            for (int fa : fas)
                for (GgmlType k : types_k)
                    for (GgmlType v : types_v) {
                        bench::BatchedSettings s;
                        s.n_batch = static_cast<uint32_t>(n_batch);
                        s.n_ubatch = static_cast<uint32_t>(n_ubatch);
                        s.flash_attn = fa != 0;
                        s.type_k = k;
                        s.type_v = v;
                        for (int t : threads) settings.push_back({s, t});
                    }
    if (reps < 1 || reps > 1000) {
        std::fprintf(stderr, "lctx bench: -r: %d is out of range (1 to 1000)\n", reps);
        return 1;
    }
    std::vector<std::string> model_paths;
    if (!parse_model_list(model_args, &model_paths)) return 1;
    std::string peer_lib, peer_exe;
    if (!resolve_peer(peer_dir, &peer_lib, &peer_exe)) return 1;
    const bool tty = isatty(STDERR_FILENO);
    std::vector<nlohmann::ordered_json> rows;
    std::vector<std::string> warnings;
    for (const std::string &model_path : model_paths) {
        std::unique_ptr<Model> model = load_model_or_report(model_path);
        if (!model) return 1;
        const Family *family = find_family(model->hparams().arch);
        if (is_encoder_decoder(*model) || (family && family->encode && !model->weights().output.data)) {
            std::fprintf(stderr, "lctx bench: batched mode measures decoder-only models; '%s' is %s\n",
                         model_path.c_str(), model->hparams().arch_name.c_str());
            return 1;
        }
        if (output == "md") std::printf("model: %s\n", bench::model_facts(*model).type.c_str());
        try {
            for (auto [s, t] : settings) {
                bool headed = false;
                std::string ratio_lines;
                for (int pl : npl) {
                    // The rows that fit, and the cells they need: lctx's context holds them all (or -c);
                    // llama.cpp's gives each sequence a stream of its own, as llama-batched-bench's does.
                    int64_t need = 0, per_seq = 0;
                    std::vector<std::pair<int, int>> runs_of_pl;  // (PP, TG)
                    for (int pp : npp)
                        for (int tg : ntg) {
                            const int64_t n_kv = bench::batched_n_kv(pp, tg, pl, pps);
                            if (ctx_size && n_kv > ctx_size) {
                                std::fprintf(
                                    stderr,
                                    "lctx bench: skipped PP %d, TG %d, B %d: needs %lld cells, -c is "
                                    "%u\n",
                                    pp, tg, pl, static_cast<long long>(n_kv), ctx_size);
                                continue;
                            }
                            runs_of_pl.push_back({pp, tg});
                            need = std::max(need, n_kv);
                            // a shared prompt's copy takes llama.cpp one more cell of sequence 0
                            per_seq = std::max<int64_t>(per_seq, pp + std::max(tg, pps && pl > 1 ? 1 : 0));
                        }
                    if (runs_of_pl.empty()) continue;
                    s.n_ctx = ctx_size ? ctx_size : static_cast<uint32_t>(need);
                    s.n_seq_max = static_cast<uint32_t>(pl);
                    bench::BatchedRunner runner(*model, s);
                    runner.set_threads(t);
                    std::unique_ptr<bench::PeerProcess> peer;
                    bench::BatchedSettings peer_s = s;
                    if (!peer_exe.empty()) {
                        peer_s.n_ctx = static_cast<uint32_t>(per_seq * pl);
                        peer = std::make_unique<bench::PeerProcess>(peer_exe, peer_lib, model_path, peer_s);
                    }
                    // One untimed warm-up each, then every run alternates the engines.
                    runner.warm_up();
                    if (peer) peer->warm_up_batched(t);
                    if (output == "md" && !headed) {
                        std::printf("\n%s", bench::batched_header(s, t, pps, s.n_ctx).c_str());
                        if (peer) {
                            const std::string level = bench::peer_isa_level(peer->cpu_features());
                            std::printf(
                                "llama.cpp: %s (build %s); isa = %s (CPU backend: %s); "
                                "its cache: a stream of PP + TG cells per sequence (kv_unified off, as "
                                "llama-batched-bench's)\n",
                                bench::describe_peer(peer_lib).c_str(), peer->build().commit.c_str(),
                                level.empty() ? "unknown" : level.c_str(),
                                peer->cpu_features().empty() ? "features not reported"
                                                             : peer->cpu_features().c_str());
                        }
                        std::printf("%s", bench::batched_table_head(peer != nullptr).c_str());
                        headed = true;
                    }
                    for (auto [pp, tg] : runs_of_pl) {
                        std::vector<bench::BatchedRow> mine, theirs;
                        for (int rep = 0; rep < reps; ++rep) {
                            if (tty)
                                std::fprintf(stderr, "\r\033[Kbench: PP %d TG %d B %d t=%d rep %d/%d", pp, tg,
                                             pl, t, rep + 1, reps);
                            mine.push_back(runner.run(pp, tg, pl, pps));
                            if (!peer) continue;
                            theirs.push_back(peer->run_batched(pp, tg, pl, pps, t).row);
                            const bench::BatchedRow &a = mine.back(), &b = theirs.back();
                            if (a.pp != b.pp || a.tg != b.tg || a.pl != b.pl || a.n_kv != b.n_kv)
                                throw Error("llama.cpp ran another row than lctx's PP " + std::to_string(pp) +
                                            ", TG " + std::to_string(tg) + ", B " + std::to_string(pl));
                        }
                        if (tty) std::fprintf(stderr, "\r\033[K");
                        auto median = [](std::vector<bench::BatchedRow> &v) {
                            std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
                                return a.t_pp + a.t_tg < b.t_pp + b.t_tg;
                            });
                            return v[v.size() / 2];
                        };
                        const bench::BatchedRow r = median(mine);
                        if (peer) {
                            const std::string w = bench::batched_ratio_warning(r, median(theirs), pps, t);
                            if (!w.empty()) warnings.push_back(w);
                        }
                        if (output == "md") {
                            std::printf("%s",
                                        bench::batched_table_row(r, pps, peer ? "lctx" : nullptr).c_str());
                            if (peer) {
                                const bench::BatchedRow p = median(theirs);
                                std::printf("%s", bench::batched_table_row(p, pps, "llama.cpp").c_str());
                                ratio_lines += bench::batched_ratio_line(r, p, pps);
                            }
                            std::fflush(stdout);
                            continue;
                        }
                        rows.push_back(bench::batched_json(r, s, t, pps, s.n_ctx));
                        if (peer) {
                            nlohmann::ordered_json j =
                                bench::batched_json(median(theirs), peer_s, t, pps, peer_s.n_ctx);
                            j["engine"] = "llama.cpp";
                            j["isa"] = bench::peer_isa_level(peer->cpu_features());
                            j["cpu_features"] = peer->cpu_features();
                            j["build_commit"] = peer->build().commit;
                            j["peer"] = bench::describe_peer(peer_lib);
                            rows.push_back(j);
                        }
                        if (output == "jsonl")
                            for (size_t i = rows.size() - (peer ? 2 : 1); i < rows.size(); ++i)
                                std::printf("%s\n", rows[i].dump().c_str());
                        std::fflush(stdout);
                    }
                }
                if (output == "md" && !ratio_lines.empty()) std::printf("\n%s", ratio_lines.c_str());
            }
        } catch (const std::exception &e) {
            if (tty) std::fprintf(stderr, "\n");
            std::fprintf(stderr, "lctx bench: %s\n", e.what());
            return 1;
        }
    }
    if (output == "json") std::printf("%s\n", nlohmann::ordered_json(rows).dump(2).c_str());
    if (!peer_lib.empty() && output != "md")
        std::fprintf(stderr, "lctx bench: llama.cpp: %s\n", bench::describe_peer(peer_lib).c_str());
    for (const std::string &w : warnings) std::fprintf(stderr, "lctx bench: warning: %s\n", w.c_str());
    return 0;
}

// T5 mode, one thread count: an uncounted warm-up on each engine, then `reps` runs alternating the engines;
// each run gives the encoder's time and the decoder's, appended as two results per engine (`mine`,
// `theirs`: the rows' settings).
template <typename Progress>
void run_t5_test(bench::LctxRunner &lctx_run, bench::PeerProcess *peer, int n_enc, int n_dec, int reps,
                 const bench::Result &mine, const bench::Result &theirs, std::vector<bench::Result> *results,
                 Progress progress) {
    const int t = mine.n_threads;
    bench::Result enc[2] = {mine, theirs}, dec[2] = {mine, theirs};  // [lctx, llama.cpp]
    for (bench::Result &r : enc) {
        r.t5_part = 1;
        r.n_gen = 0;
    }
    for (bench::Result &r : dec) r.t5_part = 2;
    const std::string name = enc[0].test_name() + "+" + dec[0].test_name();
    for (int rep = 0; rep <= reps; ++rep) {  // rep 0: the warm-up
        progress("lctx", name, t, rep);
        const auto [e, d] = lctx_run.run_t5();
        if (rep > 0) {
            enc[0].samples_ns.push_back(e);
            dec[0].samples_ns.push_back(d);
        }
        if (!peer) continue;
        progress("llama.cpp", name, t, rep);
        const auto [pe, pd] = peer->run_t5(n_enc, n_dec, t);
        if (rep > 0) {
            enc[1].samples_ns.push_back(pe);
            dec[1].samples_ns.push_back(pd);
        }
    }
    for (int i = 0; i < (peer ? 2 : 1); ++i) results->push_back(enc[i]);
    if (n_dec > 0)
        for (int i = 0; i < (peer ? 2 : 1); ++i) results->push_back(dec[i]);
}

// lctx bench --spec: the first model, thread count and -n.
int bench_spec_main(const CLI::App &app, const std::vector<std::string> &model_args,
                    const std::string &threads_arg, const std::string &gen_arg, int reps,
                    const std::string &prompt, const std::string &ctk, const std::string &ctv,
                    SpecOptions &spec) {
    if (const std::string e = check_spec_options(app, spec); !e.empty()) {
        std::fprintf(stderr, "lctx bench: %s\n", e.c_str());
        return 1;
    }
    std::vector<int> threads, gens;
    if (!parse_int_list(threads_arg, 1, &threads) || !parse_int_list(gen_arg, 1, &gens)) {
        std::fprintf(stderr, "lctx bench: --spec: -t and -n want positive numbers\n");
        return 1;
    }
    bench::SpecBenchInputs in;
    in.model = model_args.empty() ? default_model_path() : model_args.front();
    in.prompt = prompt;
    in.n_gen = gens.front();
    in.threads = threads.front();
    in.reps = reps;
    for (auto [opt, arg, out] : {std::tuple{"-ctk", &ctk, &in.type_k}, std::tuple{"-ctv", &ctv, &in.type_v}})
        if (const std::string e = kv_cache_type_from_name(*arg, opt, out); !e.empty()) {
            std::fprintf(stderr, "lctx bench: --spec: %s\n", e.c_str());
            return 1;
        }
    std::string error;
    const std::vector<bench::SpecBenchRow> rows = bench::run_spec_bench(in, spec, &error);
    if (!error.empty()) {
        std::fprintf(stderr, "lctx bench: --spec: %s\n", error.c_str());
        return 1;
    }
    std::printf(
        "model: %s, %d threads, KV cache %s/%s, greedy, -n %d, --draft-max %d, --draft-min %d, --draft-p-min "
        "%.2f, lookup n-grams %d..%d, %d repetitions\n\n%s",
        in.model.c_str(), in.threads, ctk.c_str(), ctv.c_str(), in.n_gen, spec.draft_max, spec.draft_min,
        spec.draft_p_min, spec.ngram_min, spec.ngram_max, in.reps, bench::spec_bench_table(rows).c_str());
    for (const bench::SpecBenchRow &r : rows)
        if (!r.same_as_plain) {
            std::printf(
                "\nnote: %s gave other tokens than plain decoding: this CPU's batched attention rounds "
                "otherwise than a one-token decode (README: speculative decoding; -ctk f32 -ctv f32 "
                "avoids it)\n",
                r.mode.c_str());
            break;
        }
    return 0;
}

}  // namespace

int cmd_bench(int argc, char **argv) {
    CLI::App app{"Measure prompt processing and generation speed (like llama-bench)", "lctx bench"};
    configure_app(app);
    std::vector<std::string> model_args;
    std::string ngl_arg;
    std::string threads_arg = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
    std::string prompt_arg = "512", gen_arg = "128", batch_arg = "2048", ubatch_arg = "512", depth_arg = "0";
    std::vector<std::string> pg_args;
    std::string peer_dir, output = "md";
    int reps = 5;
    bool json = false, embd_opt = false;
    std::string n_seq_arg = "8";
    // batched mode (llama-batched-bench)
    std::string npp_arg, ntg_arg, npl_arg;
    bool pps = false;
    uint32_t ctx_size = 0;
    double bw_mib = 1024;
    bool no_peak = false;
    std::string fa_arg = "0", ctk_arg = "f16", ctv_arg = "f16";
    app.add_option("-m,--model", model_args, "GGUF model files, each measured (repeatable, or A,B)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("-p,--n-prompt", prompt_arg, "prompt sizes of the pp tests, e.g. 128,512 (0: none)");
    app.add_option("-n,--n-gen", gen_arg, "generated tokens of the tg tests, e.g. 64,128 (0: none)");
    app.add_option("--pg", pg_args, "(-pg) a prompt then generation test PP,TG, e.g. 512,128 (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("-d,--n-depth", depth_arg, "tokens already in the cache when a test starts, e.g. 0,1024");
    app.add_option("-t,--threads", threads_arg, "thread counts, e.g. 1,2");
    app.add_option("-r,--repetitions", reps, "timed repetitions of each test");
    app.add_option("-b,--batch-size", batch_arg,
                   "logical batch sizes, e.g. 512,2048 (capped by the context)");
    app.add_option("-u,--ubatch-size", ubatch_arg,
                   "physical batch sizes (-ub), e.g. 128,512 (capped by the batch)");
    app.add_option("--flash-attn", fa_arg, "(-fa) flash attention off and/or on, e.g. 0,1");
    app.add_option(
        "--cache-type-k", ctk_arg,
        "(-ctk) K cache types, e.g. f16,q8_0 (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)");
    app.add_option("--cache-type-v", ctv_arg, "(-ctv) V cache types, as -ctk; the block types need -fa 1");
    app.add_option("-o,--output", output, "output format: md, csv, json, jsonl or sql");
    app.add_option("--n-gpu-layers", ngl_arg, "(-ngl) accepted: lctx runs on the CPU");
    app.add_option("--bw-mib", bw_mib, "buffer of the bandwidth measurement in MiB (0: skip it)");
    app.add_flag("--no-peak", no_peak, "skip the compute-peak probe of the prompt tests' \"% of peak\"");
    app.add_option("--peer", peer_dir,
                   "also run llama.cpp from this folder (scripts/install-peer.sh prints it)");
    app.add_flag("--json", json, "the same as -o json");
    app.add_flag("--embd", embd_opt,
                 "embedding mode (automatic for an encoder such as bert): --n-seq sequences of -p tokens "
                 "(default 128) per llama_encode");
    app.add_option("--n-seq", n_seq_arg, "embedding mode: sequences per encode, e.g. 1,8");
    app.add_option("--npp", npp_arg,
                   "(-npp) batched mode, like llama-batched-bench: prompt tokens per sequence, e.g. 128,512 "
                   "(default 128)");
    app.add_option("--ntg", ntg_arg,
                   "(-ntg) batched mode: generated tokens per sequence, e.g. 128 (default 128)");
    app.add_option("--npl", npl_arg,
                   "(-npl) batched mode: parallel sequences, e.g. 1,2,4,8,16,32 (the default)");
    app.add_flag("--pps", pps, "(-pps) batched mode: one prompt shared by all sequences");
    app.add_option(
        "-c,--ctx-size", ctx_size,
        "batched mode: cache cells (0: what the largest run needs; runs that need more are skipped)");
    bool spec_mode = false;
    std::string spec_prompt =
        "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick "
        "brown fox jumps over the lazy dog. Once upon a time, there was a little girl named Lily. She loved "
        "to "
        "play outside. Once upon a time, there was a little girl named Lily. She loved to play outside.";
    SpecOptions spec;
    app.add_flag(
        "--spec", spec_mode,
        "speculative mode: greedy generation of -n tokens after --spec-prompt, plain against self draft, "
        "prompt lookup and -md (first -m, -n and -t)");
    app.add_option("--spec-prompt", spec_prompt, "the prompt of --spec (default: a repetitive text)");
    add_spec_options(app, spec);
    // A bare --peer (last, or before another option) means the installed peer.
    std::vector<std::string> args = normalize_args(argc, argv);
    for (size_t i = 1; i < args.size(); ++i)
        if (args[i] == "--peer" &&
            (i + 1 == args.size() || (args[i + 1].size() > 1 && args[i + 1][0] == '-')))
            args[i] = "--peer=" + std::string(kInstalledPeer);
    const int st = parse_or_report(app, "bench", args);
    if (st >= 0) return st;
    if (spec_mode)
        return bench_spec_main(app, model_args, threads_arg, gen_arg, reps, spec_prompt, ctk_arg, ctv_arg,
                               spec);
    if (json) output = "json";
    if (peer_dir == kInstalledPeer) {
        peer_dir = bench::default_peer_dir();
        if (peer_dir.empty()) {
            std::fprintf(
                stderr,
                "lctx bench: --peer: no llama.cpp installed (run scripts/install-peer.sh --native, or "
                "scripts/install-peer.sh for the npm library)\n");
            return 1;
        }
    }

    const bool batched = !npp_arg.empty() || !ntg_arg.empty() || !npl_arg.empty() || pps || app.count("-c");
    if (batched) {
        for (const char *opt : {"-p", "-n", "--pg", "-d", "--embd", "--n-seq", "--bw-mib", "--no-peak"})
            if (app.count(opt)) {
                std::fprintf(stderr,
                             "lctx bench: %s does not apply to batched mode (-npp, -ntg, -npl, -pps)\n", opt);
                return 1;
            }
        if (output != "md" && output != "jsonl" && output != "json") {
            std::fprintf(stderr, "lctx bench: -o: batched mode writes md, json or jsonl, not '%s'\n",
                         output.c_str());
            return 1;
        }
        return run_batched(model_args, npp_arg.empty() ? "128" : npp_arg, ntg_arg.empty() ? "128" : ntg_arg,
                           npl_arg.empty() ? "1,2,4,8,16,32" : npl_arg, pps, ctx_size, threads_arg, batch_arg,
                           ubatch_arg, fa_arg, ctk_arg, ctv_arg, app.count("-r") ? reps : 1, output,
                           peer_dir);
    }

    std::vector<int> threads, prompts, gens, batches, ubatches, depths;
    struct ListArg {
        const char *name;
        const std::string &arg;
        int min;
        std::vector<int> *out;
    };
    for (const ListArg &l :
         {ListArg{"-t", threads_arg, 1, &threads}, ListArg{"-p", prompt_arg, 0, &prompts},
          ListArg{"-n", gen_arg, 0, &gens}, ListArg{"-b", batch_arg, 1, &batches},
          ListArg{"-ub", ubatch_arg, 1, &ubatches}, ListArg{"-d", depth_arg, 0, &depths}}) {
        if (!parse_int_list(l.arg, l.min, l.out)) {
            std::fprintf(stderr, "lctx bench: %s wants %s numbers separated by commas, not '%s'\n", l.name,
                         l.min > 0 ? "positive" : "non-negative", l.arg.c_str());
            return 1;
        }
    }
    // -fa, -ctk, -ctv: lists like the others; every combination runs (with each depth, so the loop below
    // keeps its shape).
    std::vector<int> fas;
    if (!parse_int_list(fa_arg, 0, &fas) ||
        std::any_of(fas.begin(), fas.end(), [](int v) { return v > 1; })) {
        std::fprintf(stderr, "lctx bench: -fa wants 0 or 1 separated by commas, not '%s'\n", fa_arg.c_str());
        return 1;
    }
    std::vector<GgmlType> types_k, types_v;
    if (!parse_cache_types(ctk_arg, ctv_arg, &types_k, &types_v) ||
        !attention_settings_ok(fas, types_k, types_v))
        return 1;
    struct Attn {
        bool fa;
        GgmlType k, v;
    };
    std::vector<std::pair<int, Attn>> depth_attns;  // (depth, attention setting), every combination
    for (int fa : fas)
        for (GgmlType k : types_k)
            for (GgmlType v : types_v)
                for (int depth : depths) depth_attns.push_back({depth, {fa != 0, k, v}});

    std::vector<Test> tests;
    for (int p : prompts)
        if (p > 0) tests.push_back({p, 0});
    for (int n : gens)
        if (n > 0) tests.push_back({0, n});
    for (const std::string &pg : pg_args) {
        std::vector<int> v;
        if (!parse_int_list(pg, 1, &v) || v.size() != 2) {
            std::fprintf(stderr, "lctx bench: -pg wants PP,TG (two positive numbers), not '%s'\n",
                         pg.c_str());
            return 1;
        }
        tests.push_back({v[0], v[1]});
    }
    if (tests.empty()) {
        std::fprintf(stderr, "lctx bench: nothing to do (-p 0 and -n 0, no -pg)\n");
        return 1;
    }
    if (reps < 1 || reps > 1000) {
        std::fprintf(stderr, "lctx bench: -r: %d is out of range (1 to 1000)\n", reps);
        return 1;
    }
    if (output != "md" && output != "csv" && output != "json" && output != "jsonl" && output != "sql") {
        std::fprintf(stderr, "lctx bench: -o: unknown format '%s' (md, csv, json, jsonl or sql)\n",
                     output.c_str());
        return 1;
    }
    if (!ngl_arg.empty()) {
        std::vector<int> ngl;
        if (!parse_int_list(ngl_arg, 0, &ngl)) {
            std::fprintf(stderr,
                         "lctx bench: -ngl wants non-negative numbers separated by commas, not '%s'\n",
                         ngl_arg.c_str());
            return 1;
        }
        std::fprintf(stderr, "lctx bench: note: -ngl ignored, lctx runs on the CPU\n");
    }
    if (!(bw_mib >= 0 && bw_mib <= 1 << 20)) {
        std::fprintf(stderr, "lctx bench: --bw-mib: out of range (0 to 1048576)\n");
        return 1;
    }

    // llama-bench runs each model (-m A -m B, or -m A,B) with every setting, in one table.
    std::vector<std::string> model_paths;
    if (!parse_model_list(model_args, &model_paths)) return 1;
    const std::vector<Test> all_tests = tests;
    const std::vector<int> prompt_sizes = prompts;
    // Per model below: embedding mode replaces the tests and the prompt sizes.
    const bool embd_flag = embd_opt;
    const bool tty = isatty(STDERR_FILENO);
    auto progress = [&](const char *engine, const std::string &test, int t, int rep) {
        if (!tty) return;
        if (rep == 0)
            std::fprintf(stderr, "\r\033[Kbench: %s %s t=%d warm-up", engine, test.c_str(), t);
        else
            std::fprintf(stderr, "\r\033[Kbench: %s %s t=%d rep %d/%d", engine, test.c_str(), t, rep, reps);
    };
    bench::ModelFacts peer_facts;
    bench::BuildInfo peer_build;
    std::vector<bench::Result> results;
    std::string md_notes;
    for (const std::string &model_path : model_paths) {
        std::unique_ptr<Model> model = load_model_or_report(model_path);
        if (!model) return 1;
        std::vector<Test> tests = all_tests;
        std::vector<int> prompts = prompt_sizes;
        bool embd = embd_flag;
        // An encoder-decoder (T5): every (-p, -n) pair is one test, an encode of -p tokens then -n decoder
        // steps, reported as two rows.
        const bool t5 = is_encoder_decoder(*model);
        if (t5) {
            if (embd_flag || !pg_args.empty() ||
                std::any_of(depth_attns.begin(), depth_attns.end(), [](const auto &d) { return d.first; })) {
                std::fprintf(
                    stderr,
                    "lctx bench: '%s' is an encoder-decoder model (%s): its mode measures the encoder "
                    "(-p) and the decoder (-n); --embd, --pg and -d do not apply\n",
                    model_path.c_str(), model->hparams().arch_name.c_str());
                return 1;
            }
            tests.clear();
            for (int p : prompts)
                for (int n : gens)
                    if (p > 0) tests.push_back({p, n, 0, true});
            if (tests.empty()) {
                std::fprintf(stderr, "lctx bench: an encoder-decoder model needs -p above 0\n");
                return 1;
            }
        }
        // An encoder that only gives embeddings has no generation to measure.
        const Family *family = find_family(model->hparams().arch);
        const bool has_encoder = family && family->encode;
        if (has_encoder && !model->weights().output.data && !t5) embd = true;
        if (embd && !has_encoder) {
            std::fprintf(stderr, "lctx bench: --embd: %s has no encoder pass (llama_encode) to measure\n",
                         model->hparams().arch_name.c_str());
            return 1;
        }
        if (embd) {
            std::vector<int> n_seqs;
            if (!parse_int_list(n_seq_arg, 1, &n_seqs)) {
                std::fprintf(stderr,
                             "lctx bench: --n-seq wants positive numbers separated by commas, not '%s'\n",
                             n_seq_arg.c_str());
                return 1;
            }
            if (app.count("-n") || !pg_args.empty() || app.count("-d")) {
                std::fprintf(
                    stderr,
                    "lctx bench: embedding mode measures llama_encode: -n, --pg and -d do not apply\n");
                return 1;
            }
            if (!app.count("-p")) prompts = {128};
            tests.clear();
            for (int ns : n_seqs)
                for (int p : prompts)
                    if (p > 0) tests.push_back({p, 0, ns});
            if (tests.empty()) {
                std::fprintf(stderr, "lctx bench: embedding mode needs -p above 0\n");
                return 1;
            }
            // lctx's encoder pass does not depend on -fa; llama.cpp's does, and its own default (-fa auto)
            // is flash attention on the CPU, without which its attention covers the whole batch.
            if (!peer_dir.empty() && std::none_of(depth_attns.begin(), depth_attns.end(),
                                                  [](const auto &d) { return d.second.fa; }))
                std::fprintf(
                    stderr,
                    "lctx bench: note: llama.cpp embeds with flash attention by default (its -fa "
                    "auto on the CPU), and at -fa 0 its attention covers every sequence of the batch: "
                    "compare embeddings with -fa 1\n");
        }
        const bench::ModelFacts facts = bench::model_facts(*model);
        const bench::ComputeFacts compute = bench::compute_facts(*model);
        // The best compute peak per thread count, probed at every prompt repetition.
        std::map<int, double> peak_by_threads;
        const size_t first_result = results.size();
        try {
            std::string peer_lib, peer_exe;
            if (!resolve_peer(peer_dir, &peer_lib, &peer_exe)) return 1;
            // One context (and peer process) per batch setting and test, sized for it, as llama-bench does.
            for (int n_batch : batches)
                for (int n_ubatch : ubatches)
                    for (const auto &depth_attn : depth_attns)
                        for (const Test &test : tests) {
                            // (not a structured binding: the lambdas below capture the depth, which clang 14
                            // refuses for bindings)
                            const int depth = depth_attn.first;
                            const auto &attn = depth_attn.second;
                            bench::Settings s;
                            s.flash_attn = attn.fa;
                            s.type_k = attn.k;
                            s.type_v = attn.v;
                            s.n_prompt = test.n_prompt;
                            s.n_gen = test.n_gen;
                            s.n_depth = depth;
                            s.reps = reps;
                            s.n_batch = static_cast<uint32_t>(n_batch);
                            s.n_ubatch = static_cast<uint32_t>(n_ubatch);
                            s.n_seq = test.n_seq;
                            s.t5 = test.t5;
                            std::unique_ptr<bench::PeerProcess> peer;
                            if (!peer_dir.empty()) {
                                peer =
                                    std::make_unique<bench::PeerProcess>(peer_exe, peer_lib, model_path, s);
                                peer_facts = peer->facts();
                                peer_build = peer->build();
                            }
                            bench::LctxRunner lctx_run(*model, s);
                            for (int t : threads) {
                                lctx_run.set_threads(t);
                                bench::Result base;
                                base.n_threads = t;
                                base.n_prompt = test.n_prompt;
                                base.n_gen = test.n_gen;
                                base.n_depth = depth;
                                base.n_seq = test.n_seq;
                                base.n_batch = s.eff_batch();  // what ran, not what was asked
                                base.n_ubatch = s.eff_ubatch();
                                base.test_time = bench::iso_time_now();
                                base.flash_attn = attn.fa;
                                base.type_k = type_name(attn.k);
                                base.type_v = type_name(attn.v);
                                bench::Result mine = base, theirs = base;
                                mine.engine = "lctx";
                                mine.model = facts;
                                theirs.engine = "llama.cpp";
                                theirs.model = peer_facts;
                                theirs.model.bytes_per_token = facts.bytes_per_token;  // same file
                                if (test.t5) {
                                    run_t5_test(lctx_run, peer.get(), test.n_prompt, test.n_gen, reps, mine,
                                                theirs, &results, progress);
                                    continue;
                                }
                                const std::string name = mine.test_name();
                                const bool is_tg = test.n_prompt == 0;
                                auto run_lctx = [&] {
                                    return test.n_seq > 0 ? lctx_run.run_embd()
                                                          : lctx_run.run_pg(test.n_prompt, test.n_gen, depth);
                                };
                                auto run_peer = [&] {
                                    return test.n_seq > 0 ? peer->run_embd(test.n_seq, test.n_prompt, t)
                                                          : peer->run_pg(test.n_prompt, test.n_gen, depth, t);
                                };
                                // One uncounted warm-up each, then the repetitions alternate engine by
                                // engine.
                                progress("lctx", name, t, 0);
                                run_lctx();
                                if (peer) {
                                    progress("llama.cpp", name, t, 0);
                                    run_peer();
                                }
                                // The bandwidth of a shared machine drifts over minutes: generation tests
                                // measure it next to every repetition and keep the mean, so that the limit
                                // belongs to the same minutes.
                                std::vector<double> bw;
                                const bool probe_peak = test.n_prompt > 0 && test.n_gen == 0 && !no_peak;
                                for (int rep = 1; rep <= reps; ++rep) {
                                    if (probe_peak) {
                                        // A shared machine's vector units come and go for tens of ms at a
                                        // time (one core's int8 peak read 62-100% of its best from call to
                                        // call): probed at every repetition, the best over the whole run
                                        // counts.
                                        if (tty)
                                            std::fprintf(stderr, "\r\033[Kbench: %s peak t=%d, %d/%d",
                                                         bench::peak_kind_name(compute.kind), t, rep, reps);
                                        double &peak = peak_by_threads[t];
                                        peak = std::max(peak, bench::compute_peak(compute.kind, t));
                                    }
                                    if (is_tg && bw_mib > 0) {
                                        if (tty)
                                            std::fprintf(stderr,
                                                         "\r\033[Kbench: memory bandwidth t=%d, %d/%d", t,
                                                         rep, reps);
                                        bw.push_back(bench::read_bandwidth(
                                            t, static_cast<size_t>(bw_mib * 1048576.0), 2));
                                    }
                                    progress("lctx", name, t, rep);
                                    mine.samples_ns.push_back(run_lctx());
                                    if (peer) {
                                        progress("llama.cpp", name, t, rep);
                                        theirs.samples_ns.push_back(run_peer());
                                    }
                                }
                                if (probe_peak) {
                                    mine.ops_per_token = theirs.ops_per_token =
                                        test.n_seq > 0
                                            ? bench::ops_per_encoded_token(compute, test.n_prompt)
                                            : bench::ops_per_prompt_token(compute, test.n_prompt, depth);
                                    mine.peak_kind = theirs.peak_kind = bench::peak_kind_name(compute.kind);
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
        // Every prompt row against the best peak its thread count reached over the model's run.
        for (size_t i = first_result; i < results.size(); ++i)
            if (results[i].ops_per_token > 0) results[i].peak_ops = peak_by_threads[results[i].n_threads];
        // The markdown's notes on this model, printed under the table.
        if (model_paths.size() > 1) appendf(&md_notes, "\n%s:", facts.filename.c_str());
        if (t5) {
            appendf(&md_notes,
                    "\nencP: P tokens in one llama_encode; decG @ eP: G decoder steps of one token after it, "
                    "from the decoder start token; lctx's kernels at the %s level\n",
                    kernels::isa_name(kernels::isa_active()));
        } else if (!embd) {
            appendf(&md_notes, "\nbytes read per generated token: %.2f MiB",
                    facts.bytes_per_token / 1048576.0);
            for (size_t i = first_result; i < results.size(); ++i) {
                const bench::Result &r = results[i];
                if (r.engine == "lctx" && r.n_gen > 0 && r.n_prompt == 0 && r.mem_bw > 0)
                    appendf(&md_notes, "; t=%d: read bandwidth %.1f GB/s, limit %.1f t/s", r.n_threads,
                            r.mem_bw / 1e9, r.mem_bw / static_cast<double>(facts.bytes_per_token));
            }
            appendf(&md_notes, "\n");
        } else {
            appendf(&md_notes,
                    "\nembdSxL: S sequences of L tokens in one llama_encode; t/s counts all S x L tokens\n");
        }
        if (!peak_by_threads.empty()) {
            // "% of peak" = pp t/s x operations per token / this peak (bench_roofline.h).
            appendf(&md_notes, "compute peak, %s at the %s level:", bench::peak_kind_name(compute.kind),
                    kernels::isa_name(kernels::isa_active()));
            for (const auto &[t, ops] : peak_by_threads) appendf(&md_notes, " t=%d %.1f G/s;", t, ops / 1e9);
            for (int p : prompts)
                if (p > 0)
                    appendf(&md_notes, " %s%d: %.3f G operations per token", embd ? "embd L=" : "pp", p,
                            (embd ? bench::ops_per_encoded_token(compute, p)
                                  : bench::ops_per_prompt_token(compute, p, 0)) /
                                1e9);
            appendf(&md_notes, "\n");
        }
    }

    if (output != "md") {
        const std::string cpu = bench::cpu_info();
        std::vector<nlohmann::ordered_json> rows;
        for (const bench::Result &r : results)
            rows.push_back(
                bench::to_json(r, r.engine == "lctx" ? bench::lctx_build_info() : peer_build, cpu));
        if (output == "json") {
            std::printf("%s\n", nlohmann::ordered_json(rows).dump(2).c_str());
        } else if (output == "jsonl") {
            for (const auto &r : rows) std::printf("%s\n", r.dump().c_str());
        } else if (output == "sql") {
            std::printf("%s", bench::sql(rows).c_str());
        } else {
            std::printf("%s", bench::csv(rows).c_str());
        }
    } else {
        std::printf("%s", bench::markdown(results).c_str());
        std::printf("%s", md_notes.c_str());
        if (!peer_dir.empty())
            std::printf("llama.cpp: %s (build %s)\n",
                        bench::describe_peer(bench::resolve_peer_lib_dir(peer_dir)).c_str(),
                        peer_build.commit.c_str());
    }
    if (!peer_dir.empty() && output != "md")
        std::fprintf(stderr, "lctx bench: llama.cpp: %s\n",
                     bench::describe_peer(bench::resolve_peer_lib_dir(peer_dir)).c_str());
    for (const std::string &w : bench::plausibility_warnings(results))
        std::fprintf(stderr, "lctx bench: warning: %s\n", w.c_str());
    return 0;
}

}  // namespace lctx::cli
