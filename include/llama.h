/*
 * lctx public C API.
 *
 * Source-compatible with llama.cpp's include/llama.h at build b4748 (February 2025): the same types,
 * constants, enum values, struct fields (in the same order), typedef style and function signatures, so C
 * programs and bindings written for that header compile against this one unchanged.
 *
 * Differences in behaviour from b4748 (each one is noted again at its function):
 *   - llama_n_seq_max returns the configured n_seq_max (b4748 returned the KV cell count).
 *   - llama_kv_cache_seq_pos_max returns -1 for an empty sequence (b4748 returned 0).
 *   - llama_get_logits_ith / llama_get_embeddings_ith return NULL and log the reason for a bad index in
 *     every build (b4748 aborted in debug builds).
 *   - llama_split_path returns the full length of the path also when maxlen truncates it (as snprintf), and
 *     writes nothing for maxlen 0 (b4748 returned the truncated length, and for maxlen 0 measured a buffer it
 *     had not written).
 *   - A recurrent model (mamba) refuses with -1 and a logged reason a batch in which a sequence's positions
 *     do not increase (b4748 sorted them by position first).
 *   - Grammar samplers (llama_sampler_init_grammar / _lazy), where b4748's results cannot be right:
 *     - a grammar that cannot be used gives NULL with the reason logged (b4748 gave a sampler that allows
 *       everything, so a broken grammar silently constrained nothing; later llama.cpp returns NULL too);
 *     - grammar_root names the start rule whether or not a rule `root` exists (b4748 refused a grammar
 *       without a `root` rule, and threw on a grammar_root it did not define);
 *     - a token whose text starts with a byte F5-FF (which starts no UTF-8 character) is never allowed
 *       (b4748 allowed it under `.` and negated classes);
 *     - an unfinished UTF-8 character is allowed against a negated class when some character it can
 *       still become is outside the class (b4748 refused it when any of them was inside);
 *     - `[]` matches no character and `[^]` any one (b4748 read both as matching the empty string);
 *     - a NUL byte inside a token's text is matched as a character (b4748 ignored the text from there on;
 *       a text that starts with NUL is refused, as in b4748);
 *     - token references of newer llama.cpp are accepted: `<[ID]>`, `<TOKEN TEXT>` and `!<...>`.
 *   - Chat prompts rendered with gpt-oss's Jinja template end a final assistant turn with <|end|>, not
 *     <|return|> (never model input), as newer llama.cpp does (lctx's chat layer; b4748 had no Jinja).
 *   - llama_model_quantize finds every reason to refuse (a row that is not a whole number of the chosen
 *     type's blocks, a missing importance matrix) before writing, and writes through a temporary file: on
 *     failure the output is left as it was (b4748 left a partial file of zeros); --pure with such a row is
 *     refused (b4748 aborted).
 *   - A pooled embedding (llama_get_embeddings_seq) of a batch that runs in several micro-batches pools all
 *     of the sequence's tokens in the batch, as one micro-batch would (b4748 kept the vector of the
 *     sequence's first micro-batch only, which depends on n_ubatch).
 *   - llama_encode, and llama_decode on a non-causal model (BERT), refuse with -1 and a logged reason a batch
 *     of more tokens than n_ubatch (b4748 aborted on an assertion).
 *   - llama_apply_adapter_cvec installs exactly the vector it is given: the layers `len` does not cover get
 *     none (b4748 kept the previous call's values for them).
 *   - A K-shift (llama_kv_cache_seq_add / seq_div) re-rotates the moved keys by the angles alone, so that
 *     they equal keys computed at their new positions. b4748's shift also multiplied every cached key, moved
 *     or not, by the RoPE magnitude (yarn_attn_factor times rope.scaling.attn_factor, and YaRN's scale) at
 *     every shift, so that LongRoPE and YaRN models drifted after each one.
 *   - LoRA adapters are freed with their model, as this header promises (b4748 leaked the ones never passed
 *     to llama_adapter_lora_free); an adapter freed while set on a context is dropped from that context's set
 *     (b4748 read freed memory); llama_set_adapter_lora refuses with -1 an adapter of another model.
 *   - A block-quantized type_k or type_v (q8_0, q4_0, ...) on a model whose head size is not a multiple of the
 *     type's 32-element block is refused by llama_init_from_model (NULL, the reason logged); b4748 created
 *     the context and cut each head's blocks apart in its views (an assertion only in debug builds).
 *   - Files b4748 accepted and then misused are refused when they load, with the reason logged: a state
 *     (llama_state_set_data, llama_state_seq_set_data, the load_file functions) that maps two outputs to one
 *     batch index (b4748 kept the second), a bert.pooling_type other than b4748's five (b4748 aborted when it
 *     built the graph), a rope.dimension_count that is odd or wider than the head (ggml's rope asserted when
 *     it ran).
 *
 * The ggml names this header uses (enum ggml_type, ggml_log_callback, ...) come from lctx/ggml_compat.h;
 * lctx does not depend on ggml.
 */
#ifndef LLAMA_H
#define LLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lctx/ggml_compat.h"

#ifdef LLAMA_SHARED
#if defined(_WIN32) && !defined(__MINGW32__)
#ifdef LLAMA_BUILD
#define LLAMA_API __declspec(dllexport)
#else
#define LLAMA_API __declspec(dllimport)
#endif /* LLAMA_BUILD */
#else
#define LLAMA_API __attribute__((visibility("default")))
#endif /* _WIN32 */
#elif defined(__GNUC__) || defined(__clang__)
/* Exported even without LLAMA_SHARED, so the symbols stay visible if the library is ever built with
 * -fvisibility=hidden. */
#define LLAMA_API __attribute__((visibility("default")))
#else
#define LLAMA_API
#endif

/* Marks a declaration deprecated; calling it warns with the hint (an error under -Werror). */
#ifdef __GNUC__
#define DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#elif defined(_MSC_VER)
#define DEPRECATED(func, hint) __declspec(deprecated(hint)) func
#else
#define DEPRECATED(func, hint) func
#endif

#define LLAMA_DEFAULT_SEED 0xFFFFFFFF

#define LLAMA_TOKEN_NULL -1

#define LLAMA_FILE_MAGIC_GGLA 0x67676c61u /* 'ggla' */
#define LLAMA_FILE_MAGIC_GGSN 0x6767736eu /* 'ggsn' */
#define LLAMA_FILE_MAGIC_GGSQ 0x67677371u /* 'ggsq' */

#define LLAMA_SESSION_MAGIC LLAMA_FILE_MAGIC_GGSN
#define LLAMA_SESSION_VERSION 9

#define LLAMA_STATE_SEQ_MAGIC LLAMA_FILE_MAGIC_GGSQ
#define LLAMA_STATE_SEQ_VERSION 2

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------
 * Opaque handles and scalar types
 * ------------------------------------------------------------------------------------------------- */

struct llama_vocab;
struct llama_model;
struct llama_context;
struct llama_sampler;

typedef int32_t llama_pos;
typedef int32_t llama_token;
typedef int32_t llama_seq_id;

/* lctx: sequence ids lie in [0, LCTX_MAX_SEQ) whatever n_seq_max (as b4748, which takes any id for models
 * with a KV cache); a decode with a larger id returns -1 with a logged reason. A recurrent model (mamba)
 * has one state per sequence: its ids lie in [0, n_seq_max), as in b4748. */
#define LCTX_MAX_SEQ 256

/* ---------------------------------------------------------------------------------------------------
 * Enums (none is typedef'd; llama_vocab_type and llama_pooling_type are also function names)
 * ------------------------------------------------------------------------------------------------- */

enum llama_vocab_type {
    LLAMA_VOCAB_TYPE_NONE = 0, /* no vocabulary */
    LLAMA_VOCAB_TYPE_SPM = 1,  /* SentencePiece-style BPE with byte fallback */
    LLAMA_VOCAB_TYPE_BPE = 2,  /* GPT-2-style byte-level BPE */
    LLAMA_VOCAB_TYPE_WPM = 3,  /* WordPiece */
    LLAMA_VOCAB_TYPE_UGM = 4,  /* Unigram */
    LLAMA_VOCAB_TYPE_RWKV = 5, /* RWKV greedy tokenizer */
};

