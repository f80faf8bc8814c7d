#include "bench_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "context/batch_builder.h"
#include "util/error.h"
#include "util/page_buffer.h"

namespace lctx::bench {

namespace {

uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// A tiny LCG for the token ids: the values do not matter, only that both engines see ordinary tokens.
int32_t next_token(uint64_t &state, int32_t n_vocab) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(n_vocab));
}

std::string fmt(const char *f, double a, double b = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, a, b);
    return buf;
}

std::string human_size(uint64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= 1024.0 * 1024 * 1024) return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
    if (b >= 1024.0 * 1024) return fmt("%.2f MiB", b / (1024.0 * 1024));
    return fmt("%.2f KiB", b / 1024.0);
}

std::string human_count(uint64_t n) {
    const double v = static_cast<double>(n);
    if (v >= 1e9) return fmt("%.2f B", v / 1e9);
    if (v >= 1e6) return fmt("%.2f M", v / 1e6);
    return fmt("%.2f K", v / 1e3);
}

}  // namespace

uint64_t bytes_per_token(const gguf::File &file) {
    uint64_t total = 0;
    const gguf::TensorInfo *embd = nullptr;
    bool has_output = false;
    for (const gguf::TensorInfo &t : file.tensors()) {
        if (t.name == "token_embd.weight") {
            embd = &t;
            continue;
        }
        if (t.name == "output.weight") has_output = true;
        total += t.nbytes;
    }
    if (embd) total += has_output ? row_size(embd->type, embd->ne[0]) : embd->nbytes;
    return total;
}

ModelFacts model_facts(const Model &model) {
    ModelFacts f;
    f.filename = model.path();
    f.type = model.description();
    f.size = model.size_bytes();
    f.n_params = model.n_params();
    f.bytes_per_token = bytes_per_token(model.file());
    f.n_vocab = static_cast<int32_t>(model.hparams().n_vocab);
    return f;
}

LctxRunner::LctxRunner(const Model &model, const Settings &s) : model_(model), s_(s), rng_(s.seed) {
    ContextParams cp;
    cp.n_ctx = s.n_ctx();
    cp.n_batch = s.eff_batch();
    cp.n_ubatch = s.eff_ubatch();
    cp.type_k = s.type_k;
    cp.type_v = s.type_v;
    cp.flash_attn = s.flash_attn;
    cp.no_perf = true;
    if (s.n_seq > 0) {  // the model's pooling, as llama.cpp's context takes it unless told otherwise
        cp.embeddings = true;
        cp.n_seq_max = static_cast<uint32_t>(s.n_seq);
        const int32_t p = model.hparams().pooling_type;
        cp.pooling = p >= 0 && p <= 4 ? static_cast<PoolingType>(p) : PoolingType::None;
    }
    ctx_ = std::make_unique<Context>(model, cp);
}

void LctxRunner::set_threads(int n_threads) {
    ctx_->set_n_threads(n_threads, n_threads);
}

void LctxRunner::decode_or_throw(const Batch &b) {
    const DecodeStatus st = ctx_->decode(b);
    if (st != DecodeStatus::Ok)
        throw Error("lctx decode failed with status " + std::to_string(static_cast<int>(st)));
    tokens_decoded_ += b.n_tokens;
}

void LctxRunner::fill_prompt(int n, int pos0) {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    tokens_.resize(static_cast<size_t>(n));
    pos_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        tokens_[static_cast<size_t>(i)] = next_token(rng_, n_vocab);
        pos_[static_cast<size_t>(i)] = pos0 + i;
    }
}

void LctxRunner::decode_prompt(int n) {
    const int step = static_cast<int>(s_.eff_batch());
    for (int i = 0; i < n; i += step) {
        Batch b;
        b.n_tokens = std::min(step, n - i);
        b.token = tokens_.data() + i;
        b.pos = pos_.data() + i;
        decode_or_throw(b);  // null logits flags: only the last token gives an output, like llama-bench
    }
}

