// A persistent thread pool: workers are created once and reused by every parallel section, so a
// single-token decode (hundreds of small sections) pays no thread start-up. The caller takes part as
// thread 0. Workers spin briefly between sections (sections follow each other within microseconds
// during a forward pass) and then sleep on the generation counter; a section wakes sleepers with a
// system call only when some worker is actually asleep.
//
// Sections take any callable by reference (no std::function, no allocation): run() hands workers a
// plain function pointer and a pointer to the caller's callable.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace lctx::kernels {

// How a pool's threads wait and where they run (ggml_threadpool_params maps onto this).
struct ThreadPoolOptions {
    std::vector<int> cpus;    // CPUs the workers may run on (empty: wherever the OS puts them)
    bool strict_cpu = false;  // worker i on cpus[i % size] alone, instead of on the whole set
    int poll = 50;            // spinning between sections: 0 sleeps at once, 50 the default, 100 twice that
    int priority = 0;         // 0 normal, 1 medium, 2 high (lower nice values), 3 realtime (SCHED_FIFO)
    bool paused = false;      // start paused: workers sleep until the first section
};

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads, const ThreadPoolOptions &options = {});
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int n_threads() const { return n_threads_; }
    // Threads used by the next sections (1..n_threads): decode and prompt work may use different counts.
    void set_n_active(int n) { n_active_ = n < 1 ? 1 : (n > n_threads_ ? n_threads_ : n); }
    int n_active() const { return n_active_; }

    // Paused workers stop spinning and sleep; the next section (or resume) wakes them again.
    void pause() { paused_.store(true, std::memory_order_relaxed); }
    void resume() { paused_.store(false, std::memory_order_relaxed); }
    bool paused() const { return paused_.load(std::memory_order_relaxed); }
    // False when a worker could not be given the requested CPUs or priority (it runs unplaced then).
    bool placement_ok() const { return placement_failures_.load() == 0; }
    // Parallel sections started so far (the caller's thread counts them; tests see which pool ran).
    uint64_t sections() const { return sections_; }

    // Runs fn(ith, nth) on nth = min(n_active, max_threads) threads and returns when all finished.
    // Not reentrant: fn must not call run() on the same pool.
    template <class F>
    void run(F &&fn, int max_threads = 1 << 30) {
        using Fn = std::remove_reference_t<F>;
        run_raw([](void *ctx, int ith, int nth) { (*static_cast<Fn *>(ctx))(ith, nth); },
                const_cast<void *>(static_cast<const void *>(&fn)), max_threads);
    }

    // Splits [0, n) into nth contiguous chunks (multiples of `grain`) and runs fn(begin, end) for each.
    // max_threads caps the threads used (small work runs on the caller alone: waking a worker costs
    // more than a few thousand multiply-adds).
    template <class F>
    void parallel_for(int64_t n, int64_t grain, F &&fn, int max_threads = 1 << 30) {
        if (n <= 0) return;
        if (grain < 1) grain = 1;
        const int64_t n_chunks = (n + grain - 1) / grain;
        int nth = max_threads < n_active_ ? max_threads : n_active_;
        if (nth < 1) nth = 1;
        if (n_chunks < nth) nth = static_cast<int>(n_chunks);
        if (nth == 1) {
            fn(int64_t{0}, n);
            return;
        }
        run(
            [&](int ith, int nth_) {
                const int64_t per = (n_chunks + nth_ - 1) / nth_;
                const int64_t b = ith * per * grain < n ? ith * per * grain : n;
                const int64_t e = (ith + 1) * per * grain < n ? (ith + 1) * per * grain : n;
                if (b < e) fn(b, e);
            },
            nth);
    }

    // Runs fn(i) for every item i in [0, n_items). Each thread owns a contiguous share of the items and
    // takes them in order, so consecutive items (neighbouring weight rows) stream from one place per
    // thread; a thread that finishes its share then takes the remaining items of the other shares, so
    // one the OS delays does not hold the section up.
    template <class F>
    void for_each_item(int64_t n_items, F &&fn, int max_threads = 1 << 30) {
        if (n_items <= 0) return;
        int nth = max_threads < n_active_ ? max_threads : n_active_;
        if (nth < 1) nth = 1;
        if (n_items < nth) nth = static_cast<int>(n_items);
        if (nth == 1) {
            for (int64_t i = 0; i < n_items; ++i) fn(i);
            return;
        }
        struct alignas(64) Cursor {
            std::atomic<int64_t> next;
            int64_t end;
        };
        Cursor cursors[kMaxThreads];
        const int shares = nth < kMaxThreads ? nth : kMaxThreads;
        for (int s = 0; s < shares; ++s) {
            cursors[s].next.store(n_items * s / shares, std::memory_order_relaxed);
            cursors[s].end = n_items * (s + 1) / shares;
        }
        run(
            [&](int ith, int) {
                for (int k = 0; k < shares; ++k) {
                    Cursor &c = cursors[(ith + k) % shares];
                    for (int64_t i = c.next.fetch_add(1, std::memory_order_relaxed); i < c.end;
                         i = c.next.fetch_add(1, std::memory_order_relaxed))
                        fn(i);
                }
            },
            nth);
    }

  private:
    static constexpr int kMaxThreads = 64;  // shares of for_each_item (more threads share them)
    using RawFn = void (*)(void *ctx, int ith, int nth);
    void run_raw(RawFn fn, void *ctx, int max_threads);
    void worker_loop(int ith);
    void place_worker(int ith);

    int n_threads_;
    int n_active_;
    ThreadPoolOptions options_;
    int spin_iterations_;
    std::atomic<bool> paused_{false};
    std::atomic<int> placement_failures_{0};
    std::atomic<int> started_{0};
    uint64_t sections_ = 0;
    std::vector<std::thread> workers_;
    RawFn job_fn_ = nullptr;
    void *job_ctx_ = nullptr;
    int job_nth_ = 1;
    std::atomic<uint32_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
};

}  // namespace lctx::kernels