/* Pre-tokenizer family. No public function takes or returns it. */
enum llama_vocab_pre_type {
    LLAMA_VOCAB_PRE_TYPE_DEFAULT = 0,
    LLAMA_VOCAB_PRE_TYPE_LLAMA3 = 1,
    LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM = 2,
    LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER = 3,
    LLAMA_VOCAB_PRE_TYPE_FALCON = 4,
    LLAMA_VOCAB_PRE_TYPE_MPT = 5,
    LLAMA_VOCAB_PRE_TYPE_STARCODER = 6,
    LLAMA_VOCAB_PRE_TYPE_GPT2 = 7,
    LLAMA_VOCAB_PRE_TYPE_REFACT = 8,
    LLAMA_VOCAB_PRE_TYPE_COMMAND_R = 9,
    LLAMA_VOCAB_PRE_TYPE_STABLELM2 = 10,
    LLAMA_VOCAB_PRE_TYPE_QWEN2 = 11,
    LLAMA_VOCAB_PRE_TYPE_OLMO = 12,
    LLAMA_VOCAB_PRE_TYPE_DBRX = 13,
    LLAMA_VOCAB_PRE_TYPE_SMAUG = 14,
    LLAMA_VOCAB_PRE_TYPE_PORO = 15,
    LLAMA_VOCAB_PRE_TYPE_CHATGLM3 = 16,
    LLAMA_VOCAB_PRE_TYPE_CHATGLM4 = 17,
    LLAMA_VOCAB_PRE_TYPE_VIKING = 18,
    LLAMA_VOCAB_PRE_TYPE_JAIS = 19,
    LLAMA_VOCAB_PRE_TYPE_TEKKEN = 20,
    LLAMA_VOCAB_PRE_TYPE_SMOLLM = 21,
    LLAMA_VOCAB_PRE_TYPE_CODESHELL = 22,
    LLAMA_VOCAB_PRE_TYPE_BLOOM = 23,
    LLAMA_VOCAB_PRE_TYPE_GPT3_FINNISH = 24,
    LLAMA_VOCAB_PRE_TYPE_EXAONE = 25,
    LLAMA_VOCAB_PRE_TYPE_CHAMELEON = 26,
    LLAMA_VOCAB_PRE_TYPE_MINERVA = 27,
    LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM = 28,
};

enum llama_rope_type {
    LLAMA_ROPE_TYPE_NONE = -1,
    LLAMA_ROPE_TYPE_NORM = 0,                     /* adjacent pairs (LLaMA) */
    LLAMA_ROPE_TYPE_NEOX = GGML_ROPE_TYPE_NEOX,   /* pairs half the rotary dim apart (GPT-NeoX) */
    LLAMA_ROPE_TYPE_MROPE = GGML_ROPE_TYPE_MROPE, /* multi-section (Qwen2-VL) */
    LLAMA_ROPE_TYPE_VISION = GGML_ROPE_TYPE_VISION,
};

/* Legacy per-token type stored in older GGUF files. */
enum llama_token_type {
    LLAMA_TOKEN_TYPE_UNDEFINED = 0,
    LLAMA_TOKEN_TYPE_NORMAL = 1,
    LLAMA_TOKEN_TYPE_UNKNOWN = 2,
    LLAMA_TOKEN_TYPE_CONTROL = 3,
    LLAMA_TOKEN_TYPE_USER_DEFINED = 4,
    LLAMA_TOKEN_TYPE_UNUSED = 5,
    LLAMA_TOKEN_TYPE_BYTE = 6,
};

/* Token attribute bit flags; values combine with |. */
enum llama_token_attr {
    LLAMA_TOKEN_ATTR_UNDEFINED = 0,
    LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0,
    LLAMA_TOKEN_ATTR_UNUSED = 1 << 1,
    LLAMA_TOKEN_ATTR_NORMAL = 1 << 2,
    LLAMA_TOKEN_ATTR_CONTROL = 1 << 3,
    LLAMA_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    LLAMA_TOKEN_ATTR_BYTE = 1 << 5,
    LLAMA_TOKEN_ATTR_NORMALIZED = 1 << 6,
    LLAMA_TOKEN_ATTR_LSTRIP = 1 << 7,
    LLAMA_TOKEN_ATTR_RSTRIP = 1 << 8,
    LLAMA_TOKEN_ATTR_SINGLE_WORD = 1 << 9,
};

/* Model file type: "MOSTLY_X" means most 2-D weights are X. Gaps are retired types. */
enum llama_ftype {
    LLAMA_FTYPE_ALL_F32 = 0,
    LLAMA_FTYPE_MOSTLY_F16 = 1,
    LLAMA_FTYPE_MOSTLY_Q4_0 = 2,
    LLAMA_FTYPE_MOSTLY_Q4_1 = 3,
    /* 4..6 retired */
    LLAMA_FTYPE_MOSTLY_Q8_0 = 7,
    LLAMA_FTYPE_MOSTLY_Q5_0 = 8,
    LLAMA_FTYPE_MOSTLY_Q5_1 = 9,
    LLAMA_FTYPE_MOSTLY_Q2_K = 10,
    LLAMA_FTYPE_MOSTLY_Q3_K_S = 11,
    LLAMA_FTYPE_MOSTLY_Q3_K_M = 12,
    LLAMA_FTYPE_MOSTLY_Q3_K_L = 13,
    LLAMA_FTYPE_MOSTLY_Q4_K_S = 14,
    LLAMA_FTYPE_MOSTLY_Q4_K_M = 15,
    LLAMA_FTYPE_MOSTLY_Q5_K_S = 16,
    LLAMA_FTYPE_MOSTLY_Q5_K_M = 17,
    LLAMA_FTYPE_MOSTLY_Q6_K = 18,
    LLAMA_FTYPE_MOSTLY_IQ2_XXS = 19,
    LLAMA_FTYPE_MOSTLY_IQ2_XS = 20,
    LLAMA_FTYPE_MOSTLY_Q2_K_S = 21,
    LLAMA_FTYPE_MOSTLY_IQ3_XS = 22,
    LLAMA_FTYPE_MOSTLY_IQ3_XXS = 23,
    LLAMA_FTYPE_MOSTLY_IQ1_S = 24,
    LLAMA_FTYPE_MOSTLY_IQ4_NL = 25,
    LLAMA_FTYPE_MOSTLY_IQ3_S = 26,
    LLAMA_FTYPE_MOSTLY_IQ3_M = 27,
    LLAMA_FTYPE_MOSTLY_IQ2_S = 28,
    LLAMA_FTYPE_MOSTLY_IQ2_M = 29,
    LLAMA_FTYPE_MOSTLY_IQ4_XS = 30,
    LLAMA_FTYPE_MOSTLY_IQ1_M = 31,
    LLAMA_FTYPE_MOSTLY_BF16 = 32,
    /* 33..35 retired */
    LLAMA_FTYPE_MOSTLY_TQ1_0 = 36,
    LLAMA_FTYPE_MOSTLY_TQ2_0 = 37,

    LLAMA_FTYPE_GUESSED = 1024, /* the file does not say; the type was inferred */
};

enum llama_rope_scaling_type {
    LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED = -1, /* use the model's value */
    LLAMA_ROPE_SCALING_TYPE_NONE = 0,
    LLAMA_ROPE_SCALING_TYPE_LINEAR = 1,
    LLAMA_ROPE_SCALING_TYPE_YARN = 2,
    LLAMA_ROPE_SCALING_TYPE_LONGROPE = 3,
    LLAMA_ROPE_SCALING_TYPE_MAX_VALUE = LLAMA_ROPE_SCALING_TYPE_LONGROPE,
};

enum llama_pooling_type {
    LLAMA_POOLING_TYPE_UNSPECIFIED = -1, /* the model's default, else NONE */
    LLAMA_POOLING_TYPE_NONE = 0,         /* per-token embeddings */
    LLAMA_POOLING_TYPE_MEAN = 1,
    LLAMA_POOLING_TYPE_CLS = 2,  /* first token of the sequence */
    LLAMA_POOLING_TYPE_LAST = 3, /* last token of the sequence */
    LLAMA_POOLING_TYPE_RANK = 4, /* reranker: one score per sequence */
};

enum llama_attention_type {
    LLAMA_ATTENTION_TYPE_UNSPECIFIED = -1,
    LLAMA_ATTENTION_TYPE_CAUSAL = 0,
    LLAMA_ATTENTION_TYPE_NON_CAUSAL = 1,
};

enum llama_split_mode {
    LLAMA_SPLIT_MODE_NONE = 0,  /* a single device, main_gpu */
    LLAMA_SPLIT_MODE_LAYER = 1, /* whole layers (and their KV) per device */
    LLAMA_SPLIT_MODE_ROW = 2,   /* tensors split by rows across devices */
};

/* ---------------------------------------------------------------------------------------------------
 * Plain structs
 * ------------------------------------------------------------------------------------------------- */

typedef struct llama_token_data {
    llama_token id; /* token id */
    float logit;    /* unnormalised log-odds */
    float p;        /* probability, valid after a sampler computed softmax */
} llama_token_data;

typedef struct llama_token_data_array {
    /* Samplers may move this pointer as well as shrink size. */
    llama_token_data *data;
    size_t size;
    int64_t selected; /* index into data (not a token id) of the chosen entry; -1 = none yet */
    bool sorted;      /* data is sorted by descending logit */
} llama_token_data_array;

/* Model-load progress in [0, 1]; return false to cancel the load. */
typedef bool (*llama_progress_callback)(float progress, void *user_data);

/* Input to llama_decode / llama_encode. Every array has n_tokens entries. NULL arrays take defaults:
 * pos = the largest position in the cache (over every sequence) + 1 + the token's batch index (b4748),
 * n_seq_id/seq_id = sequence 0, logits = last token only.
 * Exactly one of token and embd must be set. */
