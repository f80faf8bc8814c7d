#include "bench_peer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "kernels/dot.h"
#include "util/error.h"

namespace lctx::bench {

namespace fs = std::filesystem;

std::string resolve_peer_lib_dir(const std::string &dir) {
    std::error_code ec;
    const fs::path d(dir);
    // the npm package of this machine's architecture (linux-arm64 on ARM64)
#if defined(__aarch64__)
    const char *platform = "linux-arm64";
#else
    const char *platform = "linux-x64";
#endif
    for (const fs::path &p :
         {d, d / "node_modules" / "@node-llama-cpp" / platform / "bins" / platform, d / "bins" / platform})
        for (const char *lib : {"libllama.so", "libllama.v0.5.0.so"})
            if (fs::exists(p / lib, ec)) return p.string();
    return "";
}

namespace {
fs::path cache_dir() {
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    if (xdg && *xdg) return fs::path(xdg) / "lctx";
    return fs::path(home && *home ? home : "/tmp") / ".cache" / "lctx";
}
}  // namespace

std::string default_peer_dir() {
    // With the kernels capped below AVX-512 (LCTX_ISA=avx2), the fair peer is llama.cpp built for AVX2 too
    // (install-peer.sh --native-avx2), when it is there.
    std::vector<fs::path> dirs;
    if (!kernels::isa_at_least(kernels::isa_active(), kernels::Isa::Avx512) &&
        kernels::isa_at_least(kernels::isa_detected(), kernels::Isa::Avx512))
        dirs.push_back(cache_dir() / "peer-avx2" / "build" / "bin");
    dirs.push_back(cache_dir() / "peer-native" / "build" / "bin");
    dirs.push_back(cache_dir() / "peer");
    for (const fs::path &d : dirs) {
        const std::string lib = resolve_peer_lib_dir(d.string());
        if (!lib.empty()) return lib;
    }
    return "";
}

std::string describe_peer(const std::string &lib_dir) {
    // install-peer.sh --native leaves its description two levels up (DIR/build/bin -> DIR/lctx-peer-native).
    std::ifstream in(fs::path(lib_dir).parent_path().parent_path() / "lctx-peer-native");
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line + " in " + lib_dir;
    if (lib_dir.find("@node-llama-cpp") != std::string::npos)
        return std::string("llama.cpp's prebuilt npm library (@node-llama-cpp/") +
               (lib_dir.find("linux-arm64") != std::string::npos ? "linux-arm64" : "linux-x64") + ") in " +
               lib_dir;
    return "libllama in " + lib_dir;
}

std::string find_peer_binary() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return "";
    const fs::path p = exe.parent_path() / "lctx-peer-bench";
    return fs::exists(p, ec) ? p.string() : "";
}

std::string peer_isa_level(const std::string &cpu_features) {
    std::vector<std::string> have;
    std::string word;
    for (size_t i = 0; i <= cpu_features.size(); ++i) {
        if (i == cpu_features.size() || cpu_features[i] == ' ') {
            if (!word.empty()) have.push_back(word);
            word.clear();
        } else {
            word.push_back(cpu_features[i]);
        }
    }
    auto has = [&](const char *f) { return std::find(have.begin(), have.end(), f) != have.end(); };
    if (has("AMX_INT8")) return "amx";
    if (has("AVX512")) return "avx512";
    if (has("AVX2")) return "avx2";
    if (has("NEON")) return "neon";
    return "";
}

PeerProcess::PeerProcess(const std::string &exe, const std::string &lib_dir, const std::string &model,
                         const Settings &s) {
    std::vector<std::string> args = {exe,      "--serve",
                                     "--lib",  lib_dir,
                                     "-m",     model,
                                     "-c",     std::to_string(s.n_ctx()),
                                     "-b",     std::to_string(s.t5 ? s.eff_batch() : s.n_batch),
                                     "-ub",    std::to_string(s.t5 ? s.eff_ubatch() : s.n_ubatch),
                                     "--seed", std::to_string(s.seed),
                                     "-fa",    s.flash_attn ? "1" : "0",
                                     "-ctk",   type_name(s.type_k),
                                     "-ctv",   type_name(s.type_v)};
    if (s.n_seq > 0) {
        args.push_back("--embd");
        args.push_back(std::to_string(s.n_seq));
    }
    start(std::move(args), model);
}

PeerProcess::PeerProcess(const std::string &exe, const std::string &lib_dir, const std::string &model,
                         const BatchedSettings &s) {
    start({exe,         "--serve",
           "--lib",     lib_dir,
           "-m",        model,
           "-c",        std::to_string(s.n_ctx),
           "-b",        std::to_string(s.n_batch),
           "-ub",       std::to_string(s.n_ubatch),
           "--seed",    std::to_string(s.seed),
           "-fa",       s.flash_attn ? "1" : "0",
           "-ctk",      type_name(s.type_k),
           "-ctv",      type_name(s.type_v),
           "--batched", std::to_string(std::max<uint32_t>(1, s.n_seq_max))},
          model);
}