uint64_t LctxRunner::run_pg(int n_pp, int n_tg, int depth) {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    if (static_cast<uint32_t>(depth + n_pp + n_tg) > ctx_->params().n_ctx)
        throw Error("bench test of " + std::to_string(depth + n_pp + n_tg) +
                    " tokens exceeds the context of " + std::to_string(ctx_->params().n_ctx));
    // (a recurrent state cannot drop the last test's tokens: it starts over)
    if (depth > 0 && depth == kept_depth_ && ctx_->kv().seq_rm(0, depth, -1)) {
        // the depth is in place
    } else {
        ctx_->kv().clear();
        kept_depth_ = 0;
        if (depth > 0) {  // untimed
            fill_prompt(depth, 0);
            decode_prompt(depth);
            kept_depth_ = depth;
        }
    }
    fill_prompt(n_pp, depth);
    const uint64_t t0 = now_ns();
    decode_prompt(n_pp);
    for (int i = 0; i < n_tg; ++i) {
        const int32_t tok = next_token(rng_, n_vocab);
        int32_t pos = depth + n_pp + i;
        Batch b;
        b.n_tokens = 1;
        b.token = &tok;
        b.pos = &pos;
        decode_or_throw(b);
    }
    return now_ns() - t0;
}

uint64_t LctxRunner::run_embd() {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    const int n = s_.n_seq * s_.n_prompt;
    BatchBuilder bb;  // n_seq sequences of n_prompt random tokens
    for (int i = 0; i < n; ++i) bb.add(next_token(rng_, n_vocab), i % s_.n_prompt, i / s_.n_prompt, true);
    const Batch b = bb.view();
    const uint64_t t0 = now_ns();
    const DecodeStatus st = ctx_->encode(b);
    const uint64_t ns = now_ns() - t0;
    if (st != DecodeStatus::Ok)
        throw Error("lctx encode failed with status " + std::to_string(static_cast<int>(st)));
    return ns;
}

std::pair<uint64_t, uint64_t> LctxRunner::run_t5() {
    const int32_t n_vocab = static_cast<int32_t>(model_.hparams().n_vocab);
    BatchBuilder bb;  // the encoder's tokens, every row an output (the decoder reads them all)
    for (int i = 0; i < s_.n_prompt; ++i) bb.add(next_token(rng_, n_vocab), i, 0, true);
    ctx_->kv().clear();
    const uint64_t t0 = now_ns();
    const DecodeStatus st = ctx_->encode(bb.view());
    const uint64_t t1 = now_ns();
    if (st != DecodeStatus::Ok)
        throw Error("lctx encode failed with status " + std::to_string(static_cast<int>(st)));
    int32_t tok = model_.hparams().dec_start_token >= 0 ? model_.hparams().dec_start_token : 0;
    for (int i = 0; i < s_.n_gen; ++i) {
        int32_t pos = i;
        Batch b;
        b.n_tokens = 1;
        b.token = &tok;
        b.pos = &pos;
        decode_or_throw(b);
        tok = next_token(rng_, n_vocab);
    }
    return {t1 - t0, now_ns() - t1};
}