typedef struct llama_batch {
    int32_t n_tokens;

    llama_token *token;    /* [n_tokens] */
    float *embd;           /* [n_tokens][n_embd] */
    llama_pos *pos;        /* [n_tokens] */
    int32_t *n_seq_id;     /* [n_tokens] */
    llama_seq_id **seq_id; /* [n_tokens][n_seq_id[i]] */
    int8_t *logits;        /* [n_tokens]; non-zero = produce output for this token */
} llama_batch;

enum llama_model_kv_override_type {
    LLAMA_KV_OVERRIDE_TYPE_INT,
    LLAMA_KV_OVERRIDE_TYPE_FLOAT,
    LLAMA_KV_OVERRIDE_TYPE_BOOL,
    LLAMA_KV_OVERRIDE_TYPE_STR,
};

/* One metadata override; arrays of them end with an element whose key[0] == '\0'. */
struct llama_model_kv_override {
    enum llama_model_kv_override_type tag; /* which union member is valid */

    char key[128];

    union {
        int64_t val_i64;
        double val_f64;
        bool val_bool;
        char val_str[128];
    };
};

struct llama_model_params {
    /* NULL-terminated list of offload devices; NULL = every available device. */
    ggml_backend_dev_t *devices;

    int32_t n_gpu_layers;             /* layers to keep on the GPU */
    enum llama_split_mode split_mode; /* how to spread the model across devices */

    /* With LLAMA_SPLIT_MODE_NONE, the index of the one device to use. */
    int32_t main_gpu;

    /* Share of the model per device, llama_max_devices() entries; NULL = automatic. */
    const float *tensor_split;

    /* Called with a value in [0, 1] during load; returning false cancels it. Never called for a vocab_only
     * load (as b4748). */
    llama_progress_callback progress_callback;

    void *progress_callback_user_data;

    /* Metadata overrides (terminated array) or NULL. */
    const struct llama_model_kv_override *kv_overrides;

    bool vocab_only;    /* load the vocabulary only: as b4748, no hyper-parameter but the vocabulary size is
                           read (the others report 0), no tensor is bound (their statistics are counted) */
    bool use_mmap;      /* memory-map the file when possible */
    bool use_mlock;     /* lock model memory in RAM */
    bool check_tensors; /* validate tensor data while loading */
};

struct llama_context_params {
    uint32_t n_ctx;          /* KV size in tokens; 0 = the model's training context; padded up to a multiple
                                of 256 with flash_attn, of 32 otherwise (b4748) */
    uint32_t n_batch;        /* most tokens one llama_decode call accepts */
    uint32_t n_ubatch;       /* micro-batch size */
    uint32_t n_seq_max;      /* distinct states of recurrent models; attention models take any sequence id
                                in [0, LCTX_MAX_SEQ) */
    int32_t n_threads;       /* threads for single-token (generation) steps */
    int32_t n_threads_batch; /* threads for multi-token (prompt) steps */

    enum llama_rope_scaling_type rope_scaling_type;
    enum llama_pooling_type pooling_type;     /* embedding pooling */
    enum llama_attention_type attention_type; /* CAUSAL / NON_CAUSAL attention; UNSPECIFIED = the model's */

    /* 0 / negative values below mean "from the model" or "automatic", as b4748 resolves them: base and scale
     * 0 = the model's; rope_scaling_type UNSPECIFIED = the model's, NONE = no scaling; yarn_ext_factor < 0 =
     * 1 with YaRN, else 0; yarn_attn_factor is multiplied by the model's rope.scaling.attn_factor;
     * yarn_orig_ctx 0 = the model's original context (else its training context). A value that is not a
     * setting (non-finite, a non-positive base, scale or attention factor, an unknown scaling type) makes
     * context creation fail with a logged reason. */
    float rope_freq_base;
    float rope_freq_scale;
    float yarn_ext_factor; /* negative = automatic */
    float yarn_attn_factor;
    float yarn_beta_fast;
    float yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold; /* defragment when the hole fraction exceeds this; < 0 = never */

    ggml_backend_sched_eval_callback cb_eval;
    void *cb_eval_user_data;

    /* K / V cache element types [EXPERIMENTAL]. lctx: F32, F16, BF16, Q8_0, Q4_0, Q4_1, IQ4_NL, Q5_0, Q5_1
     * (llama.cpp's cache types; the block types need head sizes that are multiples of 32); as in b4748, a
     * block-quantized type_v needs flash_attn (else llama_init_from_model logs "V cache quantization
     * requires flash_attn" and returns NULL). */
    enum ggml_type type_k;
    enum ggml_type type_v;

    /* Deprecated behaviour flag: set llama_batch.logits instead. Honoured when batch.logits is NULL. */
    bool logits_all;
    bool embeddings;  /* extract embeddings instead of logits */
    bool offload_kqv; /* keep the KV cache and attention on the GPU */
    bool flash_attn;  /* lctx: the same attention kernel; the cache stores V by rows (state v_trans = 0) */
    bool no_perf;     /* do not measure timings */

    /* Polled during compute; returning true aborts the current decode. */
    ggml_abort_callback abort_callback;
    void *abort_callback_data;
};

typedef struct llama_model_quantize_params {
    int32_t nthread;                     /* worker threads; <= 0 = hardware concurrency */
    enum llama_ftype ftype;              /* target file type */
    enum ggml_type output_tensor_type;   /* forced type of output.weight; GGML_TYPE_COUNT = not forced */
    enum ggml_type token_embedding_type; /* forced type of the token embedding; GGML_TYPE_COUNT = not */
    bool allow_requantize;               /* allow quantizing tensors that are already quantized */
    bool quantize_output_tensor;         /* quantize output.weight too */
    bool only_copy;                      /* copy tensors unchanged */
    bool pure;                           /* one type for every tensor, no per-tensor mix */
    bool keep_split;                     /* keep the input's shard count */
    void *imatrix;                       /* importance-matrix data (implementation-defined) */
    void *kv_overrides;                  /* metadata overrides (implementation-defined) */
} llama_model_quantize_params;

typedef struct llama_logit_bias {
    llama_token token;
    float bias; /* added to the token's logit */
} llama_logit_bias;

typedef struct llama_sampler_chain_params {
    bool no_perf; /* do not time the chain */
} llama_sampler_chain_params;

typedef struct llama_chat_message {
    const char *role;
    const char *content;
} llama_chat_message;

/* A LoRA adapter loaded for one model. */
struct llama_adapter_lora;

/* ---------------------------------------------------------------------------------------------------
 * Default parameters
 * ------------------------------------------------------------------------------------------------- */

/* Defaults for loading a model. */
LLAMA_API struct llama_model_params llama_model_default_params(void);
/* Defaults for creating a context. */
LLAMA_API struct llama_context_params llama_context_default_params(void);
/* Defaults for a sampler chain (no_perf = true). */
LLAMA_API struct llama_sampler_chain_params llama_sampler_chain_default_params(void);
/* Defaults for llama_model_quantize. */
LLAMA_API struct llama_model_quantize_params llama_model_quantize_default_params(void);

/* ---------------------------------------------------------------------------------------------------
 * Process-wide setup
 * ------------------------------------------------------------------------------------------------- */

/* One-time global initialisation; call once before anything else (harmless if skipped). */
LLAMA_API void llama_backend_init(void);

/* Global teardown at exit. */
LLAMA_API void llama_backend_free(void);

/* Optional NUMA placement policy for CPU threads. */
LLAMA_API void llama_numa_init(enum ggml_numa_strategy numa);

/* Hands caller-owned thread pools (ggml_threadpool_new) to the context: later decodes run on threadpool
 * for single-token steps and on threadpool_batch (NULL = threadpool) for the rest, with at most
 * n_threads / n_threads_batch of their threads. The pools must outlive the attachment; a pool serves one
 * decode at a time. */
LLAMA_API void llama_attach_threadpool(struct llama_context *ctx, ggml_threadpool_t threadpool,
                                       ggml_threadpool_t threadpool_batch);

/* Drops attached thread pools; the context goes back to its own. */
LLAMA_API void llama_detach_threadpool(struct llama_context *ctx);

/* ---------------------------------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------------------------------- */

/* Deprecated spelling of llama_model_load_from_file. */
DEPRECATED(LLAMA_API struct llama_model *llama_load_model_from_file(const char *path_model,
                                                                    struct llama_model_params params),
           "use llama_model_load_from_file instead");

/* Loads a GGUF model; NULL on failure. The first part of a split model (PREFIX-00001-of-0000N.gguf) brings
 * its other parts, found by llama_split_path's naming; a missing part, one of another split.no or
 * split.count, a tensor in two parts or a split.tensors.count that is not the parts' sum is refused. */
LLAMA_API struct llama_model *llama_model_load_from_file(const char *path_model,
                                                         struct llama_model_params params);

/* Loads a model from shards with arbitrary names, given in shard order (n_paths must equal split.count; one
 * path of an unsplit file loads it); the same checks as llama_model_load_from_file; NULL on failure. */
