#include "bench_batched.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <tuple>

#include "context/batch_builder.h"
#include "kernels/dot.h"
#include "util/error.h"

namespace lctx::bench {

namespace {

uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int32_t next_token(uint64_t &state, int32_t n_vocab) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(n_vocab));
}

std::string printf_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

}  // namespace

int64_t batched_n_kv(int pp, int tg, int pl, bool shared_prompt) {
    return shared_prompt ? int64_t{pp} + int64_t{pl} * tg : int64_t{pl} * (int64_t{pp} + tg);
}

BatchedRunner::BatchedRunner(const Model &model, const BatchedSettings &s)
    : model_(model), s_(s), rng_(s.seed) {
    ContextParams cp;
    cp.n_ctx = std::max<uint32_t>(1, s.n_ctx);
    cp.n_batch = std::min(s.n_batch, cp.n_ctx);
    cp.n_ubatch = std::min(s.n_ubatch, cp.n_batch);
    cp.n_seq_max = std::max<uint32_t>(1, s.n_seq_max);
    cp.type_k = s.type_k;
    cp.type_v = s.type_v;
    cp.flash_attn = s.flash_attn;
    cp.no_perf = true;
    ctx_ = std::make_unique<Context>(model, cp);
    ctx_->kv().set_place_by_sequence(true);
}

void BatchedRunner::set_threads(int n_threads) {
    ctx_->set_n_threads(n_threads, n_threads);
}

void BatchedRunner::decode_or_throw(const Batch &b) {
    const DecodeStatus st = ctx_->decode(b);
    if (st != DecodeStatus::Ok)
        throw Error("lctx decode failed with status " + std::to_string(static_cast<int>(st)));
}

void BatchedRunner::warm_up() {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    ctx_->kv().clear();
    BatchBuilder bb;
    const int n = static_cast<int>(std::min<uint32_t>(16, ctx_->params().n_batch));
    for (int i = 0; i < n; ++i) bb.add(next_token(rng_, n_vocab), i, 0, i == n - 1);
    decode_or_throw(bb.view());
    ctx_->kv().clear();
}

BatchedRow BatchedRunner::run(int pp, int tg, int pl, bool shared_prompt) {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    BatchedRow row;
    row.pp = pp;
    row.tg = tg;
    row.pl = pl;
    row.n_kv = batched_n_kv(pp, tg, pl, shared_prompt);
    if (pl < 1 || static_cast<uint32_t>(pl) > ctx_->params().n_seq_max)
        throw Error("batched bench: " + std::to_string(pl) + " sequences, the context holds " +
                    std::to_string(ctx_->params().n_seq_max));
    if (row.n_kv > ctx_->params().n_ctx)
        throw Error("batched bench: PP " + std::to_string(pp) + ", TG " + std::to_string(tg) + ", B " +
                    std::to_string(pl) + " needs " + std::to_string(row.n_kv) + " cells, the context has " +
                    std::to_string(ctx_->params().n_ctx));
    ctx_->kv().clear();
    // The prompts, every sequence's tokens after each other, the last token of each with an output.
    BatchBuilder prompt;
    const int n_prompts = shared_prompt ? 1 : pl;
    for (int j = 0; j < n_prompts; ++j)
        for (int i = 0; i < pp; ++i) prompt.add(next_token(rng_, n_vocab), i, j, i == pp - 1);
    const Batch all = prompt.view();
    const int step = static_cast<int>(ctx_->params().n_batch);
    const double c0 = cpu_seconds();
    const uint64_t t0 = now_ns();
    for (int i = 0; i < all.n_tokens; i += step) {
        Batch b = all;
        b.n_tokens = std::min(step, all.n_tokens - i);
        b.token += i;
        b.pos += i;
        b.n_seq_id += i;
        b.seq_id += i;
        b.logits += i;
        decode_or_throw(b);
    }
    if (shared_prompt)
        for (int j = 1; j < pl; ++j) ctx_->kv().seq_cp(0, j, -1, -1);
    const uint64_t t1 = now_ns();
    const double c1 = cpu_seconds();
    BatchBuilder gen;
    for (int i = 0; i < tg; ++i) {
        gen.clear();
        for (int j = 0; j < pl; ++j) gen.add(next_token(rng_, n_vocab), pp + i, j, true);
        decode_or_throw(gen.view());
    }
    const uint64_t t2 = now_ns();
    const double c2 = cpu_seconds();
    row.cpu_pp = c1 - c0;
    row.cpu_tg = c2 - c1;
    row.t_pp = static_cast<double>(t1 - t0) / 1e9;
    row.t_tg = static_cast<double>(t2 - t1) / 1e9;
    return row;
}

