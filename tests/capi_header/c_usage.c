/*
 * Compiled (not linked) by c_compile_test.cpp as C11 with -pedantic -Wall -Wextra -Werror.
 *
 * It is written the way C programs for llama.cpp's b4748 llama.h are written: tag-only structs spelled
 * with `struct`, typedef'd structs spelled both ways, positional aggregate initialisers, enums named with
 * `enum` next to functions of the same name, the anonymous union of llama_model_kv_override, ggml names
 * without including ggml.h, and a user-defined sampler. Any of these breaking is a source-compatibility
 * break.
 */
#include <stdio.h>
#include <string.h>

#include "llama.h"

/* ---- a user-defined sampler, filled in positionally like C bindings do ---- */

struct my_state {
    int calls;
};

static const char *my_name(const struct llama_sampler *smpl) {
    (void)smpl;
    return "mine";
}

static void my_accept(struct llama_sampler *smpl, llama_token token) {
    struct my_state *st = (struct my_state *)smpl->ctx;
    st->calls += token >= 0;
}

static void my_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    (void)smpl;
    if (cur_p->size > 0) {
        cur_p->selected = 0;
        cur_p->data[0].p = 1.0f;
    }
}

static void my_reset(struct llama_sampler *smpl) {
    ((struct my_state *)smpl->ctx)->calls = 0;
}

static struct llama_sampler *my_clone(const struct llama_sampler *smpl) {
    return llama_sampler_init(smpl->iface, smpl->ctx);
}

static void my_free(struct llama_sampler *smpl) {
    (void)smpl;
}

static const struct llama_sampler_i k_my_iface = {my_name, my_accept, my_apply, my_reset, my_clone, my_free};

/* ---- callbacks with the ggml types llama.h brings in ---- */

static void my_log(enum ggml_log_level level, const char *text, void *user_data) {
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, (FILE *)user_data);
}

static bool my_abort(void *data) {
    return *(const bool *)data;
}

static bool my_progress(float progress, void *user_data) {
    (void)user_data;
    return progress <= 1.0f;
}

static bool my_eval(struct ggml_tensor *t, bool ask, void *user_data) {
    (void)t;
    (void)user_data;
    return ask;
}

int run_program(const char *path);