LLAMA_API struct llama_model *llama_model_load_from_splits(const char **paths, size_t n_paths,
                                                           struct llama_model_params params);

/* Deprecated spelling of llama_model_free. */
DEPRECATED(LLAMA_API void llama_free_model(struct llama_model *model), "use llama_model_free instead");

/* Destroys a model and its vocabulary; free its contexts first. */
LLAMA_API void llama_model_free(struct llama_model *model);

/* ---------------------------------------------------------------------------------------------------
 * Contexts
 * ------------------------------------------------------------------------------------------------- */

/* Creates an inference context (KV cache, buffers) for a model; NULL on failure. */
LLAMA_API struct llama_context *llama_init_from_model(struct llama_model *model,
                                                      struct llama_context_params params);

/* Deprecated spelling of llama_init_from_model. */
DEPRECATED(LLAMA_API struct llama_context *llama_new_context_with_model(struct llama_model *model,
                                                                        struct llama_context_params params),
           "use llama_init_from_model instead");

/* Destroys a context and everything it owns. */
LLAMA_API void llama_free(struct llama_context *ctx);

/* Current time in microseconds from a monotonic clock. */
LLAMA_API int64_t llama_time_us(void);

/* Number of entries tensor_split expects. */
LLAMA_API size_t llama_max_devices(void);

/* Whether memory-mapped loading is available. */
LLAMA_API bool llama_supports_mmap(void);
/* Whether model memory can be locked in RAM. */
LLAMA_API bool llama_supports_mlock(void);
/* Whether any GPU (or RPC) device can take layers. */
LLAMA_API bool llama_supports_gpu_offload(void);
/* Whether the RPC backend is available. */
LLAMA_API bool llama_supports_rpc(void);

/* Effective KV size in tokens (after rounding; may exceed the requested n_ctx). */
LLAMA_API uint32_t llama_n_ctx(const struct llama_context *ctx);
/* Effective logical batch size. */
LLAMA_API uint32_t llama_n_batch(const struct llama_context *ctx);
/* Effective micro-batch size. */
LLAMA_API uint32_t llama_n_ubatch(const struct llama_context *ctx);
/* Most distinct sequences in use at once.
 * lctx: returns the configured n_seq_max; b4748 returned the KV cell count instead. */
LLAMA_API uint32_t llama_n_seq_max(const struct llama_context *ctx);

/* Deprecated spelling of llama_model_n_ctx_train. */
DEPRECATED(LLAMA_API int32_t llama_n_ctx_train(const struct llama_model *model),
           "use llama_model_n_ctx_train instead");
/* Deprecated spelling of llama_model_n_embd. */
DEPRECATED(LLAMA_API int32_t llama_n_embd(const struct llama_model *model), "use llama_model_n_embd instead");
/* Deprecated spelling of llama_model_n_layer. */
DEPRECATED(LLAMA_API int32_t llama_n_layer(const struct llama_model *model),
           "use llama_model_n_layer instead");
/* Deprecated spelling of llama_model_n_head. */
DEPRECATED(LLAMA_API int32_t llama_n_head(const struct llama_model *model), "use llama_model_n_head instead");

/* Deprecated spelling of llama_vocab_n_tokens (already takes a vocab). */
DEPRECATED(LLAMA_API int32_t llama_n_vocab(const struct llama_vocab *vocab),
           "use llama_vocab_n_tokens instead");

/* The model a context was created from. */
LLAMA_API const struct llama_model *llama_get_model(const struct llama_context *ctx);
/* The context's resolved pooling type (never UNSPECIFIED). */
LLAMA_API enum llama_pooling_type llama_pooling_type(const struct llama_context *ctx);

/* The model's vocabulary; borrowed, lives as long as the model. */
LLAMA_API const struct llama_vocab *llama_model_get_vocab(const struct llama_model *model);
/* RoPE flavour of the model's architecture (NONE when it has no rotary embedding). */
LLAMA_API enum llama_rope_type llama_model_rope_type(const struct llama_model *model);

/* Training context length. */
LLAMA_API int32_t llama_model_n_ctx_train(const struct llama_model *model);
/* Hidden size: the length of one embedding vector. */
LLAMA_API int32_t llama_model_n_embd(const struct llama_model *model);
/* Number of layers. */
LLAMA_API int32_t llama_model_n_layer(const struct llama_model *model);
/* Number of attention heads (layer 0). */
LLAMA_API int32_t llama_model_n_head(const struct llama_model *model);

/* RoPE frequency scale the model was trained with. */
LLAMA_API float llama_model_rope_freq_scale_train(const struct llama_model *model);

/* Tokenizer family of a vocabulary. */
LLAMA_API enum llama_vocab_type llama_vocab_type(const struct llama_vocab *vocab);

/* Vocabulary size (also the length of a logits row). */
LLAMA_API int32_t llama_vocab_n_tokens(const struct llama_vocab *vocab);

/* Metadata access. Strings are written snprintf-style (always NUL-terminated); each call returns the full
 * length, or -1 (and "") when the key or index does not exist. Only scalar values are visible. */

/* Value of metadata key `key`, rendered as text. */
LLAMA_API int32_t llama_model_meta_val_str(const struct llama_model *model, const char *key, char *buf,
                                           size_t buf_size);
/* Number of metadata entries. */
LLAMA_API int32_t llama_model_meta_count(const struct llama_model *model);
/* Key of metadata entry i. */
LLAMA_API int32_t llama_model_meta_key_by_index(const struct llama_model *model, int32_t i, char *buf,
                                                size_t buf_size);
/* Value of metadata entry i, rendered as text. */
LLAMA_API int32_t llama_model_meta_val_str_by_index(const struct llama_model *model, int32_t i, char *buf,
                                                    size_t buf_size);

/* b4748's description "<arch> <size class> <file type>": the size class from the family's rules on the
 * hyper-parameters ("7B", "?B" when none applies), the file type from general.file_type or, when the file
 * has none, guessed from its most common tensor type ("all F32 (guessed)"); e.g. "llama 7B Q4_0". Empty for
 * a vocab_only load (b4748 never sets it there). Returns the full length. */
LLAMA_API int32_t llama_model_desc(const struct llama_model *model, char *buf, size_t buf_size);

/* Total bytes of all the file's tensors (also for a vocab_only load, as b4748). */
LLAMA_API uint64_t llama_model_size(const struct llama_model *model);

/* The model's chat template, or the named variant when name is non-NULL; NULL when absent. */
LLAMA_API const char *llama_model_chat_template(const struct llama_model *model, const char *name);

/* Total number of elements of all the file's tensors (also for a vocab_only load, as b4748). */
LLAMA_API uint64_t llama_model_n_params(const struct llama_model *model);

/* True for encoder and encoder-decoder models (they need llama_encode). */
LLAMA_API bool llama_model_has_encoder(const struct llama_model *model);

/* False only for encoder-only models. */
LLAMA_API bool llama_model_has_decoder(const struct llama_model *model);

/* Token the decoder of an encoder-decoder model starts with; -1 when not defined. */
LLAMA_API llama_token llama_model_decoder_start_token(const struct llama_model *model);

/* True for recurrent (state-space / RNN) models. */
LLAMA_API bool llama_model_is_recurrent(const struct llama_model *model);

/* Rewrites a model file at another quantization; returns 0 on success, 1 on failure. params->imatrix, when
 * set, points to a C++ std::unordered_map<std::string, std::vector<float>> (tensor name -> importance
 * weights) and params->kv_overrides to a std::vector<llama_model_kv_override> ending with an empty key, as
 * in b4748. On failure the output file is left as it was (b4748 left a partial file). */
LLAMA_API uint32_t llama_model_quantize(const char *fname_inp, const char *fname_out,
                                        const llama_model_quantize_params *params);

/* ---------------------------------------------------------------------------------------------------
 * LoRA adapters and control vectors
 * ------------------------------------------------------------------------------------------------- */

/* Loads a GGUF LoRA adapter for the model; NULL on failure (the reason is logged). It is freed with the
 * model, or earlier with llama_adapter_lora_free. */
LLAMA_API struct llama_adapter_lora *llama_adapter_lora_init(struct llama_model *model,
                                                             const char *path_lora);

/* Frees an adapter; a context it is still set on drops it from its set (lctx; b4748 required it unused). */
LLAMA_API void llama_adapter_lora_free(struct llama_adapter_lora *adapter);

/* Enables an adapter on this context with weight `scale` (or updates the scale) from the next decode on;
 * returns 0, or -1 for an adapter of another model (lctx). */
LLAMA_API int32_t llama_set_adapter_lora(struct llama_context *ctx, struct llama_adapter_lora *adapter,
                                         float scale);

/* Disables an adapter on this context; returns -1 when it was not attached. */
LLAMA_API int32_t llama_rm_adapter_lora(struct llama_context *ctx, struct llama_adapter_lora *adapter);

/* Disables every adapter on this context. */
LLAMA_API void llama_clear_adapter_lora(struct llama_context *ctx);

