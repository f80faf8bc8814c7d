// lctx-peer-bench: the llama.cpp side of `lctx bench --peer`. Loads llama.cpp's prebuilt libllama (the npm
// package @node-llama-cpp/linux-x64, see /work/shared/PEER.md) with dlopen, so it neither links nor includes
// anything of llama.cpp or lctx: the few structs and functions it needs are declared below, and their sizes
// and defaults are checked against the library before any run.
//
// Standalone: lctx-peer-bench --lib DIR -m FILE [-p 512] [-n 128] [-t 1] [-r 5] [-c N_CTX] [-b 2048] [-ub
// 512] [-fa 0|1] [-ctk TYPE] [-ctv TYPE] (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl)
//   runs a warm-up and r repetitions of each test and prints one JSON line per test.
// Serve (what lctx bench uses): lctx-peer-bench --serve --lib DIR -m FILE -c N_CTX [-b ..] [-ub ..]
//   prints {"ready":true,...} after loading, then answers each stdin line "pp N T" or "tg N T" (N tokens,
//   T threads) with {"test":"pp","n":N,"threads":T,"ns":NANOSECONDS}, and "pg P G T D" (D tokens in the
//   cache first, untimed, then a prompt of P tokens and G generated ones; -pg and -d of llama-bench) with
//   {"test":"pg",...,"ns":NANOSECONDS}; "quit" or end of input stops it. With --embd S (an embedding model:
//   embeddings on, the model's pooling, S sequences, n_batch = n_ubatch = N_CTX) it answers "embd S L T" (S
//   sequences of L tokens in one llama_encode) with {"test":"embd",...,"ns":NANOSECONDS}. On an
//   encoder-decoder model (T5; -b and -ub at least P) it answers "t5 P G T" (P tokens in one llama_encode,
//   then G decoder steps of one token each from llama_model_decoder_start_token, random tokens after it)
//   with {"test":"t5",...,"ns_enc":NANOSECONDS,"ns_dec":NANOSECONDS}. With --batched B
//   (llama-batched-bench's context: n_seq_max B, one cache stream of N_CTX / B cells per sequence) it answers
//   "warmup T" (16 tokens of sequence 0, untimed) with {"test":"warmup"} and "batched PP TG PL S T" (PL
//   sequences of PP prompt tokens, or with S = 1 one prompt copied to all, in calls of n_batch tokens; then
//   TG steps of one token for every sequence) with {"test":"batched",...,"pp_tokens":..,"tg_tokens":..,
//   "pos_min":[..],"pos_max":[..],"ns_pp":..,"ns_tg":..,"cpu_ns_pp":..,"cpu_ns_tg":..} (the tokens decoded in
//   each span, each sequence's first and last cache positions after the run, wall and process CPU nanoseconds
//   of each span). The ready line names the CPU backend's features ("cpu_features": "AVX2 AVX512 ..."), what
//   it runs at.
// Grammar: lctx-peer-bench --lib DIR -m VOCAB.gguf --grammar GBNF_FILE --text TEXT [-r 5]
//   times llama.cpp's grammar sampler writing TEXT token by token (apply over the whole vocabulary, then
//   accept), a new sampler for each of r documents after a warm-up, and prints
//   {"test":"grammar","tokens":N,"ns_per_token":...}; the model is loaded vocab-only.
// Embed: lctx-peer-bench --lib DIR -m MODEL.gguf --embed TEXT [--pooling P]
//   llama.cpp's embedding of TEXT (tokenized with special tokens, one llama_encode; P a llama_pooling_type,
//   the model's by default) as {"test":"embed","n_tokens":N,"pooling":P,"rows":[[...], ...]}: one row pooled
//   (rank: one value), or one per token with pooling none. To check `lctx embed` against llama.cpp on any
//   model.
// Errors are a JSON line {"error":"..."} and exit status 1.
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ---- llama.h of llama.cpp v0.5.0, as described in PEER.md (only what this program touches) ----
struct llama_model;
struct llama_context;
struct llama_vocab;
typedef void *llama_memory_t;

struct llama_model_params {  // 80 bytes
    void *devices;
    const void *tensor_buft_overrides;
    int32_t n_gpu_layers;
    int32_t split_mode;
    int32_t load_mode;
    int32_t lazy_mode;
    int32_t main_gpu;
    const float *tensor_split;
    void *progress_callback;
    void *progress_callback_user_data;
    const void *kv_overrides;
    bool vocab_only;
    bool check_tensors;
    bool use_extra_bufts;
    bool no_host;
    bool no_alloc;
    bool load_mtp;
};

struct llama_context_params {  // 160 bytes
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max, n_outputs_max_per_seq;
    int32_t n_threads, n_threads_batch;
    int32_t ctx_type, rope_scaling_type, pooling_type, attention_type, flash_attn_type;
    float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold;
    void *cb_eval;
    void *cb_eval_user_data;
    int32_t type_k, type_v;  // ggml type ids
    void *abort_callback;
    void *abort_callback_data;
    bool embeddings, offload_kqv, no_perf, op_offload, swa_full, kv_unified;
    void *samplers;
    size_t n_samplers;
    void *ctx_other;
};

struct llama_batch {
    int32_t n_tokens;
    int32_t *token;
    float *embd;
    int32_t *pos;
    int32_t *n_seq_id;
    int32_t **seq_id;
    int8_t *logits;
};

struct llama_sampler;
struct llama_token_data {
    int32_t id;
    float logit;
    float p;
};
struct llama_token_data_array {
    struct llama_token_data *data;
    size_t size;
    int64_t selected;
    bool sorted;
};

_Static_assert(sizeof(struct llama_model_params) == 80, "llama_model_params layout");
_Static_assert(sizeof(struct llama_context_params) == 160, "llama_context_params layout");
_Static_assert(offsetof(struct llama_context_params, cb_eval) == 88, "llama_context_params layout");
_Static_assert(offsetof(struct llama_context_params, embeddings) == 128, "llama_context_params layout");

enum { FLASH_ATTN_DISABLED = 0, FLASH_ATTN_ENABLED = 1, GGML_LOG_LEVEL_ERROR = 4 };
enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };

