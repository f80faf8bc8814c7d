// The KV cache: `size` cells, each with a position and the set of sequences it belongs to, plus the
// per-layer K and V storage (F16 by default; any of kKvCacheTypes below). Sequence operations change
// cells only; a position shift marks cells with a delta and the keys are re-rotated before the next
// decode (apply_shift).
//
// For a recurrent model (HParams::recurrent: mamba) the same cells hold each sequence's state instead, as
// b4748 does: n_seq_max cells, f32, a K row = the convolution state and a V row = the SSM state of every
// layer, V by rows. A cell's position is its sequence's last one, and several sequences may share a cell
// after seq_cp (copied when one of them goes on: find_state_cells). The rules of this mode are in
// kv_cache_recurrent.cpp.
#pragma once
#include <bitset>
#include <cstdint>
#include <vector>

#include "model/forward.h"
#include "model/hparams.h"
#include "model/model.h"
#include "util/page_buffer.h"

namespace lctx {

// A cell's sequence set holds ids in [0, kMaxSeqs): attention models accept any id there, whatever
// n_seq_max (as b4748, whose cells hold a std::set); n_seq_max <= kMaxSeqs bounds recurrent state slots.
constexpr int kMaxSeqs = 256;

// The KV cache types, llama.cpp's (common's kv_cache_types): f32, f16, bf16 and the block types q8_0, q4_0,
// q4_1, iq4_nl, q5_0, q5_1. A block type needs head sizes that are whole blocks (32), and as V, flash
// attention (V by rows: a channel row of single elements cannot be stored).
inline constexpr GgmlType kKvCacheTypes[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,
                                             GgmlType::Q8_0,   GgmlType::Q4_0, GgmlType::Q4_1,
                                             GgmlType::IQ4_NL, GgmlType::Q5_0, GgmlType::Q5_1};
inline constexpr const char *kKvCacheTypeNames = "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1";
inline bool is_kv_cache_type(GgmlType t) {
    for (GgmlType c : kKvCacheTypes)
        if (c == t) return true;
    return false;
}
using SeqSet = std::bitset<kMaxSeqs>;

struct KvCell {
    int32_t pos = -1;   // -1: empty
    int32_t delta = 0;  // accumulated shift not yet applied to the keys
    SeqSet seq;
    bool empty() const { return seq.none(); }
};

class KvCache {
  public:
    // v_trans: V stored a row per channel (the default); false keeps a row per cell (flash-attention
    // contexts, and block-quantized V types, which cannot be stored by single elements).
    // n_layer: layers with K/V, 0 for the model's n_layer (an encoder-decoder model's decoder has its own
    // count).
    KvCache(const HParams &hp, uint32_t size, GgmlType type_k, GgmlType type_v, uint32_t n_seq_max,
            bool v_trans = true, uint32_t n_layer = 0);

    uint32_t size() const { return size_; }
    uint32_t used() const { return used_; }
    uint32_t n_seq_max() const { return n_seq_max_; }
    const KvView &view() const { return view_; }
    // The RoPE settings the forward pass and the K-shift rotate with (context_rope; the model's by default).
    void set_rope(const kernels::RopeParams &rope) { view_.rope = rope; }
    const std::vector<KvCell> &cells() const { return cells_; }
    bool has_shift() const { return has_shift_; }
    size_t memory_bytes() const { return storage_.size(); }
    bool recurrent() const { return recurrent_; }

    // ---- placing a micro-batch ----
    // Finds cells for n tokens (contiguous from the head when possible, any free cells otherwise).
    // Returns false when there is no room; changes nothing then.
    bool find_cells(int32_t n, std::vector<uint32_t> &out);
    // The same for tokens with their sequences: by the head as above, or, when placing by sequence, each
    // token in the first free cell of its (first) sequence's region.
    bool find_cells(int32_t n, const int32_t *n_seq_id, int32_t *const *seq_id, std::vector<uint32_t> &out);
    // Placement by sequence: the cache is cut into n_seq_max equal regions, and a token of sequence s takes
    // the first free cell of region s % n_seq_max (of the cells after it, wrapping round, when the region
    // is full). Each sequence's cells then stay together, so the attention of tokens of many sequences
    // decoded together reads each one's own span of cells, where llama.cpp's placement interleaves them
    // and every token's span covers every sequence's cells. Off by default: whole-state files keep
    // llama.cpp's cell order. (The server turns it on; a sequence's own state is the same either way.)
    void set_place_by_sequence(bool on) { place_by_sequence_ = on; }
    bool place_by_sequence() const { return place_by_sequence_; }
    // Occupies the cells found for the tokens (positions and sequence sets).
    void occupy(const std::vector<uint32_t> &cells, const int32_t *pos, const int32_t *n_seq_id,
                int32_t *const *seq_id);
    // Releases cells of a micro-batch that failed (abort) so the cache holds only complete ones.
    void release(const std::vector<uint32_t> &cells);
    void advance_head(uint32_t n);
    // Where the next search for cells starts. A decode saves it with the cells it placed, so that a
    // call that does not complete (abort, no room) can put the cache back exactly as it found it.
    uint32_t head() const { return head_; }
    // (Recurrent mode: back to what begin_decode recorded, states included; `placed` and `head` unused.)
    void rollback(const std::vector<uint32_t> &placed, uint32_t head);
    // Recurrent mode. The cells of a micro-batch's n tokens (out[t] for token t): for each set of sequences,
    // the cell holding exactly that set, made so if needed: a set that shares its first sequence's cell with
    // other sequences gets a copy of that state in a free cell (b4748's s_copy), a set without any state a
    // zeroed cell (s_mask); the cell's position becomes the set's last one in the micro-batch. Each sequence
    // id must lie in [0, size) and belong to one set of the micro-batch (Context::plan_ubatches). False,
    // with nothing changed, when no free cell is left.
    bool find_state_cells(int32_t n, const int32_t *pos, const int32_t *n_seq_id, int32_t *const *seq_id,
                          std::vector<uint32_t> &out);
    // Starts a decode call: a recurrent forward pass overwrites its cells' state in place, so the cache
    // records each cell's state before its first change in the call (and the cells as they were), for
    // rollback. Nothing to record for attention cells (a call only fills free cells). record_states false:
    // the call cannot stop once a state has changed (one micro-batch, no abort callback), so the states are
    // not copied (a copy of every state the call continues, per call: per token when generating).
    void begin_decode(bool record_states = true);
    // The cell holding seq's state (recurrent mode), or -1.
    int32_t seq_cell(int32_t seq) const;
    // Recurrent mode: moves the cells (sequence sets, positions and states) to the places `target` gives the
    // same sequence sets (src/context/recurrent_placement.h) and sets the head. False, with nothing changed,
    // when target does not hold exactly the current cells' sets at the same positions.
    bool arrange_states(const std::vector<KvCell> &target, uint32_t head);
    // The heuristic llama.cpp uses to prefer filling holes at the start over appending.
    void maybe_rewind_head(uint32_t n_tokens);
    // Cells that attention must look at: [0, n_kv).
    uint32_t n_kv() const;