/* Installs a control vector: n_embd floats per layer starting at layer 1, applied to layers
 * il_start..il_end; data == NULL removes it. Returns 0 on success, 1 on failure.
 * lctx: layers beyond `len` get no vector (b4748 kept the previous call's values for them). */
LLAMA_API int32_t llama_apply_adapter_cvec(struct llama_context *ctx, const float *data, size_t len,
                                           int32_t n_embd, int32_t il_start, int32_t il_end);

/* ---------------------------------------------------------------------------------------------------
 * KV cache
 * Position ranges are half-open [p0, p1); p0 < 0 means 0, p1 < 0 means infinity.
 * ------------------------------------------------------------------------------------------------- */

/* One cell of a KV-cache view. */
struct llama_kv_cache_view_cell {
    llama_pos pos; /* position including pending shifts; negative when empty */
};

/* Debugging snapshot of the KV cache. */
struct llama_kv_cache_view {
    int32_t n_cells;            /* number of cells */
    int32_t n_seq_max;          /* sequence-id slots per cell in cells_sequences */
    int32_t token_count;        /* sum over cells of the sequences each holds */
    int32_t used_cells;         /* cells holding at least one sequence */
    int32_t max_contiguous;     /* longest run of empty cells */
    int32_t max_contiguous_idx; /* start of that run, or -1 */

    struct llama_kv_cache_view_cell *cells; /* [n_cells] */
    llama_seq_id *cells_sequences;          /* [n_cells][n_seq_max]; unused slots are -1 */
};

/* Creates an empty view recording up to n_seq_max sequence ids per cell. */
LLAMA_API struct llama_kv_cache_view llama_kv_cache_view_init(const struct llama_context *ctx,
                                                              int32_t n_seq_max);

/* Frees the view's arrays (not the struct itself). */
LLAMA_API void llama_kv_cache_view_free(struct llama_kv_cache_view *view);

/* Fills the view from the current cache, reallocating its arrays as needed. */
LLAMA_API void llama_kv_cache_view_update(const struct llama_context *ctx, struct llama_kv_cache_view *view);

/* Number of (cell, sequence) pairs; a cell shared by k sequences counts k times. Slow, for debugging. */
LLAMA_API int32_t llama_get_kv_cache_token_count(const struct llama_context *ctx);

/* Number of cells holding at least one sequence. */
LLAMA_API int32_t llama_get_kv_cache_used_cells(const struct llama_context *ctx);

/* Empties the cache: every cell free, every sequence forgotten. */
LLAMA_API void llama_kv_cache_clear(struct llama_context *ctx);

/* Removes seq_id's cells in [p0, p1) (seq_id < 0 = every sequence; an id no cell holds removes nothing).
 * False only when a recurrent model is asked to cut part of a sequence. */
LLAMA_API bool llama_kv_cache_seq_rm(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0,
                                     llama_pos p1);

/* Makes seq_id_src's cells in [p0, p1) also belong to seq_id_dst (shared, not copied). Ids outside
 * [0, LCTX_MAX_SEQ) are logged and change nothing. */
LLAMA_API void llama_kv_cache_seq_cp(struct llama_context *ctx, llama_seq_id seq_id_src,
                                     llama_seq_id seq_id_dst, llama_pos p0, llama_pos p1);

/* Drops every cell that does not belong to seq_id (seq_id < 0: every cell, as b4748). */
LLAMA_API void llama_kv_cache_seq_keep(struct llama_context *ctx, llama_seq_id seq_id);

/* Shifts the positions of seq_id's cells in [p0, p1) by delta; cells pushed below 0 are removed. K is
 * re-rotated lazily (next decode or llama_kv_cache_update), with the context's RoPE settings.
 * lctx: the moved keys are rotated by the angles alone and equal keys computed at the new positions; b4748
 * also multiplied every cached key by the RoPE magnitude (attention factor, YaRN's scale) at each shift. */
LLAMA_API void llama_kv_cache_seq_add(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0,
                                      llama_pos p1, llama_pos delta);

/* Integer-divides the positions of seq_id's cells in [p0, p1) by d; re-rotation is lazy (as seq_add's,
 * without a second magnitude). d = 1 changes nothing; lctx: d < 1 is logged and changes nothing (b4748
 * asserted). */
LLAMA_API void llama_kv_cache_seq_div(struct llama_context *ctx, llama_seq_id seq_id, llama_pos p0,
                                      llama_pos p1, int d);

/* Largest position stored for seq_id.
 * lctx: returns -1 for an empty sequence; b4748 returned 0, which was ambiguous. */
LLAMA_API llama_pos llama_kv_cache_seq_pos_max(struct llama_context *ctx, llama_seq_id seq_id);

/* Requests compaction, done at the next decode or llama_kv_cache_update. */
LLAMA_API void llama_kv_cache_defrag(struct llama_context *ctx);

/* Applies pending shifts and defragmentation now. */
LLAMA_API void llama_kv_cache_update(struct llama_context *ctx);

/* Whether seq_add / seq_div position shifts are supported. */
LLAMA_API bool llama_kv_cache_can_shift(struct llama_context *ctx);

/* ---------------------------------------------------------------------------------------------------
 * State save and restore (logits, embeddings, output mapping and KV cache; not sampler state)
 * ------------------------------------------------------------------------------------------------- */

/* Exact size in bytes of the state as it is now; 0 on error. */
LLAMA_API size_t llama_state_get_size(struct llama_context *ctx);
/* Deprecated spelling of llama_state_get_size. */
DEPRECATED(LLAMA_API size_t llama_get_state_size(struct llama_context *ctx),
           "use llama_state_get_size instead");

/* Serialises the state into dst (capacity size); returns the bytes written, 0 when too small or on error. */
LLAMA_API size_t llama_state_get_data(struct llama_context *ctx, uint8_t *dst, size_t size);
/* Deprecated, unbounded form of llama_state_get_data (dst is assumed large enough). */
DEPRECATED(LLAMA_API size_t llama_copy_state_data(struct llama_context *ctx, uint8_t *dst),
           "use llama_state_get_data instead");

/* Restores a state from llama_state_get_data; returns the bytes consumed, 0 on failure. */
LLAMA_API size_t llama_state_set_data(struct llama_context *ctx, const uint8_t *src, size_t size);
/* Deprecated, unbounded form of llama_state_set_data. */
DEPRECATED(LLAMA_API size_t llama_set_state_data(struct llama_context *ctx, const uint8_t *src),
           "use llama_state_set_data instead");

/* Reads a session file written by llama_state_save_file: restores the state and returns the saved
 * tokens. False on a bad magic/version, too many tokens, trailing data or a restore error. */
LLAMA_API bool llama_state_load_file(struct llama_context *ctx, const char *path_session,
                                     llama_token *tokens_out, size_t n_token_capacity,
                                     size_t *n_token_count_out);
/* Deprecated spelling of llama_state_load_file. */
DEPRECATED(LLAMA_API bool llama_load_session_file(struct llama_context *ctx, const char *path_session,
                                                  llama_token *tokens_out, size_t n_token_capacity,
                                                  size_t *n_token_count_out),
           "use llama_state_load_file instead");

/* Writes a session file (LLAMA_SESSION_MAGIC, LLAMA_SESSION_VERSION, tokens, state); false on I/O error. */
LLAMA_API bool llama_state_save_file(struct llama_context *ctx, const char *path_session,
                                     const llama_token *tokens, size_t n_token_count);
/* Deprecated spelling of llama_state_save_file. */
DEPRECATED(LLAMA_API bool llama_save_session_file(struct llama_context *ctx, const char *path_session,
                                                  const llama_token *tokens, size_t n_token_count),
           "use llama_state_save_file instead");

/* Bytes needed to serialise the KV cells of one sequence. */
LLAMA_API size_t llama_state_seq_get_size(struct llama_context *ctx, llama_seq_id seq_id);

/* Serialises one sequence's KV into dst; returns the bytes written, 0 on error. */
LLAMA_API size_t llama_state_seq_get_data(struct llama_context *ctx, uint8_t *dst, size_t size,
                                          llama_seq_id seq_id);

/* Loads one sequence's KV into dest_seq_id (cleared first); returns the bytes read, 0 on failure. */
LLAMA_API size_t llama_state_seq_set_data(struct llama_context *ctx, const uint8_t *src, size_t size,
                                          llama_seq_id dest_seq_id);

/* Writes a sequence file (LLAMA_STATE_SEQ_MAGIC, LLAMA_STATE_SEQ_VERSION, tokens, KV); returns its size in
 * bytes, 0 on error. */
LLAMA_API size_t llama_state_seq_save_file(struct llama_context *ctx, const char *filepath,
                                           llama_seq_id seq_id, const llama_token *tokens,
                                           size_t n_token_count);

/* Reads a sequence file into dest_seq_id; returns the bytes read, 0 on failure. */
LLAMA_API size_t llama_state_seq_load_file(struct llama_context *ctx, const char *filepath,
                                           llama_seq_id dest_seq_id, llama_token *tokens_out,
                                           size_t n_token_capacity, size_t *n_token_count_out);