double read_bandwidth(int n_threads, size_t bytes, int passes) {
    // 16-byte vectors (SSE2, the x86-64 baseline): four independent sums keep the loads in flight, and a
    // software prefetch 1 KiB ahead adds the misses one core's hardware prefetcher does not start (10-20%
    // more on one thread here; the matrix-vector kernels prefetch too, so without it the limit is too low).
    typedef uint64_t v2u __attribute__((vector_size(16)));
    // The buffer lives in huge pages like the repacked weights, so the limit is measured on the same kind of
    // memory the weights are read from.
    static PageBuffer mem;
    const size_t n = bytes / sizeof(v2u);
    if (mem.size() != n * sizeof(v2u)) {
        mem = PageBuffer(n * sizeof(v2u));
        v2u *w = reinterpret_cast<v2u *>(mem.data());
        for (size_t i = 0; i < n; ++i)
            w[i] = v2u{1, 2};  // touching every page makes it resident before timing
    }
    const v2u *buf = reinterpret_cast<const v2u *>(mem.data());
    n_threads = std::max(1, n_threads);
    std::vector<uint64_t> sink(static_cast<size_t>(n_threads));
    double best = 0;
    for (int pass = 0; pass < passes; ++pass) {
        auto reader = [&](int ith) {
            const size_t per = (n / n_threads) & ~size_t{3};
            const v2u *p = buf + per * ith;
            v2u a{0, 0}, b{0, 0}, c{0, 0}, d{0, 0};
            for (size_t i = 0; i < per; i += 4) {
                __builtin_prefetch(p + i + 64);
                a += p[i];
                b += p[i + 1];
                c += p[i + 2];
                d += p[i + 3];
            }
            const v2u s = a + b + c + d;
            sink[ith] = s[0] + s[1];
        };
        const uint64_t t0 = now_ns();
        std::vector<std::thread> pool;
        for (int i = 1; i < n_threads; ++i) pool.emplace_back(reader, i);
        reader(0);
        for (std::thread &t : pool) t.join();
        const double secs = static_cast<double>(now_ns() - t0) * 1e-9;
        const size_t read = ((n / n_threads) & ~size_t{3}) * n_threads * sizeof(v2u);
        best = std::max(best, static_cast<double>(read) / secs);
    }
    volatile uint64_t keep = 0;  // the sums must be used or the loop disappears
    for (uint64_t s : sink) keep = keep + s;
    return best;
}

Stats compute_stats(const std::vector<uint64_t> &samples_ns, int n_tokens) {
    Stats st;
    const size_t k = samples_ns.size();
    if (k == 0) return st;
    std::vector<double> ts;
    for (uint64_t ns : samples_ns) {
        st.avg_ns += static_cast<double>(ns);
        ts.push_back(ns > 0 ? 1e9 * n_tokens / static_cast<double>(ns) : 0.0);
    }
    st.avg_ns /= static_cast<double>(k);
    for (double t : ts) st.avg_ts += t;
    st.avg_ts /= static_cast<double>(k);
    if (k > 1) {
        double vn = 0, vt = 0;
        for (size_t i = 0; i < k; ++i) {
            vn += (samples_ns[i] - st.avg_ns) * (samples_ns[i] - st.avg_ns);
            vt += (ts[i] - st.avg_ts) * (ts[i] - st.avg_ts);
        }
        st.stddev_ns = std::sqrt(vn / static_cast<double>(k - 1));
        st.stddev_ts = std::sqrt(vt / static_cast<double>(k - 1));
    }
    return st;
}

std::string Result::test_name() const {
    if (n_seq > 0) return "embd" + std::to_string(n_seq) + "x" + std::to_string(n_prompt);
    if (t5_part == 1) return "enc" + std::to_string(n_prompt);
    if (t5_part == 2) return "dec" + std::to_string(n_gen) + " @ e" + std::to_string(n_prompt);
    const std::string depth = n_depth > 0 ? " @ d" + std::to_string(n_depth) : "";
    if (n_prompt > 0 && n_gen == 0) return "pp" + std::to_string(n_prompt) + depth;
    if (n_gen > 0 && n_prompt == 0) return "tg" + std::to_string(n_gen) + depth;
    return "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen) + depth;
}

BuildInfo lctx_build_info() {
    BuildInfo b;
#ifdef LCTX_BUILD_COMMIT
    b.commit = LCTX_BUILD_COMMIT;
#endif
#ifdef LCTX_BUILD_NUMBER
    b.number = LCTX_BUILD_NUMBER;
#endif
    return b;
}

std::string cpu_info() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) {
                size_t b = colon + 1;
                while (b < line.size() && line[b] == ' ') ++b;
                return line.substr(b);
            }
        }
    return "unknown";
}

std::string iso_time_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