    // ---- sequence operations (seq < 0 means every sequence; p1 < 0 means to the end) ----
    // An id no cell can hold (>= kMaxSeqs) matches no cell: the operation changes nothing.
    void clear();
    // Always true for attention cells. Recurrent state cannot lose a part of a sequence: false (nothing
    // changed) unless [p0, p1) covers the sequence's last position and starts at 0, or misses it (b4748's
    // rule), or seq >= n_seq_max; with seq < 0 the range must be everything or empty.
    bool seq_rm(int32_t seq, int32_t p0, int32_t p1);
    void seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    // Drops every cell not in seq; seq < 0 (no sequence) drops every cell.
    void seq_keep(int32_t seq);
    void seq_add(int32_t seq, int32_t p0, int32_t p1, int32_t delta);
    // d == 1 changes nothing; d < 1 is refused (false, nothing changed).
    bool seq_div(int32_t seq, int32_t p0, int32_t p1, int32_t d);
    int32_t seq_pos_max(int32_t seq) const;  // -1 for an empty sequence
    int32_t max_pos() const;                 // the largest position of any cell; -1 when the cache is empty
    int32_t seq_pos_min(int32_t seq) const;  // -1 for an empty sequence
    int32_t n_tokens() const;                // sum over cells of their sequence counts

    // Re-rotates cached keys of shifted cells by their delta, with each layer's RoPE parameters
    // (layer_rope: the forward pass's own), and clears the deltas.
    void apply_shift(const Model &model);
    // Moves used cells to the front (keeps their order), so that new micro-batches find room at the end.
    void defrag();

    // ---- raw access for state save/restore ----
    std::vector<KvCell> &mutable_cells() { return cells_; }
    void set_head_used(uint32_t head, uint32_t used) {
        head_ = head;
        used_ = used;
    }
    uint32_t n_layer() const { return n_layer_; }
    uint32_t n_embd_k() const { return n_embd_k_; }
    uint32_t n_embd_v() const { return n_embd_v_; }

  private:
    void clear_cell(KvCell &c);
    // Recurrent mode (kv_cache_recurrent.cpp).
    bool rs_seq_rm(int32_t seq, int32_t p0, int32_t p1);
    void rs_seq_cp(int32_t src, int32_t dst);
    void rs_seq_move(int32_t seq, int32_t p0, int32_t p1, int32_t delta, int32_t d);
    void save_state(uint32_t cell);  // records the cell's state for rollback, once per call
    void copy_state(uint32_t dst, uint32_t src);
    void zero_state(uint32_t cell);
    void drop_seq(int32_t seq);  // removes seq from its cell (freeing a cell left empty)

    uint32_t size_ = 0;
    uint32_t n_seq_max_ = 1;
    uint32_t n_layer_ = 0, n_embd_k_ = 0, n_embd_v_ = 0;
    uint32_t head_ = 0;
    uint32_t used_ = 0;
    bool has_shift_ = false;
    bool recurrent_ = false;
    bool place_by_sequence_ = false;
    std::vector<KvCell> cells_;
    // find_cells by sequence: the cells taken so far in the call, and where each sequence's search goes on
    std::vector<uint8_t> taken_;
    std::vector<int64_t> seq_cursor_;
    // Rollback of a decode call in recurrent mode: the cells, head and used as the call found them, and
    // the state bytes (every layer's K then V row) of each cell it changed, before the change.
    std::vector<KvCell> undo_cells_;
    uint32_t undo_head_ = 0, undo_used_ = 0;
    std::vector<uint32_t> undo_ids_;
    std::vector<uint8_t> undo_bytes_;
    bool record_states_ = true;
    PageBuffer storage_;  // all layers' K then V
    KvView view_;
};

}  // namespace lctx