/* ---------------------------------------------------------------------------------------------------
 * Decoding
 * ------------------------------------------------------------------------------------------------- */

/* Wraps a caller-owned token array as a sequence-0 batch whose other arrays are NULL. Allocates
 * nothing: do not pass it to llama_batch_free. */
LLAMA_API struct llama_batch llama_batch_get_one(llama_token *tokens, int32_t n_tokens);

/* Allocates a batch for n_tokens entries with up to n_seq_max sequence ids each; embd != 0 allocates
 * embd floats per entry instead of token ids. n_tokens starts at 0; free it with llama_batch_free. */
LLAMA_API struct llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max);

/* Frees a batch made by llama_batch_init. */
LLAMA_API void llama_batch_free(struct llama_batch batch);

/* Runs the encoder (encoder-decoder and encoder-only models); the batch must fit one micro-batch
 * (n_tokens <= n_ubatch). Each sequence attends to all of its own tokens; the KV cache is not touched.
 * NULL pos are the batch indices 0, 1, ... (b4748). Encoder-only models: the outputs are read as after a
 * decode with embeddings on (llama_get_embeddings_ith, or llama_get_embeddings_seq when pooled).
 * Encoder-decoder models: the output is kept for the cross-attention of the following llama_decode calls
 * (and can be read with llama_get_embeddings_ith). Returns 0 on success, 2 when aborted, negative on error
 * (a model without an encoder, an invalid batch). */
LLAMA_API int32_t llama_encode(struct llama_context *ctx, struct llama_batch batch);

/* Runs the decoder over a batch, extending the KV cache and storing the requested outputs.
 * Returns 0 on success; 1 when no KV slot is free (retry with a smaller batch or after freeing
 * cache); 2 when aborted; negative on error (-1 bad input, -2 allocation, -3 compute).
 * After 1 or 2 the KV cache is exactly as before the call (the outputs of the micro-batches that
 * completed stay readable), so a retry gives the logits of a clean run.
 * Without causal attention every sequence of the batch must fit in one micro-batch (n_ubatch); a batch
 * that would split one returns -1 (b4748 asserted). A non-causal model (BERT, nomic-bert) runs the batch
 * as llama_encode does: within the batch, the KV cache untouched, NULL pos 0, 1, ... on every call, the
 * whole batch in one micro-batch (more tokens than n_ubatch: -1; b4748 asserted). A recurrent model
 * (mamba) returns 1 for a sequence id of n_seq_max or more (no state cell, as b4748), changing nothing.
 * Pooled embeddings pool the whole batch however many micro-batches it took (b4748: the first one's). */
LLAMA_API int32_t llama_decode(struct llama_context *ctx, struct llama_batch batch);

/* Sets the thread counts used by later decodes (generation, batch). */
LLAMA_API void llama_set_n_threads(struct llama_context *ctx, int32_t n_threads, int32_t n_threads_batch);

/* Thread count for generation steps. */
LLAMA_API int32_t llama_n_threads(struct llama_context *ctx);

/* Thread count for batch steps. */
LLAMA_API int32_t llama_n_threads_batch(struct llama_context *ctx);

/* Switches embedding extraction on or off; while on, no logits are produced. */
LLAMA_API void llama_set_embeddings(struct llama_context *ctx, bool embeddings);

/* Switches between causal and full attention for later decodes. */
LLAMA_API void llama_set_causal_attn(struct llama_context *ctx, bool causal_attn);

/* Installs (or, with NULL, removes) the abort poll; when it returns true, llama_decode returns 2. */
LLAMA_API void llama_set_abort_callback(struct llama_context *ctx, ggml_abort_callback abort_callback,
                                        void *abort_callback_data);

/* Waits for pending computation to finish. */
LLAMA_API void llama_synchronize(struct llama_context *ctx);

/* Logits of the last decode, [n_outputs][n_vocab] in batch order; NULL in embeddings mode. Valid until the
 * next decode, state load or llama_free. */
LLAMA_API float *llama_get_logits(struct llama_context *ctx);

/* Logits row (n_vocab floats) of batch entry i; negative i counts back from the last output.
 * lctx: an out-of-range or non-output index logs the reason and returns NULL in every build (b4748
 * aborted in debug builds). */
LLAMA_API float *llama_get_logits_ith(struct llama_context *ctx, int32_t i);

/* Per-token embeddings of the last decode, [n_outputs][n_embd]; NULL when pooling or not in embeddings
 * mode. */
LLAMA_API float *llama_get_embeddings(struct llama_context *ctx);

/* Embedding row (n_embd floats) of batch entry i; negative i counts back from the last output.
 * lctx: an out-of-range or non-output index logs the reason and returns NULL in every build (b4748
 * aborted in debug builds). */
LLAMA_API float *llama_get_embeddings_ith(struct llama_context *ctx, int32_t i);

/* Pooled embedding of a sequence (n_embd floats; 1 score for RANK); NULL with pooling NONE, when the
 * sequence was not in the last decode's batch, or (CLS) when that batch lacked its position 0 (the
 * reason is logged). Not normalised. */
LLAMA_API float *llama_get_embeddings_seq(struct llama_context *ctx, llama_seq_id seq_id);

/* ---------------------------------------------------------------------------------------------------
 * Vocabulary (token ids outside [0, n_vocab) are invalid)
 * Special-token getters return LLAMA_TOKEN_NULL when the vocabulary lacks the token. Special tokens the
 * metadata does not name (EOT, EOM, FIM, end-of-generation) are found by their text with b4748's lists;
 * where a vocabulary holds several texts of one list the earlier text in the list wins (b4748 takes
 * whichever its hash map visits first). A BPE token's piece marks each character outside the byte-level
 * alphabet as b4748 does: "[UNK_BYTE_0x<its UTF-8 bytes in hex><the token's text>]".
 * ------------------------------------------------------------------------------------------------- */

/* Raw stored token text, in the tokenizer's internal encoding. */
LLAMA_API const char *llama_vocab_get_text(const struct llama_vocab *vocab, llama_token token);

/* Stored score of a token. */
LLAMA_API float llama_vocab_get_score(const struct llama_vocab *vocab, llama_token token);

/* Attribute bits of a token. */
LLAMA_API enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab *vocab, llama_token token);

/* True when the token ends generation (EOS, EOT, EOM, ...). Any id outside the vocabulary, LLAMA_TOKEN_NULL
 * included, is false without an error logged (as b4748): `is_eog(vocab, llama_vocab_eot(vocab))` is safe. */
LLAMA_API bool llama_vocab_is_eog(const struct llama_vocab *vocab, llama_token token);

/* True for control tokens. */
LLAMA_API bool llama_vocab_is_control(const struct llama_vocab *vocab, llama_token token);

/* Beginning-of-sequence token. */
LLAMA_API llama_token llama_vocab_bos(const struct llama_vocab *vocab);
/* End-of-sequence token. */
LLAMA_API llama_token llama_vocab_eos(const struct llama_vocab *vocab);
/* End-of-turn token. */
LLAMA_API llama_token llama_vocab_eot(const struct llama_vocab *vocab);
/* Separator token. */
LLAMA_API llama_token llama_vocab_sep(const struct llama_vocab *vocab);
/* Newline token. */
LLAMA_API llama_token llama_vocab_nl(const struct llama_vocab *vocab);
/* Padding token. */
LLAMA_API llama_token llama_vocab_pad(const struct llama_vocab *vocab);

/* Whether tokenizing with add_special prepends BOS. */
LLAMA_API bool llama_vocab_get_add_bos(const struct llama_vocab *vocab);
/* Whether tokenizing with add_special appends EOS. */
LLAMA_API bool llama_vocab_get_add_eos(const struct llama_vocab *vocab);

/* Fill-in-the-middle prefix marker. */
LLAMA_API llama_token llama_vocab_fim_pre(const struct llama_vocab *vocab);
/* Fill-in-the-middle suffix marker. */
LLAMA_API llama_token llama_vocab_fim_suf(const struct llama_vocab *vocab);
/* Fill-in-the-middle middle marker. */
LLAMA_API llama_token llama_vocab_fim_mid(const struct llama_vocab *vocab);
/* Fill-in-the-middle pad marker. */
LLAMA_API llama_token llama_vocab_fim_pad(const struct llama_vocab *vocab);
/* Fill-in-the-middle repository marker. */
LLAMA_API llama_token llama_vocab_fim_rep(const struct llama_vocab *vocab);
/* Fill-in-the-middle file-separator marker. */
LLAMA_API llama_token llama_vocab_fim_sep(const struct llama_vocab *vocab);

/* Deprecated aliases: each behaves exactly like its llama_vocab_* replacement. */
DEPRECATED(LLAMA_API const char *llama_token_get_text(const struct llama_vocab *vocab, llama_token token),
           "use llama_vocab_get_text instead");
DEPRECATED(LLAMA_API float llama_token_get_score(const struct llama_vocab *vocab, llama_token token),
           "use llama_vocab_get_score instead");