// A K/V cache type name as llama-bench spells it (llama.cpp's cache types) -> its ggml type id; -1 when it
// is none of them.
static int kv_type_id(const char *name) {
    static const struct {
        const char *name;
        int id;
    } types[] = {{"f32", 0},  {"f16", 1},  {"bf16", 30}, {"q8_0", 8},   {"q4_0", 2},
                 {"q4_1", 3}, {"q5_0", 6}, {"q5_1", 7},  {"iq4_nl", 20}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i)
        if (!strcmp(name, types[i].name)) return types[i].id;
    return -1;
}

typedef void (*log_cb_t)(int level, const char *text, void *user);

static struct {
    void (*backend_load_all_from_path)(const char *);
    void *(*backend_reg_by_name)(const char *);                   // optional: the CPU features
    void *(*backend_reg_get_proc_address)(void *, const char *);  // optional: the CPU features
    void (*ggml_log_set)(log_cb_t, void *);
    void (*log_set)(log_cb_t, void *);
    void (*backend_init)(void);
    struct llama_model_params (*model_default_params)(void);
    struct llama_model *(*model_load_from_file)(const char *, struct llama_model_params);
    struct llama_context_params (*context_default_params)(void);
    struct llama_context *(*init_from_model)(struct llama_model *, struct llama_context_params);
    struct llama_batch (*batch_init)(int32_t, int32_t, int32_t);
    void (*batch_free)(struct llama_batch);
    int32_t (*decode)(struct llama_context *, struct llama_batch);
    int32_t (*encode)(struct llama_context *, struct llama_batch);  // optional: embedding mode, --embed
    float *(*get_embeddings_seq)(struct llama_context *, int32_t);  // optional: --embed
    float *(*get_embeddings_ith)(struct llama_context *, int32_t);  // optional: --embed
    int32_t (*model_n_embd)(const struct llama_model *);            // optional: --embed
    int32_t (*pooling_type)(const struct llama_context *);          // optional: --embed
    bool (*model_has_encoder)(const struct llama_model *);          // optional: t5
    int32_t (*decoder_start_token)(const struct llama_model *);     // optional: t5
    float *(*get_logits_ith)(struct llama_context *, int32_t);
    void (*synchronize)(struct llama_context *);
    llama_memory_t (*get_memory)(const struct llama_context *);
    void (*memory_clear)(llama_memory_t, bool);
    bool (*memory_seq_rm)(llama_memory_t, int32_t, int32_t, int32_t);
    void (*memory_seq_cp)(llama_memory_t, int32_t, int32_t, int32_t, int32_t);  // batched mode
    int32_t (*memory_seq_pos_min)(llama_memory_t, int32_t);                     // batched mode
    int32_t (*memory_seq_pos_max)(llama_memory_t, int32_t);                     // batched mode
    uint32_t (*n_ctx_seq)(const struct llama_context *);                        // batched mode, optional
    const struct llama_vocab *(*model_get_vocab)(const struct llama_model *);
    int32_t (*vocab_n_tokens)(const struct llama_vocab *);
    uint64_t (*model_size)(const struct llama_model *);
    uint64_t (*model_n_params)(const struct llama_model *);
    void (*free_ctx)(struct llama_context *);
    void (*model_free)(struct llama_model *);
    void (*set_n_threads)(struct llama_context *, int32_t, int32_t);    // optional
    int32_t (*model_desc)(const struct llama_model *, char *, size_t);  // optional
    // The grammar test's (looked up only for it).
    struct llama_sampler *(*sampler_init_grammar)(const struct llama_vocab *, const char *, const char *);
    void (*sampler_apply)(struct llama_sampler *, struct llama_token_data_array *);
    void (*sampler_accept)(struct llama_sampler *, int32_t);
    void (*sampler_free)(struct llama_sampler *);
    int32_t (*tokenize)(const struct llama_vocab *, const char *, int32_t, int32_t *, int32_t, bool, bool);
    int32_t (*token_to_piece)(const struct llama_vocab *, int32_t, char *, int32_t, int32_t, bool);
} L;

static bool g_serve = false;

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; ++s) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

__attribute__((noreturn)) static void fail(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("{\"error\":");
    json_string(stdout, msg);
    printf("}\n");
    fflush(stdout);
    if (!g_serve) fprintf(stderr, "lctx-peer-bench: %s\n", msg);
    exit(1);
}

static void *open_lib(const char *dir, const char *name, bool required) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h && required) fail("cannot load %s: %s", path, dlerror());
    return h;
}

static void *sym(void *lib, const char *name, bool required) {
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p && required) fail("libllama has no symbol %s (not llama.cpp v0.5.0?)", name);
    return p;
}

static void quiet_log(int level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// The process's CPU time (all its threads), as lctx bench's batched mode reports beside the wall time.
static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// The same token generator as lctx bench: only ordinary token ids matter, not which.
static uint64_t g_rng = 1234;
static int32_t next_token(int32_t n_vocab) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int32_t)((g_rng >> 33) % (uint64_t)n_vocab);
}

struct bench {
    struct llama_model *model;
    struct llama_context *ctx;
    struct llama_context_params cparams;
    struct llama_batch batch;
    int32_t n_vocab;
    int32_t step;  // tokens per decode call of a prompt
    int threads;
    int kept_depth;  // the cache holds exactly positions [0, kept_depth) of sequence 0 plus the last test's
    struct llama_batch big;  // batched mode: n_ctx tokens, all prompts of a run
};

static void make_context(struct bench *b) {
    b->ctx = L.init_from_model(b->model, b->cparams);
    if (!b->ctx) fail("llama_init_from_model failed");
    b->kept_depth = 0;
}

static void set_threads(struct bench *b, int t) {
    if (t == b->threads) return;
    b->cparams.n_threads = b->cparams.n_threads_batch = t;
    if (L.set_n_threads) {
        L.set_n_threads(b->ctx, t, t);
    } else {
        L.free_ctx(b->ctx);
        make_context(b);
    }
    b->threads = t;
}

static void decode_or_fail(struct bench *b, int32_t n) {
    b->batch.n_tokens = n;
    const int32_t rc = L.decode(b->ctx, b->batch);
    if (rc != 0) fail("llama_decode returned %d", rc);
}

