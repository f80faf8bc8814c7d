// The llama.cpp side of `lctx bench --peer`: drives bench/peer/peer_bench.c (lctx-peer-bench) as a child
// process over pipes, one command per timed run, so lctx and llama.cpp runs can alternate.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench_core.h"

namespace lctx::bench {

// The folder with libllama: DIR itself, or DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 (the
// layout scripts/install-peer.sh leaves). Empty when neither holds libllama.
std::string resolve_peer_lib_dir(const std::string &dir);
// The peer `lctx bench --peer` (without a folder) uses: with the kernels capped below AVX-512 on an AVX-512
// machine, the AVX2 build of scripts/install-peer.sh --native-avx2 when present; else the native build of
// --native when present, else its npm install; empty when none is installed. The cache is $XDG_CACHE_HOME/lctx or
// ~/.cache/lctx.
std::string default_peer_dir();
// What a peer folder holds, for the output: the native build's description, or the npm package's name.
std::string describe_peer(const std::string &lib_dir);
// lctx-peer-bench next to the running binary; empty when missing.
std::string find_peer_binary();

class PeerProcess {
  public:
    // Starts `exe --serve` on the model and waits for its ready line; throws lctx::Error.
    PeerProcess(const std::string &exe, const std::string &lib_dir, const std::string &model,
                const Settings &s);
    ~PeerProcess();
    PeerProcess(const PeerProcess &) = delete;
    PeerProcess &operator=(const PeerProcess &) = delete;

    const ModelFacts &facts() const { return facts_; }  // as llama.cpp reports them
    const BuildInfo &build() const { return build_; }
    uint64_t run_pp(int n, int n_threads) { return run("pp", n, n_threads); }
    uint64_t run_tg(int n, int n_threads) { return run("tg", n, n_threads); }
    // depth tokens in the cache (untimed), then n_pp prompt tokens and n_tg generated ones, timed together.
    uint64_t run_pg(int n_pp, int n_tg, int depth, int n_threads);
    // Embedding mode (Settings::n_seq): n_seq sequences of n tokens in one llama_encode.
    uint64_t run_embd(int n_seq, int n, int n_threads);

  private:
    uint64_t run(const char *test, int n, int n_threads);
    nlohmann::json read_reply();
    pid_t pid_ = -1;
    std::FILE *to_ = nullptr;    // the child's stdin
    std::FILE *from_ = nullptr;  // the child's stdout
    ModelFacts facts_;
    BuildInfo build_;
};

}  // namespace lctx::bench
