// A persistent thread pool: workers are created once and reused by every parallel section, so a
// single-token decode (hundreds of small sections) pays no thread start-up. The caller takes part as
// thread 0. Workers spin briefly between sections (sections follow each other within microseconds
// during a forward pass) and then sleep on the generation counter.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace lctx::kernels {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int n_threads() const { return n_threads_; }
    // Threads used by the next sections (1..n_threads): decode and prompt work may use different counts.
    void set_n_active(int n) { n_active_ = n < 1 ? 1 : (n > n_threads_ ? n_threads_ : n); }
    int n_active() const { return n_active_; }

    // Runs fn(ith, nth) on nth = min(n_threads, max_threads) threads and returns when all finished.
    // Not reentrant: fn must not call run() on the same pool.
    void run(const std::function<void(int ith, int nth)> &fn, int max_threads = 1 << 30);

    // Splits [0, n) into nth contiguous chunks (multiples of `grain`) and runs fn(begin, end) for each.
    // max_threads caps the threads used (small work runs on the caller alone: waking a worker costs
    // more than a few thousand multiply-adds).
    void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)> &fn,
                      int max_threads = 1 << 30);

private:
    void worker_loop(int ith);

    int n_threads_;
    int n_active_;
    std::vector<std::thread> workers_;
    const std::function<void(int, int)> *job_ = nullptr;
    int job_nth_ = 1;
    std::atomic<uint32_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
};

}  // namespace lctx::kernels
