// C API: ggml's thread pool functions over lctx's own pool (kernels/threadpool.h). A context runs on a pool
// once llama_attach_threadpool hands it over (src/capi/capi_context.cpp).
#include <cstring>
#include <vector>

#include "capi/capi_internal.h"
#include "kernels/threadpool.h"

struct ggml_threadpool {
    std::unique_ptr<lctx::kernels::ThreadPool> pool;
};

extern "C" {

void ggml_threadpool_params_init(struct ggml_threadpool_params *p, int n_threads) {
    LCTX_CAPI_REQUIRE(p, );
    std::memset(p, 0, sizeof *p);
    p->n_threads = n_threads;
    p->prio = GGML_SCHED_PRIO_NORMAL;
    p->poll = 50;
    p->strict_cpu = false;
    p->paused = false;
}

struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads) {
    ggml_threadpool_params p;
    ggml_threadpool_params_init(&p, n_threads);
    return p;
}

bool ggml_threadpool_params_match(const struct ggml_threadpool_params *p0,
                                  const struct ggml_threadpool_params *p1) {
    LCTX_CAPI_REQUIRE(p0, false);
    LCTX_CAPI_REQUIRE(p1, false);
    return p0->n_threads == p1->n_threads && p0->prio == p1->prio && p0->poll == p1->poll &&
           p0->strict_cpu == p1->strict_cpu && std::memcmp(p0->cpumask, p1->cpumask, sizeof p0->cpumask) == 0;
}

struct ggml_threadpool *ggml_threadpool_new(struct ggml_threadpool_params *params) {
    LCTX_CAPI_REQUIRE(params, nullptr);
    if (params->n_threads < 1 || params->n_threads > GGML_MAX_N_THREADS) {
        LCTX_LOG_ERROR("%s: n_threads = %d must lie in [1, %d]", __func__, params->n_threads,
                       GGML_MAX_N_THREADS);
        return nullptr;
    }
    // The enum may hold any value the caller wrote: read its bits.
    int32_t prio;
    std::memcpy(&prio, &params->prio, sizeof prio);
    if (prio < GGML_SCHED_PRIO_NORMAL || prio > GGML_SCHED_PRIO_REALTIME) {
        LCTX_LOG_ERROR("%s: unknown priority %d", __func__, prio);
        return nullptr;
    }
    lctx::kernels::ThreadPoolOptions o;
    for (int c = 0; c < GGML_MAX_N_THREADS; ++c)
        if (params->cpumask[c]) o.cpus.push_back(c);
    o.strict_cpu = params->strict_cpu;
    o.poll = static_cast<int>(std::min<uint32_t>(params->poll, 100));
    o.priority = prio;
    o.paused = params->paused;
    return lctx::capi::guard(__func__, static_cast<ggml_threadpool *>(nullptr), [&] {
        auto tp = std::make_unique<ggml_threadpool>();
        tp->pool = std::make_unique<lctx::kernels::ThreadPool>(params->n_threads, o);
        if (!tp->pool->placement_ok())
            LCTX_LOG_WARN(
                "%s: some workers could not be given the requested CPUs or priority; they run unplaced",
                __func__);
        return tp.release();
    });
}

void ggml_threadpool_free(struct ggml_threadpool *threadpool) {
    delete threadpool;
}

int ggml_threadpool_get_n_threads(struct ggml_threadpool *threadpool) {
    LCTX_CAPI_REQUIRE(threadpool, 0);
    return threadpool->pool->n_threads();
}

void ggml_threadpool_pause(struct ggml_threadpool *threadpool) {
    LCTX_CAPI_REQUIRE(threadpool, );
    threadpool->pool->pause();
}

void ggml_threadpool_resume(struct ggml_threadpool *threadpool) {
    LCTX_CAPI_REQUIRE(threadpool, );
    threadpool->pool->resume();
}

}  // extern "C"

namespace lctx::capi {

kernels::ThreadPool *pool_of(ggml_threadpool *tp) {
    return tp ? tp->pool.get() : nullptr;
}

}  // namespace lctx::capi