// Decodes n random prompt tokens at positions pos0.. in batches of b->step, logits for each batch's last.
static void decode_prompt(struct bench *b, int n, int pos0) {
    for (int i0 = 0; i0 < n; i0 += b->step) {
        const int m = n - i0 < b->step ? n - i0 : b->step;
        for (int i = 0; i < m; ++i) {
            b->batch.token[i] = next_token(b->n_vocab);
            b->batch.pos[i] = pos0 + i0 + i;
            b->batch.n_seq_id[i] = 1;
            b->batch.seq_id[i][0] = 0;
            b->batch.logits[i] = i == m - 1;  // like llama-bench: only the last token's logits
        }
        decode_or_fail(b, m);
    }
}

// llama-bench's tests on a cleared cache: `depth` tokens first (untimed), then timed: a prompt of n_pp tokens
// and n_tg single-token decodes after it (pp: n_tg = 0; tg: n_pp = 0; pg: both). As lctx's runner does, the
// depth tokens are decoded once and kept: a later test with the same depth only removes the tokens after
// them.
static uint64_t run_pg(struct bench *b, int n_pp, int n_tg, int depth) {
    if (depth > 0 && depth == b->kept_depth && L.memory_seq_rm(L.get_memory(b->ctx), 0, depth, -1)) {
        /* the depth is in place */
    } else {
        L.memory_clear(L.get_memory(b->ctx), true);
        b->kept_depth = 0;
        if (depth > 0) {
            decode_prompt(b, depth, 0);
            L.synchronize(b->ctx);
            b->kept_depth = depth;
        }
    }
    const uint64_t t0 = now_ns();
    decode_prompt(b, n_pp, depth);
    for (int i = 0; i < n_tg; ++i) {
        b->batch.token[0] = next_token(b->n_vocab);
        b->batch.pos[0] = depth + n_pp + i;
        b->batch.n_seq_id[0] = 1;
        b->batch.seq_id[0][0] = 0;
        b->batch.logits[0] = 1;
        decode_or_fail(b, 1);
        L.synchronize(b->ctx);
    }
    L.synchronize(b->ctx);
    return now_ns() - t0;
}

// Embedding mode: n_seq sequences of n tokens (positions 0..n-1 each) in one llama_encode.
static uint64_t run_embd(struct bench *b, int n_seq, int n) {
    for (int s = 0; s < n_seq; ++s)
        for (int i = 0; i < n; ++i) {
            const int k = s * n + i;
            b->batch.token[k] = next_token(b->n_vocab);
            b->batch.pos[k] = i;
            b->batch.n_seq_id[k] = 1;
            b->batch.seq_id[k][0] = s;
            b->batch.logits[k] = 1;
        }
    b->batch.n_tokens = n_seq * n;
    const uint64_t t0 = now_ns();
    const int32_t rc = L.encode(b->ctx, b->batch);
    if (rc != 0) fail("llama_encode returned %d", rc);
    L.synchronize(b->ctx);
    return now_ns() - t0;
}

// T5 mode: n_enc random tokens (positions 0..n_enc-1) in one llama_encode, then n_dec decoder steps of one
// token each on an empty decoder cache: the decoder start token, then random ones (what is decoded does not
// change the time). Wall nanoseconds of the two parts.
static void run_t5(struct bench *b, int n_enc, int n_dec, uint64_t *ns_enc, uint64_t *ns_dec) {
    for (int i = 0; i < n_enc; ++i) {
        b->batch.token[i] = next_token(b->n_vocab);
        b->batch.pos[i] = i;
        b->batch.n_seq_id[i] = 1;
        b->batch.seq_id[i][0] = 0;
        b->batch.logits[i] = 1;
    }
    b->batch.n_tokens = n_enc;
    L.memory_clear(L.get_memory(b->ctx), true);
    const uint64_t t0 = now_ns();
    const int32_t rc = L.encode(b->ctx, b->batch);
    if (rc != 0) fail("llama_encode returned %d", rc);
    L.synchronize(b->ctx);
    const uint64_t t1 = now_ns();
    int32_t tok = L.decoder_start_token(b->model);
    if (tok < 0) tok = 0;
    for (int i = 0; i < n_dec; ++i) {
        b->batch.token[0] = tok;
        b->batch.pos[0] = i;
        b->batch.n_seq_id[0] = 1;
        b->batch.seq_id[0][0] = 0;
        b->batch.logits[0] = 1;
        decode_or_fail(b, 1);
        L.synchronize(b->ctx);
        tok = next_token(b->n_vocab);
    }
    *ns_enc = t1 - t0;
    *ns_dec = now_ns() - t1;
}

// Decodes tokens [0, n) of b->big in calls of b->step tokens (llama-batched-bench's decode helper),
// synchronizing after each call when asked.
static void decode_big(struct bench *b, int32_t n, bool sync_each) {
    for (int32_t i = 0; i < n; i += b->step) {
        struct llama_batch view = b->big;
        view.n_tokens = n - i < b->step ? n - i : b->step;
        view.token += i;
        view.pos += i;
        view.n_seq_id += i;
        view.seq_id += i;
        view.logits += i;
        const int32_t rc = L.decode(b->ctx, view);
        if (rc != 0) fail("llama_decode returned %d", rc);
        if (sync_each) L.synchronize(b->ctx);
    }
}

static void big_add(struct bench *b, int32_t k, int32_t pos, int32_t seq, bool logits) {
    b->big.token[k] = next_token(b->n_vocab);
    b->big.pos[k] = pos;
    b->big.n_seq_id[k] = 1;
    b->big.seq_id[k][0] = seq;
    b->big.logits[k] = logits;
}

// llama-batched-bench's warm-up: 16 tokens of sequence 0 (fewer when n_batch is smaller), then an empty
// cache.
static void batched_warm_up(struct bench *b) {
    const int32_t n = b->step < 16 ? b->step : 16;
    L.memory_clear(L.get_memory(b->ctx), false);
    for (int32_t i = 0; i < n; ++i) big_add(b, i, i, 0, false);
    decode_big(b, n, true);
    L.memory_clear(L.get_memory(b->ctx), false);
}

struct batched_result {
    uint64_t ns_pp, ns_tg, cpu_pp, cpu_tg;
    int64_t pp_tokens, tg_tokens;  // decoded in each span
};

