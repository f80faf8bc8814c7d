// Where b4748 leaves each recurrent state (mamba) after a decode call. lctx runs a call on its own plan
// (Context::plan_recurrent_ubatches, KvCache::find_state_cells), which gives every sequence the same state;
// b4748 cuts the batch otherwise (llama_sbatch::split_equal over the tokens sorted by sequence ids and
// position) and places each micro-batch's sequences by its find_slot rules (a sequence keeps the cell it owns
// alone; one sharing a cell moves to the next empty cell from the head, copying the state; then the
// micro-batch's cells are swapped into a contiguous run from the lowest, in the micro-batch's order; the head
// becomes that lowest cell). Whole-state files list cells in index order, so to write b4748's bytes the cells
// must sit where b4748 puts them: this replays b4748's placement on the cells' metadata (sequence sets and
// positions) alone.
#pragma once
#include <cstdint>
#include <vector>

#include "context/kv_cache.h"

namespace lctx {

// cells and head: the recurrent cells (one state each, at most one cell per sequence) and the search head
// before the call; on return, as b4748 leaves them after decoding the n tokens (positions pos, sequence ids
// seq_id[t][0..n_seq_id[t]), every id below cells.size()) in micro-batches of at most n_ubatch tokens.
// Returns false (cells and head then unspecified) where b4748 itself would fail an assertion.
bool place_recurrent_like_b4748(std::vector<KvCell> &cells, uint32_t &head, int32_t n, const int32_t *pos,
                                const int32_t *n_seq_id, int32_t *const *seq_id, uint32_t n_ubatch);

}  // namespace lctx
