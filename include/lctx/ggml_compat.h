/*
 * The slice of the ggml C interface that llama.h mentions in its own declarations.
 *
 * lctx has no ggml. Upstream llama.h includes ggml.h, ggml-cpu.h and ggml-backend.h, and programs written
 * for it spell ggml names (GGML_TYPE_F16, enum ggml_log_level, ggml_threadpool_t, ...) without including
 * those headers themselves. This file declares exactly those names, with ggml's numeric values, so such
 * programs compile unchanged. It is not meant to coexist with a real ggml.h in one translation unit.
 */
#ifndef LCTX_GGML_COMPAT_H
#define LCTX_GGML_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define LCTX_GGML_API __attribute__((visibility("default")))
#else
#define LCTX_GGML_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* RoPE mode bits; llama.h builds enum llama_rope_type from them. */
#define GGML_ROPE_TYPE_NEOX 2
#define GGML_ROPE_TYPE_MROPE 8
#define GGML_ROPE_TYPE_VISION 24

/* Thread count used by llama_context_default_params(). */
#define GGML_DEFAULT_N_THREADS 4
#define GGML_MAX_N_THREADS 512

/* Tensor element types. The ids are those stored in GGUF files; the gaps are retired types. */
enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    /* 4 (Q4_2) and 5 (Q4_3) were removed */
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    /* 31..33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) were removed */
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    /* 36..38 (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) were removed */
    GGML_TYPE_COUNT = 39, /* also "not set" in llama_model_quantize_params */
};

/* Severity passed to ggml_log_callback. CONT continues the previous message (e.g. progress dots). */
enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5,
};

/* CPU NUMA placement policy taken by llama_numa_init(). */
enum ggml_numa_strategy {
    GGML_NUMA_STRATEGY_DISABLED = 0,
    GGML_NUMA_STRATEGY_DISTRIBUTE = 1,
    GGML_NUMA_STRATEGY_ISOLATE = 2,
    GGML_NUMA_STRATEGY_NUMACTL = 3,
    GGML_NUMA_STRATEGY_MIRROR = 4,
    GGML_NUMA_STRATEGY_COUNT
};

/* Kinds of compute device. */
enum ggml_backend_dev_type {
    GGML_BACKEND_DEVICE_TYPE_CPU = 0,
    GGML_BACKEND_DEVICE_TYPE_GPU = 1,
    GGML_BACKEND_DEVICE_TYPE_ACCEL = 2,
};

/* Opaque handles: lctx never exposes their contents. */
struct ggml_tensor;
struct ggml_threadpool;
struct ggml_backend_device;

typedef struct ggml_threadpool *ggml_threadpool_t;
typedef struct ggml_backend_device *ggml_backend_dev_t;

/* Scheduling priority of a thread pool's workers. */
enum ggml_sched_priority {
    GGML_SCHED_PRIO_NORMAL,
    GGML_SCHED_PRIO_MEDIUM,  /* nice -5 */
    GGML_SCHED_PRIO_HIGH,    /* nice -10 */
    GGML_SCHED_PRIO_REALTIME /* SCHED_FIFO */
};

/* Thread pool parameters; fill them with ggml_threadpool_params_default() or _init(). */
struct ggml_threadpool_params {
    bool cpumask[GGML_MAX_N_THREADS]; /* CPUs the workers may run on; all false = no placement */
    int n_threads;                    /* threads, the caller's included */
    enum ggml_sched_priority prio; /* workers' priority (raising it may need privileges: logged if refused) */
    uint32_t poll;                 /* spinning between sections: 0 = sleep at once .. 100 = spin longest */
    bool strict_cpu;               /* worker i on the i-th CPU of the mask alone */
    bool paused;                   /* start with sleeping workers */
};

LCTX_GGML_API struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads);
LCTX_GGML_API void ggml_threadpool_params_init(struct ggml_threadpool_params *p, int n_threads);
LCTX_GGML_API bool ggml_threadpool_params_match(const struct ggml_threadpool_params *p0,
                                                const struct ggml_threadpool_params *p1);
/* A pool of lctx's own workers (the one a context runs on once attached with llama_attach_threadpool).
 * NULL with a logged reason for n_threads < 1 or > GGML_MAX_N_THREADS. */
LCTX_GGML_API struct ggml_threadpool *ggml_threadpool_new(struct ggml_threadpool_params *params);
/* The pool must not be attached to a context any more. */
LCTX_GGML_API void ggml_threadpool_free(struct ggml_threadpool *threadpool);
LCTX_GGML_API int ggml_threadpool_get_n_threads(struct ggml_threadpool *threadpool);
/* Paused workers sleep instead of spinning; new work (or resume) wakes them. */
LCTX_GGML_API void ggml_threadpool_pause(struct ggml_threadpool *threadpool);
LCTX_GGML_API void ggml_threadpool_resume(struct ggml_threadpool *threadpool);

/* Polled during compute; returning true stops the running computation. */
typedef bool (*ggml_abort_callback)(void *data);

/* Log sink; text usually ends with its own newline. */
typedef void (*ggml_log_callback)(enum ggml_log_level level, const char *text, void *user_data);

/* Graph-node observer: ask == true asks "do you want this node?", ask == false hands over the computed
 * node, and returning false then cancels the compute. */
typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor *t, bool ask, void *user_data);

/* Loads every available compute backend. lctx has a single built-in CPU backend, so this does nothing; it
 * exists because the reference examples call it before loading a model. */
LCTX_GGML_API void ggml_backend_load_all(void);

/* Monotonic wall-clock time in microseconds. */
LCTX_GGML_API int64_t ggml_time_us(void);

/* A type's name as ggml spells it ("f16", "q8_0", "iq4_nl"); "unknown" for an id no type has. */
LCTX_GGML_API const char *ggml_type_name(enum ggml_type type);

#ifdef __cplusplus
}
#endif

#endif /* LCTX_GGML_COMPAT_H */