std::string batched_header(const BatchedSettings &s, int n_threads, bool shared_prompt, uint32_t n_ctx) {
    return printf_string(
        "main: n_kv_max = %u, n_batch = %u, n_ubatch = %u, flash_attn = %d, is_pp_shared = %d, n_threads = "
        "%d, "
        "type_k = %s, type_v = %s, isa = %s\n",
        n_ctx, s.n_batch, s.n_ubatch, s.flash_attn ? 1 : 0, shared_prompt ? 1 : 0, n_threads,
        type_name(s.type_k), type_name(s.type_v), kernels::isa_name(kernels::isa_active()));
}

std::string batched_table_head(bool engine_column) {
    return std::string(
               "\n|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s "
               "|    S t/s | S_PP/seq | S_TG/seq |") +
           (engine_column ? " engine    |" : "") +
           "\n|-------|--------|------|--------|----------|----------|----------|----------|----------|------"
           "--"
           "--|----------|----------|" +
           (engine_column ? "-----------|" : "") + "\n";
}

std::string batched_table_row(const BatchedRow &r, bool shared_prompt, const char *engine) {
    const double pp_seq = r.t_pp > 0 ? r.pp / r.t_pp : 0;  // each sequence's prompt came in T_PP
    const double tg_seq = r.t_tg > 0 ? r.tg / r.t_tg : 0;
    std::string row = printf_string(
        "| %5d | %6d | %4d | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f | %8.2f | %8.2f |", r.pp,
        r.tg, r.pl, static_cast<long long>(r.n_kv), r.t_pp, r.s_pp(shared_prompt), r.t_tg, r.s_tg(),
        r.t_pp + r.t_tg, r.s_total(), pp_seq, tg_seq);
    if (engine) row += printf_string(" %-9s |", engine);
    return row + "\n";
}

std::string batched_ratio_line(const BatchedRow &mine, const BatchedRow &theirs, bool shared_prompt) {
    auto ratio = [](double a, double b) { return b > 0 ? printf_string("%.2fx", a / b) : std::string("-"); };
    return printf_string("PP %d, TG %d, B %d: lctx / llama.cpp S_PP %s, S_TG %s, S %s\n", mine.pp, mine.tg,
                         mine.pl, ratio(mine.s_pp(shared_prompt), theirs.s_pp(shared_prompt)).c_str(),
                         mine.tg > 0 ? ratio(mine.s_tg(), theirs.s_tg()).c_str() : "-",
                         ratio(mine.s_total(), theirs.s_total()).c_str());
}

std::string batched_ratio_warning(const BatchedRow &mine, const BatchedRow &theirs, bool shared_prompt,
                                  int n_threads) {
    std::string w;
    for (auto [name, a, b] : {std::tuple{"S_PP", mine.s_pp(shared_prompt), theirs.s_pp(shared_prompt)},
                              std::tuple{"S_TG", mine.s_tg(), theirs.s_tg()}}) {
        if (a <= 0 || b <= 0 || (a / b <= 20.0 && a / b >= 1.0 / 20.0)) continue;
        w += printf_string(
            "%sPP %d, TG %d, B %d @ %d threads: lctx / llama.cpp %s = %.2f is implausible (a broken "
            "or mismatched peer, or a busy machine?)",
            w.empty() ? "" : "\n", mine.pp, mine.tg, mine.pl, n_threads, name, a / b);
    }
    return w;
}

nlohmann::ordered_json batched_json(const BatchedRow &r, const BatchedSettings &s, int n_threads,
                                    bool shared_prompt, uint32_t n_ctx) {
    nlohmann::ordered_json j;
    j["engine"] = "lctx";
    j["n_kv_max"] = n_ctx;
    j["n_batch"] = s.n_batch;
    j["n_ubatch"] = s.n_ubatch;
    j["flash_attn"] = s.flash_attn ? 1 : 0;
    j["is_pp_shared"] = shared_prompt ? 1 : 0;
    j["n_threads"] = n_threads;
    j["type_k"] = type_name(s.type_k);
    j["type_v"] = type_name(s.type_v);
    j["isa"] = kernels::isa_name(kernels::isa_active());
    j["pp"] = r.pp;
    j["tg"] = r.tg;
    j["pl"] = r.pl;
    j["n_kv"] = r.n_kv;
    j["t_pp"] = r.t_pp;
    j["speed_pp"] = r.s_pp(shared_prompt);
    j["t_tg"] = r.t_tg;
    j["speed_tg"] = r.s_tg();
    j["t"] = r.t_pp + r.t_tg;
    j["speed"] = r.s_total();
    j["speed_pp_per_seq"] = r.t_pp > 0 ? r.pp / r.t_pp : 0;
    j["speed_tg_per_seq"] = r.t_tg > 0 ? r.tg / r.t_tg : 0;
    j["cpu_pp"] = r.cpu_pp;
    j["cpu_tg"] = r.cpu_tg;
    return j;
}

}  // namespace lctx::bench