DEPRECATED(LLAMA_API enum llama_token_attr llama_token_get_attr(const struct llama_vocab *vocab,
                                                                llama_token token),
           "use llama_vocab_get_attr instead");
DEPRECATED(LLAMA_API bool llama_token_is_eog(const struct llama_vocab *vocab, llama_token token),
           "use llama_vocab_is_eog instead");
DEPRECATED(LLAMA_API bool llama_token_is_control(const struct llama_vocab *vocab, llama_token token),
           "use llama_vocab_is_control instead");
DEPRECATED(LLAMA_API llama_token llama_token_bos(const struct llama_vocab *vocab),
           "use llama_vocab_bos instead");
DEPRECATED(LLAMA_API llama_token llama_token_eos(const struct llama_vocab *vocab),
           "use llama_vocab_eos instead");
DEPRECATED(LLAMA_API llama_token llama_token_eot(const struct llama_vocab *vocab),
           "use llama_vocab_eot instead");
/* CLS is the same token as BOS. */
DEPRECATED(LLAMA_API llama_token llama_token_cls(const struct llama_vocab *vocab),
           "use llama_vocab_bos instead");
DEPRECATED(LLAMA_API llama_token llama_token_sep(const struct llama_vocab *vocab),
           "use llama_vocab_sep instead");
DEPRECATED(LLAMA_API llama_token llama_token_nl(const struct llama_vocab *vocab),
           "use llama_vocab_nl instead");
DEPRECATED(LLAMA_API llama_token llama_token_pad(const struct llama_vocab *vocab),
           "use llama_vocab_pad instead");
DEPRECATED(LLAMA_API bool llama_add_bos_token(const struct llama_vocab *vocab),
           "use llama_vocab_get_add_bos instead");
DEPRECATED(LLAMA_API bool llama_add_eos_token(const struct llama_vocab *vocab),
           "use llama_vocab_get_add_eos instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_pre(const struct llama_vocab *vocab),
           "use llama_vocab_fim_pre instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_suf(const struct llama_vocab *vocab),
           "use llama_vocab_fim_suf instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_mid(const struct llama_vocab *vocab),
           "use llama_vocab_fim_mid instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_pad(const struct llama_vocab *vocab),
           "use llama_vocab_fim_pad instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_rep(const struct llama_vocab *vocab),
           "use llama_vocab_fim_rep instead");
DEPRECATED(LLAMA_API llama_token llama_token_fim_sep(const struct llama_vocab *vocab),
           "use llama_vocab_fim_sep instead");

/* Returns BOS (CLS and BOS are the same token). */
DEPRECATED(LLAMA_API llama_token llama_vocab_cls(const struct llama_vocab *vocab),
           "use llama_vocab_bos instead");

/* ---------------------------------------------------------------------------------------------------
 * Tokenization (thread-safe)
 * ------------------------------------------------------------------------------------------------- */

/* Converts text_len bytes of UTF-8 into token ids. add_special adds the model's BOS/EOS (or CLS/SEP);
 * parse_special turns text spelling a special token into that token. Returns the number written, or
 * -(tokens needed) without writing anything when n_tokens_max is too small. */
LLAMA_API int32_t llama_tokenize(const struct llama_vocab *vocab, const char *text, int32_t text_len,
                                 llama_token *tokens, int32_t n_tokens_max, bool add_special,
                                 bool parse_special);

/* Writes the display bytes of one token into buf (no NUL terminator), skipping up to lstrip leading
 * spaces; special renders control tokens. Returns the bytes written, or -(bytes needed) when length is
 * too small. */
LLAMA_API int32_t llama_token_to_piece(const struct llama_vocab *vocab, llama_token token, char *buf,
                                       int32_t length, int32_t lstrip, bool special);

/* Converts tokens back to text (no NUL terminator). remove_special drops a leading BOS / trailing EOS;
 * unparse_special renders control tokens. Returns the bytes written, or -(bytes needed). */
LLAMA_API int32_t llama_detokenize(const struct llama_vocab *vocab, const llama_token *tokens,
                                   int32_t n_tokens, char *text, int32_t text_len_max, bool remove_special,
                                   bool unparse_special);

/* ---------------------------------------------------------------------------------------------------
 * Chat templates (built-in formats only; no Jinja engine)
 * ------------------------------------------------------------------------------------------------- */

/* Formats n_msg messages with a built-in template, named or recognised from Jinja source text; tmpl NULL
 * selects "chatml" (not the model's template). add_ass opens an assistant turn. Returns the full length
 * (call again with a bigger buf when it exceeds length; the output is NUL-terminated only when it fits),
 * or -1 for an unknown template. */
LLAMA_API int32_t llama_chat_apply_template(const char *tmpl, const struct llama_chat_message *chat,
                                            size_t n_msg, bool add_ass, char *buf, int32_t length);

/* Fills output with up to len built-in template names; returns the total number of names. */
LLAMA_API int32_t llama_chat_builtin_templates(const char **output, size_t len);

/* ---------------------------------------------------------------------------------------------------
 * Samplers
 *
 * A sampler transforms a llama_token_data_array; selecting samplers also set `selected`. Typical use:
 *
 *     struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
 *     llama_sampler_chain_add(smpl, llama_sampler_init_top_k(50));
 *     llama_sampler_chain_add(smpl, llama_sampler_init_temp(0.8f));
 *     llama_sampler_chain_add(smpl, llama_sampler_init_dist(seed));
 *     ...
 *     llama_token id = llama_sampler_sample(smpl, ctx, -1);  // also accepts id
 *     ...
 *     llama_sampler_free(smpl);
 * ------------------------------------------------------------------------------------------------- */

/* Samplers: where lctx differs from b4748. Everything b4748's code defines is matched (its algorithms and
 * the edge cases its defaults reach: typical with min_keep = 0 keeps all, top-n-sigma
 * with n = 0 keeps the maximal logits, Mirostat v1 with a k no int holds keeps one candidate). The
 * remaining differences, each where b4748 is undefined, aborts or is an acknowledged bug:
 * - every sort breaks logit ties by ascending id (b4748 leaves ties unspecified); NaN orders as -inf;
 *   typical sampling orders equally typical candidates stably (b4748: std::sort, unspecified) and counts
 *   0 * log 0 as 0 in the entropy (b4748 gets NaN, and then an unspecified order);
 * - empty arrays are harmless everywhere (b4748 asserts or reads data[0]); greedy/dist leave
 *   selected = -1, and dist selects nothing when every logit is -inf (b4748: NaN probabilities);
 * - clone copies all state (b4748's penalties clone loses its counts; its Mirostat v1 clone writes mu
 *   into the source);
 * - min-p never empties the array (b4748 can with p > 1 and min_keep = 0);
 * - top-n-sigma leaves -inf logits out of its statistics (b4748 includes them, gets NaN and masks nothing:
 *   later llama.cpp fixed this), sums them in double (b4748: float) and does nothing for n < 0 (b4748
 *   masks every candidate);
 * - logit-bias marks the array unsorted when it changes a logit, and duplicate entries all apply;
 * - llama_sampler_sample logs an error and returns LLAMA_TOKEN_NULL on NaN logits or when nothing was
 *   selected (b4748 aborts). */

typedef void *llama_sampler_context_t;

/* Interface a sampler implements; user code may supply its own. */
struct llama_sampler_i {
    const char *(*name)(const struct llama_sampler *smpl);                    /* optional */
    void (*accept)(struct llama_sampler *smpl, llama_token token);            /* optional */
    void (*apply)(struct llama_sampler *smpl, llama_token_data_array *cur_p); /* required */
    void (*reset)(struct llama_sampler *smpl);                                /* optional */
    struct llama_sampler *(*clone)(const struct llama_sampler *smpl); /* may be NULL only if ctx is NULL */
    void (*free)(struct llama_sampler *smpl); /* frees ctx, not the sampler; NULL only if ctx is NULL */
};

struct llama_sampler {
    const struct llama_sampler_i *iface;
    llama_sampler_context_t ctx;
};

/* Wraps a user interface and state into a sampler; iface must outlive it. */
LLAMA_API struct llama_sampler *llama_sampler_init(const struct llama_sampler_i *iface,
                                                   llama_sampler_context_t ctx);
/* The sampler's name ("(null)" without an interface). */
LLAMA_API const char *llama_sampler_name(const struct llama_sampler *smpl);
/* Tells the sampler which token was chosen (updates history-based state). */
LLAMA_API void llama_sampler_accept(struct llama_sampler *smpl, llama_token token);
/* Runs the sampler over the candidates. */
LLAMA_API void llama_sampler_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p);
/* Clears history and re-seeds the RNG. */
LLAMA_API void llama_sampler_reset(struct llama_sampler *smpl);
/* Deep copy, including the current state. */
LLAMA_API struct llama_sampler *llama_sampler_clone(const struct llama_sampler *smpl);
/* Frees a sampler (NULL-safe); a chain frees its members. Never free a sampler a chain owns. */
LLAMA_API void llama_sampler_free(struct llama_sampler *smpl);

