/* State round trip: generate a few tokens, snapshot the context, keep generating; then restore the snapshot
 * into a second context (from memory), a third (from a session file) and the sequence state into sequence 1
 * of a fourth, and generate again with a sampler in the same state. Every continuation must be identical;
 * the program exits with 1 when one differs.
 *
 *   example_save_load_state MODEL.gguf [N_PREDICT] [STATE_FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

enum { MAX_PREDICT = 256 };

static struct llama_context *new_context(struct llama_model *model, uint32_t n_seq_max) {
    struct llama_context_params p = llama_context_default_params();
    p.n_ctx = 256;
    p.n_batch = 64;
    p.n_seq_max = n_seq_max;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    return llama_init_from_model(model, p);
}

static struct llama_sampler *new_sampler(void) {
    struct llama_sampler *s = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(s, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(s, llama_sampler_init_dist(42));
    return s;
}

static int decode_one(struct llama_context *ctx, llama_token t, llama_pos pos, llama_seq_id seq) {
    struct llama_batch b = llama_batch_init(1, 0, 1);
    b.n_tokens = 1;
    b.token[0] = t;
    b.pos[0] = pos;
    b.n_seq_id[0] = 1;
    b.seq_id[0][0] = seq;
    b.logits[0] = 1;
    const int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

/* Samples from the current logits, then decodes each token at pos, pos+1, ... on seq; n tokens. */
static int generate(struct llama_context *ctx, struct llama_sampler *smpl, llama_pos pos, llama_seq_id seq,
                    int n, llama_token *out) {
    for (int i = 0; i < n; ++i) {
        out[i] = llama_sampler_sample(smpl, ctx, -1);
        if (out[i] < 0 || decode_one(ctx, out[i], pos + i, seq) != 0) return 1;
    }
    return 0;
}

static int same(const char *what, const llama_token *a, const llama_token *b, int n) {
    if (memcmp(a, b, sizeof(llama_token) * (size_t)n) == 0) {
        printf("%s: identical\n", what);
        return 1;
    }
    fprintf(stderr, "%s: MISMATCH\n", what);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [N_PREDICT] [STATE_FILE]\n", argv[0]);
        return 2;
    }
    const int n_predict = argc > 2 ? atoi(argv[2]) : 16;
    const char *state_file = argc > 3 ? argv[3] : "example-save-load-state.bin";
    if (n_predict < 1 || n_predict > MAX_PREDICT) return 2;

    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const char *prompt = "Once upon a time, there was a little girl";
    llama_token tokens[64];
    const int n_prompt = llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), tokens, 64, true, false);
    if (n_prompt <= 0) return 1;

    /* First run: prompt, 4 tokens, snapshot (memory, file, sequence), then n_predict more. */
    struct llama_context *ctx = new_context(model, 1);
    struct llama_sampler *smpl = new_sampler();
    if (!ctx || llama_decode(ctx, llama_batch_get_one(tokens, n_prompt)) != 0) return 1;
    llama_token warmup[4];
    if (generate(ctx, smpl, n_prompt, 0, 4, warmup)) return 1;
    const llama_pos pos = n_prompt + 4;

    const size_t state_size = llama_state_get_size(ctx);
    uint8_t *state = malloc(state_size);
    if (!state || llama_state_get_data(ctx, state, state_size) != state_size) return 1;
    const size_t seq_size = llama_state_seq_get_size(ctx, 0);
    uint8_t *seq_state = malloc(seq_size);
    if (!seq_state || llama_state_seq_get_data(ctx, seq_state, seq_size, 0) != seq_size) return 1;
    llama_token saved_tokens[64 + 4];
    memcpy(saved_tokens, tokens, sizeof(llama_token) * (size_t)n_prompt);
    memcpy(saved_tokens + n_prompt, warmup, sizeof warmup);
    if (!llama_state_save_file(ctx, state_file, saved_tokens, (size_t)pos)) return 1;
    struct llama_sampler *smpl_at_snapshot = llama_sampler_clone(smpl);

    llama_token expect[MAX_PREDICT], got[MAX_PREDICT];
    if (generate(ctx, smpl, pos, 0, n_predict, expect)) return 1;
    printf("first run:");
    for (int i = 0; i < n_predict; ++i) printf(" %d", expect[i]);
    printf("\n");
    int ok = 1;

    /* From memory: the restored logits give the first token straight away. */
    struct llama_context *ctx2 = new_context(model, 1);
    struct llama_sampler *s2 = llama_sampler_clone(smpl_at_snapshot);
    if (!ctx2 || llama_state_set_data(ctx2, state, state_size) != state_size) return 1;
    ok &= !generate(ctx2, s2, pos, 0, n_predict, got) && same("restored from memory", expect, got, n_predict);

    /* From the session file. */
    struct llama_context *ctx3 = new_context(model, 1);
    struct llama_sampler *s3 = llama_sampler_clone(smpl_at_snapshot);
    llama_token file_tokens[128];
    size_t n_file_tokens = 0;
    if (!ctx3 || !llama_state_load_file(ctx3, state_file, file_tokens, 128, &n_file_tokens)) return 1;
    ok &= n_file_tokens == (size_t)pos &&
          memcmp(file_tokens, saved_tokens, sizeof(llama_token) * (size_t)pos) == 0;
    ok &= !generate(ctx3, s3, pos, 0, n_predict, got) && same("restored from file", expect, got, n_predict);
    remove(state_file);

    /* Sequence state into sequence 1: no logits are saved, so redo the last step first (re-decode the last
     * warm-up token at its position after removing it). */
    struct llama_context *ctx4 = new_context(model, 2);
    struct llama_sampler *s4 = llama_sampler_clone(smpl_at_snapshot);
    if (!ctx4 || llama_state_seq_set_data(ctx4, seq_state, seq_size, 1) != seq_size) return 1;
    llama_kv_cache_seq_rm(ctx4, 1, pos - 1, -1);
    if (decode_one(ctx4, warmup[3], pos - 1, 1) != 0) return 1;
    ok &= !generate(ctx4, s4, pos, 1, n_predict, got) &&
          same("sequence 0 restored as sequence 1", expect, got, n_predict);

    llama_sampler_free(smpl);
    llama_sampler_free(smpl_at_snapshot);
    llama_sampler_free(s2);
    llama_sampler_free(s3);
    llama_sampler_free(s4);
    llama_free(ctx);
    llama_free(ctx2);
    llama_free(ctx3);
    llama_free(ctx4);
    llama_model_free(model);
    free(state);
    free(seq_state);
    llama_backend_free();
    return ok ? 0 : 1;
}