void PeerProcess::start(std::vector<std::string> args, const std::string &model) {
    int in_pipe[2], out_pipe[2];  // in: parent -> child stdin; out: child stdout -> parent
    if (pipe(in_pipe) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
    if (pipe(out_pipe) != 0) {
        close(in_pipe[0]);
        close(in_pipe[1]);
        throw Error(std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw Error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
        dup2(in_pipe[0], STDIN_FILENO);
        dup2(out_pipe[1], STDOUT_FILENO);
        close(in_pipe[0]);
        close(in_pipe[1]);
        close(out_pipe[0]);
        close(out_pipe[1]);
        execv(argv[0], argv.data());
        std::fprintf(stderr, "lctx bench: cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    to_ = fdopen(in_pipe[1], "w");
    from_ = fdopen(out_pipe[0], "r");
    signal(SIGPIPE, SIG_IGN);  // a dead peer shows up as a failed write, not a killed lctx

    const nlohmann::json ready = read_reply();
    if (!ready.value("ready", false)) throw Error("lctx-peer-bench did not start: " + ready.dump());
    facts_.filename = model;
    facts_.type = ready.value("model_type", std::string("?"));
    facts_.size = ready.value("model_size", uint64_t{0});
    facts_.n_params = ready.value("model_n_params", uint64_t{0});
    facts_.n_vocab = ready.value("n_vocab", 0);
    build_.commit = ready.value("build_commit", std::string("unknown"));
    build_.number = ready.value("build_number", 0);
    cpu_features_ = ready.value("cpu_features", std::string());
}

PeerProcess::~PeerProcess() {
    if (to_) {
        std::fputs("quit\n", to_);
        std::fclose(to_);
    }
    if (from_) std::fclose(from_);
    if (pid_ > 0) {
        int status = 0;
        waitpid(pid_, &status, 0);
    }
}

nlohmann::json PeerProcess::read_reply() {
    std::string line;
    int c;
    while ((c = std::fgetc(from_)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    if (line.empty()) throw Error("lctx-peer-bench ended without an answer (see its messages above)");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) throw Error("lctx-peer-bench answered something that is not JSON: " + line);
    if (j.contains("error")) throw Error("lctx-peer-bench: " + j["error"].get<std::string>());
    return j;
}

void PeerProcess::send(const std::string &line) {
    if (std::fputs((line + "\n").c_str(), to_) < 0 || std::fflush(to_) != 0)
        throw Error("lctx-peer-bench is gone (write failed)");
}

uint64_t PeerProcess::run(const char *test, int n, int n_threads) {
    send(std::string(test) + " " + std::to_string(n) + " " + std::to_string(n_threads));
    return read_reply().at("ns").get<uint64_t>();
}

uint64_t PeerProcess::run_embd(int n_seq, int n, int n_threads) {
    send("embd " + std::to_string(n_seq) + " " + std::to_string(n) + " " + std::to_string(n_threads));
    return read_reply().at("ns").get<uint64_t>();
}

std::pair<uint64_t, uint64_t> PeerProcess::run_t5(int n_enc, int n_dec, int n_threads) {
    send("t5 " + std::to_string(n_enc) + " " + std::to_string(n_dec) + " " + std::to_string(n_threads));
    const nlohmann::json j = read_reply();
    return {j.at("ns_enc").get<uint64_t>(), j.at("ns_dec").get<uint64_t>()};
}

uint64_t PeerProcess::run_pg(int n_pp, int n_tg, int depth, int n_threads) {
    send("pg " + std::to_string(n_pp) + " " + std::to_string(n_tg) + " " + std::to_string(n_threads) + " " +
         std::to_string(depth));
    return read_reply().at("ns").get<uint64_t>();
}

void PeerProcess::warm_up_batched(int n_threads) {
    send("warmup " + std::to_string(n_threads));
    if (read_reply().value("test", "") != "warmup") throw Error("lctx-peer-bench: no answer to its warm-up");
}

PeerBatchedRun PeerProcess::run_batched(int pp, int tg, int pl, bool shared_prompt, int n_threads) {
    send("batched " + std::to_string(pp) + " " + std::to_string(tg) + " " + std::to_string(pl) + " " +
         (shared_prompt ? "1 " : "0 ") + std::to_string(n_threads));
    const nlohmann::json j = read_reply();
    // The row as the peer says it ran (the caller compares it with lctx's).
    PeerBatchedRun r;
    r.row.pp = j.at("pp").get<int>();
    r.row.tg = j.at("tg").get<int>();
    r.row.pl = j.at("pl").get<int>();
    r.row.n_kv = batched_n_kv(r.row.pp, r.row.tg, r.row.pl, j.at("shared").get<int>() != 0);
    r.row.t_pp = static_cast<double>(j.at("ns_pp").get<uint64_t>()) / 1e9;
    r.row.t_tg = static_cast<double>(j.at("ns_tg").get<uint64_t>()) / 1e9;
    r.row.cpu_pp = static_cast<double>(j.at("cpu_ns_pp").get<uint64_t>()) / 1e9;
    r.row.cpu_tg = static_cast<double>(j.at("cpu_ns_tg").get<uint64_t>()) / 1e9;
    r.pp_tokens = j.at("pp_tokens").get<int64_t>();
    r.tg_tokens = j.at("tg_tokens").get<int64_t>();
    r.pos_min = j.at("pos_min").get<std::vector<int>>();
    r.pos_max = j.at("pos_max").get<std::vector<int>>();
    return r;
}

}  // namespace lctx::bench