nlohmann::ordered_json to_json(const Result &r, const BuildInfo &build, const std::string &cpu) {
    const Stats st = compute_stats(r.samples_ns, r.n_tokens());
    std::vector<double> samples_ts;
    for (uint64_t ns : r.samples_ns)
        samples_ts.push_back(ns > 0 ? 1e9 * r.n_tokens() / static_cast<double>(ns) : 0.0);
    nlohmann::ordered_json j = {
        {"build_commit", build.commit},
        {"build_number", build.number},
        {"cpu_info", cpu},
        {"gpu_info", ""},
        {"backends", "CPU"},
        {"model_filename", r.model.filename},
        {"model_type", r.model.type},
        {"model_size", r.model.size},
        {"model_n_params", r.model.n_params},
        {"n_batch", r.n_batch},
        {"n_ubatch", r.n_ubatch},
        {"n_threads", r.n_threads},
        {"cpu_mask", "0x0"},
        {"cpu_strict", false},
        {"poll", 50},
        {"type_k", r.type_k},
        {"type_v", r.type_v},
        {"n_gpu_layers", 0},
        {"split_mode", "layer"},
        {"main_gpu", 0},
        {"no_kv_offload", false},
        {"flash_attn", r.flash_attn},
        {"tensor_split", "0.00"},
        {"use_mmap", true},
        {"embeddings", r.n_seq > 0},
        {"n_prompt", r.n_prompt},
        {"n_gen", r.n_gen},
        {"n_depth", r.n_depth},
        {"test_time", r.test_time},
        {"avg_ns", static_cast<uint64_t>(std::llround(st.avg_ns))},
        {"stddev_ns", static_cast<uint64_t>(std::llround(st.stddev_ns))},
        {"avg_ts", st.avg_ts},
        {"stddev_ts", st.stddev_ts},
        {"samples_ns", r.samples_ns},
        {"samples_ts", samples_ts},
        {"engine", r.engine},
    };
    if (r.n_seq > 0) j["n_seq"] = r.n_seq;
    if (r.t5_part) j["t5_part"] = r.t5_part == 1 ? "encoder" : "decoder";
    if (r.n_gen > 0 && r.n_prompt == 0) {
        const double gbps = st.avg_ts * static_cast<double>(r.model.bytes_per_token) / 1e9;
        j["bytes_per_token"] = r.model.bytes_per_token;
        j["gbps"] = gbps;
        if (r.mem_bw > 0) {
            const double limit = r.mem_bw / static_cast<double>(r.model.bytes_per_token);
            j["mem_bw_gbps"] = r.mem_bw / 1e9;
            j["limit_ts"] = limit;
            j["frac_of_limit"] = st.avg_ts / limit;
        }
    }
    if (r.n_prompt > 0 && r.n_gen == 0 && r.peak_ops > 0) {
        j["ops_per_token"] = r.ops_per_token;
        j["peak_kind"] = r.peak_kind;
        j["peak_ops"] = r.peak_ops;
        j["frac_of_peak"] = st.avg_ts * r.ops_per_token / r.peak_ops;
    }
    return j;
}