// llama-batched-bench's run on an empty cache: pl prompts of pp tokens (shared: one, copied to every
// sequence), the last token of each with logits, in calls of n_batch tokens (timed together: T_PP); then tg
// steps that each decode one token of every sequence, all with logits (T_TG). A shared prompt's copy is
// applied by one untimed token of sequence 0 that is removed again, as llama-batched-bench does with a cache
// of one stream per sequence.
static struct batched_result run_batched(struct bench *b, int pp, int tg, int pl, bool shared) {
    struct batched_result r;
    memset(&r, 0, sizeof r);
    llama_memory_t mem = L.get_memory(b->ctx);
    L.memory_clear(mem, false);
    int32_t k = 0;
    for (int j = 0; j < (shared ? 1 : pl); ++j)
        for (int i = 0; i < pp; ++i) big_add(b, k++, i, j, i == pp - 1);
    r.pp_tokens = k;
    const uint64_t c0 = cpu_ns(), t0 = now_ns();
    decode_big(b, k, false);
    L.synchronize(b->ctx);
    const uint64_t t1 = now_ns(), c1 = cpu_ns();
    if (shared && pl > 1) {
        for (int j = 1; j < pl; ++j) L.memory_seq_cp(mem, 0, j, -1, -1);
        big_add(b, 0, pp, 0, true);
        decode_big(b, 1, true);
        L.memory_seq_rm(mem, 0, pp, -1);
    }
    const uint64_t c2 = cpu_ns(), t2 = now_ns();
    for (int i = 0; i < tg; ++i) {
        for (int j = 0; j < pl; ++j) big_add(b, j, pp + i, j, true);
        decode_big(b, pl, true);
        r.tg_tokens += pl;
    }
    const uint64_t t3 = now_ns(), c3 = cpu_ns();
    r.ns_pp = t1 - t0;
    r.ns_tg = t3 - t2;
    r.cpu_pp = c1 - c0;
    r.cpu_tg = c3 - c2;
    return r;
}

// The CPU backend's feature flags that are on ("AVX2 AVX512 AVX512_VNNI ..."), or "" when the library does
// not tell. ggml_backend_feature is { const char *name; const char *value; }, the list ends with a NULL name.
static void cpu_features(char *out, size_t cap) {
    out[0] = 0;
    if (!L.backend_reg_by_name || !L.backend_reg_get_proc_address) return;
    void *reg = L.backend_reg_by_name("CPU");
    if (!reg) return;
    struct feature {
        const char *name, *value;
    };
    struct feature *(*get)(void *) = NULL;
    *(void **)&get = L.backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (!get) return;
    size_t n = 0;
    for (const struct feature *f = get(reg); f && f->name; ++f) {
        if (!f->value || !strcmp(f->value, "0") || !*f->value) continue;
        const int w = snprintf(out + n, cap - n, "%s%s", n ? " " : "", f->name);
        if (w < 0 || (size_t)w >= cap - n) break;
        n += (size_t)w;
    }
}

static uint64_t run_pp(struct bench *b, int n) {
    return run_pg(b, n, 0, 0);
}

static uint64_t run_tg(struct bench *b, int n) {
    return run_pg(b, 0, n, 0);
}

// Square root by Newton's method: keeps the program free of libm (it links libdl only).
static double root(double x) {
    if (!(x > 0)) return 0.0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 200; ++i) r = 0.5 * (r + x / r);
    return r;
}

static char *read_text_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail("cannot read %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = 0;
    return buf;
}

// The text as the model would write it: its tokens, where SPM's leading space is taken off the first one
// (the token whose piece is the first piece without it).
static int32_t text_tokens(const struct llama_vocab *v, int32_t n_vocab, const char *text, int32_t **out) {
    const int32_t len = (int32_t)strlen(text);
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(len + 8));
    const int32_t n = L.tokenize(v, text, len, toks, len + 8, false, false);
    if (n <= 0) fail("cannot tokenize the text");
    char piece[256];
    int32_t m = L.token_to_piece(v, toks[0], piece, (int32_t)sizeof piece - 1, 0, true);
    if (m > 1 && piece[0] == ' ' && text[0] != ' ') {
        piece[m] = 0;
        for (int32_t id = 0; id < n_vocab; ++id) {
            char other[256];
            const int32_t k = L.token_to_piece(v, id, other, (int32_t)sizeof other - 1, 0, true);
            if (k == m - 1 && !memcmp(other, piece + 1, (size_t)k)) {
                toks[0] = id;
                break;
            }
        }
    }
    *out = toks;
    return n;
}

static void run_grammar(struct llama_model *model, const char *grammar_path, const char *text, int reps) {
    const struct llama_vocab *v = L.model_get_vocab(model);
    const int32_t n_vocab = L.vocab_n_tokens(v);
    char *gbnf = read_text_file(grammar_path);
    int32_t *toks = NULL;
    const int32_t n = text_tokens(v, n_vocab, text, &toks);
    struct llama_token_data *base = malloc(sizeof(struct llama_token_data) * (size_t)n_vocab);
    struct llama_token_data *cur = malloc(sizeof(struct llama_token_data) * (size_t)n_vocab);
    for (int32_t i = 0; i < n_vocab; ++i) {
        base[i].id = i;
        base[i].logit = 0.0f;
        base[i].p = 0.0f;
    }
    uint64_t best = UINT64_MAX, total = 0;
    for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
        struct llama_sampler *s = L.sampler_init_grammar(v, gbnf, "root");
        if (!s) fail("llama.cpp refused the grammar %s", grammar_path);
        const uint64_t t0 = now_ns();
        for (int32_t i = 0; i < n; ++i) {
            memcpy(cur, base, sizeof(struct llama_token_data) * (size_t)n_vocab);
            struct llama_token_data_array arr = {cur, (size_t)n_vocab, -1, false};
            L.sampler_apply(s, &arr);
            if (!(cur[toks[i]].logit > -1e30f)) fail("the grammar refused the text's token %d", i);
            L.sampler_accept(s, toks[i]);
        }
        const uint64_t dt = now_ns() - t0;
        L.sampler_free(s);
        if (r < 0) continue;
        total += dt;
        if (dt < best) best = dt;
    }
    printf("{\"test\":\"grammar\",\"tokens\":%d,\"ns_per_token\":%.0f,\"best_ns_per_token\":%.0f}\n", n,
           (double)total / reps / n, (double)best / n);
    fflush(stdout);
    free(base);
    free(cur);
    free(toks);
    free(gbnf);
}

