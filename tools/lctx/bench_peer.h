// The llama.cpp side of `lctx bench --peer`: drives bench/peer/peer_bench.c (lctx-peer-bench) as a child
// process over pipes, one command per timed run, so lctx and llama.cpp runs can alternate.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_batched.h"
#include "bench_core.h"

namespace lctx::bench {

// The folder with libllama: DIR itself, or DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 (the
// layout scripts/install-peer.sh leaves). Empty when neither holds libllama.
std::string resolve_peer_lib_dir(const std::string &dir);
// The peer `lctx bench --peer` (without a folder) uses: with the kernels capped below AVX-512 on an AVX-512
// machine, the AVX2 build of scripts/install-peer.sh --native-avx2 when present; else the native build of
// --native when present, else its npm install; empty when none is installed. The cache is
// $XDG_CACHE_HOME/lctx or
// ~/.cache/lctx.
std::string default_peer_dir();
// What a peer folder holds, for the output: the native build's description, or the npm package's name.
std::string describe_peer(const std::string &lib_dir);
// lctx-peer-bench next to the running binary; empty when missing.
std::string find_peer_binary();

// The kernel level of llama.cpp's CPU backend, named from the features it reports (the ready line's
// "cpu_features": "AVX2 AVX512 AVX512_VNNI AMX_INT8 ..."): "amx", "avx512", "avx2", "neon" or "" when none of
// them is there.
std::string peer_isa_level(const std::string &cpu_features);

// One batched run of the peer (llama-batched-bench's measurement).
struct PeerBatchedRun {
    BatchedRow row;  // as the peer reports it: PP, TG, B, timings (wall and CPU seconds); N_KV as lctx counts
    int64_t pp_tokens = 0, tg_tokens = 0;  // the tokens llama.cpp decoded in each span
    std::vector<int> pos_min, pos_max;     // each sequence's first and last cache positions after the run
};

class PeerProcess {
  public:
    // Starts `exe --serve` on the model and waits for its ready line; throws lctx::Error.
    PeerProcess(const std::string &exe, const std::string &lib_dir, const std::string &model,
                const Settings &s);
    // Batched mode: a context like llama-batched-bench's, s.n_seq_max sequences with a cache stream of
    // s.n_ctx / s.n_seq_max cells each (llama.cpp rounds both up to multiples of 256).
    PeerProcess(const std::string &exe, const std::string &lib_dir, const std::string &model,
                const BatchedSettings &s);
    ~PeerProcess();
    PeerProcess(const PeerProcess &) = delete;
    PeerProcess &operator=(const PeerProcess &) = delete;

    const ModelFacts &facts() const { return facts_; }  // as llama.cpp reports them
    const BuildInfo &build() const { return build_; }
    const std::string &cpu_features() const { return cpu_features_; }  // empty when the library does not tell
    uint64_t run_pp(int n, int n_threads) { return run("pp", n, n_threads); }
    uint64_t run_tg(int n, int n_threads) { return run("tg", n, n_threads); }
    // depth tokens in the cache (untimed), then n_pp prompt tokens and n_tg generated ones, timed together.
    uint64_t run_pg(int n_pp, int n_tg, int depth, int n_threads);
    // Embedding mode (Settings::n_seq): n_seq sequences of n tokens in one llama_encode.
    uint64_t run_embd(int n_seq, int n, int n_threads);
    // T5 mode (Settings::t5): n_enc tokens in one llama_encode, then n_dec single-token decoder steps from
    // the decoder start token; nanoseconds of the encode and of the decoder steps.
    std::pair<uint64_t, uint64_t> run_t5(int n_enc, int n_dec, int n_threads);
    // Batched mode: llama-batched-bench's warm-up (16 tokens, untimed), then runs like BatchedRunner::run.
    void warm_up_batched(int n_threads);
    PeerBatchedRun run_batched(int pp, int tg, int pl, bool shared_prompt, int n_threads);

  private:
    void start(std::vector<std::string> args, const std::string &model);
    void send(const std::string &line);
    uint64_t run(const char *test, int n, int n_threads);
    nlohmann::json read_reply();
    pid_t pid_ = -1;
    std::FILE *to_ = nullptr;    // the child's stdin
    std::FILE *from_ = nullptr;  // the child's stdout
    ModelFacts facts_;
    BuildInfo build_;
    std::string cpu_features_;
};

}  // namespace lctx::bench