std::string markdown(const std::vector<Result> &results) {
    // The attention columns only when a result is not at llama-bench's defaults, as llama-bench adds them.
    bool attn_cols = false;
    for (const Result &r : results)
        attn_cols = attn_cols || r.flash_attn || r.type_k != "f16" || r.type_v != "f16";
    auto attn_label = [](const Result &r) {
        return " (fa " + std::to_string(r.flash_attn ? 1 : 0) + ", type_k " + r.type_k + ", type_v " +
               r.type_v + ")";
    };
    std::string out = std::string("| model | size | params | backend | threads | n_batch | n_ubatch | ") +
                      (attn_cols ? "type_k | type_v | fa | " : "") +
                      "test | t/s | engine | GB/s | % of limit | % of peak |\n"
                      "| --- | ---: | ---: | --- | ---: | ---: | ---: | " +
                      (attn_cols ? "--- | --- | ---: | " : "") + "---: | ---: | --- | ---: | ---: | ---: |\n";
    // (test, threads, n_batch, n_ubatch, attention setting) -> engine -> mean t/s, for the ratio lines
    std::map<std::tuple<std::string, int, uint32_t, uint32_t, std::string>, std::map<std::string, double>>
        means;
    std::map<std::pair<std::string, int>, std::set<std::pair<uint32_t, uint32_t>>> batches;
    for (const Result &r : results) {
        const Stats st = compute_stats(r.samples_ns, r.n_tokens());
        std::string gbps = "-", frac = "-", peak = "-";
        if (r.n_prompt > 0 && r.n_gen == 0 && r.peak_ops > 0)
            peak = fmt("%.1f%%", 100.0 * st.avg_ts * r.ops_per_token / r.peak_ops);
        if (r.n_gen > 0 && r.n_prompt == 0) {
            gbps = fmt("%.2f", st.avg_ts * static_cast<double>(r.model.bytes_per_token) / 1e9);
            if (r.mem_bw > 0)
                frac = fmt("%.1f%%",
                           100.0 * st.avg_ts * static_cast<double>(r.model.bytes_per_token) / r.mem_bw);
        }
        out += "| " + r.model.type + " | " + human_size(r.model.size) + " | " +
               human_count(r.model.n_params) + " | CPU | " + std::to_string(r.n_threads) + " | " +
               std::to_string(r.n_batch) + " | " + std::to_string(r.n_ubatch) + " | " +
               (attn_cols ? r.type_k + " | " + r.type_v + " | " + (r.flash_attn ? "1" : "0") + " | " : "") +
               r.test_name() + " | " + fmt("%.2f ± %.2f", st.avg_ts, st.stddev_ts) + " | " + r.engine +
               " | " + gbps + " | " + frac + " | " + peak + " |\n";
        means[{r.test_name(), r.n_threads, r.n_batch, r.n_ubatch, attn_cols ? attn_label(r) : ""}][r.engine] =
            st.avg_ts;
        batches[{r.test_name(), r.n_threads}].insert({r.n_batch, r.n_ubatch});
    }
    std::string ratios;
    for (const auto &[key, by_engine] : means) {
        const auto &[test, threads, n_batch, n_ubatch, attn] = key;
        const auto a = by_engine.find("lctx"), b = by_engine.find("llama.cpp");
        if (a == by_engine.end() || b == by_engine.end() || b->second <= 0) continue;
        // The batch sizes only when this test ran with several.
        const std::string batch =
            batches[{test, threads}].size() > 1
                ? " (n_batch " + std::to_string(n_batch) + ", n_ubatch " + std::to_string(n_ubatch) + ")"
                : "";
        ratios += test + " @ " + std::to_string(threads) + " threads" + batch + attn +
                  ": lctx/llama.cpp = " + fmt("%.2f", a->second / b->second) + "\n";
    }
    if (!ratios.empty()) out += "\n" + ratios;
    return out;
}

namespace {

// A field as text for CSV and SQL: a string as it is, an array's values separated by spaces, else its JSON.
std::string field_text(const nlohmann::ordered_json &v) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) return v.dump();
    std::string s;
    for (const auto &x : v) s += (s.empty() ? "" : " ") + x.dump();
    return s;
}

// `s` between quote characters `q`, each q inside doubled (CSV's and SQL's escape).
std::string quoted(const std::string &s, char q) {
    std::string out(1, q);
    for (char c : s) {
        out += c;
        if (c == q) out += c;
    }
    return out + q;
}

}  // namespace

std::string csv(const std::vector<nlohmann::ordered_json> &rows) {
    if (rows.empty()) return "";
    auto cell = [](const nlohmann::ordered_json &v) { return quoted(field_text(v), '"'); };
    std::string out;
    for (auto it = rows.front().begin(); it != rows.front().end(); ++it)
        out += (it == rows.front().begin() ? "" : ",") + it.key();
    out += "\n";
    for (const nlohmann::ordered_json &r : rows) {
        bool first = true;
        for (auto it = rows.front().begin(); it != rows.front().end(); ++it) {
            out += (first ? "" : ",") + (r.contains(it.key()) ? cell(r[it.key()]) : std::string("\"\""));
            first = false;
        }
        out += "\n";
    }
    return out;
}