/* A new, empty chain; its members are applied in insertion order. */
LLAMA_API struct llama_sampler *llama_sampler_chain_init(struct llama_sampler_chain_params params);

/* Appends smpl to the chain, which takes ownership of it. */
LLAMA_API void llama_sampler_chain_add(struct llama_sampler *chain, struct llama_sampler *smpl);
/* Member i (borrowed), or NULL when out of range. */
LLAMA_API struct llama_sampler *llama_sampler_chain_get(const struct llama_sampler *chain, int32_t i);
/* Number of members. */
LLAMA_API int llama_sampler_chain_n(const struct llama_sampler *chain);

/* Takes member i out of the chain and returns it to the caller, or NULL when out of range. */
LLAMA_API struct llama_sampler *llama_sampler_chain_remove(struct llama_sampler *chain, int32_t i);

/* Selects the highest-logit candidate. */
LLAMA_API struct llama_sampler *llama_sampler_init_greedy(void);
/* Draws a candidate by probability with its own RNG; LLAMA_DEFAULT_SEED = random seed. */
LLAMA_API struct llama_sampler *llama_sampler_init_dist(uint32_t seed);

/* Sorts by logit and fills p with the softmax. */
DEPRECATED(LLAMA_API struct llama_sampler *llama_sampler_init_softmax(void),
           "will be removed; samplers that need probabilities compute the softmax themselves");

/* Keeps the k highest-logit candidates (k <= 0 keeps all). */
LLAMA_API struct llama_sampler *llama_sampler_init_top_k(int32_t k);

/* Nucleus: keeps the smallest top set whose probability mass reaches p (at least min_keep). */
LLAMA_API struct llama_sampler *llama_sampler_init_top_p(float p, size_t min_keep);

/* Drops candidates below p times the top probability (keeping at least min_keep). */
LLAMA_API struct llama_sampler *llama_sampler_init_min_p(float p, size_t min_keep);

/* Locally typical sampling with mass p, keeping at least min_keep; min_keep = 0 keeps every candidate
 * (b4748's min_keep - 1 wraps around; common code passes 0), in typical order. */
LLAMA_API struct llama_sampler *llama_sampler_init_typical(float p, size_t min_keep);

/* Divides the logits by t; t <= 0 keeps only the maximum. */
LLAMA_API struct llama_sampler *llama_sampler_init_temp(float t);

/* Entropy-based dynamic temperature in [t - delta, t + delta] shaped by exponent. */
LLAMA_API struct llama_sampler *llama_sampler_init_temp_ext(float t, float delta, float exponent);

/* Exclude-top-choices: with probability p removes every candidate above threshold t but the least likely. */
LLAMA_API struct llama_sampler *llama_sampler_init_xtc(float p, float t, size_t min_keep, uint32_t seed);

/* Masks logits more than n standard deviations below the maximum, then applies softmax. n = 0 keeps only
 * the maximal logits; n < 0 does nothing (see the differences from b4748 below). */
LLAMA_API struct llama_sampler *llama_sampler_init_top_n_sigma(float n);

/* Mirostat v1 (target surprise tau, learning rate eta, m tokens for the estimate); selects a token. A
 * computed k below 1, beyond INT32_MAX or not a number keeps one candidate (b4748: max(int(k), 1), x86). */
LLAMA_API struct llama_sampler *llama_sampler_init_mirostat(int32_t n_vocab, uint32_t seed, float tau,
                                                            float eta, int32_t m);

/* Mirostat v2; selects a token. */
LLAMA_API struct llama_sampler *llama_sampler_init_mirostat_v2(uint32_t seed, float tau, float eta);

/* Constrains output to a GBNF grammar starting at rule grammar_root; empty grammar = pass-through.
 * Token references as newer llama.cpp: `<[123]>` matches token 123, `<think>` the token whose text is
 * exactly "<think>", `!<[123]>` / `!<think>` any one token but it (matched by id; the rest matches bytes).
 * lctx: a grammar that cannot be used gives NULL (b4748: a sampler that allows everything); grammar_root
 * needs no rule called `root` (see the differences from b4748 at the top). */
LLAMA_API struct llama_sampler *llama_sampler_init_grammar(const struct llama_vocab *vocab,
                                                           const char *grammar_str, const char *grammar_root);

/* Like llama_sampler_init_grammar, but inactive until a trigger word appears or a trigger token is
 * accepted. Of several trigger words in the output, the first in the list that occurs starts the grammar,
 * from where it occurs; an empty word occurs at once (as b4748). */
LLAMA_API struct llama_sampler *llama_sampler_init_grammar_lazy(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_words, size_t num_trigger_words, const llama_token *trigger_tokens,
    size_t num_trigger_tokens);

/* Repetition penalties over the last penalty_last_n accepted tokens (0 disables; so does a negative
 * value: pass the context size explicitly). */
LLAMA_API struct llama_sampler *llama_sampler_init_penalties(int32_t penalty_last_n, float penalty_repeat,
                                                             float penalty_freq, float penalty_present);

/* DRY repetition penalty; dry_penalty_last_n == -1 means n_ctx_train; seq_breakers reset matching. */
LLAMA_API struct llama_sampler *llama_sampler_init_dry(const struct llama_vocab *vocab, int32_t n_ctx_train,
                                                       float dry_multiplier, float dry_base,
                                                       int32_t dry_allowed_length, int32_t dry_penalty_last_n,
                                                       const char **seq_breakers, size_t num_breakers);

/* Adds a fixed bias to the listed tokens' logits (the list is copied). */
LLAMA_API struct llama_sampler *llama_sampler_init_logit_bias(int32_t n_vocab, int32_t n_logit_bias,
                                                              const llama_logit_bias *logit_bias);

/* Fill-in-the-middle post-processor, meant to run after top-k / top-p. */
LLAMA_API struct llama_sampler *llama_sampler_init_infill(const struct llama_vocab *vocab);

/* Seed in use by a dist / mirostat sampler (for a chain, its last seeded member); else
 * LLAMA_DEFAULT_SEED. */
LLAMA_API uint32_t llama_sampler_get_seed(const struct llama_sampler *smpl);

/* Samples from the logits of batch entry idx (-1 = last output), applies smpl, accepts the chosen token
 * and returns it. Do not call llama_sampler_accept again for it. */
LLAMA_API llama_token llama_sampler_sample(struct llama_sampler *smpl, struct llama_context *ctx,
                                           int32_t idx);

/* ---------------------------------------------------------------------------------------------------
 * Model-split paths
 * ------------------------------------------------------------------------------------------------- */

/* Writes "<path_prefix>-%05d-of-%05d.gguf" for the 0-based split_no (the file number is split_no + 1),
 * truncated to maxlen (NUL-terminated when maxlen > 0); returns the full string length, as snprintf. */
LLAMA_API int llama_split_path(char *split_path, size_t maxlen, const char *path_prefix, int split_no,
                               int split_count);

/* Extracts the prefix from a split path when it ends with the suffix for the 0-based split_no and
 * split_count (truncated to maxlen); returns its full length, or 0 (writing nothing) when the suffix does
 * not match or the prefix would be empty. */
LLAMA_API int llama_split_prefix(char *split_prefix, size_t maxlen, const char *split_path, int split_no,
                                 int split_count);

/* Text describing the compiled-in backends and CPU features; a static buffer rewritten on each call. */
LLAMA_API const char *llama_print_system_info(void);

/* Routes every log message to log_callback; NULL restores the default (stderr). */
LLAMA_API void llama_log_set(ggml_log_callback log_callback, void *user_data);

/* ---------------------------------------------------------------------------------------------------
 * Performance counters
 * ------------------------------------------------------------------------------------------------- */

struct llama_perf_context_data {
    double t_start_ms;  /* start timestamp */
    double t_load_ms;   /* model load time */
    double t_p_eval_ms; /* total prompt-processing time */
    double t_eval_ms;   /* total generation time */

    int32_t n_p_eval; /* prompt tokens processed */
    int32_t n_eval;   /* single-token evaluations */
};

struct llama_perf_sampler_data {
    double t_sample_ms;

    int32_t n_sample;
};

/* Snapshot of a context's timings (ms) and counts. */
LLAMA_API struct llama_perf_context_data llama_perf_context(const struct llama_context *ctx);
/* Logs a context's timings. */
LLAMA_API void llama_perf_context_print(const struct llama_context *ctx);
/* Zeroes a context's counters and restarts its clock. */
LLAMA_API void llama_perf_context_reset(struct llama_context *ctx);

/* Sampling time and count of a sampler chain (chains only). */
LLAMA_API struct llama_perf_sampler_data llama_perf_sampler(const struct llama_sampler *chain);
/* Logs a chain's sampling time. */
LLAMA_API void llama_perf_sampler_print(const struct llama_sampler *chain);
/* Zeroes a chain's counters. */
LLAMA_API void llama_perf_sampler_reset(struct llama_sampler *chain);

#ifdef __cplusplus
}
#endif

#endif /* LLAMA_H */
