#include "kernels/threadpool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define LCTX_PAUSE() _mm_pause()
#else
#define LCTX_PAUSE() ((void)0)
#endif

namespace lctx::kernels {

namespace {
constexpr int kSpinIterations = 1 << 16;  // ~ tens of microseconds before a worker sleeps
// After this many pauses a waiting thread also yields its core: with more threads than free cores
// (a shared machine), the thread it waits for may be the one that needs it.
constexpr int kPausesBeforeYield = 1 << 10;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)), n_active_(n_threads_) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (std::thread &t : workers_) t.join();
}

void ThreadPool::run_raw(RawFn fn, void *ctx, int max_threads) {
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

void ThreadPool::worker_loop(int ith) {
    // Generation 0 is the state at construction: a section started before this thread ran is
    // still seen as new.
    uint32_t seen = 0;
    for (;;) {
        // Wait for the next section: spin first, then sleep.
        uint32_t gen = generation_.load(std::memory_order_acquire);
        for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
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
