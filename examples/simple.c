/* Minimal generator through llama.h: tokenize a prompt, decode it, then pick the most likely token and
 * decode it, n_predict times, printing the text as it is produced.
 *
 *   example_simple MODEL.gguf [N_PREDICT] [PROMPT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [N_PREDICT] [PROMPT]\n", argv[0]);
        return 2;
    }
    const char *model_path = argv[1];
    const int n_predict = argc > 2 ? atoi(argv[2]) : 32;
    const char *prompt = argc > 3 ? argv[3] : "Once upon a time";

    ggml_backend_load_all();
    llama_backend_init();

    struct llama_model *model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", model_path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    /* Measure, then tokenize (the buffer contract: -needed when too small). */
    const int n_prompt = -llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), NULL, 0, true, true);
    llama_token *tokens = malloc(sizeof(llama_token) * (size_t)n_prompt);
    if (!tokens ||
        llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), tokens, n_prompt, true, true) != n_prompt) {
        fprintf(stderr, "tokenization failed\n");
        return 1;
    }

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t)(n_prompt + n_predict);
    cparams.n_batch = (uint32_t)n_prompt;
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;
    cparams.no_perf = false;
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }

    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());

    for (int i = 0; i < n_prompt; ++i) {
        char piece[128];
        const int n = llama_token_to_piece(vocab, tokens[i], piece, sizeof piece, 0, true);
        if (n > 0) fwrite(piece, 1, (size_t)n, stdout);
    }

    const int64_t t_start = ggml_time_us();
    struct llama_batch batch = llama_batch_get_one(tokens, n_prompt);
    llama_token next;
    int n_decoded = 0;
    int status = 0;
    for (int n_pos = 0; n_pos + batch.n_tokens < n_prompt + n_predict;) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "decode failed\n");
            status = 1;
            break;
        }
        n_pos += batch.n_tokens;
        next = llama_sampler_sample(smpl, ctx, -1);
        if (next < 0) {
            status = 1;
            break;
        }
        if (llama_vocab_is_eog(vocab, next)) break;
        char piece[128];
        const int n = llama_token_to_piece(vocab, next, piece, sizeof piece, 0, true);
        if (n < 0) {
            status = 1;
            break;
        }
        fwrite(piece, 1, (size_t)n, stdout);
        fflush(stdout);
        batch = llama_batch_get_one(&next, 1);
        n_decoded++;
    }
    const int64_t t_end = ggml_time_us();
    printf("\n");
    fprintf(stderr, "decoded %d tokens in %.2f s\n", n_decoded, (double)(t_end - t_start) / 1e6);
    llama_perf_sampler_print(smpl);
    llama_perf_context_print(ctx);

    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    llama_backend_free();
    return status;
}
