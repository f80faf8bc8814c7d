#include "kernels/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define LCTX_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LCTX_PAUSE() __asm__ __volatile__("yield")  // the spin-wait hint (an SMT core gives way)
#else
#define LCTX_PAUSE() ((void)0)
#endif

namespace lctx::kernels {

namespace {
constexpr int kSpinIterations = 1 << 16;  // ~ tens of microseconds before a worker sleeps
// After this many pauses a waiting thread also yields its core: with more threads than free cores
// (a shared machine), the thread it waits for may be the one that needs it.
constexpr int kPausesBeforeYield = 1 << 10;
}  // namespace

ThreadPool::ThreadPool(int n_threads, const ThreadPoolOptions &options)
    : n_threads_(std::max(1, n_threads)),
      n_active_(n_threads_),
      options_(options),
      spin_iterations_(
          static_cast<int>(static_cast<int64_t>(kSpinIterations) * std::clamp(options.poll, 0, 100) / 50)),
      paused_(options.paused) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
    // Workers place themselves (CPUs, priority) first: once constructed, placement_ok() is final.
    while (started_.load(std::memory_order_acquire) < n_threads_ - 1) std::this_thread::yield();
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (std::thread &t : workers_) t.join();
}

void ThreadPool::run_raw(RawFn fn, void *ctx, int max_threads) {
    paused_.store(false, std::memory_order_relaxed);  // new work resumes a paused pool
    ++sections_;
    const int nth = std::clamp(max_threads, 1, n_active_);
    if (nth == 1) {
        fn(ctx, 0, 1);
        return;
    }
    job_fn_ = fn;
    job_ctx_ = ctx;
    job_nth_ = nth;
    // Every worker acknowledges every section (even one it sits out), so none can mistake the next
    // section's job for this one.
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    // A worker registers as a sleeper before its last look at the generation (both seq_cst), so either
    // it sees the new generation or this sees it asleep.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
    fn(ctx, 0, nth);
    for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
        if (i < kPausesBeforeYield)
            LCTX_PAUSE();
        else
            std::this_thread::yield();
    }
    job_fn_ = nullptr;
}

void ThreadPool::place_worker(int ith) {
#if defined(__linux__)
    if (!options_.cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        const int n = static_cast<int>(options_.cpus.size());
        if (options_.strict_cpu) {
            CPU_SET(options_.cpus[ith % n], &set);
        } else {
            for (int c : options_.cpus) CPU_SET(c, &set);
        }
        // sched_setaffinity(0, ...) places the calling thread (Linux affinities are per thread); unlike
        // pthread_setaffinity_np it is in Android's bionic as well as glibc.
        if (sched_setaffinity(0, sizeof set, &set) != 0) placement_failures_.fetch_add(1);
    }
    if (options_.priority >= 3) {
        sched_param sp{};
        sp.sched_priority = sched_get_priority_max(SCHED_FIFO);
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) placement_failures_.fetch_add(1);
    } else if (options_.priority > 0) {
        // Linux nice values are per thread: this one lowers only the worker's.
        if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options_.priority == 1 ? -5 : -10) != 0)
            placement_failures_.fetch_add(1);
    }
#else
    (void)ith;
    if (!options_.cpus.empty() || options_.priority > 0) placement_failures_.fetch_add(1);
#endif
}

void ThreadPool::worker_loop(int ith) {
    place_worker(ith);
    started_.fetch_add(1, std::memory_order_release);
    // Generation 0 is the state at construction: a section started before this thread ran is
    // still seen as new.
    uint32_t seen = 0;
    for (;;) {
        // Wait for the next section: spin first (unless paused), then sleep.
        uint32_t gen = generation_.load(std::memory_order_acquire);
        for (int i = 0; gen == seen && i < spin_iterations_ && !paused_.load(std::memory_order_relaxed);
             ++i) {
            if (i < kPausesBeforeYield || (i & 15) != 0)
                LCTX_PAUSE();
            else
                std::this_thread::yield();
            gen = generation_.load(std::memory_order_acquire);
        }
        if (gen == seen) {
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            while ((gen = generation_.load(std::memory_order_seq_cst)) == seen)
                generation_.wait(seen, std::memory_order_seq_cst);
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        seen = gen;
        if (stop_.load(std::memory_order_acquire)) return;
        if (ith < job_nth_) job_fn_(job_ctx_, ith, job_nth_);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace lctx::kernels

#undef LCTX_PAUSE  // a unity batch goes on after this file