// One text through llama_encode with embeddings on; prints its pooled row (or every token's).
static void run_embed(struct llama_model *model, const char *text, int pooling) {
    const struct llama_vocab *v = L.model_get_vocab(model);
    const int32_t len = (int32_t)strlen(text);
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(len + 8));
    const int32_t n = L.tokenize(v, text, len, toks, len + 8, true, false);
    if (n <= 0) fail("cannot tokenize the text");
    struct llama_context_params cp = L.context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)(n > 64 ? n : 64);
    cp.n_threads = cp.n_threads_batch = 1;
    cp.embeddings = true;
    cp.pooling_type = pooling;
    cp.flash_attn_type = FLASH_ATTN_DISABLED;
    struct llama_context *ctx = L.init_from_model(model, cp);
    if (!ctx) fail("llama_init_from_model failed");
    struct llama_batch b = L.batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; ++i) {
        b.token[i] = toks[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (L.encode(ctx, b) != 0) fail("llama_encode failed");
    const int32_t n_embd = L.model_n_embd(model);
    const int32_t used = L.pooling_type(ctx);
    printf("{\"test\":\"embed\",\"n_tokens\":%d,\"pooling\":%d,\"rows\":[", n, used);
    const int32_t n_rows = used == 0 ? n : 1;
    for (int32_t r = 0; r < n_rows; ++r) {
        const float *e = used == 0 ? L.get_embeddings_ith(ctx, r) : L.get_embeddings_seq(ctx, 0);
        if (!e) fail("no embedding for row %d", r);
        const int32_t width = used == 4 ? 1 : n_embd;  // rank: one score
        printf("%s[", r ? "," : "");
        for (int32_t k = 0; k < width; ++k) printf("%s%.9g", k ? "," : "", e[k]);
        printf("]");
    }
    printf("]}\n");
    L.batch_free(b);
    L.free_ctx(ctx);
    free(toks);
}

// Greedy generation: the text (with BOS) decoded, then n_gen tokens each the argmax of the last logits;
// prints the prompt's and the generated token ids.
static void run_generate(struct llama_model *model, const char *text, int n_gen) {
    const struct llama_vocab *v = L.model_get_vocab(model);
    const int32_t n_vocab = L.vocab_n_tokens(v);
    const int32_t len = (int32_t)strlen(text);
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(len + 8));
    const int32_t n = L.tokenize(v, text, len, toks, len + 8, true, false);
    if (n <= 0) fail("cannot tokenize the text");
    struct llama_context_params cp = L.context_default_params();
    cp.n_ctx = (uint32_t)(n + n_gen + 8);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = FLASH_ATTN_DISABLED;
    struct llama_context *ctx = L.init_from_model(model, cp);
    if (!ctx) fail("llama_init_from_model failed");
    struct llama_batch b = L.batch_init(n, 0, 1);
    printf("{\"test\":\"generate\",\"prompt_ids\":[");
    for (int32_t i = 0; i < n; ++i) {
        b.token[i] = toks[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n - 1;
        printf("%s%d", i ? "," : "", toks[i]);
    }
    b.n_tokens = n;
    printf("],\"ids\":[");
    for (int g = 0; g < n_gen; ++g) {
        if (L.decode(ctx, b) != 0) fail("llama_decode failed");
        const float *logits = L.get_logits_ith(ctx, -1);
        if (!logits) fail("no logits");
        int32_t best = 0;
        for (int32_t k = 1; k < n_vocab; ++k)
            if (logits[k] > logits[best]) best = k;
        printf("%s%d", g ? "," : "", best);
        b.token[0] = best;
        b.pos[0] = n + g;
        b.n_seq_id[0] = 1;
        b.seq_id[0][0] = 0;
        b.logits[0] = 1;
        b.n_tokens = 1;
    }
    printf("]}\n");
    fflush(stdout);
    L.batch_free(b);
    L.free_ctx(ctx);
    free(toks);
}

static void usage(void) {
    fprintf(stderr,
            "usage: lctx-peer-bench --lib DIR -m FILE [--serve] [-p 512] [-n 128] [-t 1] [-r 5] [-c N_CTX]\n"
            "                       [-b 2048] [-ub 512] [-fa 0|1] [-ctk f16] [-ctv f16] [--seed S]\n"
            "                       [--embd N_SEQ | --batched N_SEQ (with --serve)] [--verbose]\n"
            "       lctx-peer-bench --lib DIR -m VOCAB.gguf --grammar GBNF_FILE --text TEXT [-r 5]\n"
            "       lctx-peer-bench --lib DIR -m MODEL.gguf --embed TEXT [--pooling P]\n"
            "       lctx-peer-bench --lib DIR -m MODEL.gguf --generate TEXT [-n 16] (greedy token ids)\n");
}

int main(int argc, char **argv) {
    const char *lib_dir = NULL, *model_path = NULL, *grammar_path = NULL, *text = NULL, *embed_text = NULL;
    const char *generate_text = NULL;
    int pooling = -1;  // --embed: LLAMA_POOLING_TYPE_UNSPECIFIED
    int n_prompt = 512, n_gen = 128, threads = 1, reps = 5, n_ctx = 0, n_batch = 2048, n_ubatch = 512;
    int flash_attn = 0, type_k = GGML_TYPE_F16, type_v = GGML_TYPE_F16;
    int n_embd_seq = 0;     // > 0: embedding mode with this many sequences
    int n_batched_seq = 0;  // > 0: batched mode (llama-batched-bench) with this many sequences
    bool verbose = false;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define INT_OPT(flag, var)       \
    if (!strcmp(a, flag) && v) { \
        var = atoi(v);           \
        ++i;                     \
        continue;                \
    }
        INT_OPT("-p", n_prompt)
        INT_OPT("-n", n_gen)
        INT_OPT("-t", threads)
        INT_OPT("-r", reps)
        INT_OPT("-c", n_ctx)
        INT_OPT("-b", n_batch)
        INT_OPT("-ub", n_ubatch)
        INT_OPT("-fa", flash_attn)
        INT_OPT("--embd", n_embd_seq)
        INT_OPT("--batched", n_batched_seq)
        INT_OPT("--pooling", pooling)
#undef INT_OPT
        if (!strcmp(a, "--seed") && v) {
            g_rng = strtoull(v, NULL, 10);
            ++i;
        } else if ((!strcmp(a, "-ctk") || !strcmp(a, "-ctv")) && v) {
            *(a[3] == 'k' ? &type_k : &type_v) = kv_type_id(v);
            ++i;
        } else if (!strcmp(a, "--lib") && v) {
            lib_dir = v;
            ++i;
        } else if (!strcmp(a, "--grammar") && v) {
            grammar_path = v;
            ++i;
        } else if (!strcmp(a, "--embed") && v) {
            embed_text = v;
            ++i;
        } else if (!strcmp(a, "--generate") && v) {
            generate_text = v;
            ++i;
        } else if (!strcmp(a, "--text") && v) {
            text = v;
            ++i;
        } else if (!strcmp(a, "-m") && v) {
            model_path = v;
            ++i;
        } else if (!strcmp(a, "--serve")) {
            g_serve = true;
        } else if (!strcmp(a, "--verbose")) {
            verbose = true;
        } else {
            usage();
            return 2;
        }
    }
    if (!lib_dir || !model_path || !grammar_path != !text || threads < 1 || reps < 1 || n_prompt < 0 ||
        n_gen < 0 || n_batch < 1 || n_ubatch < 1 || flash_attn < 0 || flash_attn > 1 || type_k < 0 ||
        type_v < 0 || n_embd_seq < 0 || (n_embd_seq > 0 && !g_serve) || n_batched_seq < 0 ||
        n_batched_seq > 256 || (n_batched_seq > 0 && (!g_serve || n_embd_seq > 0))) {
        usage();
        return 2;
    }
    if (n_ctx <= 0) n_ctx = n_prompt + n_gen > 0 ? n_prompt + n_gen : 512;

    // ggml first (its backends must be registered before anything else), then libllama, which finds its
    // own dependencies through its $ORIGIN run path.
    void *base = open_lib(lib_dir, "libggml-base.so", false);
    void *ggml = open_lib(lib_dir, "libggml.v0.5.0.so", false);
    if (!ggml) ggml = open_lib(lib_dir, "libggml.so", true);
    void *llama = open_lib(lib_dir, "libllama.v0.5.0.so", false);
    if (!llama) llama = open_lib(lib_dir, "libllama.so", true);
    L.ggml_log_set = (void (*)(log_cb_t, void *))sym(base, "ggml_log_set", false);
    L.backend_load_all_from_path = (void (*)(const char *))sym(ggml, "ggml_backend_load_all_from_path", true);
    *(void **)&L.backend_reg_by_name = sym(ggml, "ggml_backend_reg_by_name", false);
    *(void **)&L.backend_reg_get_proc_address = sym(ggml, "ggml_backend_reg_get_proc_address", false);
#define REQ(field, name) *(void **)&L.field = sym(llama, name, true)
    REQ(backend_init, "llama_backend_init");
    REQ(model_default_params, "llama_model_default_params");
    REQ(model_load_from_file, "llama_model_load_from_file");
    REQ(context_default_params, "llama_context_default_params");
    REQ(init_from_model, "llama_init_from_model");
    REQ(batch_init, "llama_batch_init");
    REQ(batch_free, "llama_batch_free");
    REQ(decode, "llama_decode");
    REQ(get_logits_ith, "llama_get_logits_ith");
    REQ(synchronize, "llama_synchronize");
    REQ(get_memory, "llama_get_memory");
    REQ(memory_clear, "llama_memory_clear");
    REQ(memory_seq_rm, "llama_memory_seq_rm");
    REQ(model_get_vocab, "llama_model_get_vocab");
    REQ(vocab_n_tokens, "llama_vocab_n_tokens");
    REQ(model_size, "llama_model_size");
    REQ(model_n_params, "llama_model_n_params");
    REQ(free_ctx, "llama_free");
    REQ(model_free, "llama_model_free");
#undef REQ
    *(void **)&L.log_set = sym(llama, "llama_log_set", false);
    *(void **)&L.memory_seq_cp = sym(llama, "llama_memory_seq_cp", n_batched_seq > 0);
    *(void **)&L.memory_seq_pos_min = sym(llama, "llama_memory_seq_pos_min", n_batched_seq > 0);
    *(void **)&L.memory_seq_pos_max = sym(llama, "llama_memory_seq_pos_max", n_batched_seq > 0);
    *(void **)&L.n_ctx_seq = sym(llama, "llama_n_ctx_seq", false);
    const bool embed = embed_text != NULL;
    *(void **)&L.encode = sym(llama, "llama_encode", n_embd_seq > 0 || embed);  // (and t5's)
    *(void **)&L.get_embeddings_seq = sym(llama, "llama_get_embeddings_seq", embed);
    *(void **)&L.get_embeddings_ith = sym(llama, "llama_get_embeddings_ith", embed);
    *(void **)&L.model_n_embd = sym(llama, "llama_model_n_embd", embed);
    *(void **)&L.pooling_type = sym(llama, "llama_pooling_type", embed);
    *(void **)&L.model_has_encoder = sym(llama, "llama_model_has_encoder", false);
    *(void **)&L.decoder_start_token = sym(llama, "llama_model_decoder_start_token", false);
    *(void **)&L.set_n_threads = sym(llama, "llama_set_n_threads", false);
    *(void **)&L.model_desc = sym(llama, "llama_model_desc", false);
    const bool grammar = grammar_path != NULL;
    *(void **)&L.sampler_init_grammar = sym(llama, "llama_sampler_init_grammar", grammar);
    *(void **)&L.sampler_apply = sym(llama, "llama_sampler_apply", grammar);
    *(void **)&L.sampler_accept = sym(llama, "llama_sampler_accept", grammar);
    *(void **)&L.sampler_free = sym(llama, "llama_sampler_free", grammar);
    *(void **)&L.tokenize = sym(llama, "llama_tokenize", grammar || embed || generate_text);
    *(void **)&L.token_to_piece = sym(llama, "llama_token_to_piece", grammar);

    if (!verbose) {
        if (L.ggml_log_set) L.ggml_log_set(quiet_log, NULL);
        if (L.log_set) L.log_set(quiet_log, NULL);
    }
    L.backend_load_all_from_path(lib_dir);
    L.backend_init();

    // The declared layouts are only trusted when the defaults read back through them are the documented ones.
    struct llama_model_params mp = L.model_default_params();
    if (mp.vocab_only || mp.check_tensors || !mp.use_extra_bufts || mp.tensor_split || mp.kv_overrides)
        fail("llama_model_default_params does not look like v0.5.0's layout");
    struct llama_context_params cp = L.context_default_params();
    if (cp.n_ctx != 512 || cp.n_batch != 2048 || cp.n_ubatch != 512 || cp.n_seq_max != 1 || cp.embeddings)
        fail(
            "llama_context_default_params does not look like v0.5.0's layout (n_ctx %u n_batch %u n_ubatch "
            "%u)",
            cp.n_ctx, cp.n_batch, cp.n_ubatch);

    struct bench b;
    memset(&b, 0, sizeof b);
    mp.vocab_only = grammar;
    b.model = L.model_load_from_file(model_path, mp);
    if (!b.model) fail("cannot load model %s", model_path);
    if (grammar) {
        run_grammar(b.model, grammar_path, text, reps);
        L.model_free(b.model);
        return 0;
    }
    if (embed) {
        run_embed(b.model, embed_text, pooling);
        L.model_free(b.model);
        return 0;
    }
    if (generate_text) {
        run_generate(b.model, generate_text, n_gen);
        L.model_free(b.model);
        return 0;
    }
    b.n_vocab = L.vocab_n_tokens(L.model_get_vocab(b.model));
    if (b.n_vocab <= 0) fail("the model has no vocabulary");

    // Like with like: same n_ctx / n_batch / n_ubatch, K/V types and flash attention as lctx, one sequence.
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.flash_attn_type = flash_attn ? FLASH_ATTN_ENABLED : FLASH_ATTN_DISABLED;
    cp.type_k = type_k;
    cp.type_v = type_v;
    cp.no_perf = true;
    if (n_embd_seq > 0) {  // the whole batch is one micro-batch, as llama_encode requires
        cp.embeddings = true;
        cp.n_seq_max = (uint32_t)n_embd_seq;
        cp.kv_unified = true;
        cp.n_batch = cp.n_ubatch = (uint32_t)n_ctx;
        n_batch = n_ctx;
    }
    if (n_batched_seq > 0) {  // llama-batched-bench's context: a cache stream of its own for each sequence
        cp.n_seq_max = (uint32_t)n_batched_seq;
        cp.kv_unified = false;
    }
    b.cparams = cp;
    b.threads = threads;
    make_context(&b);
    b.step = n_batch < n_ctx ? n_batch : n_ctx;  // llama.cpp clamps n_batch to n_ctx
    b.batch = L.batch_init(b.step, 0, 1);
    if (n_batched_seq > 0) b.big = L.batch_init(n_ctx, 0, 1);
    // Cells per sequence: llama.cpp rounds n_ctx and each stream's share of it up to multiples of 256.
    const int seq_cells = n_batched_seq == 0 ? n_ctx
                          : L.n_ctx_seq      ? (int)L.n_ctx_seq(b.ctx)
                                             : n_ctx / n_batched_seq;

    char desc[256] = "?";
    if (L.model_desc) L.model_desc(b.model, desc, sizeof desc);
    const char *commit = "unknown";
    int build_number = 0;
    void *common = open_lib(lib_dir, "libllama-common.so", false);  // only for the build id
    if (common) {
        const char *const *c = (const char *const *)dlsym(common, "LLAMA_COMMIT");
        const int *n = (const int *)dlsym(common, "LLAMA_BUILD_NUMBER");
        if (c && *c) commit = *c;
        if (n) build_number = *n;
    }

    if (g_serve) {
        printf("{\"ready\":true,\"model_type\":");
        json_string(stdout, desc);
        printf(",\"model_size\":%llu,\"model_n_params\":%llu,\"n_vocab\":%d,\"build_commit\":",
               (unsigned long long)L.model_size(b.model), (unsigned long long)L.model_n_params(b.model),
               b.n_vocab);
        json_string(stdout, commit);
        char features[512];
        cpu_features(features, sizeof features);
        printf(",\"build_number\":%d,\"cpu_features\":", build_number);
        json_string(stdout, features);
        printf("}\n");
        fflush(stdout);
        char line[256];
        while (fgets(line, sizeof line, stdin)) {
            char test[16];
            int n = 0, t = 0, n_tg = 0, depth = 0;
            if (!strncmp(line, "quit", 4)) break;
            uint64_t ns;
            if (!strncmp(line, "embd ", 5)) {
                int n_seq = 0;
                if (sscanf(line, "embd %d %d %d", &n_seq, &n, &t) != 3 || n_seq < 1 || n < 1 || t < 1)
                    fail("bad command: %s", line);
                if (n_embd_seq == 0 || n_seq > n_embd_seq || n_seq * n > n_ctx)
                    fail("%d sequences of %d tokens do not fit (--embd %d, -c %d)", n_seq, n, n_embd_seq,
                         n_ctx);
                set_threads(&b, t);
                ns = run_embd(&b, n_seq, n);
                printf("{\"test\":\"embd\",\"n_seq\":%d,\"n\":%d,\"threads\":%d,\"ns\":%llu}\n", n_seq, n, t,
                       (unsigned long long)ns);
                fflush(stdout);
                continue;
            }
            if (!strncmp(line, "t5 ", 3)) {
                if (sscanf(line, "t5 %d %d %d", &n, &n_tg, &t) != 3 || n < 1 || n_tg < 0 || t < 1)
                    fail("bad command: %s", line);
                if (!L.encode || !L.decoder_start_token || !L.model_has_encoder ||
                    !L.model_has_encoder(b.model))
                    fail("t5 needs an encoder-decoder model and llama_encode");
                if (n > b.step || n + n_tg > n_ctx)
                    fail("an encode of %d tokens and %d steps do not fit (-b %d, -c %d)", n, n_tg, b.step,
                         n_ctx);
                set_threads(&b, t);
                uint64_t ns_enc = 0, ns_dec = 0;
                run_t5(&b, n, n_tg, &ns_enc, &ns_dec);
                printf(
                    "{\"test\":\"t5\",\"n_enc\":%d,\"n_dec\":%d,\"threads\":%d,\"ns_enc\":%llu,"
                    "\"ns_dec\":%llu}\n",
                    n, n_tg, t, (unsigned long long)ns_enc, (unsigned long long)ns_dec);
                fflush(stdout);
                continue;
            }
            if (!strncmp(line, "warmup ", 7) || !strncmp(line, "batched ", 8)) {
                if (n_batched_seq == 0) fail("%.8s needs --batched", line);
                if (line[0] == 'w') {
                    if (sscanf(line, "warmup %d", &t) != 1 || t < 1) fail("bad command: %s", line);
                    set_threads(&b, t);
                    batched_warm_up(&b);
                    printf("{\"test\":\"warmup\",\"threads\":%d}\n", t);
                    fflush(stdout);
                    continue;
                }
                int pl = 0, shared = 0;
                if (sscanf(line, "batched %d %d %d %d %d", &n, &n_tg, &pl, &shared, &t) != 5 || n < 1 ||
                    n_tg < 0 || pl < 1 || shared < 0 || shared > 1 || t < 1)
                    fail("bad command: %s", line);
                // A shared prompt's copy is applied by one more token of sequence 0 (removed again).
                const int per_seq = n + (shared && pl > 1 && n_tg == 0 ? 1 : n_tg);
                if (pl > n_batched_seq || per_seq > seq_cells || (shared ? n : pl * n) > n_ctx)
                    fail("%d sequences of %d tokens do not fit (--batched %d: %d cells per sequence)", pl,
                         per_seq, n_batched_seq, seq_cells);
                set_threads(&b, t);
                const struct batched_result r = run_batched(&b, n, n_tg, pl, shared != 0);
                printf(
                    "{\"test\":\"batched\",\"pp\":%d,\"tg\":%d,\"pl\":%d,\"shared\":%d,\"threads\":%d,"
                    "\"n_ctx\":%d,\"n_ctx_seq\":%d,\"pp_tokens\":%lld,\"tg_tokens\":%lld,\"pos_min\":[",
                    n, n_tg, pl, shared, t, n_ctx, seq_cells, (long long)r.pp_tokens, (long long)r.tg_tokens);
                for (int j = 0; j < pl; ++j)
                    printf("%s%d", j ? "," : "", L.memory_seq_pos_min(L.get_memory(b.ctx), j));
                printf("],\"pos_max\":[");
                for (int j = 0; j < pl; ++j)
                    printf("%s%d", j ? "," : "", L.memory_seq_pos_max(L.get_memory(b.ctx), j));
                printf("],\"ns_pp\":%llu,\"ns_tg\":%llu,\"cpu_ns_pp\":%llu,\"cpu_ns_tg\":%llu}\n",
                       (unsigned long long)r.ns_pp, (unsigned long long)r.ns_tg, (unsigned long long)r.cpu_pp,
                       (unsigned long long)r.cpu_tg);
                fflush(stdout);
                continue;
            }
            if (!strncmp(line, "pg ", 3)) {
                if (sscanf(line, "pg %d %d %d %d", &n, &n_tg, &t, &depth) != 4 || n < 0 || n_tg < 0 ||
                    n + n_tg < 1 || t < 1 || depth < 0)
                    fail("bad command: %s", line);
                if (depth + n + n_tg > n_ctx)
                    fail("%d tokens do not fit the context of %d", depth + n + n_tg, n_ctx);
                set_threads(&b, t);
                ns = run_pg(&b, n, n_tg, depth);
                printf(
                    "{\"test\":\"pg\",\"n_prompt\":%d,\"n_gen\":%d,\"n_depth\":%d,\"threads\":%d,\"ns\":%llu}"
                    "\n",
                    n, n_tg, depth, t, (unsigned long long)ns);
                fflush(stdout);
                continue;
            }
            if (sscanf(line, "%15s %d %d", test, &n, &t) != 3 || n < 1 || t < 1)
                fail("bad command: %s", line);
            if (n > n_ctx) fail("%d tokens do not fit the context of %d", n, n_ctx);
            set_threads(&b, t);
            if (!strcmp(test, "pp"))
                ns = run_pp(&b, n);
            else if (!strcmp(test, "tg"))
                ns = run_tg(&b, n);
            else
                fail("unknown test %s", test);
            printf("{\"test\":\"%s\",\"n\":%d,\"threads\":%d,\"ns\":%llu}\n", test, n, t,
                   (unsigned long long)ns);
            fflush(stdout);
        }
    } else {
        for (int which = 0; which < 2; ++which) {
            const int n = which == 0 ? n_prompt : n_gen;
            if (n == 0) continue;
            uint64_t *samples = malloc(sizeof(uint64_t) * (size_t)reps);
            which == 0 ? run_pp(&b, n) : run_tg(&b, n);  // warm-up
            double sum_ts = 0, sum_ts2 = 0;
            for (int r = 0; r < reps; ++r) {
                samples[r] = which == 0 ? run_pp(&b, n) : run_tg(&b, n);
                const double ts = 1e9 * n / (double)samples[r];
                sum_ts += ts;
                sum_ts2 += ts * ts;
            }
            const double avg = sum_ts / reps;
            const double var = reps > 1 ? (sum_ts2 - reps * avg * avg) / (reps - 1) : 0.0;
            printf("{\"engine\":\"llama.cpp\",\"build_commit\":");
            json_string(stdout, commit);
            printf(",\"model_type\":");
            json_string(stdout, desc);
            printf(
                ",\"n_threads\":%d,\"n_prompt\":%d,\"n_gen\":%d,\"avg_ts\":%.3f,\"stddev_ts\":%.3f,\"samples_"
                "ns\":[",
                threads, which == 0 ? n : 0, which == 0 ? 0 : n, avg, root(var));
            for (int r = 0; r < reps; ++r) printf("%s%llu", r ? "," : "", (unsigned long long)samples[r]);
            printf("]}\n");
            fflush(stdout);
            free(samples);
        }
    }
    L.batch_free(b.batch);
    if (n_batched_seq > 0) L.batch_free(b.big);
    L.free_ctx(b.ctx);
    L.model_free(b.model);
    return 0;
}
