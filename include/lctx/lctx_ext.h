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

#ifdef __cplusplus
}
#endif

#endif /* LCTX_EXT_H */