std::string sql(const std::vector<nlohmann::ordered_json> &rows) {
    if (rows.empty()) return "";
    // The columns: every field of every row, in the order first seen; the type from its first value.
    std::vector<std::string> cols;
    std::map<std::string, std::string> types;
    for (const nlohmann::ordered_json &r : rows)
        for (auto it = r.begin(); it != r.end(); ++it) {
            if (types.count(it.key())) continue;
            const nlohmann::ordered_json &v = it.value();
            cols.push_back(it.key());
            types[it.key()] = v.is_boolean() || v.is_number_integer() ? "INTEGER"
                              : v.is_number_float()                   ? "REAL"
                                                                      : "TEXT";
        }
    auto value = [](const nlohmann::ordered_json &v) {
        if (v.is_boolean()) return std::string(v.get<bool>() ? "1" : "0");
        if (v.is_number()) return v.dump();
        return quoted(field_text(v), '\'');
    };
    std::string out = "CREATE TABLE IF NOT EXISTS test (\n";
    for (size_t i = 0; i < cols.size(); ++i)
        out += "  " + cols[i] + " " + types[cols[i]] + (i + 1 < cols.size() ? ",\n" : "\n");
    out += ");\n\n";
    std::string names;
    for (size_t i = 0; i < cols.size(); ++i) names += (i ? ", " : "") + cols[i];
    for (const nlohmann::ordered_json &r : rows) {
        out += "INSERT INTO test (" + names + ") VALUES (";
        for (size_t i = 0; i < cols.size(); ++i)
            out += (i ? ", " : "") + (r.contains(cols[i]) ? value(r[cols[i]]) : std::string("NULL"));
        out += ");\n";
    }
    return out;
}

std::vector<std::string> plausibility_warnings(const std::vector<Result> &results) {
    std::vector<std::string> w;
    auto label = [](const Result &r) {
        return r.engine + " " + r.test_name() + " @ " + std::to_string(r.n_threads) + " threads";
    };
    for (const Result &r : results) {
        const size_t n = r.samples_ns.size();
        if (n >= 3) {
            if (compute_stats(r.samples_ns, r.n_tokens()).stddev_ns == 0.0)
                w.push_back(label(r) + ": all " + std::to_string(n) +
                            " runs took exactly the same time (is the timer working?)");
            std::vector<uint64_t> sorted = r.samples_ns;
            std::sort(sorted.begin(), sorted.end());
            const double median = static_cast<double>(sorted[n / 2]);
            const double slowest = static_cast<double>(sorted.back());
            if (median > 0 && slowest > 2.0 * median)
                w.push_back(label(r) + ": one run took " + fmt("%.1f", slowest / median) +
                            "x the median (a busy machine? rerun with more -r)");
        }
    }
    for (const Result &a : results) {
        if (a.engine != "lctx") continue;
        for (const Result &b : results) {
            if (b.engine != "llama.cpp" || b.test_name() != a.test_name() || b.n_threads != a.n_threads ||
                b.n_batch != a.n_batch || b.n_ubatch != a.n_ubatch || b.flash_attn != a.flash_attn ||
                b.type_k != a.type_k || b.type_v != a.type_v)
                continue;
            const double ta = compute_stats(a.samples_ns, a.n_tokens()).avg_ts;
            const double tb = compute_stats(b.samples_ns, b.n_tokens()).avg_ts;
            if (ta <= 0 || tb <= 0) continue;
            const double ratio = ta / tb;
            if (ratio > 20.0 || ratio < 1.0 / 20.0)
                w.push_back(a.test_name() + " @ " + std::to_string(a.n_threads) +
                            " threads: lctx/llama.cpp = " + fmt("%.2f", ratio) +
                            " is implausible (a broken or mismatched peer build?)");
        }
    }
    return w;
}

std::string check_attention_setting(bool flash_attn, GgmlType type_k, GgmlType type_v) {
    for (GgmlType t : {type_k, type_v})
        if (!is_kv_cache_type(t))
            return std::string("KV cache type ") + type_name(t) + " is not a KV cache type (" +
                   kKvCacheTypeNames + ")";
    // as b4748's llama_init_from_model (llama-bench then stops with "failed to create context")
    if (!flash_attn && type_traits(type_v).is_quantized)
        return std::string("-fa 0 with -ctv ") + type_name(type_v) +
               ": V cache quantization requires flash_attn (use -fa 1)";
    return "";
}

}  // namespace lctx::bench
