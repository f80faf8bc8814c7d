/*
 * lctx's additions to llama.h: settings llama.cpp does not have. A program written for llama.h needs none of
 * them; the ones that include this header get the behaviour they name, and nothing else changes.
 */
#ifndef LCTX_EXT_H
#define LCTX_EXT_H

#include "llama.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Placement of new tokens' KV cells by sequence: the cache is cut into n_seq_max equal regions and a token
 * of sequence s takes the first free cell of region s % n_seq_max (or, with that region full, the next free
 * cell after it). Each sequence's cells stay together, so a batch that decodes one token of each of many
 * sequences (a server's step) costs each token's attention over its own sequence's cells only; with
 * llama.cpp's placement (the default: the next free run of cells) the sequences' cells interleave and every
 * token's attention spans them all. It changes where cells go, never what a sequence computes; whole-state
 * files then list the cells in that order (a sequence's own state is the same either way). Takes effect
 * from the next decode; cells already placed stay where they are.
 */
LLAMA_API void lctx_kv_cache_place_by_sequence(struct llama_context *ctx, bool enable);

/*
 * A JSON schema (its text) as a GBNF grammar whose texts are the JSON values the schema allows, for
 * llama_sampler_init_grammar (what llama.cpp's common library converts and llama-server takes as
 * json_schema). Writes the grammar and a NUL into buf, cut to buf_size, and returns the grammar's length
 * without the NUL (call with buf NULL to learn it); -1 when the schema is not JSON or cannot be converted,
 * with the reason logged.
 */
LLAMA_API int32_t lctx_json_schema_to_grammar(const char *schema, char *buf, size_t buf_size);

/*
 * Whether the model ends in an output layer, giving logits over its vocabulary: false for an embedding model
 * (bert, a reranker), which gives vectors only.
 */
LLAMA_API bool lctx_model_has_output(const struct llama_model *model);

/*
 * The bytes a KV cache of n_ctx cells with these K and V types takes for the model (every cached layer's K
 * and V rows; for a recurrent model its state per sequence instead), for telling a user before a context is
 * made.
 */
LLAMA_API uint64_t lctx_model_kv_cache_size(const struct llama_model *model, uint32_t n_ctx,
                                            enum ggml_type type_k, enum ggml_type type_v);

/*
 * One control-vector file, as llama.cpp's common library reads it (--control-vector): a GGUF whose tensors
 * are direction.N, one F32 vector of n_embd values per layer N (from 1), with optional metadata
 * controlvector.model_hint. Its directions times scale, laid out as llama_apply_adapter_cvec takes them.
 */
struct lctx_control_vector {
    float *data; /* n_embd floats per layer from layer 1 to layer_count; layers the file lacks hold zeros */
    size_t len;  /* floats in data: n_embd * layer_count */
    int32_t n_embd;
    int32_t layer_count;  /* the highest layer with a direction */
    char model_hint[128]; /* controlvector.model_hint cut to 127 bytes, "" when absent */
};

/*
 * Reads the file at path into *out: 0, with out->data to be freed by lctx_control_vector_free; or -1, *out
 * emptied, and the reason logged (a file that cannot be read or is not GGUF, a tensor not named direction.N
 * with N from 1 to 4096, not F32 or not one-dimensional, directions of different lengths, a non-finite value
 * in the file or in scale, no direction at all).
 */
LLAMA_API int32_t lctx_control_vector_load(const char *path, float scale, struct lctx_control_vector *out);

/* Frees cv->data and empties *cv (NULL or an empty one: nothing to do). */
LLAMA_API void lctx_control_vector_free(struct lctx_control_vector *cv);

#ifdef __cplusplus
}
#endif

#endif /* LCTX_EXT_H */
