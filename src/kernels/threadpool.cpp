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
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)), n_active_(n_threads_) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread &t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)> &fn, int max_threads) {
    const int nth = std::clamp(max_threads, 1, n_active_);
    if (nth == 1) {
        fn(0, 1);
        return;
    }
    job_ = &fn;
    job_nth_ = nth;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    fn(0, nth);
    while (pending_.load(std::memory_order_acquire) != 0) LCTX_PAUSE();
    job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn,
                              int max_threads) {
    if (n <= 0) return;
    grain = std::max<int64_t>(1, grain);
    const int64_t n_chunks = (n + grain - 1) / grain;
    const int nth = static_cast<int>(std::min<int64_t>(std::min(n_active_, std::max(1, max_threads)), n_chunks));
    run(
        [&](int ith, int nth_) {
            const int64_t per = (n_chunks + nth_ - 1) / nth_;
            const int64_t b = std::min(n, ith * per * grain);
            const int64_t e = std::min(n, (ith + 1) * per * grain);
            if (b < e) fn(b, e);
        },
        nth);
}

void ThreadPool::worker_loop(int ith) {
    // Generation 0 is the state at construction: a section started before this thread ran is
    // still seen as new.
    uint32_t seen = 0;
    for (;;) {
        // Wait for the next section: spin first, then sleep.
        uint32_t gen = generation_.load(std::memory_order_acquire);
        for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
            LCTX_PAUSE();
            gen = generation_.load(std::memory_order_acquire);
        }
        while (gen == seen) {
            generation_.wait(seen, std::memory_order_acquire);
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load(std::memory_order_acquire)) return;
        if (ith < job_nth_) (*job_)(ith, job_nth_);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace lctx::kernels
