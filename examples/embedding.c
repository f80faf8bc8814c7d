/* Sentence embeddings through llama.h: each prompt gets its own sequence id in one batch; the context
 * pools the token embeddings per sequence (mean), or, with pooling "none", the program reads the
 * per-token rows and takes the last one. Prints the first values and the cosine similarity matrix.
 *
 *   example_embedding MODEL.gguf [mean|none] [PROMPT ...]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void normalize(const float *in, float *out, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += (double)in[i] * in[i];
    const double norm = sum > 0.0 ? sqrt(sum) : 1.0;
    for (int i = 0; i < n; ++i) out[i] = (float)(in[i] / norm);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [mean|none] [PROMPT ...]\n", argv[0]);
        return 2;
    }
    const int mean = argc > 2 ? strcmp(argv[2], "none") != 0 : 1;
    static const char *default_prompts[] = {"Once upon a time", "The cat sat on the mat", "Once upon a time"};
    const char **prompts = argc > 3 ? (const char **)(argv + 3) : default_prompts;
    const int n_prompts = argc > 3 ? argc - 3 : 3;

    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_embd = llama_model_n_embd(model);

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 512;
    cparams.n_batch = 512;
    cparams.n_ubatch = 512;
    cparams.n_seq_max = (uint32_t)n_prompts;
    cparams.embeddings = true;
    cparams.pooling_type = mean ? LLAMA_POOLING_TYPE_MEAN : LLAMA_POOLING_TYPE_NONE;
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (!ctx) return 1;
    printf("pooling: %s\n", llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_MEAN ? "mean" : "none");

    struct llama_batch batch = llama_batch_init(512, 0, 1);
    int *last_index = malloc(sizeof(int) * (size_t)n_prompts);
    for (int p = 0; p < n_prompts; ++p) {
        llama_token toks[128];
        const int n = llama_tokenize(vocab, prompts[p], (int32_t)strlen(prompts[p]), toks, 128, true, false);
        if (n <= 0 || batch.n_tokens + n > 512) {
            fprintf(stderr, "prompt %d does not fit\n", p);
            return 1;
        }
        for (int i = 0; i < n; ++i) {
            const int k = batch.n_tokens++;
            batch.token[k] = toks[i];
            batch.pos[k] = i;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = p;
            batch.logits[k] = 1;
        }
        last_index[p] = batch.n_tokens - 1;
    }
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "decode failed\n");
        return 1;
    }

    float *emb = malloc(sizeof(float) * (size_t)n_prompts * (size_t)n_embd);
    for (int p = 0; p < n_prompts; ++p) {
        const float *e =
            mean ? llama_get_embeddings_seq(ctx, p) : llama_get_embeddings_ith(ctx, last_index[p]);
        if (!e) {
            fprintf(stderr, "no embedding for prompt %d\n", p);
            return 1;
        }
        normalize(e, emb + (size_t)p * n_embd, n_embd);
        printf("embedding %d (%s):", p, prompts[p]);
        for (int j = 0; j < 4 && j < n_embd; ++j) printf(" %8.5f", emb[(size_t)p * n_embd + j]);
        printf(" ...\n");
    }

    int status = 0;
    printf("cosine similarity:\n");
    for (int a = 0; a < n_prompts; ++a) {
        for (int b = 0; b < n_prompts; ++b) {
            double dot = 0.0;
            for (int j = 0; j < n_embd; ++j)
                dot += (double)emb[(size_t)a * n_embd + j] * emb[(size_t)b * n_embd + j];
            printf(" %6.3f", dot);
            if (a == b && fabs(dot - 1.0) > 1e-4) status = 1; /* normalized: the diagonal is 1 */
            if (!isfinite(dot)) status = 1;
        }
        printf("\n");
    }

    llama_batch_free(batch);
    free(last_index);
    free(emb);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return status;
}