int run_program(const char *path) {
    static bool stop = false;

    llama_log_set(my_log, stderr);
    llama_backend_init();
    ggml_backend_load_all();
    llama_numa_init(GGML_NUMA_STRATEGY_DISABLED);

    /* A terminated override array with the anonymous union reached directly. */
    struct llama_model_kv_override overrides[3];
    memset(overrides, 0, sizeof(overrides));
    overrides[0].tag = LLAMA_KV_OVERRIDE_TYPE_INT;
    strcpy(overrides[0].key, "llama.context_length");
    overrides[0].val_i64 = 4096;
    overrides[1].tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
    strcpy(overrides[1].key, "tokenizer.ggml.add_bos_token");
    overrides[1].val_bool = true;

    struct llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    mparams.split_mode = LLAMA_SPLIT_MODE_NONE;
    mparams.progress_callback = my_progress;
    mparams.kv_overrides = overrides;
    mparams.use_mmap = llama_supports_mmap();

    struct llama_model *model = llama_model_load_from_file(path, mparams);
    if (model == NULL) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 2048;
    cparams.n_seq_max = 4;
    cparams.type_k = GGML_TYPE_F16;
    cparams.type_v = GGML_TYPE_Q8_0;
    cparams.flash_attn = true;
    cparams.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_YARN;
    cparams.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    cparams.attention_type = LLAMA_ATTENTION_TYPE_CAUSAL;
    cparams.cb_eval = my_eval;
    cparams.abort_callback = my_abort;
    cparams.abort_callback_data = &stop;

    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) return 1;

    /* Enum tags and same-named functions coexist. */
    enum llama_pooling_type pooling = llama_pooling_type(ctx);
    enum llama_vocab_type vtype = llama_vocab_type(vocab);
    enum llama_rope_type rope = llama_model_rope_type(model);
    if (pooling == LLAMA_POOLING_TYPE_RANK && vtype == LLAMA_VOCAB_TYPE_WPM && rope == LLAMA_ROPE_TYPE_NONE) {
        return 2;
    }

    /* Tokenize: measure first, then fill. */
    const char *text = "Hello world";
    const int32_t n_needed = -llama_tokenize(vocab, text, (int32_t)strlen(text), NULL, 0, true, true);
    llama_token tokens[64];
    if (n_needed > 64) return 1;
    const int32_t n_tok = llama_tokenize(vocab, text, (int32_t)strlen(text), tokens, 64, true, true);

    /* Positional batch initialisers in both spellings. */
    llama_batch one = llama_batch_get_one(tokens, n_tok);
    struct llama_batch manual = {n_tok, tokens, NULL, NULL, NULL, NULL, NULL};
    if (llama_decode(ctx, one) != 0 || llama_encode(ctx, manual) < 0) return 1;

    struct llama_batch batch = llama_batch_init(512, 0, 4);
    for (int32_t i = 0; i < n_tok; ++i) {
        batch.token[i] = tokens[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = i == n_tok - 1;
    }
    batch.n_tokens = n_tok;
    const int32_t rc = llama_decode(ctx, batch);
    llama_batch_free(batch);
    if (rc == 1) return 3;

    llama_kv_cache_seq_cp(ctx, 0, 1, -1, -1);
    const llama_pos last = llama_kv_cache_seq_pos_max(ctx, 1);
    (void)llama_kv_cache_seq_rm(ctx, 1, last, -1);

    float *logits = llama_get_logits_ith(ctx, -1);
    if (logits == NULL) return 1;

    /* A sampler chain with the user sampler and built-ins. */
    llama_sampler_chain_params sparams = llama_sampler_chain_default_params();
    sparams.no_perf = false;
    struct llama_sampler *chain = llama_sampler_chain_init(sparams);
    static struct my_state state = {0};
    llama_sampler_chain_add(chain, llama_sampler_init(&k_my_iface, &state));
    const llama_logit_bias biases[2] = {{1, -1.0f}, {2, 0.5f}};
    llama_sampler_chain_add(chain, llama_sampler_init_logit_bias(llama_vocab_n_tokens(vocab), 2, biases));
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(chain, llama_sampler_init_dist(LLAMA_DEFAULT_SEED));
    const llama_token next = llama_sampler_sample(chain, ctx, -1);

    llama_token_data cand[2] = {{0, 1.0f, 0.0f}, {1, 2.0f, 0.0f}};
    llama_token_data_array arr = {cand, 2, -1, false};
    llama_sampler_apply(chain, &arr);

    char piece[32];
    const int32_t n_piece = llama_token_to_piece(vocab, next, piece, (int32_t)sizeof(piece), 0, false);
    if (n_piece < 0 || llama_vocab_is_eog(vocab, next) || next == LLAMA_TOKEN_NULL) return 4;

    /* Chat templates: NULL selects chatml. */
    const llama_chat_message msgs[2] = {{"system", "Be brief."}, {"user", "Hi"}};
    struct llama_chat_message extra = {"assistant", "Hello"};
    (void)extra;
    char buf[256];
    const int32_t n_chat =
        llama_chat_apply_template(llama_model_chat_template(model, NULL), msgs, 2, true, buf, sizeof(buf));
    const char *names[64];
    const int32_t n_names = llama_chat_builtin_templates(names, 64);

    /* KV view and perf structs are tag-only. */
    struct llama_kv_cache_view view = llama_kv_cache_view_init(ctx, 4);
    llama_kv_cache_view_update(ctx, &view);
    struct llama_kv_cache_view_cell first = view.cells[0];
    llama_kv_cache_view_free(&view);

    struct llama_perf_context_data perf = llama_perf_context(ctx);
    struct llama_perf_sampler_data sperf = llama_perf_sampler(chain);

    /* State files use the published magic numbers. */
    const unsigned magic = LLAMA_SESSION_MAGIC;
    const unsigned seq_magic = LLAMA_STATE_SEQ_MAGIC;
    size_t n_loaded = 0;
    if (!llama_state_save_file(ctx, "s.bin", tokens, (size_t)n_tok) ||
        !llama_state_load_file(ctx, "s.bin", tokens, 64, &n_loaded)) {
        return 5;
    }

    llama_model_quantize_params qparams = llama_model_quantize_default_params();
    qparams.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
    qparams.output_tensor_type = GGML_TYPE_COUNT;
    const uint32_t qrc = llama_model_quantize(path, "out.gguf", &qparams);

    char split[256];
    const int n_split = llama_split_path(split, sizeof(split), "/m/x", 2, 4);

    printf("%d %d %d %d %u %u %f %d %u %d %s\n", n_chat, n_names, first.pos, perf.n_eval + sperf.n_sample,
           magic, seq_magic, llama_model_rope_freq_scale_train(model), n_split, qrc,
           llama_vocab_get_attr(vocab, next) & LLAMA_TOKEN_ATTR_CONTROL, llama_print_system_info());

    llama_sampler_free(chain);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
