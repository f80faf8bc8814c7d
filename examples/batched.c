/* Several continuations of one prompt, decoded together: the prompt is decoded once with every sequence
 * id on each token (its cells are shared), then each step puts one token per sequence into one batch.
 *
 *   example_batched MODEL.gguf [N_PARALLEL] [N_PREDICT] [PROMPT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

#define MAX_TEXT 4096

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [N_PARALLEL] [N_PREDICT] [PROMPT]\n", argv[0]);
        return 2;
    }
    const char *model_path = argv[1];
    const int n_parallel = argc > 2 ? atoi(argv[2]) : 4;
    const int n_predict = argc > 3 ? atoi(argv[3]) : 24;
    const char *prompt = argc > 4 ? argv[4] : "Once upon a time";
    if (n_parallel < 1 || n_predict < 1) return 2;

    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    const int n_prompt = -llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), NULL, 0, true, false);
    llama_token *tokens = malloc(sizeof(llama_token) * (size_t)n_prompt);
    llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), tokens, n_prompt, true, false);

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t)(n_prompt + n_parallel * n_predict);
    cparams.n_batch = (uint32_t)(n_prompt > n_parallel ? n_prompt : n_parallel);
    cparams.n_seq_max = (uint32_t)n_parallel;
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (!ctx) return 1;

    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(smpl, llama_sampler_init_top_p(0.9f, 1));
    llama_sampler_chain_add(smpl, llama_sampler_init_temp(0.8f));
    llama_sampler_chain_add(smpl, llama_sampler_init_dist(1234));

    const int batch_cap = n_prompt > n_parallel ? n_prompt : n_parallel;
    struct llama_batch batch = llama_batch_init(batch_cap, 0, n_parallel);
    batch.n_tokens = n_prompt;
    for (int i = 0; i < n_prompt; ++i) {
        batch.token[i] = tokens[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = n_parallel;
        for (int s = 0; s < n_parallel; ++s) batch.seq_id[i][s] = s;
        batch.logits[i] = i == n_prompt - 1;
    }
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "prompt decode failed\n");
        return 1;
    }

    char(*text)[MAX_TEXT] = calloc((size_t)n_parallel, MAX_TEXT);
    size_t *text_len = calloc((size_t)n_parallel, sizeof(size_t));
    int *i_batch =
        malloc(sizeof(int) * (size_t)n_parallel); /* batch index of each live sequence, -1 = done */
    for (int s = 0; s < n_parallel; ++s) i_batch[s] = n_prompt - 1;

    int status = 0, n_cur = n_prompt, n_total = 0;
    for (int step = 0; step < n_predict; ++step) {
        batch.n_tokens = 0;
        for (int s = 0; s < n_parallel; ++s) {
            if (i_batch[s] < 0) continue;
            const llama_token t = llama_sampler_sample(smpl, ctx, i_batch[s]);
            if (t < 0) {
                status = 1;
                break;
            }
            if (llama_vocab_is_eog(vocab, t) || step == n_predict - 1) {
                i_batch[s] = -1;
                continue;
            }
            char piece[128];
            const int n = llama_token_to_piece(vocab, t, piece, sizeof piece, 0, false);
            if (n > 0 && text_len[s] + (size_t)n < MAX_TEXT) {
                memcpy(text[s] + text_len[s], piece, (size_t)n);
                text_len[s] += (size_t)n;
            }
            const int k = batch.n_tokens++;
            batch.token[k] = t;
            batch.pos[k] = n_cur;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = s;
            batch.logits[k] = 1;
            i_batch[s] = k;
            n_total++;
        }
        if (status || batch.n_tokens == 0) break;
        n_cur++;
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "decode failed at step %d\n", step);
            status = 1;
            break;
        }
    }

    for (int s = 0; s < n_parallel; ++s)
        printf("sequence %d: %s%.*s\n", s, prompt, (int)text_len[s], text[s]);
    fprintf(stderr, "decoded %d tokens in %d sequences\n", n_total, n_parallel);
    llama_perf_context_print(ctx);

    llama_batch_free(batch);
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    free(text);
    free(text_len);
    free(i_batch);
    llama_backend_free();
    return status;
}
